/**
 * Durations as users write them (`90s`, `10m`, `2h`, `1h30m`, `500ms`) and as hallpass prints them
 * (Go-style: `5m0s`, `1h30m0s`, `90ms`).
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** Longest accepted duration: 366 days. */
export const MAX_DURATION_MS = 366 * 86_400_000;

/** Parses a duration; throws a RangeError with a one-line message on bad input. */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s.length === 0 || s.length > 64) {
    throw new RangeError(`bad duration ${JSON.stringify(text)}: expected e.g. 90s, 10m, 1h30m`);
  }
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) throw new RangeError(`bad duration ${JSON.stringify(text)}: expected e.g. 90s, 10m, 1h30m`);
    total += Number(m[1]) * UNIT_MS[m[2]];
    pos = re.lastIndex;
  }
  if (!Number.isFinite(total) || total <= 0) {
    throw new RangeError(`bad duration ${JSON.stringify(text)}: must be more than zero`);
  }
  if (total > MAX_DURATION_MS) {
    throw new RangeError(`bad duration ${JSON.stringify(text)}: longer than 366 days`);
  }
  return Math.round(total);
}

/** Formats milliseconds Go-style: `5m0s`, `1h30m0s`, `1.5s`, `250ms`. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const secMs = ms % 60_000;
  const sec = secMs % 1000 === 0 ? String(secMs / 1000) : String(Number((secMs / 1000).toFixed(3)));
  if (h > 0) return `${h}h${m}m${sec}s`;
  if (m > 0) return `${m}m${sec}s`;
  return `${sec}s`;
}

/**
 * What was denied, for people: one line per denial as it happens (SPEC §7), and at exit the list of what was
 * denied with the options or rules that would allow it next time.
 */
import { visible } from "./ui/sanitize.ts";
import type { Answer, Question } from "./types.ts";

/** The exit summary lists at most this many kinds of denial. */
const MAX_LISTED = 20;

interface Denial {
  op: string;
  target: string;
  pid: number;
  name: string;
  suggest?: string;
}

export class Summary {
  readonly #denials = new Map<string, { d: Denial; count: number }>();
  #answered = 0;
  denialLine(d: Denial): string {
    return `hallpass: denied ${d.op} ${visible(d.target)} by ${visible(d.name)} (pid ${d.pid})`;
  }

  denied(d: Denial): void {
    const key = `${d.op}\0${d.suggest ?? d.target}`;
    const e = this.#denials.get(key);
    if (e) e.count++;
    else if (this.#denials.size < 1000) this.#denials.set(key, { d, count: 1 });
  }

  answered(_q: Question, _a: Answer): void {
    this.#answered++;
  }

  lines(): string[] {
    if (this.#denials.size === 0) return [];
    const out = [
      `hallpass: ${this.#denials.size} kind(s) of operation were denied; to allow them next time:`,
    ];
    let shown = 0;
    for (const { d, count } of this.#denials.values()) {
      if (++shown > MAX_LISTED) {
        out.push(`  … and ${this.#denials.size - MAX_LISTED} more (--log FILE records every decision)`);
        break;
      }
      const times = count > 1 ? ` (${count}×)` : "";
      out.push(`  ${d.op} ${visible(d.target)}${times}`);
      out.push(`      ${visible(this.#fix(d))}`);
    }
    return out;
  }

  #fix(d: Denial): string {
    const scope = d.suggest ?? d.target;
    if (d.op === "write") {
      return `--allow-path ${shellQuote(scope)}   or rule: allow write ${scope}`;
    }
    if (d.op === "exec" && !scope.startsWith("/")) {
      return "a program without a path (memfd or deleted file): only an answer of once can allow it";
    }
    if (d.op === "exec") return `--allow-exec ${shellQuote(scope)}   or rule: allow exec ${scope}`;
    return `--allow-connect ${shellQuote(scope)}   or rule: allow connect ${scope}`;
  }

  print(write: (line: string) => void): void {
    for (const l of this.lines()) write(l);
  }
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_\/.:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * What a question, a log line or an API answer carries of a text the sandbox controls (a command line, an
 * argument vector): at most {@linkcode TEXT_MAX} bytes of it, and for a longer one its total length and a hash of
 * the whole, so that a program with megabytes of arguments cannot make the supervisor, the agent or a log grow
 * with it. The hash lets a person match the text against the process (`sha256sum /proc/PID/cmdline`).
 *
 * @example
 * ```ts
 * boundText("sh -c " + "x".repeat(100_000)); // "sh -c xxx…xxx… [100006 bytes, sha256 3f0a…]"
 * ```
 */
import { Sha256 } from "../util/sha256.ts";

/** Bytes of a sandbox-controlled text that are kept (the rest is counted and hashed). */
export const TEXT_MAX = 1024;

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The note that ends a cut text: `… [TOTAL bytes, sha256 HEX16]`. */
function cutNote(total: number, hash: string): string {
  return `… [${total} bytes, sha256 ${hash.slice(0, 16)}]`;
}

/** `text` when it is at most `max` bytes of UTF-8; otherwise its first `max` bytes and the cut note. */
export function boundText(text: string, max = TEXT_MAX): string {
  if (text.length <= max / 3) return text; // at most 3 bytes per UTF-16 unit: certainly short enough
  const bytes = enc.encode(text);
  if (bytes.length <= max) return text;
  return boundBytes(bytes, max);
}

/** The same for bytes (a /proc file): the first `max` bytes decoded (a cut character dropped), and the note. */
export function boundBytes(bytes: Uint8Array, max = TEXT_MAX): string {
  if (bytes.length <= max) return dec.decode(bytes);
  const head = dec.decode(bytes.subarray(0, max), { stream: true }); // a character cut at the end is left out
  return head + cutNote(bytes.length, new Sha256().update(bytes).hex());
}

/**
 * Reads a file of unknown size (a /proc file) keeping at most `max` bytes of it and streaming the rest through
 * the hash: memory stays bounded whatever its size. `show` turns the kept bytes into text (e.g. NULs to spaces);
 * the hash is of the file's bytes as they are. Null when the file cannot be read.
 */
export function readBounded(path: string, show: (kept: Uint8Array) => string, max = TEXT_MAX): string | null {
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path, { read: true });
  } catch {
    return null;
  }
  try {
    const buf = new Uint8Array(64 * 1024);
    const head = new Uint8Array(max);
    let kept = 0, total = 0;
    let hash: Sha256 | null = null;
    for (;;) {
      const n = f.readSync(buf);
      if (n === null || n === 0) break;
      const chunk = buf.subarray(0, n);
      const take = Math.min(max - kept, n);
      head.set(chunk.subarray(0, take), kept);
      kept += take;
      total += n;
      if (hash !== null) hash.update(chunk);
      else if (total > max) {
        hash = new Sha256().update(head.subarray(0, kept)).update(chunk.subarray(take));
      }
    }
    const text = show(head.subarray(0, kept));
    return hash === null ? text : text + cutNote(total, hash.hex());
  } catch {
    return null;
  } finally {
    f.close();
  }
}

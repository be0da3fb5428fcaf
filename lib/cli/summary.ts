/**
 * What was denied, for people: one line per denial as it happens (docs/ci.md), and at exit the list of what was
 * denied with the options or rules that would allow it next time.
 */
import { visible } from "../ui/sanitize.ts";
import type { Answer, Question } from "../types.ts";

/** The exit summary lists at most this many kinds of denial. */
const MAX_LISTED = 20;

/** Files of one directory denied at least this often are suggested as `DIR/**` (one line, not one each). */
const GROUP_AT = 3;

interface Denial {
  op: string;
  /** A path, a program, a destination; `A → B` for a rename or link. */
  target: string;
  pid: number;
  name: string;
  /** The scope that would allow it (for a rename or link: of the end that was not allowed, the destination first). */
  suggest?: string;
  /** The deny rule that decided it, with its source: no option would override it. */
  rule?: string;
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
    const entries = grouped([...this.#denials.values()]);
    const out = [
      `hallpass: ${this.#denials.size} kind(s) of operation were denied; to allow them next time:`,
    ];
    let shown = 0;
    for (const { d, count, files } of entries) {
      if (++shown > MAX_LISTED) {
        out.push(`  … and ${entries.length - MAX_LISTED} more (--log FILE records every decision)`);
        break;
      }
      const times = count > (files ?? 1) ? ` (${count}×)` : "";
      const what = files ? `${visible(d.suggest!)} (${files} files)` : visible(d.target);
      out.push(`  ${d.op} ${what}${times}`);
      out.push(`      ${visible(this.#fix(d))}`);
    }
    return out;
  }

  #fix(d: Denial): string {
    if (d.rule) {
      // An allow option would lose to it: say which rule decides and how to find it, not a useless option.
      return `denied by the rule ${d.rule}: an allow option would not override it; remove that rule ` +
        `(\`hallpass rules ${d.op} ${shellQuote(d.target.split(" → ").pop()!)}\` shows it)`;
    }
    const scope = d.suggest ?? d.target;
    if (d.op === "process") return "only the sandbox's own processes can be changed (docs/threat-model.md)";
    if (d.op === "keyring") return "--allow-keyring";
    if (
      d.op === "write" &&
      /^(setuid\/setgid bits|a device node|a security or trusted extended attribute): /.test(scope)
    ) {
      return "--allow-privileged-files (refused by default: docs/threat-model.md)";
    }
    if (d.op === "write" && !scope.startsWith("/")) {
      return "refused whatever the rules say (docs/threat-model.md)";
    }
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

/**
 * Write denials of GROUP_AT or more files of one directory (each suggested as itself) become one entry
 * suggesting `DIR/**`; everything else stays as it was, in order.
 */
function grouped(
  all: { d: Denial; count: number }[],
): { d: Denial; count: number; files?: number }[] {
  const dirOf = (e: { d: Denial }) =>
    e.d.op === "write" && !e.d.rule && !e.d.target.includes(" → ") && e.d.suggest === e.d.target &&
      e.d.target.lastIndexOf("/") > 0
      ? e.d.target.slice(0, e.d.target.lastIndexOf("/"))
      : null;
  const byDir = new Map<string, number>();
  for (const e of all) {
    const dir = dirOf(e);
    if (dir) byDir.set(dir, (byDir.get(dir) ?? 0) + 1);
  }
  const out: { d: Denial; count: number; files?: number }[] = [];
  const done = new Map<string, { d: Denial; count: number; files?: number }>();
  for (const e of all) {
    const dir = dirOf(e);
    if (dir === null || (byDir.get(dir) ?? 0) < GROUP_AT) {
      out.push(e);
      continue;
    }
    const g = done.get(dir);
    if (g) {
      g.count += e.count;
      continue;
    }
    const entry = {
      d: { ...e.d, target: `${dir}/**`, suggest: `${dir}/**` },
      count: e.count,
      files: byDir.get(dir),
    };
    done.set(dir, entry);
    out.push(entry);
  }
  return out;
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_\/.:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

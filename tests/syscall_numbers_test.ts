/**
 * ffi/syscall_numbers.ts against the kernel headers of the build machine: x86_64's numbers from
 * asm/unistd_64.h, aarch64's from asm-generic/unistd.h (the table aarch64 uses). And no file in lib/ holds a
 * syscall number of its own: the system calls lib/ makes go through ffi/.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { SYS, type SyscallName, SYSCALLS } from "../ffi/syscall_numbers.ts";
import { test } from "./helpers/skip.ts";
import { NEW_SYSCALL_NUMBERS } from "../lib/filter/syscall_table.ts";

const X86_HEADERS = ["/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"];
const GENERIC = "/usr/include/asm-generic/unistd.h";

function read(paths: string[]): string | null {
  for (const p of paths) {
    try {
      return Deno.readTextFileSync(p);
    } catch { /* next */ }
  }
  return null;
}

/** `#define __NR_name N` (and asm-generic's `__NR3264_name N`, what 64-bit `__NR_name` stands for). */
function parse(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const [, kind, name, nr] of text.matchAll(/^#define __NR(3264)?_(\w+)\s+(\d+)\s*$/gm)) {
    if (kind || !m.has(name)) m.set(name, Number(nr));
  }
  return m;
}

/**
 * Every entry equals the header's; a call newer than the headers (fchmodat2 on older build machines) must be
 * from the unified table (≥ 424, Linux 5.1: the same number on every architecture) and agree across tables.
 */
function check(table: Record<string, number>, h: Map<string, number>): void {
  for (const [name, nr] of Object.entries(table)) {
    const want = h.get(name);
    if (want === undefined) {
      assert(
        nr >= 424 && SYSCALLS.x86_64[name as SyscallName] === SYSCALLS.aarch64[name as SyscallName],
        name,
      );
    } else assertEquals([name, nr], [name, want]);
  }
}

const x86 = read(X86_HEADERS);
const generic = read([GENERIC]);

test({
  name: "syscall numbers: x86_64 table agrees with asm/unistd_64.h",
  ignore: x86 === null ? { reason: `no x86_64 kernel headers here (${X86_HEADERS.join(", ")})` } : undefined,
  fn: () => {
    check(SYSCALLS.x86_64, parse(x86!));
  },
});

test({
  name: "syscall numbers: aarch64 table agrees with asm-generic/unistd.h",
  ignore: generic === null ? { reason: `no kernel headers here (${GENERIC})` } : undefined,
  fn: () => {
    check(SYSCALLS.aarch64, parse(generic!));
  },
});

Deno.test("syscall numbers: SYS is the running architecture's table, with every name", () => {
  const arch = Deno.build.arch as "x86_64" | "aarch64";
  assertEquals(SYS, SYSCALLS[arch]);
  const names = Object.keys(SYSCALLS.x86_64).sort();
  assertEquals(Object.keys(SYSCALLS.aarch64).sort(), names);
  assert(names.includes("setfsuid" satisfies SyscallName));
});

/** Every syscall's numbers, by name, on both architectures: the headers' where there are any, else ffi/'s. */
function allNumbers(): Map<string, Set<number>> {
  const nums = new Map<string, Set<number>>();
  const tables = [x86 ?? "", generic ?? ""].map(parse);
  for (const t of Object.values(SYSCALLS)) tables.push(new Map(Object.entries(t)));
  for (const t of tables) {
    for (const [name, nr] of t) nums.set(name, (nums.get(name) ?? new Set()).add(nr));
  }
  return nums;
}

/**
 * Lines of a lib/ file that hold a syscall number: a line naming a system call (as a word: `execve`,
 * `sys(...)`) together with one of its numbers (on either architecture), or a number chosen by architecture.
 * Comments are left out; numbers below 10 are too common to tell (`open` 2, `close` 3).
 */
export function numberedLines(text: string, nums: Map<string, Set<number>>): string[] {
  const out: string[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    const code = line.replace(/\/\/.*$/, "");
    if (/^\s*(\*|\/\*)/.test(code)) continue;
    const lits = [...code.matchAll(/(?<![\w.])(\d{2,3})(?![\w.])/g)].map((m) => Number(m[1]));
    if (lits.length === 0) continue;
    const named = (code.match(/[a-z_][a-z0-9_]*/g) ?? []).some((w) => lits.some((n) => nums.get(w)?.has(n)));
    if (named || /\bsys\(\s*\d/.test(code) || /Deno\.build\.arch/.test(code)) {
      out.push(`${i + 1}: ${line.trim()}`);
    }
  }
  return out;
}

Deno.test("syscall numbers: the scan finds a number by name, by sys() and by architecture", () => {
  const nums = allNumbers();
  assertEquals(numberedLines('const execve = Deno.build.arch === "aarch64" ? 221 : 59;', nums).length, 1);
  assertEquals(numberedLines("if (n.nr === 59 /* execve */) x();\nconst f = sys(72, fd);", nums).length, 2);
  assertEquals(numberedLines("const n = nr === 16; // ioctl\n", nums), []);
  assertEquals(numberedLines("const x = a ? 221 : 59;\nsetfsuid: 122,", nums), ["2: setfsuid: 122,"]);
  assertEquals(numberedLines("for (let i = 0; i < 64; i++) read(i);", nums), []);
});

/**
 * No file in lib/ holds a syscall number of its own (ffi/syscall_numbers.ts does, per architecture). The one
 * exception: the filter tables' calls newer than libseccomp knows by name (lib/filter/syscall_table.ts
 * NEW_SYSCALL_NUMBERS, one number on every architecture: checked against the headers below).
 */
Deno.test("syscall numbers: nothing in lib/ holds a syscall number (but the filter table of new calls)", async () => {
  const nums = allNumbers();
  const lib = new URL("../lib", import.meta.url).pathname;
  const offenders: string[] = [];
  async function walk(dir: string) {
    for await (const e of Deno.readDir(dir)) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(p);
      else if (p.endsWith(".ts") && p !== `${lib}/filter/syscall_table.ts`) {
        for (const l of numberedLines(await Deno.readTextFile(p), nums)) {
          offenders.push(`${p.slice(lib.length - 3)}:${l}`);
        }
      }
    }
  }
  await walk(lib);
  assertEquals(offenders, []);
});

test({
  name:
    "syscall numbers: the filter's new calls (NEW_SYSCALL_NUMBERS) agree with the headers on both architectures",
  ignore: x86 === null || generic === null
    ? { reason: `no kernel headers here (${[...X86_HEADERS, GENERIC].join(", ")})` }
    : undefined,
  fn: () => {
    for (const h of [parse(x86!), parse(generic!)]) {
      for (const [name, nr] of Object.entries(NEW_SYSCALL_NUMBERS)) {
        // Newer than these headers: the unified table (Linux 5.1 on), one number everywhere.
        if (!h.has(name)) assert(nr >= 424, `${name} ${nr}`);
        else assertEquals([name, nr], [name, h.get(name)]);
      }
    }
  },
});

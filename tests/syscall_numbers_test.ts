/**
 * ffi/syscall_numbers.ts against the kernel headers of the build machine: x86_64's numbers from
 * asm/unistd_64.h, aarch64's from asm-generic/unistd.h (the table aarch64 uses). And no file in lib/ holds a
 * syscall number of its own: the system calls lib/ makes go through ffi/.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { SYS, type SyscallName, SYSCALLS } from "../ffi/syscall_numbers.ts";
import { test } from "./helpers/skip.ts";

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

Deno.test("syscall numbers: nothing in lib/ calls sys() with a number of its own", async () => {
  const offenders: string[] = [];
  async function walk(dir: string) {
    for await (const e of Deno.readDir(dir)) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(p);
      else if (p.endsWith(".ts")) {
        const text = await Deno.readTextFile(p);
        for (const m of text.matchAll(/\bsys\(\s*(\d+|[A-Z_]+\s*[,)])/g)) offenders.push(`${p}: ${m[0]}`);
      }
    }
  }
  await walk(new URL("../lib", import.meta.url).pathname);
  assertEquals(offenders, []);
});

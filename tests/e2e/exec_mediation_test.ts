/**
 * exec mediation (README.md --allow-exec; docs/exec.md) with real programs: what asks, what does not,
 * every --allow-exec form, memfd and /proc/PID/fd execs, the loader, #! scripts, and a racing thread that
 * swaps the path being executed. Each test runs with --no-ask (what would ask is denied) and, where it
 * matters, with an ask program that answers and records the questions.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { compileSources } from "../helpers/compile.ts";
import { askProgram, hallpass, readQuestions, type Result, scratch } from "./harness.ts";
import { test } from "../helpers/skip.ts";

const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" };
const dec = new TextDecoder();

/** C sources compiled once per test process (tests/helpers/compile.ts). */
const SOURCES: Record<string, string> = {
  evil: `int main(void) { return 66; }`,
  memfd: `#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
/* memfd_create(NAME) holding a copy of FILE, run with fexecve or execveat(fd, "", AT_EMPTY_PATH). */
int main(int argc, char **argv) {
  const char *how = argv[1], *name = argv[2], *file = argv[3];
  int m = memfd_create(name, MFD_CLOEXEC), in = open(file, O_RDONLY);
  char buf[65536]; ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0) if (write(m, buf, n) != n) return 2;
  char *av[] = {"payload", 0}, *ev[] = {0};
  if (!strcmp(how, "fexecve")) fexecve(m, av, ev);
  else syscall(SYS_execveat, m, "", av, ev, AT_EMPTY_PATH);
  printf("exec %s\\n", strerrorname_np(errno));
  return 1;
}`,
  procfd: `#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
/* execv("/proc/self/fd/N") of an fd opened on FILE. */
int main(int argc, char **argv) {
  int fd = open(argv[1], O_RDONLY); char p[64]; snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
  char *av[] = {"x", 0}; execv(p, av);
  printf("exec %s\\n", strerrorname_np(errno));
  return 1;
}`,
  race: `#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
/* N children; in each a thread flips the path between ALLOWED and ./evil while the main thread execs it. */
static char path[256], allowed[256];
static volatile int started;
static void spin(int n) { for (volatile int i = 0; i < n; i++); }
static void *flip(void *a) { (void)a; started = 1;
  for (;;) { strcpy(path, "./evil"); __asm__ volatile("" ::: "memory"); spin(2000);
             strcpy(path, allowed); __asm__ volatile("" ::: "memory"); spin(2000); } return 0; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]), ok = 0, evil = 0, denied = 0, other = 0;
  strcpy(allowed, argv[2]);
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p == 0) {
      strcpy(path, allowed); pthread_t t; pthread_create(&t, 0, flip, 0); while (!started) ;
      for (int k = 0; k < 50; k++) { char *av[] = {"x", 0}; execv(path, av); }
      _exit(126);
    }
    int st; waitpid(p, &st, 0);
    int c = WIFEXITED(st) ? WEXITSTATUS(st) : 200;
    if (c == 0) ok++; else if (c == 66) evil++; else if (c == 126) denied++; else other++;
  }
  printf("allowed %d evil %d denied %d other %d\\n", ok, evil, denied, other);
  return 0;
}`,
};

const bins = () => compileSources(SOURCES, "hallpass-exec-bins-");

function hp(args: string[], cwd: string): Promise<Result> {
  return hallpass(args, { cwd, env: ENV });
}

async function exe(path: string, text: string): Promise<void> {
  await Deno.writeTextFile(path, text);
  await Deno.chmod(path, 0o755);
}

Deno.test("a script in the project asks: --no-ask denies it (Permission denied, 126); an answer runs it", async () => {
  const s = await scratch();
  try {
    await exe(`${s.project}/build.sh`, "#!/bin/sh\necho built\n");
    const r = await hp(["--no-ask", "--", "sh", "-c", "./build.sh"], s.project);
    assertEquals(r.code, 126, r.stderr);
    assert(/build\.sh: Permission denied/.test(r.stderr), r.stderr);
    assert(r.stderr.includes(`hallpass: denied exec ${s.project}/build.sh by sh`), r.stderr);
    assert(!r.stdout.includes("built"));

    const ask = await askProgram(s.outside, "once");
    const ok = await hp(["--ask-program", ask, "--", "sh", "-c", "./build.sh; ./build.sh"], s.project);
    assertEquals([ok.code, ok.stdout], [0, "built\nbuilt\n"], ok.stderr);
    const qs = await readQuestions(`${s.outside}/questions.jsonl`);
    assertEquals(qs.length, 2, "`once` covers one run: the second run asks again");
    assertEquals(qs[0].op, "exec");
    assertEquals(qs[0].target, `${s.project}/build.sh`);
    assertEquals(qs[0].argv, ["./build.sh"]);
    assert(String(qs[0].warning).includes("can write this program"), JSON.stringify(qs[0]));

    const no = await askProgram(s.outside, "deny", `${s.outside}/q2.jsonl`);
    const d = await hp(["--ask-program", no, "--", "sh", "-c", "./build.sh"], s.project);
    assertEquals(d.code, 126);
    assert(d.stderr.includes("Permission denied"));
  } finally {
    await s.cleanup();
  }
});

Deno.test("programs in /usr/bin run without a question; so do programs they start", async () => {
  const s = await scratch();
  try {
    const ask = await askProgram(s.outside, "deny");
    const r = await hp([
      "--ask-program",
      ask,
      "--",
      "/bin/sh",
      "-c",
      '/usr/bin/true && ls / >/dev/null && env true && /usr/bin/python3 -c \'import subprocess; subprocess.run(["/usr/bin/echo", "py"])\' && echo done',
    ], s.project);
    assertEquals([r.code, r.stdout], [0, "py\ndone\n"], r.stderr);
    assertEquals(await readQuestions(`${s.outside}/questions.jsonl`), []);
  } finally {
    await s.cleanup();
  }
});

Deno.test("a program written into the project and run asks, with the warning that the sandbox can write it", async () => {
  const s = await scratch();
  try {
    const cmd = "cp /usr/bin/true ./mytrue && ./mytrue && echo ran";
    const r = await hp(["--no-ask", "--", "sh", "-c", cmd], s.project);
    assertEquals(r.code, 126, r.stderr);
    assert(!r.stdout.includes("ran"));
    const ask = await askProgram(s.outside, "once");
    const ok = await hp(["--ask-program", ask, "--", "sh", "-c", cmd], s.project);
    assertEquals([ok.code, ok.stdout], [0, "ran\n"], ok.stderr);
    const [q] = await readQuestions(`${s.outside}/questions.jsonl`);
    assertEquals([q.op, q.target, q.syscall], ["exec", `${s.project}/mytrue`, "execve"]);
    assert(String(q.warning).includes("the sandbox can write this program"));
    // A copy of a system program in a directory the sandbox may write is no longer @system.
    const opt = await hp([
      "--no-ask",
      "--allow-path",
      s.outside,
      "--",
      "sh",
      "-c",
      `cp /usr/bin/true ${s.outside}/t && ${s.outside}/t`,
    ], s.project);
    assertEquals(opt.code, 126, opt.stderr);
  } finally {
    await s.cleanup();
  }
});

Deno.test("--allow-exec PATH, DIR/**, a name looked up in $PATH, @shells", async () => {
  const s = await scratch();
  try {
    await Deno.mkdir(`${s.project}/bin`);
    await Deno.mkdir(`${s.project}/tools/sub`, { recursive: true });
    await exe(`${s.project}/bin/hello`, "#!/bin/sh\necho hello\n");
    await exe(`${s.project}/tools/sub/deep`, "#!/bin/sh\necho deep\n");
    await Deno.copyFile("/usr/bin/true", `${s.project}/bin/fish`); // a "shell" named fish, first in $PATH
    await Deno.chmod(`${s.project}/bin/fish`, 0o755);
    const env = { ...ENV, PATH: `${s.project}/bin:${ENV.PATH}` };
    const run = (args: string[], cmd: string) =>
      hallpass(["--no-ask", ...args, "--", "sh", "-c", cmd], { cwd: s.project, env });

    assertEquals((await run([], "hello")).code, 126);
    let r = await run(["--allow-exec", `${s.project}/bin/hello`], "hello");
    assertEquals([r.code, r.stdout], [0, "hello\n"], r.stderr);
    r = await run(["--allow-exec", "bin/hello"], "hello"); // relative to the current directory
    assertEquals([r.code, r.stdout], [0, "hello\n"], r.stderr);
    r = await run(["--allow-exec", "hello"], "hello"); // a name: looked up in $PATH at start
    assertEquals([r.code, r.stdout], [0, "hello\n"], r.stderr);
    r = await run(["--allow-exec", `${s.project}/tools/**`], "tools/sub/deep; hello");
    assertEquals([r.code, r.stdout], [126, "deep\n"], r.stderr); // hello: not below tools/
    r = await run(["--allow-exec", `${s.project}/tools/sub`], "tools/sub/deep"); // an existing dir: below it
    assertEquals([r.code, r.stdout], [0, "deep\n"], r.stderr);
    assertEquals((await run([], "fish && echo ok")).code, 126);
    r = await run(["--allow-exec", "@shells"], "fish && echo ok");
    assertEquals([r.code, r.stdout], [0, "ok\n"], r.stderr);
    // A group does not cover what is not in it.
    assertEquals((await run(["--allow-exec", "@shells"], "hello")).code, 126);
  } finally {
    await s.cleanup();
  }
});

Deno.test("a group a rules file defines (`group @mine PROG`) allows what `allow exec @mine` names, in the supervisor too", async () => {
  // The supervisor Worker decides with the groups of the run's plan: it once had only the builtins and
  // stopped the sandbox at the first exec ("supervisor failed: unknown group @mine").
  const s = await scratch();
  try {
    await exe(`${s.outside}/mine`, "#!/bin/sh\necho mine\n");
    await exe(`${s.outside}/other`, "#!/bin/sh\necho other\n");
    const rules = `${s.outside}/rules`;
    await Deno.writeTextFile(rules, `group @mine ${s.outside}/mine\nallow exec @mine\n`);
    // Control: without the rules, the program is refused.
    assertEquals((await hp(["--no-ask", "--", "sh", "-c", `${s.outside}/mine`], s.project)).code, 126);
    for (const how of [["--no-ask"], ["--ask-program", await askProgram(s.outside, "deny")]]) {
      const r = await hp([
        ...how,
        "--rules",
        rules,
        "--",
        "sh",
        "-c",
        `${s.outside}/mine; ${s.outside}/other`,
      ], s.project);
      assertEquals([r.code, r.stdout], [126, "mine\n"], `${how[0]}: ${r.stderr}`);
      assert(!r.stderr.includes("supervisor failed"), r.stderr);
    }
  } finally {
    await s.cleanup();
  }
});

Deno.test("memfd_create + fexecve / execveat(AT_EMPTY_PATH) asks, whatever the memfd is named", async () => {
  const b = await bins();
  const s = await scratch();
  try {
    for (const how of ["fexecve", "execveat"]) {
      // The name is the program's choice: /proc shows "/memfd:x/../../usr/bin/true (deleted)", which must not
      // read as /usr/bin/true (it did: fixed in 02d5b00).
      for (const name of ["payload", "x/../../usr/bin/true"]) {
        const r = await hp(["--no-ask", "--", `${b}/memfd`, how, name, `${b}/evil`], s.project);
        assertEquals([r.code, r.stdout], [1, "exec EACCES\n"], `${how} ${name}: ${r.stderr}`);
        assert(r.stderr.includes(`denied exec anon:/memfd:${name} (deleted)`), r.stderr);
      }
      // A rule cannot name a memfd.
      const spoof = await hp(
        [
          "--no-ask",
          "--allow-exec",
          "/memfd:payload (deleted)",
          "--",
          `${b}/memfd`,
          how,
          "payload",
          `${b}/evil`,
        ],
        s.project,
      );
      assertEquals(spoof.code, 1, spoof.stderr);
    }
    const ask = await askProgram(s.outside, "once");
    const ok = await hp(
      ["--ask-program", ask, "--", `${b}/memfd`, "execveat", "payload", "/usr/bin/true"],
      s.project,
    );
    assertEquals(ok.code, 0, ok.stderr + ok.stdout);
    const [q] = await readQuestions(`${s.outside}/questions.jsonl`);
    assertEquals([q.op, q.target, q.syscall], ["exec", "anon:/memfd:payload (deleted)", "execveat"]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("exec through /proc/self/fd/N is decided on the file the fd holds", async () => {
  const b = await bins();
  const s = await scratch();
  try {
    let r = await hp(["--no-ask", "--", `${b}/procfd`, "/usr/bin/true"], s.project);
    assertEquals(r.code, 0, r.stderr + r.stdout);
    await Deno.copyFile(`${b}/evil`, `${s.project}/evil`);
    await Deno.chmod(`${s.project}/evil`, 0o755);
    r = await hp(["--no-ask", "--", `${b}/procfd`, "./evil"], s.project);
    assertEquals([r.code, r.stdout], [1, "exec EACCES\n"], r.stderr);
    assert(r.stderr.includes(`denied exec ${s.project}/evil`), r.stderr);
  } finally {
    await s.cleanup();
  }
});

const LOADER = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"].find((l) => {
  try {
    return Deno.statSync(l).isFile;
  } catch {
    return false;
  }
});

test({
  name:
    "the loader as a program is denied unless a rule names it: `ld.so ./prog`, ld.so in $PATH, a symlink to it",
  ignore: LOADER
    ? undefined
    : { reason: "no known dynamic loader (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1)" },
}, async () => {
  const loader = LOADER!;
  const canon = Deno.realPathSync(loader);
  const b = await bins();
  const s = await scratch();
  try {
    await Deno.copyFile(`${b}/evil`, `${s.project}/evil`);
    await Deno.chmod(`${s.project}/evil`, 0o755);
    await Deno.symlink(loader, `${s.project}/l`);
    // Control: without hallpass the loader runs ./evil (its status 66).
    const bareRun = await new Deno.Command(loader, { args: ["./evil"], cwd: s.project }).output();
    assertEquals(bareRun.code, 66);
    assertEquals((await hp(["--no-ask", "--", "sh", "-c", "./evil"], s.project)).code, 126);
    const ask = await askProgram(s.outside, "once");
    for (const how of [`${loader} ./evil`, "./l ./evil", `${canon} ./evil`]) {
      const r = await hp(["--ask-program", ask, "--", "sh", "-c", how], s.project);
      assertEquals(r.code, 126, `${how}: ${r.stderr}`);
      assert(r.stderr.includes(`denied exec ${canon} (the dynamic loader as a program`), r.stderr);
    }
    // Denied, not asked: even an answer of `once` does not run it.
    assertEquals(await readQuestions(`${s.outside}/questions.jsonl`), []);
    // @system and a tree rule do not allow it; a rule naming the loader does.
    const tree = await hp(
      [
        "--no-ask",
        "--allow-exec",
        `${canon.slice(0, canon.lastIndexOf("/"))}/**`,
        "--",
        "sh",
        "-c",
        `${loader} ./evil`,
      ],
      s.project,
    );
    assertEquals(tree.code, 126, tree.stderr);
    // By its canonical path, which the denial's suggestion names.
    const named = await hp(
      ["--no-ask", "--allow-exec", canon, "--", "sh", "-c", `${loader} ./evil`],
      s.project,
    );
    assertEquals(named.code, 66, named.stderr);
    // Programs that use the loader as their interpreter (every dynamic program) are unaffected.
    assertEquals((await hp(["--no-ask", "--", "sh", "-c", "/usr/bin/true"], s.project)).code, 0);
  } finally {
    await s.cleanup();
  }
});

Deno.test("#! scripts: the script path is decided, and for an allowed script its interpreter too", async () => {
  const b = await bins();
  const s = await scratch();
  try {
    await Deno.copyFile(`${b}/evil`, `${s.project}/evil`);
    await Deno.chmod(`${s.project}/evil`, 0o755);
    await exe(`${s.project}/ok.sh`, "#!/bin/sh\nexit 7\n");
    await exe(`${s.project}/env.sh`, "#!/usr/bin/env sh\nexit 8\n");
    await exe(`${s.project}/bad.sh`, `#!${s.project}/evil\n`);
    await exe(`${s.project}/rel.sh`, `#!./evil\n`);
    const run = (args: string[], cmd: string) => hp(["--no-ask", ...args, "--", "sh", "-c", cmd], s.project);
    assertEquals((await run(["--allow-exec", `${s.project}/ok.sh`], "./ok.sh")).code, 7);
    assertEquals((await run(["--allow-exec", `${s.project}/env.sh`], "./env.sh")).code, 8);
    // An allowed script whose interpreter would ask: the interpreter is decided (it was not: fixed in dc68cb8).
    let r = await run(["--allow-exec", `${s.project}/bad.sh`], "./bad.sh");
    assertEquals(r.code, 126, r.stderr);
    assert(r.stderr.includes(`denied exec ${s.project}/evil`), r.stderr);
    r = await run(["--allow-exec", `${s.project}/rel.sh`], "./rel.sh");
    assertEquals(r.code, 126, r.stderr);
    r = await run(["--allow-exec", `${s.project}/bad.sh`, "--allow-exec", `${s.project}/evil`], "./bad.sh");
    assertEquals(r.code, 66, r.stderr);
    // Running the interpreter by hand (`sh ./script`) is an exec of sh only: the script is its input.
    assertEquals((await run([], "sh ./ok.sh")).code, 7);
    // A script that asks: the question names the script.
    const ask = await askProgram(s.outside, "deny");
    await hp(["--ask-program", ask, "--", "sh", "-c", "./ok.sh"], s.project);
    const qs = await readQuestions(`${s.outside}/questions.jsonl`);
    assertEquals(qs.map((q) => q.target), [`${s.project}/ok.sh`]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("racing thread swapping the exec path: measured (docs/exec.md, known limit)", async () => {
  const b = await bins();
  const s = await scratch();
  try {
    await Deno.copyFile(`${b}/evil`, `${s.project}/evil`);
    await Deno.chmod(`${s.project}/evil`, 0o755);
    const bareOut = await new Deno.Command(`${b}/race`, {
      args: ["100", "/usr/bin/true"],
      cwd: s.project,
      stdout: "piped",
    })
      .output();
    const r = await hp(["--no-ask", "--", `${b}/race`, "300", "/usr/bin/true"], s.project);
    assertEquals(r.code, 0, r.stderr);
    const m = /allowed (\d+) evil (\d+) denied (\d+) other (\d+)/.exec(r.stdout);
    assert(m, r.stdout);
    console.log(
      `bare (100 runs): ${dec.decode(bareOut.stdout).trim()}; under hallpass (300 runs): ${r.stdout.trim()}`,
    );
    const [allowed, evil, denied, other] = m.slice(1).map(Number);
    assertEquals(allowed + evil + denied + other, 300);
    // Every exec hallpass saw of ./evil was denied (the flips it caught) ...
    assert(
      r.stderr.includes(`denied exec ${s.project}/evil`) || evil + allowed === 300,
      r.stderr.slice(0, 500),
    );
    // ... and the swaps it did not see ran ./evil without a question: the known limit docs/exec.md states.
    // (Measured on a 2-vCPU VM: 9 to 73 of 300.) Writes and connects of ./evil would still be mediated.
    assert(evil < 300);
  } finally {
    await s.cleanup();
  }
});

Deno.test("without exec in --mediate, no exec asks", async () => {
  const s = await scratch();
  try {
    await exe(`${s.project}/build.sh`, "#!/bin/sh\necho built\n");
    const r = await hp(["--no-ask", "--mediate", "write", "--", "sh", "-c", "./build.sh"], s.project);
    assertEquals([r.code, r.stdout], [0, "built\n"], r.stderr);
  } finally {
    await s.cleanup();
  }
});

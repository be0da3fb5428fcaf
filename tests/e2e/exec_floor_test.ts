/**
 * The Landlock execute floor (lib/floor/exec_floor.ts, docs/exec.md): under --no-ask the kernel runs only programs
 * the rules allow, so a thread that swaps the exec path after the supervisor's decision runs nothing that
 * was refused. Judged from outside: the refused program appends a line to a file the test reads afterwards.
 * Controls: the same race without hallpass, and under hallpass without the floor (an ask program answering
 * `deny`: with a person or an ask program there is no floor), where the race wins.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { compileSources } from "../helpers/compile.ts";
import { askProgram, hallpass, type Result, scratch } from "./harness.ts";

const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" };

const SOURCES: Record<string, string> = {
  // The refused program: one line in evil.log (in its working directory, the project) per run.
  evil: `#include <fcntl.h>
#include <unistd.h>
int main(void) { int fd = open("evil.log", O_WRONLY | O_APPEND | O_CREAT, 0644); write(fd, "x\\n", 2); return 66; }`,
  // For SECONDS (and on, up to 60 s, until MIN children have run): fork a child in which a thread flips the
  // path between ALLOWED and ./evil while the main thread execs it (50 tries), and again.
  race: `#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
static char path[256], allowed[256];
static volatile int started;
static void spin(int n) { for (volatile int i = 0; i < n; i++); }
static void *flip(void *a) { (void)a; started = 1;
  for (;;) { strcpy(path, "./evil"); __asm__ volatile("" ::: "memory"); spin(2000);
             strcpy(path, allowed); __asm__ volatile("" ::: "memory"); spin(2000); } return 0; }
int main(int argc, char **argv) {
  time_t start = time(NULL), end = start + atoi(argv[1]); int children = 0, min = argc > 3 ? atoi(argv[3]) : 0;
  strcpy(allowed, argv[2]);
  while (time(NULL) < end || (children < min && time(NULL) < start + 60)) {
    pid_t p = fork();
    if (p == 0) {
      strcpy(path, allowed); pthread_t t; pthread_create(&t, 0, flip, 0); while (!started) ;
      for (int k = 0; k < 50; k++) { char *av[] = {"x", 0}; execv(path, av); }
      _exit(126);
    }
    waitpid(p, 0, 0); children++;
  }
  printf("children %d\\n", children);
  return 0;
}`,
  // execveat(fd, "", AT_EMPTY_PATH), /proc/self/fd/N and a memfd, of FILE.
  fdexec: `#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  const char *how = argv[1]; int fd = open(argv[2], O_RDONLY); char *av[] = {"x", 0}, *ev[] = {0};
  if (!strcmp(how, "empty-path")) syscall(SYS_execveat, fd, "", av, ev, AT_EMPTY_PATH);
  else if (!strcmp(how, "proc")) { char p[64]; snprintf(p, sizeof p, "/proc/self/fd/%d", fd); execv(p, av); }
  else { int m = memfd_create("payload", MFD_CLOEXEC); char b[65536]; ssize_t n;
    while ((n = read(fd, b, sizeof b)) > 0) if (write(m, b, n) != n) return 2;
    syscall(SYS_execveat, m, "", av, ev, AT_EMPTY_PATH); }
  printf("exec %s\\n", strerrorname_np(errno));
  return 1;
}`,
};

const bins = () => compileSources(SOURCES, "hallpass-floor-bins-");

function hp(args: string[], cwd: string): Promise<Result> {
  return hallpass(args, { cwd, env: ENV, timeoutMs: 120_000 });
}

async function evilRuns(project: string): Promise<number> {
  try {
    return (await Deno.readTextFile(`${project}/evil.log`)).split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}

Deno.test("racing thread swapping the exec path for 10 s under --no-ask: the refused program runs 0 times", async () => {
  const b = await bins();
  const s = await scratch();
  try {
    await Deno.copyFile(`${b}/evil`, `${s.project}/evil`);
    await Deno.chmod(`${s.project}/evil`, 0o755);
    // Control 1: without hallpass the swap runs ./evil.
    // It is a race: 2 s tries until it has landed, up to 60 s (at load one try may never flip in time).
    let bareRuns = 0;
    for (const end = Date.now() + 60_000; bareRuns === 0 && Date.now() < end;) {
      await new Deno.Command(`${b}/race`, { args: ["2", "/usr/bin/true"], cwd: s.project, stdout: "null" })
        .output();
      bareRuns = await evilRuns(s.project);
    }
    assert(bareRuns > 0, "the race never ran ./evil without hallpass");
    await Deno.remove(`${s.project}/evil.log`);
    // Control 2: hallpass without the floor (an ask program that denies: no floor with a person or a program).
    // The race is won a few times in seconds on a loaded machine: run until it lands, 4 s tries up to 90 s.
    const ask = await askProgram(s.outside, "deny");
    let noFloorRuns = 0, rounds = 0;
    for (const end = Date.now() + 90_000; noFloorRuns === 0 && Date.now() < end; rounds++) {
      const noFloor = await hp(
        ["--ask-program", ask, "-q", "--", `${b}/race`, "4", "/usr/bin/true"],
        s.project,
      );
      assertEquals(noFloor.code, 0, noFloor.stderr);
      noFloorRuns = await evilRuns(s.project);
    }
    await Deno.remove(`${s.project}/evil.log`).catch(() => {});
    // The floor: --no-ask, 10 seconds and at least 51 children (up to 60 s: at load a child can take long).
    const r = await hp(["--no-ask", "-q", "--", `${b}/race`, "10", "/usr/bin/true", "51"], s.project);
    assertEquals(r.code, 0, r.stderr);
    const children = Number(/children (\d+)/.exec(r.stdout)?.[1] ?? 0);
    console.log(
      `./evil ran: bare ${bareRuns} (2 s); hallpass without the floor ${noFloorRuns} (${4 * rounds} s); ` +
        `with the floor ${await evilRuns(s.project)} in ${children} children (10 s)`,
    );
    assert(children > 50, r.stdout);
    assertEquals(await evilRuns(s.project), 0);
    assert(
      noFloorRuns > 0,
      "without the floor the race should win at least once in 4 s (the documented limit)",
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("under the floor: allowed programs, scripts, fd and /proc/self/fd execs run; memfds and refused ones do not", async () => {
  const b = await bins();
  const s = await scratch();
  try {
    await Deno.copyFile(`${b}/evil`, `${s.project}/evil`);
    await Deno.chmod(`${s.project}/evil`, 0o755);
    await Deno.writeTextFile(`${s.project}/ok.sh`, "#!/bin/sh\nexit 7\n");
    await Deno.chmod(`${s.project}/ok.sh`, 0o755);
    const run = (args: string[], cmd: string) =>
      hp(["--no-ask", "-q", ...args, "--", "sh", "-c", cmd], s.project);
    // System programs and what they start (git runs its helpers from /usr/lib/git-core).
    assertEquals((await run([], "/usr/bin/true && env true && git --version >/dev/null")).code, 0);
    // An allowed #! script, by path and as a tree; the command hallpass starts, even in the project.
    assertEquals((await run(["--allow-exec", `${s.project}/ok.sh`], "./ok.sh")).code, 7);
    assertEquals((await run(["--allow-exec", `${s.project}/**`], "./ok.sh")).code, 7);
    assertEquals((await hp(["--no-ask", "-q", "--", "./ok.sh"], s.project)).code, 7);
    // A refused program: the supervisor's EACCES (126), and nothing ran.
    assertEquals((await run([], "./evil")).code, 126);
    assertEquals(await evilRuns(s.project), 0);
    // execveat(AT_EMPTY_PATH) and /proc/self/fd/N of an allowed program run; of a refused one, EACCES.
    for (const how of ["empty-path", "proc"]) {
      assertEquals(
        (await hp(["--no-ask", "-q", "--", `${b}/fdexec`, how, "/usr/bin/true"], s.project)).code,
        0,
      );
      const r = await hp(["--no-ask", "-q", "--", `${b}/fdexec`, how, "./evil"], s.project);
      assertEquals([r.code, r.stdout], [1, "exec EACCES\n"], r.stderr);
    }
    // A memfd: anonymous, denied under --no-ask as before (and the kernel's floor would refuse it too).
    const m = await hp(["--no-ask", "-q", "--", `${b}/fdexec`, "memfd", "/usr/bin/true"], s.project);
    assertEquals([m.code, m.stdout], [1, "exec EACCES\n"], m.stderr);
    assertEquals(await evilRuns(s.project), 0);
  } finally {
    await s.cleanup();
  }
});

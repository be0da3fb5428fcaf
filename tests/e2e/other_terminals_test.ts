/**
 * Only the sandbox's own terminal is writable (docs/threat-model.md, "Other terminals"). The test opens a
 * second pty outside the sandbox — another tmux pane, another ssh session of the same user — and records
 * everything that arrives on it; the sandbox tries to write there by every route (the name, a symlink in the
 * project, a pts number it guesses, `--no-ask` with and without a terminal). Judged from outside: the reader
 * received nothing. A control without hallpass shows the write arrives. The sandbox's own terminal, the ptys
 * it opens itself (through /dev/ptmx, with `script`, tmux) and a nested shell keep working.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, hallpass, scratch } from "./harness.ts";
import { until, withPane } from "./tmux.ts";
import { test, tool } from "../helpers/skip.ts";

/**
 * A pty held outside the sandbox: its slave's path, and what has arrived on it so far (read from the
 * master by a small python process that appends to a file).
 */
async function otherTerminal(
  dir: string,
): Promise<{ path: string; received: () => string; close: () => void }> {
  const log = `${dir}/received`;
  const child = new Deno.Command("/usr/bin/python3", {
    args: [
      "-c",
      `
import os, pty, sys, select
m, s = pty.openpty()
print(os.ttyname(s), flush=True)
out = open(sys.argv[1], "ab", buffering=0)
while True:
    r, _, _ = select.select([m], [], [], 60)
    if not r: break
    try: b = os.read(m, 4096)
    except OSError: break
    if not b: break
    out.write(b)
`,
      log,
    ],
    stdout: "piped",
    stderr: "inherit",
    stdin: "null",
  }).spawn();
  Deno.writeTextFileSync(log, "");
  const reader = child.stdout.getReader();
  let line = "";
  while (!line.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the pty reader did not start");
    line += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  await child.stdout.cancel();
  return {
    path: line.trim(),
    received: () => Deno.readTextFileSync(log),
    close: () => {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
    },
  };
}

const WRITES = (pts: string) =>
  [
    `printf 'FAKE-PROMPT-1' > ${pts}`,
    `ln -s ${pts} ./t && printf 'FAKE-PROMPT-2' > ./t`,
    `/usr/bin/python3 -c 'import os; fd = os.open("${pts}", os.O_WRONLY | os.O_NOCTTY); os.write(fd, b"FAKE-PROMPT-3")'`,
    `/usr/bin/python3 -c 'import os; fd = os.open("${pts}", os.O_RDWR); os.write(fd, b"FAKE-PROMPT-4")'`,
  ].join("; ");

Deno.test("other terminals: a second pty receives nothing from the sandbox (no terminal, --no-ask)", async () => {
  const s = await scratch();
  const other = await otherTerminal(s.outside);
  try {
    // Control: without hallpass, the text arrives there.
    await bare(["/bin/sh", "-c", `printf 'CONTROL' > ${other.path}`]);
    await until(() => other.received().includes("CONTROL"), "the control write to arrive");
    const r = await hallpass(["--no-ask", "--", "/bin/sh", "-c", WRITES(other.path)], { cwd: s.project });
    assert(r.stderr.includes(`hallpass: denied write ${other.path}`), r.stderr);
    // Give a write that got through time to arrive, judged by a marker sent after it by the control route.
    await bare(["/bin/sh", "-c", `printf 'AFTER' > ${other.path}`]);
    await until(() => other.received().includes("AFTER"), "the marker");
    assert(!other.received().includes("FAKE"), `the other terminal received: ${other.received()}`);
  } finally {
    other.close();
    await s.cleanup();
  }
});

Deno.test("other terminals: what is typed in another terminal cannot be read from the sandbox", async () => {
  const s = await scratch();
  // A pty outside the sandbox with someone typing in it (written to its master: it arrives as input).
  const py = `
import os, pty, subprocess, sys, time
m, s = pty.openpty()
name = os.ttyname(s)
for i in range(20): os.write(m, b"SECRET-KEYS\\n")
cmd = [a.replace("PTS", name) for a in sys.argv[1:]]
r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
print(r.stdout); print(r.stderr, file=sys.stderr)
`;
  try {
    const reader = ["/bin/sh", "-c", "timeout 2 cat PTS; echo rc=$?"];
    // Control: without hallpass, the typed text is read.
    const c = await bare(["/usr/bin/python3", "-c", py, ...reader]);
    assert(c.stdout.includes("SECRET-KEYS"), `control: ${c.stdout} ${c.stderr}`);
    const r = await bare([
      "/usr/bin/python3",
      "-c",
      py,
      Deno.execPath(),
      "run",
      "-A",
      "--quiet",
      `${new URL("../../main.ts", import.meta.url).pathname}`,
      "--no-ask",
      "-q",
      "--",
      ...reader,
    ], { cwd: s.project });
    assert(!r.stdout.includes("SECRET-KEYS"), `the sandbox read another terminal: ${r.stdout}`);
    assert(r.stdout.includes("rc=1"), r.stdout + r.stderr);
  } finally {
    await s.cleanup();
  }
});

Deno.test("other terminals: ptys the sandbox opens itself through /dev/ptmx work (by name, script, python pty)", async () => {
  const s = await scratch();
  try {
    const py = `
import os, pty, ctypes
libc = ctypes.CDLL(None)
m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
libc.grantpt(m); libc.unlockpt(m)
libc.ptsname.restype = ctypes.c_char_p
name = libc.ptsname(m).decode()
s = os.open(name, os.O_RDWR | os.O_NOCTTY)
os.write(s, b"own-pty-ok\\n")
print(os.read(m, 100).decode().strip())
pid, fd = pty.fork()
if pid == 0:
    print("child-on-pty"); os._exit(0)
print(os.read(fd, 100).decode().strip())
`;
    const r = await hallpass([
      "--no-ask",
      "-q",
      "--",
      "/bin/sh",
      "-c",
      `/usr/bin/python3 -c '${py}' && script -qec 'echo script-ok' /dev/null`,
    ], { cwd: s.project });
    assertEquals(r.code, 0, r.stdout + r.stderr);
    assert(r.stdout.includes("own-pty-ok"), r.stdout + r.stderr);
    assert(r.stdout.includes("child-on-pty"), r.stdout + r.stderr);
    assert(r.stdout.includes("script-ok"), r.stdout + r.stderr);
    assertEquals(r.stderr, "");
  } finally {
    await s.cleanup();
  }
});

test({
  name: "other terminals: tmux inside the sandbox runs its own panes",
  ignore: tool("tmux"),
}, async () => {
  const s = await scratch();
  try {
    const r = await hallpass([
      "--no-ask",
      "-q",
      "--",
      "/bin/sh",
      "-c",
      `tmux -S ./sock -f /dev/null new-session -d -x 80 -y 24 'echo inner-pane-ok > out.txt; sleep 5' && ` +
      `for i in $(seq 100); do [ -s out.txt ] && break; sleep 0.05; done; tmux -S ./sock kill-server; cat out.txt`,
    ], { cwd: s.project, timeoutMs: 60_000 });
    assert(r.stdout.includes("inner-pane-ok"), r.stdout + r.stderr);
  } finally {
    await s.cleanup();
  }
});

test({
  name: "other terminals: in a terminal, the sandbox writes its own and not the other pane (both modes)",
  ignore: tool("tmux"),
}, async () => {
  for (const mode of ["--no-ask", "ask"]) {
    const s = await scratch();
    const other = await otherTerminal(s.outside);
    try {
      await Deno.writeTextFile(
        `${s.outside}/t.sh`,
        `printf 'own-tty-ok\\n' > /dev/tty\nprintf 'FAKE-PROMPT' > ${other.path}\nsh -c 'echo nested-ok'\n`,
      );
      await withPane({
        script: `hp ${mode === "ask" ? "" : "--no-ask"} -- sh ${s.outside}/t.sh`,
      }, async (t) => {
        if (mode === "ask") {
          const screen = await t.waitBar();
          assert(screen.includes("another terminal"), screen);
          await t.keys("d");
        }
        const screen = await t.waitText("nested-ok");
        assert(screen.includes("own-tty-ok"), screen);
      });
      await bare(["/bin/sh", "-c", `printf 'AFTER' > ${other.path}`]);
      await until(() => other.received().includes("AFTER"), "the marker");
      assert(!other.received().includes("FAKE"), `${mode}: the other terminal received: ${other.received()}`);
    } finally {
      other.close();
      await s.cleanup();
    }
  }
});

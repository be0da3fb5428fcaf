/**
 * review5: the exit checks of `$PATH` shadows (lib/sandbox/path_shadows.ts) and Python's user site
 * (lib/sandbox/python_startup.ts) judged files by their own ctime; a directory renamed into place brings its files
 * with their old ctimes. With `--allow-path ~/.local` (`pip install --user`), a `bin/ls` or a `python3.X/` made
 * there before the session (or by an earlier one) and renamed to `~/.local/bin` / `~/.local/lib/python3.X`
 * during it ran outside later. Judged by running `ls` / `python3` outside with that `$HOME`; the control is the
 * same rename without hallpass.
 *
 * @module
 */
import { equal, ok as assert } from "node:assert/strict";
import { bare, hallpass, HALLPASS_ARGV, hallpassLines, isRoot, scratchHome } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";

async function exists(p: string): Promise<boolean> {
  try {
    await Deno.lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** Waits until the second after the newest ctime below `dir` has passed (a session then starts after it). */
async function afterNewest(dir: string): Promise<void> {
  let newest = 0;
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const st = await Deno.lstat(`${d}/${e.name}`);
      newest = Math.max(newest, st.ctime!.getTime());
      if (st.isDirectory) await walk(`${d}/${e.name}`);
    }
  };
  await walk(dir);
  while (Date.now() < newest + 2_100) await new Promise((r) => setTimeout(r, 100));
}

const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** `~/.local` with a directory made before the session, ready to be renamed into place by `script`. */
async function prepare(home: string, mark: string, pyVer: string): Promise<void> {
  await Deno.mkdir(`${home}/.local/share/kit/bin`, { recursive: true });
  await Deno.writeTextFile(`${home}/.local/share/kit/bin/ls`, `#!/bin/sh\ntouch ${q(mark + ".ls")}\n`);
  await Deno.chmod(`${home}/.local/share/kit/bin/ls`, 0o755);
  await Deno.mkdir(`${home}/.local/share/kit/${pyVer}/site-packages`, { recursive: true });
  await Deno.writeTextFile(
    `${home}/.local/share/kit/${pyVer}/site-packages/kit.pth`,
    `import os; open(${JSON.stringify(mark + ".py")}, "w")\n`,
  );
  await Deno.mkdir(`${home}/.local/lib`, { recursive: true });
}

test({
  name:
    "review5: a $PATH directory or python user site renamed into place with old files does not run outside later",
  ignore: tool("ls") ?? tool("python3"),
  async fn() {
    const v = await new Deno.Command("python3", {
      args: ["-c", "import sys; print('python%d.%d' % sys.version_info[:2])"],
    })
      .output();
    const pyVer = new TextDecoder().decode(v.stdout).trim();
    const s = await scratchHome("hallpass-review5-moved-");
    try {
      const mark = `${s.outside}/ran`;
      const env = (home: string) => ({ HOME: home, PATH: `${home}/.local/bin:/usr/bin:/bin` });
      const script = [
        `mv "$HOME/.local/share/kit/bin" "$HOME/.local/bin"`,
        `mv "$HOME/.local/share/kit/${pyVer}" "$HOME/.local/lib/${pyVer}"`,
      ].join(" && ");
      const outside = async (home: string) => {
        await bare(["sh", "-c", "ls >/dev/null"], { env: env(home), cwd: home });
        await bare(["python3", "-c", "pass"], { env: env(home), cwd: home });
      };

      const ctl = `${s.outside}/ctl`;
      await prepare(ctl, mark, pyVer);
      equal((await bare(["sh", "-c", script], { env: env(ctl) })).code, 0);
      await outside(ctl);
      assert(await exists(mark + ".ls"), "control: the renamed-in ls did not run");
      assert(await exists(mark + ".py"), "control: the renamed-in .pth did not run");
      await Deno.remove(mark + ".ls");
      await Deno.remove(mark + ".py");

      await prepare(s.home, mark, pyVer);
      await afterNewest(`${s.home}/.local`);
      const r = await hallpass(["--no-ask", "--allow-path", `${s.home}/.local`, "--", "sh", "-c", script], {
        cwd: s.project,
        env: env(s.home),
      });
      equal(r.code, 0, r.stderr);
      await outside(s.home);
      assert(!(await exists(mark + ".ls")), `ls outside ran the sandbox's program:\n${r.stderr}`);
      assert(!(await exists(mark + ".py")), `python3 outside ran the sandbox's .pth:\n${r.stderr}`);
      assert(hallpassLines(r).some((l) => l.includes("further along $PATH")), r.stderr);
      assert(hallpassLines(r).some((l) => l.includes("every python3")), r.stderr);
    } finally {
      await s.cleanup();
    }
  },
});

/** Runs `argv` with stdin /dev/null, stdout a pty's slave by the name `alias` (a bind mount), and reads the master. */
const TTY_DRIVER = String.raw`
import os, sys, subprocess, select
alias = sys.argv[1]
m, s = os.openpty()
subprocess.check_call(["mount", "--bind", os.ttyname(s), alias])
try:
    fd = os.open(alias, os.O_RDWR | os.O_NOCTTY)
    p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.PIPE)
    os.close(fd); os.close(s)
    err = p.stderr.read()
    p.wait()
    got = b""
    while select.select([m], [], [], 2)[0]:
        try:
            c = os.read(m, 4096)
        except OSError:
            break
        if not c: break
        got += c
    sys.stdout.write(("RAW" if b"\x1b]52" in got else "CLEAN") + " " + repr(got) + "\n" + err.decode())
finally:
    subprocess.call(["umount", alias])
`;

/**
 * The tty guard (lib/sandbox/tty_guard.ts) took away write access only to terminals named as a pty or a console
 * it knows (`/dev/pts/N`, `/dev/ttyS0`, …); a terminal of fds 0-2 under another name (`/dev/hvc0`, a cloud
 * VM's serial console; `/dev/ttyAMA0`) stayed writable by its path (lib/sandbox/plan.ts makes the terminal of
 * fds 0-2 writable), and an OSC 52 written there reached the terminal raw. Judged on the pty's master; the
 * control is the same write without hallpass. Root: the other name is a bind mount in /dev.
 */
test({
  name: "review5: a terminal under a name the guard does not know is not writable raw by that name",
  ignore: [
    tool("python3"),
    tool("mount"),
    isRoot() ? undefined : { reason: "needs root (a bind mount in /dev)" },
  ],
  async fn() {
    const s = await scratchHome("hallpass-review5-tty-");
    const alias = `/dev/hallpass-review5-${Deno.pid}`;
    await Deno.writeTextFile(alias, "");
    try {
      const write = ["sh", "-c", String.raw`printf 'A\033]52;c;UFc=\007B\n' > ${alias}`];
      const ctl = await bare(["python3", "-c", TTY_DRIVER, alias, ...write], { cwd: s.project });
      assert(ctl.stdout.startsWith("RAW "), `control: the write did not reach the terminal:\n${ctl.stdout}`);
      const r = await bare(
        ["python3", "-c", TTY_DRIVER, alias, ...HALLPASS_ARGV, "--no-ask", "--", ...write],
        {
          cwd: s.project,
          env: { HOME: s.home },
        },
      );
      assert(r.stdout.startsWith("CLEAN "), `the OSC 52 reached the terminal raw:\n${r.stdout}`);
    } finally {
      await Deno.remove(alias).catch(() => {});
      await s.cleanup();
    }
  },
});

/**
 * `--agent copilot` makes `~/.local/share/hallpass/copilot` at start (lib/sandbox/agent_env.ts); a symlink an
 * earlier session planted on the way (`--allow-path ~/.local` can) must not make hallpass create directories
 * at its target, outside anything the session may write.
 */
test({
  name: "review5: --agent copilot makes its runtime directory through no symlink on the way",
  async fn() {
    const s = await scratchHome("hallpass-review5-envdir-");
    try {
      await Deno.mkdir(`${s.home}/.local/share`, { recursive: true });
      await Deno.mkdir(`${s.outside}/target`);
      await Deno.symlink(`${s.outside}/target`, `${s.home}/.local/share/hallpass`);
      const r = await hallpass(["--no-ask", "--agent", "copilot", "--", "true"], {
        cwd: s.project,
        env: { HOME: s.home },
      });
      equal(r.code, 0, r.stderr);
      assert(!(await exists(`${s.outside}/target/copilot`)), "hallpass made a directory through the symlink");
      // without the link: made, 0700
      await Deno.remove(`${s.home}/.local/share/hallpass`);
      equal(
        (await hallpass(["--no-ask", "--agent", "copilot", "--", "true"], {
          cwd: s.project,
          env: { HOME: s.home },
        })).code,
        0,
      );
      equal((await Deno.lstat(`${s.home}/.local/share/hallpass/copilot`)).mode! & 0o777, 0o700);
    } finally {
      await s.cleanup();
    }
  },
});

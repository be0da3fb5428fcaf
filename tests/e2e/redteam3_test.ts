/**
 * Red team, third round (docs/threat-model.md "Root", "Network and local IPC"): what the supervisor performs
 * for the sandbox must lend it nothing. Each attack runs with both engines (the C fast path and the mediator
 * alone), each has a bare control on this kernel, and each is judged from outside (the host's network
 * configuration, a listener outside, lsattr, what the program could read).
 *
 * - A root sandbox keeps only file-work capabilities; the fast path performed opens and sends with all of the
 *   supervisor's: an open of a kmsg device node in the project read the kernel log (CAP_SYSLOG), and a netlink
 *   message to the kernel set the loopback interface's alias (CAP_NET_ADMIN: links and routes); the mediator
 *   performed file ioctls with them too: `chattr +i` in the project (CAP_LINUX_IMMUTABLE).
 * - NETLINK_USERSOCK lets any process send to another's netlink port: with connects not mediated, the sandbox
 *   reached a listener outside (local IPC, like a unix socket). A netlink address naming a process or group is
 *   refused (EPERM), whoever runs hallpass.
 * - A file the person's own git config includes (`[include] path = ~/dot/gitconfig`) lay in a dotfiles project,
 *   unprotected: a `core.fsmonitor` written there ran when git ran outside. Now a protected path.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bare, exists, isRoot, scratch } from "./harness.ts";
import { type Need, probeAsync, test, tool } from "../helpers/skip.ts";
import { engineRunner, ENGINES } from "./engine.ts";

const PY = "/usr/bin/python3";
const dec = new TextDecoder();
const noPython = (await exists(PY)) ? undefined : { reason: `${PY} is not installed` };

/** Opens argv[1] for reading and writing (a write, so the supervisor performs it) and reads from it. */
const KMSG_PY = `import os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
    os.read(fd, 8192)
    print("read")
except OSError as e:
    print("errno", e.errno)
`;

/** Sets the loopback interface's alias to argv[1] with RTM_NEWLINK, sent by argv[2] (sendto or sendmsg). */
const ALIAS_PY = `import socket, struct, sys
alias = sys.argv[1].encode() + b"\\0"
rta = struct.pack("=HH", 4 + len(alias), 20) + alias
rta += b"\\0" * ((4 - len(rta) % 4) % 4)
body = struct.pack("=BxHiII", 0, 0, socket.if_nametoindex("lo"), 0, 0) + rta
msg = struct.pack("=LHHLL", 16 + len(body), 16, 1 | 4, 1, 0) + body
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
try:
    if sys.argv[2] == "sendto":
        s.sendto(msg, (0, 0))
    else:
        s.sendmsg([msg], [], 0, (0, 0))
    print("ack", struct.unpack("=i", s.recv(4096)[16:20])[0])
except OSError as e:
    print("errno", e.errno)
`;

/** Sends "sendto", "sendmsg" and "connect" to NETLINK_USERSOCK port argv[1], each by that way. */
const USERSOCK_SEND_PY = `import socket, sys
port = int(sys.argv[1])
for how in ("sendto", "sendmsg", "connect"):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 2)
    try:
        if how == "sendto":
            s.sendto(how.encode(), (port, 0))
        elif how == "sendmsg":
            s.sendmsg([how.encode()], [], 0, (port, 0))
        else:
            s.connect((port, 0))
            s.send(how.encode())
        print(how, "sent")
    except OSError as e:
        print(how, "errno", e.errno)
`;

/** Listens on a NETLINK_USERSOCK port (printed first), prints each message until "END". */
const USERSOCK_LISTEN_PY = `import socket, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 2)
s.bind((0, 0))
print(s.getsockname()[0], flush=True)
s.settimeout(60)
while True:
    m = s.recv(4096)
    if m == b"END":
        break
    print("got", m.decode(errors="replace"), flush=True)
`;

const SETPRIV = "/usr/bin/setpriv";
/** Root without the named capabilities (root's exec takes its permitted set from the bounding set). */
const without = (caps: string) => [
  SETPRIV,
  "--inh-caps=-all",
  `--bounding-set=${caps.split(",").map((c) => "-" + c).join(",")}`,
  "--",
];

// --- a capability lent by a performed open ------------------------------------------------------------------

const kmsgNeed: Need = !isRoot() ? { reason: "needs root (a root sandbox and a device node)" } : noPython ??
  tool("setpriv") ?? await probeAsync("kmsg device node", async () => {
    const s = await scratch();
    try {
      const mk = await bare(["mknod", `${s.project}/kmsg`, "c", "1", "11"]);
      if (mk.code !== 0) return `mknod failed: ${mk.stderr.trim()}`;
      const full = await bare([PY, "-c", KMSG_PY, `${s.project}/kmsg`]);
      if (full.stdout.trim() !== "read") return `root cannot read a kmsg node here: ${full.stdout.trim()}`;
      const nocap = await bare([...without("syslog,sys_admin"), PY, "-c", KMSG_PY, `${s.project}/kmsg`]);
      if (nocap.stdout.trim() !== "errno 1") return `reading the kernel log needs no capability here`;
      return undefined;
    } finally {
      await s.cleanup();
    }
  });

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "kmsg");
  test({
    name: `a root sandbox reads no kernel log through a performed open of a kmsg node (${name})`,
    ignore: kmsgNeed,
    fn: async () => {
      const s = await scratch();
      try {
        await bare(["mknod", `${s.project}/kmsg`, "c", "1", "11"]);
        // The control (the probe): root reads it, root without CAP_SYSLOG gets EPERM. The sandbox keeps no
        // CAP_SYSLOG: the supervisor, which performs the open (a file at the project's top), must not lend it.
        const r = await hp(["--no-ask", "-q", "--", PY, "-c", KMSG_PY, "kmsg"], { cwd: s.project });
        assertEquals(r.code, 0, r.stderr);
        assertEquals(r.stdout.trim(), "errno 1", r.stderr);
      } finally {
        await s.cleanup();
      }
    },
  });
}

// --- a capability lent by a performed netlink send -------------------------------------------------------------

const ALIAS = "/sys/class/net/lo/ifalias";
const aliasNeed: Need = !isRoot() ? { reason: "needs root (a root sandbox)" } : noPython ?? tool("setpriv") ??
  await probeAsync("loopback alias", async () => {
    if (!(await exists(ALIAS))) return `${ALIAS} is not there`;
    const before = await Deno.readTextFile(ALIAS);
    try {
      const ctl = await bare([PY, "-c", ALIAS_PY, "hallpass-probe", "sendto"]);
      if (ctl.stdout.trim() !== "ack 0" || (await Deno.readTextFile(ALIAS)).trim() !== "hallpass-probe") {
        return `root cannot set the loopback alias here: ${ctl.stdout.trim()} ${ctl.stderr.trim()}`;
      }
      const nocap = await bare([...without("net_admin"), PY, "-c", ALIAS_PY, "hallpass-nocap", "sendto"]);
      if (nocap.stdout.trim() !== "ack -1") return `setting the alias needs no CAP_NET_ADMIN here`;
      return undefined;
    } finally {
      await Deno.writeTextFile(ALIAS, before.trim() === "" ? "\n" : before);
    }
  });

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "netlink as root");
  test({
    name: `a root sandbox cannot change the host's links through a performed netlink message (${name})`,
    ignore: aliasNeed,
    fn: async () => {
      const before = await Deno.readTextFile(ALIAS);
      const s = await scratch();
      try {
        for (const how of ["sendto", "sendmsg"]) {
          const r = await hp(["--no-ask", "-q", "--", PY, "-c", ALIAS_PY, `hallpass-${how}`, how], {
            cwd: s.project,
          });
          assertEquals(r.code, 0, r.stderr);
          assertEquals(r.stdout.trim(), "ack -1", `${how}: ${r.stdout}${r.stderr}`); // -EPERM, as without it
          assertEquals(await Deno.readTextFile(ALIAS), before, how);
        }
      } finally {
        await Deno.writeTextFile(ALIAS, before.trim() === "" ? "\n" : before);
        await s.cleanup();
      }
    },
  });
}

// --- NETLINK_USERSOCK: another process's port ------------------------------------------------------------------

/** Starts a USERSOCK listener outside, runs `send(port)`, then ends it; what it received. */
async function usersockRound(send: (port: string) => Promise<void>): Promise<string[]> {
  const child = new Deno.Command(PY, { args: ["-c", USERSOCK_LISTEN_PY], stdout: "piped", stderr: "null" })
    .spawn();
  const reader = child.stdout.getReader();
  let text = "";
  try {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the listener ended before naming its port");
      text += dec.decode(value);
    }
    const port = text.split("\n")[0].trim();
    await send(port);
    // Anything the sandbox sent is queued before this (its sends completed before it exited).
    const end = await bare([
      PY,
      "-c",
      `import socket; socket.socket(16, 3, 2).sendto(b"END", (${Number(port)}, 0))`,
    ]);
    assertEquals(end.code, 0, end.stderr);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value);
    }
  } finally {
    reader.releaseLock();
    await child.status;
  }
  return text.split("\n").slice(1).filter(Boolean);
}

const usersockNeed: Need = noPython ?? await probeAsync("NETLINK_USERSOCK", async () => {
  const got = await usersockRound(async (port) => {
    await bare([PY, "-c", USERSOCK_SEND_PY, port]);
  }).catch((e) => [String(e)]);
  return got.length === 3 ? undefined : `NETLINK_USERSOCK does not carry messages here: ${got.join("; ")}`;
});

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "usersock");
  test({
    name: `a NETLINK_USERSOCK listener outside is not reached, connects not mediated (${name})`,
    ignore: usersockNeed,
    fn: async () => {
      const s = await scratch();
      try {
        // Control: bare, every way reaches it.
        const control = await usersockRound(async (port) => {
          const r = await bare([PY, "-c", USERSOCK_SEND_PY, port]);
          assertEquals(r.stdout.trim().split("\n"), ["sendto sent", "sendmsg sent", "connect sent"]);
        });
        assertEquals(control, ["got sendto", "got sendmsg", "got connect"]);
        let out = "";
        const got = await usersockRound(async (port) => {
          const r = await hp(["--no-ask", "-q", "--", PY, "-c", USERSOCK_SEND_PY, port], { cwd: s.project });
          assertEquals(r.code, 0, r.stderr);
          out = r.stdout;
        });
        assertEquals(got, [], `received outside: ${got.join("; ")}`);
        assertEquals(out.trim().split("\n"), ["sendto errno 1", "sendmsg errno 1", "connect errno 1"]);
      } finally {
        await s.cleanup();
      }
    },
  });
}

// --- a capability lent by a performed file ioctl ----------------------------------------------------------------

/** lsattr's flags of a file, from outside. */
async function attrs(p: string): Promise<string> {
  const r = await bare(["lsattr", "-d", p]);
  return r.stdout.trim().split(/\s+/)[0] ?? "";
}

const immutableNeed: Need = !isRoot() ? { reason: "needs root (a root sandbox)" } : tool("chattr") ??
  tool("lsattr") ?? tool("setpriv") ?? await probeAsync("chattr +i", async () => {
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.project}/f`, "x");
      const nocap = await bare([...without("linux_immutable"), "chattr", "+i", `${s.project}/f`]);
      if (nocap.code === 0) return "chattr +i needs no CAP_LINUX_IMMUTABLE here";
      const full = await bare(["chattr", "+i", `${s.project}/f`]);
      if (full.code !== 0 || !(await attrs(`${s.project}/f`)).includes("i")) {
        return `chattr +i does not work here: ${full.stderr.trim()}`;
      }
      await bare(["chattr", "-i", `${s.project}/f`]);
      return undefined;
    } finally {
      await s.cleanup();
    }
  });

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "chattr");
  test({
    name: `a root sandbox cannot make a file immutable through a performed ioctl (${name})`,
    ignore: immutableNeed,
    fn: async () => {
      const s = await scratch();
      try {
        await Deno.writeTextFile(`${s.project}/f`, "x");
        await Deno.writeTextFile(`${s.project}/g`, "y");
        // The control (the probe): root without CAP_LINUX_IMMUTABLE cannot; the supervisor must not lend it.
        const r = await hp(["--no-ask", "-q", "--", "chattr", "+i", "f"], { cwd: s.project });
        assertEquals(r.code !== 0, true, r.stderr);
        assertEquals((await attrs(`${s.project}/f`)).includes("i"), false, "f was made immutable");
        // A flag that needs no capability is still set (the ioctl is performed, as the caller).
        const d = await hp(["--no-ask", "-q", "--", "chattr", "+d", "g"], { cwd: s.project });
        assertEquals(d.code, 0, d.stderr);
        assertEquals((await attrs(`${s.project}/g`)).includes("d"), true, "+d was not set");
      } finally {
        await bare(["chattr", "-i", "-d", `${s.project}/f`, `${s.project}/g`]);
        await s.cleanup();
      }
    },
  });
}

// --- a file the person's git config includes, in the project ---------------------------------------------------

const gitNeed: Need = tool("git");

/** A home whose ~/.gitconfig includes ~/dot/gitconfig, a dotfiles project ~/dot, and a repository ~/repo. */
async function dotfilesHome(base: string): Promise<{ home: string; env: Record<string, string> }> {
  const home = `${base}/home`;
  await Deno.mkdir(`${home}/dot`, { recursive: true });
  await Deno.mkdir(`${home}/repo`);
  await Deno.writeTextFile(
    `${home}/.gitconfig`,
    "[include]\n\tpath = ~/dot/gitconfig\n[user]\n\tname = t\n\temail = t@example.com\n",
  );
  await Deno.writeTextFile(
    `${home}/dot/gitconfig`,
    "[color]\n\tui = auto\n[core]\n\thooksPath = ~/dot/hooks\n",
  );
  const env = { HOME: home, XDG_CONFIG_HOME: `${home}/.config`, GIT_CONFIG_NOSYSTEM: "1" };
  const init = await bare(["git", "-C", `${home}/repo`, "init", "-q"], { env });
  assertEquals(init.code, 0, init.stderr);
  return { home, env };
}

/** Appends a core.fsmonitor that leaves a mark, to the included file (run from the dotfiles project). */
const PLANT = (mark: string) =>
  `printf '[core]\\n\\tfsmonitor = "touch ${mark}; false"\\n' >> gitconfig; echo "write=$?"`;

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "git include");
  test({
    name:
      `a file the person's git config includes, in the project, is protected (git outside runs nothing) (${name})`,
    ignore: gitNeed,
    fn: async () => {
      const s = await scratch();
      try {
        // Control: written bare, git run outside (in another repository) runs it.
        const c = await dotfilesHome(`${s.outside}/c`);
        const mark0 = `${s.outside}/c/ran`;
        await bare(["sh", "-c", PLANT(mark0)], { cwd: `${c.home}/dot`, env: c.env });
        await bare(["git", "-C", `${c.home}/repo`, "status"], { env: c.env });
        assertEquals(await exists(mark0), true, "control: git did not run the included fsmonitor");

        const h = await dotfilesHome(s.outside);
        const mark = `${s.outside}/ran`;
        const r = await hp(["--no-ask", "-q", "--", "sh", "-c", PLANT(mark)], {
          cwd: `${h.home}/dot`,
          env: h.env,
        });
        assertEquals(r.stdout.trim(), "write=2", r.stderr); // sh: cannot create (EACCES)
        assertEquals(
          await Deno.readTextFile(`${h.home}/dot/gitconfig`),
          "[color]\n\tui = auto\n[core]\n\thooksPath = ~/dot/hooks\n",
        );
        await bare(["git", "-C", `${h.home}/repo`, "status"], { env: h.env });
        assertEquals(await exists(mark), false, "git outside ran what the sandbox wrote");
      } finally {
        await s.cleanup();
      }
    },
  });
}

/** Writes an executable pre-commit hook that leaves a mark, in the hooks directory the included config names. */
const HOOK = (mark: string) =>
  `mkdir -p hooks && printf '#!/bin/sh\\ntouch ${mark}\\n' > hooks/pre-commit; echo "write=$?"; chmod 755 hooks/pre-commit`;

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "git include hooksPath");
  test({
    name: `the hooks directory an included git config names, in the project, is protected (${name})`,
    ignore: gitNeed,
    fn: async () => {
      const s = await scratch();
      try {
        const commit = (home: string, env: Record<string, string>) =>
          bare(["git", "-C", `${home}/repo`, "commit", "-q", "--allow-empty", "-m", "x"], { env });
        // Control: written bare, a commit outside (in another repository) runs it.
        const c = await dotfilesHome(`${s.outside}/c`);
        const mark0 = `${s.outside}/c/ran`;
        await bare(["sh", "-c", HOOK(mark0)], { cwd: `${c.home}/dot`, env: c.env });
        await commit(c.home, c.env);
        assertEquals(await exists(mark0), true, "control: git did not run the hook");

        const h = await dotfilesHome(s.outside);
        const mark = `${s.outside}/ran`;
        const r = await hp(["--no-ask", "-q", "--", "sh", "-c", HOOK(mark)], {
          cwd: `${h.home}/dot`,
          env: h.env,
        });
        assertEquals(r.stdout.trim().startsWith("write="), true, r.stderr);
        assertEquals(r.stdout.trim() === "write=0", false, `the hook was written: ${r.stdout}${r.stderr}`);
        await commit(h.home, h.env);
        assertEquals(await exists(mark), false, "git outside ran a hook the sandbox wrote");
      } finally {
        await s.cleanup();
      }
    },
  });
}

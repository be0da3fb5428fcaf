/** The real kernel: a pty from ffi/pty.ts, a shell on its slave. */
import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  closeFd,
  getTermios,
  getWinSize,
  openPty,
  openSlave,
  readMaster,
  setWinSize,
  writeAll,
} from "../ffi/pty.ts";
import { SysError } from "../ffi/errors.ts";
import { test, tool } from "./helpers/skip.ts";

/** Makes the inherited fd the child's controlling terminal and stdio, then runs sh (what the launcher does). */
const LAUNCH = `
import os, sys, fcntl, termios
fd = int(sys.argv[1]); os.setsid(); fcntl.ioctl(fd, termios.TIOCSCTTY, 0)
for i in (0, 1, 2): os.dup2(fd, i)
os.close(fd); os.execvp("sh", ["sh", "-c", sys.argv[2]])
`;
async function runOnPty(script: string, input?: string): Promise<{ out: string; code: number }> {
  const { master, slavePath } = openPty();
  assert(slavePath.startsWith("/dev/pts/"), slavePath);
  setWinSize(master, { rows: 30, cols: 100 });
  assertEquals(getWinSize(master), { rows: 30, cols: 100 });
  const slave = openSlave(slavePath);
  const child = new Deno.Command("python3", {
    args: ["-c", LAUNCH, String(slave), script],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  closeFd(slave); // else EIO never comes
  if (input !== undefined) assert(await writeAll(master, new TextEncoder().encode(input)));
  let out = "";
  const dec = new TextDecoder();
  for (;;) {
    const chunk = await readMaster(master);
    if (chunk === null) break;
    out += dec.decode(chunk, { stream: true });
  }
  const { code } = await child.status;
  closeFd(master);
  return { out, code };
}

test({
  name: "pty: the slave has the size set on the master; output arrives; EIO at the end",
  ignore: tool("python3"),
  fn: async () => {
    const { out, code } = await runOnPty("stty size; printf hi");
    assertEquals(out, "30 100\r\nhi");
    assertEquals(code, 0);
  },
});

test({
  name: "pty: input written to the master reaches the program",
  ignore: tool("python3"),
  fn: async () => {
    const { out } = await runOnPty("stty -echo; read line; printf 'got:%s' \"$line\"", "hello\n");
    assertEquals(out.endsWith("got:hello"), true, JSON.stringify(out));
  },
});

Deno.test("pty: failed calls throw SysError with errno and code", () => {
  try {
    getTermios(987654);
    assert.fail("no error");
  } catch (e) {
    assert(e instanceof SysError);
    assertEquals(e.errno, 9);
    assertEquals(e.code, "EBADF");
    assertEquals(e.syscall, "tcgetattr");
  }
  assertEquals(getWinSize(987654), null);
});

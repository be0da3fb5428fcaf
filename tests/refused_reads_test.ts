/**
 * Refused reads from the kernel's Landlock audit records (lib/floor/refused_reads.ts): the records parsed (quoted
 * and hex paths), only this session's domain (learned from the DOMAIN record naming the command's pid, which
 * comes after the first access record), only reads of protected or carved paths, one line per path, at most
 * MAX_LINES, the exit summary with the option, and the domain's end.
 */
import assert from "node:assert/strict";
import { readExitLines } from "../lib/floor/read_floor.ts";
import {
  type LandlockRecord,
  MAX_LINES,
  parseLandlockRecord,
  refusedInput,
  RefusedReads,
} from "../lib/floor/refused_reads.ts";

const HOME = "/home/me";
const builtin = (what: string) => ({ kind: "builtin" as const, what });
const ssh = { path: `${HOME}/.ssh`, source: builtin("SSH keys") };
const aws = { path: `${HOME}/.aws`, source: { kind: "cli" as const, option: "--protect" } };

function input() {
  return refusedInput(
    { protect: [ssh, aws], readable: [{ path: `${HOME}/.ssh/known_hosts`, source: builtin("ssh client") }] },
    [HOME, "/home"],
    (p) => p === `${HOME}/.aws` ? "/data/aws" : p,
    HOME,
  );
}

const access = (domain: string, path: string, blockers = "fs.read_file", serial = "7"): LandlockRecord =>
  parseLandlockRecord(
    1423,
    `audit(1796139088.074:${serial}): domain=${domain} blockers=${blockers} path="${path}" dev="vda" ino=612`,
  )!;
const allocated = (domain: string, pid: number): LandlockRecord =>
  parseLandlockRecord(
    1424,
    `audit(1796139088.066:2): domain=${domain} status=allocated mode=enforcing pid=${pid} uid=0 exe="/x" comm="x"`,
  )!;

Deno.test("parse: access and domain records; hex paths; other types and malformed text are null", () => {
  assert.deepEqual(access("157d5e1be", "/etc/hostname"), {
    kind: "access",
    serial: "7",
    domain: "157d5e1be",
    blockers: ["fs.read_file"],
    path: "/etc/hostname",
  });
  const hex = parseLandlockRecord(
    1423,
    'audit(1.2:3): domain=ab blockers=fs.read_file,fs.execute path=2F726F6F742F6120622F6B6579 dev="vda" ino=1',
  );
  assert.deepEqual(hex, {
    kind: "access",
    serial: "3",
    domain: "ab",
    blockers: ["fs.read_file", "fs.execute"],
    path: "/root/a b/key",
  });
  assert.deepEqual(allocated("ab", 42), {
    kind: "domain",
    serial: "2",
    domain: "ab",
    status: "allocated",
    pid: 42,
    exe: "/x",
    denials: undefined,
  });
  const freed = parseLandlockRecord(1424, "audit(1.2:9): domain=ab status=deallocated denials=7");
  assert.equal(freed?.kind === "domain" && freed.denials, 7);
  assert.equal(parseLandlockRecord(1300, "audit(1.2:3): arch=c000003e syscall=257"), null);
  assert.equal(parseLandlockRecord(1423, "domain=ab blockers=fs.read_file"), null);
  assert.equal(parseLandlockRecord(1423, 'audit(1.2:3): domain=zz" blockers=x'), null);
});

Deno.test("only this session's domain: learned from the command's pid, records held until then", () => {
  const r = new RefusedReads(input());
  r.commandPid = 42;
  // The first denial's access record comes before its domain record.
  assert.deepEqual(r.feed([access("ab", `${HOME}/.ssh/id_ed25519`)]), []);
  assert.equal(r.waiting, true);
  const lines = r.feed([allocated("ab", 42)]);
  assert.deepEqual(lines, ["hallpass: refused read ~/.ssh/id_ed25519: protect ~/.ssh (builtin: SSH keys)"]);
  assert.equal(r.known, true);
  assert.equal(r.waiting, false);
  // Another session's domain (another pid), and records of it later: ignored.
  assert.deepEqual(r.feed([access("cd", `${HOME}/.aws/credentials`), allocated("cd", 43)]), []);
  assert.deepEqual(r.feed([access("cd", `${HOME}/.aws/credentials`)]), []);
  assert.equal(r.count, 1);
  assert.equal(r.ended, false);
  r.feed([parseLandlockRecord(1424, "audit(1.2:9): domain=cd status=deallocated denials=1")!]);
  assert.equal(r.ended, false);
  r.feed([parseLandlockRecord(1424, "audit(1.2:9): domain=ab status=deallocated denials=3")!]);
  assert.equal(r.ended, true);
});

Deno.test("the input may be made on first use: once, when a record needs it, with the same answers", () => {
  let made = 0;
  const r = new RefusedReads(() => {
    made++;
    return input();
  });
  r.commandPid = 42;
  assert.equal(made, 0, "not made before a record comes");
  assert.deepEqual(r.feed([access("ab", `${HOME}/.ssh/id_ed25519`), allocated("ab", 42)]), [
    "hallpass: refused read ~/.ssh/id_ed25519: protect ~/.ssh (builtin: SSH keys)",
  ]);
  r.feed([access("ab", "/data/aws/config")]);
  assert.equal(made, 1, "made once");
  const eager = new RefusedReads(input());
  eager.commandPid = 42;
  eager.feed([
    access("ab", `${HOME}/.ssh/id_ed25519`),
    allocated("ab", 42),
    access("ab", "/data/aws/config"),
  ]);
  assert.deepEqual(r.summaryLines(), eager.summaryLines());
  assert.equal(r.summaryLines().length, 5, "both refusals listed, each with its option");
});

Deno.test("a domain made by the command's pid but another program (the command's own sandbox) is not ours", () => {
  const r = new RefusedReads({ ...input(), launcher: "/opt/hallpass/hallpass-launcher" });
  r.commandPid = 42;
  const made = (domain: string, exe: string) =>
    parseLandlockRecord(
      1424,
      `audit(1.2:2): domain=${domain} status=allocated mode=enforcing pid=42 uid=0 exe="${exe}" comm="x"`,
    )!;
  // The command's own domain logs first: not taken for the session's.
  assert.deepEqual(r.feed([access("cd", "/etc/hostname"), made("cd", "/usr/bin/python3")]), []);
  assert.equal(r.known, false);
  assert.deepEqual(
    r.feed([access("ab", `${HOME}/.ssh/id_rsa`), made("ab", "/opt/hallpass/hallpass-launcher")]),
    [
      "hallpass: refused read ~/.ssh/id_rsa: protect ~/.ssh (builtin: SSH keys)",
    ],
  );
  // exe in hex (a path with a space).
  const hex = parseLandlockRecord(1424, "audit(1.2:2): domain=ab status=allocated pid=42 exe=2F6120622F6C");
  assert.equal(hex?.kind === "domain" && hex.exe, "/a b/l");
});

Deno.test("which refusals are said: reads only, of protected or carved paths, once per path; the rest ignored", () => {
  const r = new RefusedReads(input());
  r.commandPid = 42;
  r.feed([allocated("ab", 42)]);
  assert.deepEqual(r.feed([access("ab", `${HOME}/.ssh/id_rsa`, "fs.write_file")]), []); // not a read
  assert.deepEqual(r.feed([access("ab", "/usr/lib/x")]), []); // not below hallpass's read floor
  // Inside an allow read: the file there at start was readable, this one was made during the run.
  assert.deepEqual(r.feed([access("ab", `${HOME}/.ssh/known_hosts`)]), [
    "hallpass: refused read ~/.ssh/known_hosts: protect ~/.ssh (builtin: SSH keys); allow read ~/.ssh/known_hosts holds the file that was there at start, not one made during the run",
  ]);
  // Through the protection's real path (a symlinked ~/.aws).
  assert.deepEqual(r.feed([access("ab", "/data/aws/credentials")]), [
    "hallpass: refused read /data/aws/credentials: protect ~/.aws (--protect)",
  ]);
  assert.deepEqual(r.feed([access("ab", "/data/aws/credentials")]), []); // said once
  const carved = r.feed([access("ab", `${HOME}/.newrc`), access("ab", `${HOME}/newdir/file`)]);
  assert.equal(carved.length, 2);
  assert.match(
    carved[0],
    /^hallpass: refused read ~\/\.newrc: new in ~ \(made or linked there during the run\)/,
  );
  // Terminal control in a name is shown, not sent.
  const evil = r.feed([access("ab", `${HOME}/.ssh/\x1b]0;x\x07`)]);
  assert.equal(evil.length, 1);
  assert.ok(!evil[0].includes("\x1b"), evil[0]);
  assert.equal(r.count, 6);
});

Deno.test("at most MAX_LINES lines, then one pointer to the exit summary; the summary lists each with the option", () => {
  const r = new RefusedReads(input());
  r.commandPid = 42;
  r.feed([allocated("ab", 42)]);
  const lines: string[] = [];
  for (let i = 0; i < MAX_LINES + 5; i++) lines.push(...r.feed([access("ab", `${HOME}/.ssh/k${i}`)]));
  lines.push(...r.feed([access("ab", `${HOME}/.ssh/k0`)]));
  assert.equal(lines.length, MAX_LINES + 1);
  assert.equal(lines[MAX_LINES], "hallpass: more reads were refused: listed at exit");
  const sum = r.summaryLines();
  assert.equal(
    sum[0],
    `hallpass: the kernel refused reads of ${MAX_LINES + 5} protected file(s); to allow one next time:`,
  );
  assert.equal(sum[1], "  read ~/.ssh/k0 (2×), refused by protect ~/.ssh (builtin: SSH keys)");
  assert.equal(sum[2], "      --allow-read ~/.ssh/k0   or rule: allow read ~/.ssh/k0");
  assert.deepEqual(new RefusedReads(input()).summaryLines(), []);
});

Deno.test("exit line: why refusals were not reported; none when they were", () => {
  const unprivileged = readExitLines([], true, HOME, "an unprivileged hallpass cannot read audit");
  assert.equal(unprivileged.length, 1);
  assert.match(unprivileged[0], /unseen by hallpass here \(an unprivileged hallpass cannot read audit\)/);
  assert.deepEqual(readExitLines([], true, HOME, null), []);
  assert.deepEqual(readExitLines([], false, HOME, "x"), []);
});

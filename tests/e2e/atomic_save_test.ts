/**
 * Atomic saves, prompt side (lib/policy/atomic_save.ts): a program writes `NAME.tmp.PID` next to NAME and renames it
 * over NAME. The question offers (and suggests) "NAME and its temporary siblings" (`DIR/NAME*`); answered with
 * that scope, the temporary file and the rename over NAME are one question. A rename of a temporary sibling
 * over NAME is asked about NAME and shows both ends. Counted from outside: the ask program's log; NAME's
 * content.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { hallpass, readQuestions, scratch, scratchAsker } from "./harness.ts";
import { siblingScope, tempSiblingBase } from "../../lib/policy/atomic_save.ts";

Deno.test("atomic save: NAME.tmp.PID then rename over NAME is one question, scoped NAME*", async () => {
  const s = await scratch();
  try {
    const name = `${s.outside}/settings.json`;
    await Deno.writeTextFile(name, "old");
    const { ask, log } = await scratchAsker(s, "for 1m"); // [t] with the suggested scope
    const r = await hallpass([
      "--ask-program",
      ask,
      "-q",
      "--",
      "sh",
      "-c",
      `printf new > ${name}.tmp.$$ && mv ${name}.tmp.$$ ${name}`,
    ], { cwd: s.project });
    assertEquals(r.code, 0, r.stderr);
    assertEquals(await Deno.readTextFile(name), "new");
    const qs = (await readQuestions(log)).filter((q) => q.op === "write");
    assertEquals(qs.length, 1, JSON.stringify(qs));
    assertEquals(qs[0].scope, `${name}*`);
    assertEquals((qs[0].scopes as string[])[1], `${name}*`);
  } finally {
    await s.cleanup();
  }
});

Deno.test("atomic save: a rename of a temporary sibling over NAME asks about NAME, both ends shown", async () => {
  const s = await scratch();
  try {
    const name = `${s.outside}/notes.txt`;
    await Deno.writeTextFile(name, "old");
    await Deno.writeTextFile(`${s.project}/x`, "");
    const { ask, log } = await scratchAsker(s, "once");
    const r = await hallpass([
      "--ask-program",
      ask,
      "-q",
      "--",
      "sh",
      "-c",
      `mv ${name}~ ${name} 2>/dev/null; true`,
    ], {
      cwd: s.project,
    });
    assertEquals(r.code, 0, r.stderr);
    // notes.txt~ does not exist: mv fails in the kernel's way, nothing asked; now with it.
    await Deno.writeTextFile(`${name}~`, "new");
    const r2 = await hallpass(["--ask-program", ask, "-q", "--", "mv", `${name}~`, name], { cwd: s.project });
    assertEquals(r2.code, 0, r2.stderr);
    const qs = (await readQuestions(log)).filter((q) => q.op === "write");
    assertEquals(qs.length, 1, JSON.stringify(qs));
    assertEquals(qs[0].target, `${name}~ → ${name}`);
    assertEquals(qs[0].scope, `${name}*`);
    assertEquals(await Deno.readTextFile(name), "new");
  } finally {
    await s.cleanup();
  }
});

Deno.test("atomic save: which names are temporary siblings, and when one * can say it", () => {
  assertEquals(tempSiblingBase(".claude.json.tmp.4242.8f3a"), ".claude.json");
  assertEquals(tempSiblingBase("x~"), "x");
  assertEquals(tempSiblingBase(".bashrc.Ab12Cd"), "bashrc");
  assertEquals(tempSiblingBase("notes.txt"), null);
  const exists = (p: string) => p === "/h/.claude.json" || p === "/h/conf";
  const h = [
    ".claude.json",
    ".claude.json.backup.7",
    ".claude.json.tmp.1.2",
    "conf",
    "conf.tmp.9",
    ".b",
    ".bashrc",
  ];
  const names = (d: string) => d === "/h" ? h : null;
  // .claude.json.backup.7 is no temporary sibling, and `.claude.json*` would cover it: not offered.
  assertEquals(siblingScope("/h/.claude.json.tmp.1.2", null, exists, names), null);
  const h2 = h.filter((n) => !n.includes("backup"));
  assertEquals(siblingScope("/h/.claude.json.tmp.1.2", null, exists, () => h2), "/h/.claude.json*");
  assertEquals(siblingScope("/h/unrelated.tmp.1", null, exists, names), null); // no NAME there
  assertEquals(siblingScope("/h/conf", "/h/conf.tmp.9", exists, names), "/h/conf*");
  assertEquals(siblingScope("/h/conf", "/h/.conf.XyZ123", exists, names), null); // one * cannot cover both
  assertEquals(siblingScope("/h/conf", "/other/conf.tmp", exists, names), null);
  // A short NAME whose `*` would cover other files (`~/.b*` and `~/.bashrc`) is never offered.
  assertEquals(siblingScope("/h/.b", "/h/.b.tmp", exists, names), null);
  // A directory that cannot be listed (a container's): not offered.
  assertEquals(siblingScope("/x/conf", "/x/conf.tmp.9", exists, names), null);
});

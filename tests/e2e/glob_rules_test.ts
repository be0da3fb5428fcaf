/**
 * Glob rules (`DIR/NAME*`, one `*` in the last component: lib/policy/path_scope.ts) against a hostile sandbox, judged
 * from outside: what a glob allows stays inside its one directory and its pattern, through symlinks, renames and
 * directories named to match; and a file whose name holds a `*` cannot turn an answer into a glob over its
 * neighbours. Each attack's control runs the same commands without hallpass and changes the outside file.
 */
import assert from "node:assert/strict";
import { bare, hallpass, scratch } from "./harness.ts";

const ATTACKS = [
  // a name the glob matches, as a symlink to a file it does not: the write lands on the target
  `ln -s "$O/bashrc" "$O/.x.link"; for i in 1 2 3 4 5; do echo pwned >> "$O/.x.link"; done`,
  // a directory named to match, and a file below it
  `mkdir "$O/.x.d" && echo pwned > "$O/.x.d/bashrc"; echo pwned > "$O/bashrc"`,
  // rename the protected file onto a name the glob matches, and back
  `mv "$O/bashrc" "$O/.x.bak" && echo pwned >> "$O/.x.bak" && mv "$O/.x.bak" "$O/bashrc"`,
  // a hard link to it under a matching name
  `ln "$O/bashrc" "$O/.x.hard" && echo pwned >> "$O/.x.hard"`,
  // a race: swap a matching name between a file and a symlink to it while writing through it (until it lands)
  `(while [ ! -e "$O/.x.stop" ]; do ln -sfn "$O/bashrc" "$O/.x.race"; rm -f "$O/.x.race"; touch "$O/.x.race"; done) &
   for i in $(seq 3000); do echo pwned >> "$O/.x.race" 2>/dev/null; grep -q pwned "$O/bashrc" && break; done
   touch "$O/.x.stop"; wait`,
];

Deno.test("a glob allows only names in its directory that match: symlinks, renames, links and races stay out", async () => {
  for (const attack of ATTACKS) {
    const s = await scratch();
    try {
      const env = { O: s.outside, PATH: "/usr/bin:/bin" };
      await Deno.writeTextFile(`${s.outside}/bashrc`, "original\n");
      const ctl = await bare(["sh", "-c", attack], { cwd: s.project, env });
      void ctl;
      const changed = (await Deno.readTextFile(`${s.outside}/bashrc`).catch(() => "")) !== "original\n" ||
        (await Deno.stat(`${s.outside}/.x.d/bashrc`).catch(() => null)) !== null;
      assert(changed, `control: the attack changed nothing without hallpass: ${attack}`);
      await Deno.remove(s.outside, { recursive: true });
      await Deno.mkdir(s.outside);
      await Deno.writeTextFile(`${s.outside}/bashrc`, "original\n");
      const r = await hallpass(["--no-ask", "--allow-path", `${s.outside}/.x*`, "--", "sh", "-c", attack], {
        cwd: s.project,
        env,
      });
      assert.equal(await Deno.readTextFile(`${s.outside}/bashrc`), "original\n", `${attack}\n${r.stderr}`);
      assert(!(await Deno.stat(`${s.outside}/.x.d/bashrc`).catch(() => null)), `${attack}: .x.d/bashrc`);
    } finally {
      await s.cleanup();
    }
  }
});

Deno.test("a glob allows what it names: NAME itself, NAME.tmp.RANDOM + rename over NAME", async () => {
  const s = await scratch();
  try {
    const r = await hallpass([
      "--no-ask",
      "--allow-path",
      `${s.outside}/.x*`,
      "--",
      "sh",
      "-c",
      `echo a > "$O/.x" && echo b > "$O/.x.tmp.1.abc" && mv "$O/.x.tmp.1.abc" "$O/.x" && echo c > "$O/.y"`,
    ], { cwd: s.project, env: { O: s.outside, PATH: "/usr/bin:/bin" } });
    assert.equal(await Deno.readTextFile(`${s.outside}/.x`), "b\n", r.stderr);
    assert(!(await Deno.stat(`${s.outside}/.y`).catch(() => null)), "~/.y was written");
    assert(r.stderr.includes(`denied write ${s.outside}/.y`), r.stderr);
  } finally {
    await s.cleanup();
  }
});

Deno.test("a name holding a * answered [a] does not become a glob over its neighbours", async () => {
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.outside}/.bashrc`, "original\n");
    // The reviewer allows, always, exactly the path it is asked about.
    const ask = `${s.project}/../ask.sh`;
    await Deno.writeTextFile(
      ask,
      `#!/bin/sh\nq=$(cat); printf '%s\\n' "$q" >> "${s.project}/../q.jsonl"\n` +
        `t=$(printf '%s' "$q" | sed -n 's/.*"target":"\\([^"]*\\)".*/\\1/p')\necho "always $t"\n`,
    );
    await Deno.chmod(ask, 0o755);
    const r = await hallpass([
      "--ask-program",
      ask,
      "--",
      "sh",
      "-c",
      `echo x > "$O/.bash*"; echo pwned > "$O/.bashrc"; mkdir "$O/d*"; echo y > "$O/d*/f"; echo done`,
    ], {
      cwd: s.project,
      env: { O: s.outside, PATH: "/usr/bin:/bin", XDG_CONFIG_HOME: `${s.project}/../xdg` },
    });
    assert(r.stdout.includes("done"), r.stderr);
    // Asked about ~/.bash*; the "always" could not become a rule, so ~/.bashrc was asked about in its turn, and
    // allowed only because the reviewer says always to anything: what matters is it was asked.
    const qs = (await Deno.readTextFile(`${s.project}/../q.jsonl`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assert(qs.some((q) => q.target === `${s.outside}/.bash*`), JSON.stringify(qs));
    assert(
      qs.some((q) => q.target === `${s.outside}/.bashrc`),
      `~/.bashrc was never asked about: ${JSON.stringify(qs)}`,
    );
    const saved = await Deno.readTextFile(`${s.project}/../xdg/hallpass/rules`).catch(() => "");
    assert(!saved.includes(".bash*"), `a glob rule was saved: ${saved}`);
    // Nor a line that would not load again (a * in a directory name): the next run must start.
    const next = await hallpass(["--no-ask", "--", "true"], {
      cwd: s.project,
      env: { PATH: "/usr/bin:/bin", XDG_CONFIG_HOME: `${s.project}/../xdg` },
    });
    assert.equal(next.code, 0, `the next run failed on the saved rules: ${next.stderr}\n${saved}`);
  } finally {
    await s.cleanup();
  }
});

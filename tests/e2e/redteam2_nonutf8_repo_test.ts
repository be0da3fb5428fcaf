/**
 * Red team: a repository below a directory whose name is not UTF-8. hallpass's exit check
 * (lib/sandbox/nested_repos.ts) cannot name such a directory, so it only said it "could not look" there; the
 * sandbox made `d/\xffx/r/.git` (a hook and core.fsmonitor) in a subdirectory of the floor (Landlock continued
 * the non-UTF-8 mkdir), or chdir'ed into such a directory that was already there and made `r/.git` with plain
 * ASCII names (the fast path continued it), and git run there outside afterwards ran both. Now no directory is
 * made or renamed to a name that is not UTF-8 (lib/supervisor/decide.ts), and the fast path hands a call from
 * such a working directory to the mediator. Judged by running git outside, with a bare control.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bare, hallpass, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";

const PLANT = `
import os, sys
def plant(D, out):
    for sub in ("", "/hooks", "/objects", "/refs"):
        os.makedirs(D + sub, exist_ok=True)
    def w(p, text, mode=0o644):
        fd = os.open(D + p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, mode); os.write(fd, text.encode()); os.close(fd)
    w("/HEAD", "ref: refs/heads/main\\n")
    w("/config", '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tfsmonitor = "echo F >> %s; false"\\n' % out)
    w("/hooks/pre-commit", "#!/bin/sh\\necho H >> %s\\n" % out, 0o755)
out = sys.argv[1]
try:
    plant(os.fsdecode(b"d/\\xffx/r/.git"), out + "/M.made")
except OSError as e:
    print("made:", e)
os.chdir(b"d/\\xffy")
try:
    plant("r/.git", out + "/M.existing")
except OSError as e:
    print("existing:", e)
`;

const GIT_ENV = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
  PATH: "/usr/local/bin:/usr/bin:/bin",
};

/** git status and a commit in each planted repository, run outside (bash: the names are bytes). */
const GIT_OUTSIDE = `for r in "$(printf 'd/\\377x/r')" "$(printf 'd/\\377y/r')"; do
  [ -d "$r" ] && (cd "$r" && git status >/dev/null 2>&1; git commit -q --allow-empty -m x >/dev/null 2>&1)
done; true`;

function markers(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).sort();
}

for (const fast of ["1", "0"]) {
  test({
    name:
      `a repository below a directory named in bytes that are not UTF-8 runs nothing outside (fast path ${fast})`,
    ignore: [tool("git"), tool("/usr/bin/python3"), tool("bash")],
    async fn() {
      const s = await scratch();
      try {
        await Deno.writeTextFile(`${s.outside}/plant.py`, PLANT);
        for (const where of ["control", "sandbox"]) {
          const proj = where === "control" ? `${s.outside}/ctl` : s.project;
          const out = `${s.outside}/m-${where}`;
          await Deno.mkdir(out);
          await Deno.mkdir(`${proj}/d`, { recursive: true });
          await bare(["git", "init", "-q"], { cwd: proj, env: { ...GIT_ENV, HOME: s.outside } });
          // A directory of the person's, there at start, named in bytes that are not UTF-8.
          await bare(["bash", "-c", `mkdir "$(printf 'd/\\377y')"`], { cwd: proj });
          const cmd = ["/usr/bin/python3", `${s.outside}/plant.py`, out];
          const env = { ...GIT_ENV, HOME: s.outside, HALLPASS_FAST_PATH: fast };
          const r = where === "control"
            ? await bare(cmd, { cwd: proj, env })
            : await hallpass(["--no-ask", "-q", "--", ...cmd], { cwd: proj, env });
          await bare(["bash", "-c", GIT_OUTSIDE], { cwd: proj, env: { ...GIT_ENV, HOME: s.outside } });
          const want = where === "control" ? ["M.existing", "M.made"] : [];
          assertEquals(markers(out), want, `${where}: ${r.stdout} ${r.stderr}`);
        }
      } finally {
        await s.cleanup();
      }
    },
  });
}

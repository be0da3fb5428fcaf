/**
 * The exit check's walk (lib/sandbox/nested_repos.ts) on a directory, in interleaved pairs: the walk that lists
 * every entry (RepoFs.list) against the one that compares names as bytes (RepoFs.scan), wall and CPU time (user +
 * system from /proc/self/stat: less moved by a loaded machine). Renames nothing.
 *
 *     deno run -A bench/exit_walk.ts DIR [PAIRS]      # e.g. DIR = `cp -al /usr/lib /tmp/p/lib` → /tmp/p
 */
import { checkNestedRepos, realRepoFs, type RepoFs } from "../lib/sandbox/nested_repos.ts";

const dir = Deno.args[0];
const pairs = Number(Deno.args[1] ?? 8);
const noRename: RepoFs = { ...realRepoFs, rename: () => false };
const listing: RepoFs = { ...noRename, scan: undefined };

/** This process's user + system CPU time (ms; clock ticks of 10 ms). */
function cpuMs(): number {
  const f = Deno.readTextFileSync("/proc/self/stat").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

const wall: number[] = [], cpu: number[] = [];
for (let i = 0; i < pairs; i++) {
  const t: number[] = [], c: number[] = [];
  let entries = 0;
  for (const fs of [listing, noRename]) {
    const t0 = performance.now(), c0 = cpuMs();
    entries = checkNestedRepos({ project: dir, startMs: Date.now(), protectedGitDirs: [] }, fs).entries;
    t.push(performance.now() - t0);
    c.push(cpuMs() - c0);
  }
  wall.push(t[1] / t[0]);
  cpu.push(c[1] / c[0]);
  const ms = (x: number) => x.toFixed(0);
  console.log(`${entries} entries: list ${ms(t[0])} ms (cpu ${c[0]}), scan ${ms(t[1])} ms (cpu ${c[1]})`);
}
const r = (x: number) => x.toFixed(2);
for (const [what, xs] of [["wall", wall], ["cpu", cpu]] as const) {
  xs.sort((a, b) => a - b);
  console.log(`scan/list ${what}: median ${r(xs[xs.length >> 1])}, range ${r(xs[0])}–${r(xs.at(-1)!)}`);
}

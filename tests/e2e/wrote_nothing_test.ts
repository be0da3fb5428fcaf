/**
 * The exit checks are skipped only when the sandbox provably wrote nothing (lib/sandbox/wrote_nothing.ts): no
 * trapped call after the command's exec, and no regular file among the fds it was given. Judged from outside
 * with a hook written into a repository below the project's top during the session, which the nested
 * repositories' check moves aside (`NAME.hallpass-quarantined`) when it runs:
 *
 * - written by the sandbox through its stdout (a regular file there, no trapped call): moved aside;
 * - written by this test while a command that makes one trapped call runs: moved aside (the check runs);
 * - written by this test while a command that makes none runs: left alone, nothing said (the skip: another
 *   process's change is not this session's to judge; the control above shows the check would have taken it).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { exists, HALLPASS_ARGV, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import { gitAt as git } from "../helpers/git.ts";

const HOOK = "#!/bin/sh\necho hook\n";

async function repoBelow(s: { project: string; outside: string }): Promise<string> {
  await git(s.project, s.outside, "init", "-q");
  await Deno.mkdir(`${s.project}/sub`);
  assertEquals((await git(`${s.project}/sub`, s.outside, "init", "-q")).code, 0);
  return `${s.project}/sub/.git/hooks/post-checkout`;
}

/**
 * Runs `sh -c SCRIPT` under hallpass with pipes on 0-2: SCRIPT prints `ready` and waits for a line on stdin;
 * `meanwhile` runs once it said `ready`. Returns hallpass's exit code and stderr.
 */
async function session(
  project: string,
  script: string,
  meanwhile: () => Promise<void>,
): Promise<{ code: number; stderr: string }> {
  const child = new Deno.Command(HALLPASS_ARGV[0], {
    args: [...HALLPASS_ARGV.slice(1), "--no-ask", "--", "/bin/sh", "-c", script],
    cwd: project,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready")) {
    const r = await reader.read();
    if (r.done) break;
    out += r.value;
  }
  assert(out.includes("ready"), `the command did not start: ${out}`);
  await meanwhile();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode("go\n"));
  await w.close();
  while (!(await reader.read()).done) { /* drain */ }
  const st = await child.status;
  clearTimeout(timer);
  return { code: st.code, stderr: await stderr };
}

async function plant(hook: string): Promise<void> {
  await Deno.writeTextFile(hook, HOOK);
  await Deno.chmod(hook, 0o755);
}

test({
  name:
    "exit checks: a hook written meanwhile is moved aside when the command made a trapped call, and left to " +
    "its writer when the command made none",
  ignore: tool("git"),
}, async () => {
  const s = await scratch();
  try {
    const hook = await repoBelow(s);
    // Control: one trapped call (a file made in the project) and the check runs: the hook is moved aside.
    const c = await session(s.project, ": > made; echo ready; read x", () => plant(hook));
    assertEquals(c.code, 0, c.stderr);
    assert(await exists(`${s.project}/made`));
    assert(!(await exists(hook)) && await exists(`${hook}.hallpass-quarantined`), c.stderr);
    assert(c.stderr.includes("post-checkout"), c.stderr);
    await Deno.remove(`${hook}.hallpass-quarantined`);

    // No trapped call: the sandbox wrote nothing, the check is skipped and the hook (this test's) left.
    const r = await session(s.project, "echo ready; read x", () => plant(hook));
    assertEquals(r.code, 0, r.stderr);
    assert(await exists(hook) && !(await exists(`${hook}.hallpass-quarantined`)), r.stderr);
    assert(!r.stderr.includes("post-checkout"), r.stderr);
  } finally {
    await s.cleanup();
  }
});

test({
  name:
    "exit checks: a hook the sandbox writes through a regular file on its stdout, with no trapped call, is " +
    "still moved aside",
  ignore: tool("git"),
}, async () => {
  const s = await scratch();
  try {
    const hook = await repoBelow(s);
    // The redirection is the outer shell's (outside); the hook's text is the sandbox's, written by sh's printf
    // (a builtin: no exec, no trapped call).
    const inner = `printf '#!/bin/sh\\necho PWNED\\n'`;
    const o = await new Deno.Command("/bin/sh", {
      args: ["-c", `"$@" > ${hook}`, "sh", ...HALLPASS_ARGV, "--no-ask", "-q", "--", "/bin/sh", "-c", inner],
      cwd: s.project,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(o.stderr);
    assertEquals(o.code, 0, err);
    assert(!(await exists(hook)), `the hook is still there: ${err}`);
    const moved = await Deno.readTextFile(`${hook}.hallpass-quarantined`);
    assert(moved.includes("PWNED"), moved);
    assert(err.includes("post-checkout"), err);
  } finally {
    await s.cleanup();
  }
});

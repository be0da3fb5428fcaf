/**
 * git for the tests: the system's programs, the C locale, a fixed author and dates (the same commits in a bare
 * run and under hallpass), and no system-wide configuration.
 */
export const GIT_ENV = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  LANG: "C",
  GIT_AUTHOR_NAME: "T",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "T",
  GIT_COMMITTER_EMAIL: "t@example.com",
  GIT_AUTHOR_DATE: "2020-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2020-01-01T00:00:00Z",
  GIT_CONFIG_NOSYSTEM: "1",
};

/** `git ARGS` in `cwd` (HOME there too: no user configuration), without hallpass: its exit code and output. */
export function git(cwd: string, ...args: string[]): Promise<{ code: number; out: string }> {
  return gitAt(cwd, cwd, ...args);
}

/** `git ARGS` in `cwd` with HOME at `home`, without hallpass: its exit code and output. */
export async function gitAt(
  cwd: string,
  home: string,
  ...args: string[]
): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command("git", {
    args,
    cwd,
    env: { ...GIT_ENV, HOME: home },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

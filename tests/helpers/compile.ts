/**
 * C programs for the tests, compiled with gcc into temp directories everyone may read and run (the suite runs
 * as root and again as an unprivileged user). Each is compiled once per test process.
 */
const dec = new TextDecoder();

/** gcc -O1 `src` -o `out` `flags`; throws with gcc's message on failure. */
export async function gcc(src: string, out: string, flags: string[] = []): Promise<void> {
  const r = await new Deno.Command("gcc", {
    args: ["-O1", "-Wall", "-o", out, src, ...flags],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (r.code !== 0) throw new Error(`gcc ${src} failed:\n${dec.decode(r.stderr)}`);
}

/** A new temp directory, readable by everyone. */
export async function sharedTempDir(prefix: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  await Deno.chmod(dir, 0o755);
  return dir;
}

const compiled = new WeakMap<Record<string, string>, Promise<string>>();

/**
 * A test file's own C programs (name → source), compiled once with -pthread into one directory: its path
 * (program NAME is DIR/NAME).
 */
export function compileSources(sources: Record<string, string>, prefix = "hallpass-bins-"): Promise<string> {
  let p = compiled.get(sources);
  if (!p) {
    p = (async () => {
      const dir = await sharedTempDir(prefix);
      for (const [name, src] of Object.entries(sources)) {
        await Deno.writeTextFile(`${dir}/${name}.c`, src);
        await gcc(`${dir}/${name}.c`, `${dir}/${name}`, ["-pthread"]);
      }
      return dir;
    })();
    compiled.set(sources, p);
  }
  return p;
}

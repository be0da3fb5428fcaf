/**
 * Honest skips. A test that needs a tool or a kernel feature probes it first (a control, once per test
 * process) and, when it is missing, is reported by `deno test` as ignored with the reason in its name
 * ("NAME [skipped: tmux is not installed]"); tests/run_all.sh counts and lists those. Never console.log +
 * return, never a test that passes without checking anything.
 *
 * - `HALLPASS_TEST_MISSING=ia32,tmux` makes the named probes report "missing" (forced), to show the suite
 *   passes on a machine without them (docs/development.md).
 * - Under `CI=true`, a tool that `make test` installs (the Makefile's APT_PKGS / TEST_PKGS) must be there:
 *   its tests fail with the reason instead of being skipped.
 */

/** Why something a test needs is missing; undefined when it is there. */
export interface Missing {
  reason: string;
  /** `make test` installs it: under CI=true its absence is a failure, not a skip. */
  makeInstalls?: boolean;
}
export type Need = Missing | undefined;

const FORCED = new Set(
  (Deno.env.get("HALLPASS_TEST_MISSING") ?? "").split(",").map((s) => s.trim()).filter(Boolean),
);
const CI = Deno.env.get("CI") === "true";

const cache = new Map<string, Need | Promise<Need>>();

/** Whether `name` is forced missing by HALLPASS_TEST_MISSING. */
export function forcedMissing(name: string): boolean {
  return FORCED.has(name);
}

/**
 * Runs `check` once per process (by `name`): it returns undefined when the feature is there, else why not.
 * A probe named in HALLPASS_TEST_MISSING reports missing without running.
 */
export function probe(name: string, check: () => string | undefined): Need {
  if (FORCED.has(name)) return { reason: `${name} forced missing by HALLPASS_TEST_MISSING` };
  let r = cache.get(name) as Need | undefined;
  if (!cache.has(name)) {
    const why = check();
    r = why === undefined ? undefined : { reason: why };
    cache.set(name, r);
  }
  return r;
}

/** `probe` for a check that must wait (compiling and running a control program). */
export function probeAsync(name: string, check: () => Promise<string | undefined>): Promise<Need> {
  if (FORCED.has(name)) return Promise.resolve({ reason: `${name} forced missing by HALLPASS_TEST_MISSING` });
  let p = cache.get(name) as Promise<Need> | undefined;
  if (!p) {
    p = check().then((why) => why === undefined ? undefined : { reason: why });
    cache.set(name, p);
  }
  return p;
}

/** Command → the Debian package `make test` installs it from (Makefile APT_PKGS / TEST_PKGS). */
export const MAKE_INSTALLS: Record<string, string> = {
  tmux: "tmux",
  gcc: "gcc",
  python3: "python3",
  git: "git",
  strace: "strace",
  less: "less",
  vim: "vim",
  curl: "curl",
  nc: "netcat-openbsd",
  script: "bsdutils",
  tar: "tar",
  pgrep: "procps",
  "musl-gcc": "musl-tools",
  runc: "runc",
  crun: "crun",
  busybox: "busybox-static",
  chromium: "chromium",
  containerd: "containerd",
  ctr: "containerd",
  "dbus-daemon": "dbus-daemon",
  "dbus-send": "dbus-bin",
};

function onPath(cmd: string): boolean {
  if (cmd.includes("/")) {
    try {
      return Deno.statSync(cmd).isFile;
    } catch {
      return false;
    }
  }
  return (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":").some((d) => {
    try {
      return Deno.statSync(`${d}/${cmd}`).isFile;
    } catch {
      return false;
    }
  });
}

/** A program the test runs: missing when it is not on $PATH (or forced missing). */
export function tool(cmd: string): Need {
  const base = cmd.slice(cmd.lastIndexOf("/") + 1);
  const n = FORCED.has(base)
    ? { reason: `${base} forced missing by HALLPASS_TEST_MISSING` }
    : probe(cmd, () => onPath(cmd) ? undefined : `${cmd} is not installed`);
  if (!n) return n;
  const pkg = MAKE_INSTALLS[base];
  return pkg ? { ...n, reason: `${n.reason} (make test installs ${pkg})`, makeInstalls: true } : n;
}

/** The first of `needs` that is missing, if any. */
export function firstMissing(needs: Need | Need[]): Missing | undefined {
  return (Array.isArray(needs) ? needs : [needs]).find((n): n is Missing => n !== undefined);
}

type TestDef = Omit<Deno.TestDefinition, "ignore" | "fn"> & {
  /** What the test needs; the test is ignored (with the reason) when one is missing. */
  ignore?: Need | Need[];
  fn?: (t: Deno.TestContext) => void | Promise<void>;
};

/** The definition `deno test` gets: ignored with the reason in its name, or failing under CI. */
export function definition(
  def: TestDef,
  fn?: (t: Deno.TestContext) => void | Promise<void>,
): Deno.TestDefinition {
  const body = fn ?? def.fn!;
  const m = firstMissing(def.ignore);
  if (!m) return { ...def, ignore: false, fn: body };
  if (CI && m.makeInstalls) {
    return {
      ...def,
      ignore: false,
      fn: () => {
        throw new Error(`${m.reason}: under CI=true this is a failure, not a skip`);
      },
    };
  }
  return { ...def, name: `${def.name} [skipped: ${m.reason}]`, ignore: true, fn: body };
}

/** Deno.test with `ignore` naming what the test needs (see the module comment). */
export function test(def: TestDef, fn?: (t: Deno.TestContext) => void | Promise<void>): void {
  Deno.test(definition(def, fn));
}

/** t.step with `ignore` naming what the step needs. */
export function step(
  t: Deno.TestContext,
  def: TestDef,
  fn?: (t: Deno.TestContext) => void | Promise<void>,
): Promise<boolean> {
  return t.step(definition(def, fn) as Deno.TestStepDefinition);
}

/**
 * The running kernel's Landlock ABI is at least `abi` (what a promise resting on that ABI needs: truncate 3,
 * ioctl on devices 5, signal and abstract-socket scopes 6). Forced missing by `landlock-abi-N` (or
 * `landlock-abi`) in HALLPASS_TEST_MISSING.
 */
export function landlockAbi(abi: number, what: string): Promise<Need> {
  const name = `landlock-abi-${abi}`;
  if (FORCED.has("landlock-abi")) {
    return Promise.resolve({ reason: `${name} forced missing by HALLPASS_TEST_MISSING` });
  }
  return probeAsync(name, async () => {
    const { landlockAbi } = await import("../../ffi/landlock.ts");
    const have = landlockAbi();
    return have >= abi ? undefined : `${what} needs Landlock ABI ≥ ${abi}; this kernel has ${have}`;
  });
}

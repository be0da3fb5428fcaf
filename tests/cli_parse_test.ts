// The command line as README.md writes it: options, `--`, subcommands, and one-line errors for bad input.
import { deepStrictEqual, throws } from "node:assert/strict";
import { parseCommandLine } from "../lib/cli/options.ts";
import { UsageError } from "../lib/types.ts";

function run(argv: string[]) {
  const r = parseCommandLine(argv);
  if (r.kind !== "run") throw new Error(`not a run: ${r.kind}`);
  return r.opts;
}

Deno.test("options before the command; the command's own options are its own", () => {
  const o = run(["--project", "/p", "--allow-path=/a", "--allow-path", "/b", "ls", "-la", "--project"]);
  deepStrictEqual(o.project, "/p");
  deepStrictEqual(o.allowPaths, ["/a", "/b"]);
  deepStrictEqual(o.command, ["ls", "-la", "--project"]);
});

Deno.test("-- ends the options; doctor after -- is a program", () => {
  deepStrictEqual(run(["--", "doctor"]).command, ["doctor"]);
  deepStrictEqual(run(["--no-ask", "--", "-weird"]).command, ["-weird"]);
  deepStrictEqual(parseCommandLine(["doctor"]).kind, "doctor");
  deepStrictEqual(parseCommandLine(["rules", "write", "/x"]).kind, "rules");
});

Deno.test("defaults: mediate write,exec; --for 5m; no command means the shell", () => {
  const o = run([]);
  deepStrictEqual(o.mediate, { write: true, exec: true, connect: false });
  deepStrictEqual(o.forMs, 300_000);
  deepStrictEqual(o.command, []);
});

Deno.test("--mediate, durations", () => {
  deepStrictEqual(run(["--mediate", "write,connect"]).mediate, { write: true, exec: false, connect: true });
  deepStrictEqual(run(["--for", "1h30m"]).forMs, 5_400_000);
  deepStrictEqual(run(["--ask-timeout=90s"]).askTimeoutMs, 90_000);
});

Deno.test("bad input: one-line UsageErrors", () => {
  for (
    const argv of [
      ["--bogus"],
      ["--project"],
      ["--project="],
      ["--for", "5 minutes"],
      ["--for", "0s"],
      ["--mediate", "write,disk"],
      ["--no-ask=yes"],
      ["--log", "a", "--log", "b"],
      ["--no-ask", "--ask-program", "x"],
      ["doctor", "extra"],
      ["--allow-path", "x".repeat(5000)],
    ]
  ) {
    throws(
      () => parseCommandLine(argv),
      (e: unknown) => e instanceof UsageError && !e.message.includes("\n"),
    );
  }
});

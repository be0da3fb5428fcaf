import { equal } from "node:assert/strict";
import { renamedIn } from "../lib/sandbox/renamed_in.ts";

/** lstat over a map of path → ctime (ms); every listed path a directory. */
const fs = (ctimes: Record<string, number>) => ({
  lstat: (p: string) => p in ctimes ? { kind: "dir" as const, ctimeMs: ctimes[p] } : undefined,
});

Deno.test("renamedIn: a directory renamed in (its ctime and its parent's new) counts, up to the stop", () => {
  const old = 1_000, since = 5_000, now = 6_000;
  equal(
    renamedIn("/h/.local/bin", "/h", since, fs({ "/h": old, "/h/.local": now, "/h/.local/bin": now })),
    true,
  );
  // only the directory's entries changed (pip install --user): not moved in
  equal(
    renamedIn("/h/.local/bin", "/h", since, fs({ "/h": old, "/h/.local": old, "/h/.local/bin": now })),
    false,
  );
  // an ancestor renamed in: ~/.local, landing in $HOME
  equal(
    renamedIn("/h/.local/bin", "/h", since, fs({ "/h": now, "/h/.local": now, "/h/.local/bin": old })),
    true,
  );
  // $HOME itself is the stop: its own parent is never looked at
  equal(
    renamedIn(
      "/h/.local/bin",
      "/h",
      since,
      fs({ "/": now, "/h": now, "/h/.local": old, "/h/.local/bin": old }),
    ),
    false,
  );
  // a stop of "/"; a path not below the stop
  equal(renamedIn("/u/site", "/", since, fs({ "/": now, "/u": now, "/u/site": old })), true);
  equal(renamedIn("/elsewhere/bin", "/h", since, fs({ "/elsewhere": now, "/elsewhere/bin": now })), false);
});

import { deepEqual, equal } from "node:assert/strict";
import { checkPathShadows } from "../lib/sandbox/path_shadows.ts";

Deno.test("path shadows: a new program shadowing a later $PATH name moves aside; the project's own bin/ and new names stay", async () => {
  const home = await Deno.makeTempDir({ prefix: "hallpass-shadow-" });
  try {
    const start = Date.now();
    for (const d of [".local/bin", "proj/bin", "sys"]) await Deno.mkdir(`${home}/${d}`, { recursive: true });
    for (const f of ["sys/ls", "sys/cat", ".local/bin/ls", ".local/bin/newtool", "proj/bin/cat"]) {
      await Deno.writeTextFile(`${home}/${f}`, "#!/bin/sh\n");
    }
    const path = `${home}/.local/bin:${home}/proj/bin:${home}/sys`;
    // The project is proj: its bin/ is its own; ~/.local/bin is checked ($HOME is above the project).
    const lines = checkPathShadows(path, home, `${home}/proj`, start);
    equal(lines.length, 1, lines.join("\n"));
    deepEqual([...Deno.readDirSync(`${home}/.local/bin`)].map((e) => e.name), ["newtool"]);
    deepEqual([...Deno.readDirSync(`${home}/proj/bin`)].map((e) => e.name), ["cat"]);
    deepEqual([...Deno.readDirSync(`${home}/.local/bin.hallpass-quarantined`)].map((e) => e.name), ["ls"]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("path shadows: files from before the session stay", async () => {
  const home = await Deno.makeTempDir({ prefix: "hallpass-shadow-" });
  try {
    await Deno.mkdir(`${home}/bin`);
    await Deno.mkdir(`${home}/sys`);
    await Deno.writeTextFile(`${home}/bin/ls`, "");
    await Deno.writeTextFile(`${home}/sys/ls`, "");
    equal(checkPathShadows(`${home}/bin:${home}/sys`, home, "/elsewhere", Date.now() + 3_000).length, 0);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("path shadows: over 100 new shadows move the directory whole, in one line", async () => {
  const home = await Deno.makeTempDir({ prefix: "hallpass-shadow-" });
  try {
    const start = Date.now();
    for (const d of [".local/bin", "sys"]) await Deno.mkdir(`${home}/${d}`, { recursive: true });
    for (let i = 0; i < 101; i++) {
      await Deno.writeTextFile(`${home}/sys/t${i}`, "");
      await Deno.writeTextFile(`${home}/.local/bin/t${i}`, "");
    }
    // A name taken first at the quarantine (a symlink planted there): passed by, never replaced.
    await Deno.mkdir(`${home}/.local/bin.hallpass-quarantined-all`);
    await Deno.symlink("/elsewhere", `${home}/.local/bin.hallpass-quarantined-all/bin`);
    const lines = checkPathShadows(`${home}/.local/bin:${home}/sys`, home, "/elsewhere", start);
    equal(lines.length, 1, lines.join("\n"));
    equal(lines[0].includes("101 programs"), true, lines[0]);
    equal(Deno.lstatSync(`${home}/.local/bin.hallpass-quarantined-all/bin`).isSymlink, true);
    equal([...Deno.readDirSync(`${home}/.local`)].some((e) => e.name === "bin"), false);
    const moved = [...Deno.readDirSync(`${home}/.local/bin.hallpass-quarantined-all`)].map((e) => e.name)
      .sort();
    deepEqual(moved, ["bin", "bin.2"]);
    equal([...Deno.readDirSync(`${home}/.local/bin.hallpass-quarantined-all/bin.2`)].length, 101);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

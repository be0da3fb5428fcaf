import { equal, ok as assert } from "node:assert/strict";
import { checkPythonStartup } from "../lib/sandbox/python_startup.ts";

async function makeHome(): Promise<{ home: string; site: string }> {
  const home = await Deno.makeTempDir({ prefix: "hallpass-pystart-" });
  const site = `${home}/.local/lib/python3.11/site-packages`;
  await Deno.mkdir(site, { recursive: true });
  return { home, site };
}

Deno.test("python startup: a .pth and usercustomize made in the session move aside; other files stay", async () => {
  const { home, site } = await makeHome();
  try {
    const start = Date.now();
    await Deno.writeTextFile(`${site}/x.pth`, "import os\n");
    await Deno.writeTextFile(`${site}/usercustomize.py`, "\n");
    await Deno.writeTextFile(`${site}/module.py`, "\n");
    const lines = checkPythonStartup(home, undefined, start);
    equal(lines.length, 2, lines.join("\n"));
    const left = [...Deno.readDirSync(site)].map((e) => e.name).sort();
    equal(left.join(" "), "module.py");
    const q = [...Deno.readDirSync(`${site}.hallpass-quarantined`)].map((e) => e.name).sort();
    equal(q.join(" "), "usercustomize.py x.pth");
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("python startup: over 100 such files move the directory at once (one line)", async () => {
  const { home, site } = await makeHome();
  try {
    const start = Date.now();
    for (let i = 0; i < 150; i++) Deno.writeTextFileSync(`${site}/f${i}.pth`, "import os\n");
    const lines = checkPythonStartup(home, undefined, start);
    equal(lines.length, 1, lines.join("\n"));
    assert(lines[0].includes("150 files"), lines[0]);
    assert(!Deno.statSync(`${site}.hallpass-quarantined/site-packages`).isFile);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("python startup: files from before the session stay; $PYTHONUSERBASE is looked at instead", async () => {
  const { home, site } = await makeHome();
  try {
    await Deno.writeTextFile(`${site}/old.pth`, "import os\n");
    const start = Date.now() + 3_000; // the file is from before this "session"
    equal(checkPythonStartup(home, undefined, start).length, 0);
    const base = `${home}/base`;
    await Deno.mkdir(`${base}/lib/python3.12/site-packages`, { recursive: true });
    await Deno.writeTextFile(`${base}/lib/python3.12/site-packages/new.pth`, "import os\n");
    const lines = checkPythonStartup(home, base, Date.now() - 1_000);
    equal(lines.length, 1, lines.join("\n"));
    assert(lines[0].includes("new.pth"), lines[0]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

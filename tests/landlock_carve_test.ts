/**
 * The carve-out (lib/floor/landlock_carve.ts) checked against a model of Landlock: a path's access is the union of
 * the rules on it and its ancestors. For every path of a made-up tree (and paths created after start), the
 * access must be the grant's minus what the holes above it withhold; a new path in a carved directory gets
 * exactly the carved directory's missing bits less, and so does the carved directory itself.
 */
import assert from "node:assert/strict";
import {
  carve,
  type CarvedDir,
  carvedParent,
  type CarveEntry,
  type CarveFs,
  type CarveGrant,
  type CarveHole,
  CarveLimitError,
  type CarveRule,
  isAtOrBelow,
  normalise,
  withAliases,
} from "../lib/floor/landlock_carve.ts";

const R = 1n; // read file
const D = 2n; // read dir
const W = 4n; // write file
const M = 8n; // make file
const FILE_RIGHTS = R | W;

/** A tree: directories end with "/", symlinks are "name -> target", "name=2" a file with 2 links. */
function fakeFs(paths: string[]): CarveFs & { all: { path: string; kind: CarveEntry["kind"] }[] } {
  const dirs = new Map<string, CarveEntry[]>([["/", []]]);
  const all: { path: string; kind: CarveEntry["kind"] }[] = [{ path: "/", kind: "dir" }];
  for (const raw of paths) {
    let p = raw;
    let kind: CarveEntry["kind"] = "file";
    let links = 1;
    if (p.includes(" -> ")) {
      kind = "symlink";
      p = p.slice(0, p.indexOf(" -> "));
    } else if (p.endsWith("/")) {
      kind = "dir";
      p = p.slice(0, -1);
    } else if (p.includes("=")) {
      links = Number(p.slice(p.indexOf("=") + 1));
      p = p.slice(0, p.indexOf("="));
    }
    const parent = p.slice(0, p.lastIndexOf("/")) || "/";
    const entries = dirs.get(parent);
    if (!entries) throw new Error(`fake fs: ${parent} first`);
    entries.push({ name: p.slice(p.lastIndexOf("/") + 1), kind, links });
    if (kind === "dir") dirs.set(p, []);
    all.push({ path: p, kind });
  }
  return { list: (d) => dirs.get(d)?.slice(), all };
}

/** Landlock's answer for a path that existed at start (rules by path = by file here). */
function accessOf(rules: CarveRule[], path: string): bigint {
  let a = 0n;
  for (const r of rules) if (isAtOrBelow(path, r.path)) a |= r.access;
  return a;
}

/** Landlock's answer for a path created after start: only its ancestors' rules count. */
function accessOfNew(rules: CarveRule[], path: string): bigint {
  const parent = path.slice(0, path.lastIndexOf("/")) || "/";
  return accessOf(rules, parent);
}

/** What the person asked for: the grants' access minus what holes above withhold (per grant). */
function wanted(grants: CarveGrant[], holes: CarveHole[], path: string, isDir: boolean): bigint {
  let a = 0n;
  for (const g of grants) {
    if (!isAtOrBelow(path, g.path)) continue;
    let acc = g.access;
    for (const h of holes) if (isAtOrBelow(path, h.path) && isAtOrBelow(h.path, g.path)) acc &= ~h.withhold;
    a |= acc;
  }
  return isDir ? a : a & FILE_RIGHTS;
}

function check(
  tree: string[],
  grants: CarveGrant[],
  holes: CarveHole[],
  newPaths: string[] = [],
): ReturnType<typeof carve> {
  const fs = fakeFs(tree);
  const res = carve(grants, holes, fs, { fileRights: FILE_RIGHTS });
  for (const { path, kind } of fs.all) {
    if (kind === "symlink") continue;
    if (res.hardLinked.includes(path)) continue;
    const got = accessOf(res.rules, path);
    // A carved directory itself lacks its missing bits (listing it, making entries in it): part of the deal.
    const own = res.carved.find((c) => c.path === path)?.missing ?? 0n;
    const want = wanted(grants, holes, path, kind === "dir") & ~own;
    const mask = kind === "dir" ? -1n : FILE_RIGHTS;
    assert.equal((got & mask).toString(2), want.toString(2), `${path}: got ${got}, want ${want}`);
  }
  for (const p of newPaths) {
    const got = accessOfNew(res.rules, p) & FILE_RIGHTS;
    const c = carvedParent(res.carved, p);
    const want = wanted(grants, holes, p, false) & ~(c?.missing ?? 0n);
    assert.equal(got.toString(2), want.toString(2), `new ${p}: got ${got}, want ${want}`);
    // a new file under a hole never gets a withheld bit
    for (const h of holes) {
      if (isAtOrBelow(p, h.path)) assert.equal(got & h.withhold, 0n, `new ${p} under hole ${h.path}`);
    }
  }
  return res;
}

const HOME_TREE = [
  "/bin/",
  "/bin/sh",
  "/etc/",
  "/etc/passwd",
  "/home/",
  "/home/me/",
  "/home/me/.bashrc",
  "/home/me/.ssh/",
  "/home/me/.ssh/id_ed25519",
  "/home/me/.ssh/known_hosts",
  "/home/me/.config/",
  "/home/me/.config/gcloud/",
  "/home/me/.config/gcloud/credentials.db",
  "/home/me/.config/nvim/",
  "/home/me/.config/nvim/init.lua",
  "/home/me/proj/",
  "/home/me/proj/a.txt",
  "/home/other/",
  "/tmp/",
];

Deno.test("read everywhere except holes: every existing path gets exactly what is wanted", () => {
  const holes = [
    { path: "/home/me/.ssh", withhold: R },
    { path: "/home/me/.config/gcloud", withhold: R },
    { path: "/home/me/.aws", withhold: R }, // does not exist
  ];
  const res = check(HOME_TREE, [{ path: "/", access: R | D }], holes, [
    "/home/me/.aws",
    "/home/me/.ssh/id_new",
    "/home/me/.newfile",
    "/tmp/x",
    "/home/me/proj/new",
    "/home/me/.config/new",
  ]);
  assert.deepEqual(res.carved.map((c) => c.path), ["/", "/home", "/home/me", "/home/me/.config"]);
  for (const c of res.carved) assert.equal(c.missing, R);
  // the holes get no rule; the carved directories only what no hole withholds
  assert.ok(!res.rules.some((r) => r.path === "/home/me/.ssh" || r.path.startsWith("/home/me/.ssh/")));
  assert.deepEqual(res.rules.find((r) => r.path === "/"), { path: "/", access: D, dir: true });
  assert.equal(res.listed, 4);
});

Deno.test("a hole that does not exist yet: its nearest existing ancestor is carved, a create there gets nothing", () => {
  const res = check(HOME_TREE, [{ path: "/", access: R | D }], [{
    path: "/home/me/.kube/config",
    withhold: R,
  }], [
    "/home/me/.kube",
  ]);
  assert.deepEqual(res.carved.map((c) => c.path), ["/", "/home", "/home/me"]);
  assert.equal(accessOfNew(res.rules, "/home/me/.kube") & R, 0n);
});

Deno.test("a symlinked entry gets no rule (Landlock judges its target); a carved grant through a symlink is ignored", () => {
  const tree = [...HOME_TREE, "/home/me/link -> /home/me/.ssh", "/home/me/.ssh/lnk -> /etc/passwd"];
  const res = check(tree, [{ path: "/", access: R | D }], [{ path: "/home/me/.ssh", withhold: R }]);
  assert.ok(!res.rules.some((r) => r.path === "/home/me/link"));
  const r2 = carve(
    [{ path: "/home/me/link", access: R }],
    [{ path: "/home/me/link/id", withhold: R }],
    fakeFs(tree),
    {
      fileRights: FILE_RIGHTS,
    },
  );
  assert.deepEqual(r2.rules, []);
});

Deno.test("write under the project with holes at .git/hooks and .git/config (a file)", () => {
  const tree = [
    "/p/",
    "/p/src/",
    "/p/src/a.ts",
    "/p/.git/",
    "/p/.git/config",
    "/p/.git/HEAD",
    "/p/.git/hooks/",
    "/p/.git/hooks/pre-commit",
    "/p/.git/objects/",
    "/p/.hallpass/",
    "/p/.hallpass/rules",
  ];
  const holes = [
    { path: "/p/.git/hooks", withhold: W | M },
    { path: "/p/.git/config", withhold: W },
    { path: "/p/.hallpass", withhold: W | M },
  ];
  const res = check(tree, [{ path: "/p", access: W | M }], holes, ["/p/new", "/p/.git/new", "/p/src/new"]);
  assert.deepEqual(res.carved, [{ path: "/p", missing: W | M }, { path: "/p/.git", missing: W | M }]);
  // the fast path's question: is a create here covered by Landlock?
  assert.equal(carvedParent(res.carved, "/p/x")?.path, "/p");
  assert.equal(carvedParent(res.carved, "/p/src/x"), undefined);
});

Deno.test("different bits withheld below the same carved directory", () => {
  const tree = ["/p/", "/p/a/", "/p/a/x", "/p/b/", "/p/b/y", "/p/c"];
  const holes = [{ path: "/p/a", withhold: R }, { path: "/p/b", withhold: W }];
  const res = check(tree, [{ path: "/p", access: R | W | D }], holes, ["/p/a/n", "/p/b/n", "/p/n"]);
  assert.deepEqual(res.carved, [{ path: "/p", missing: R | W }]);
  assert.equal(res.rules.find((r) => r.path === "/p/a")?.access, W);
  assert.equal(res.rules.find((r) => r.path === "/p/b")?.access, R);
});

Deno.test("nested holes, a hole at the grant's root, a grant inside a hole (an allowed file)", () => {
  check(HOME_TREE, [{ path: "/", access: R | D }], [
    { path: "/home/me/.config", withhold: R },
    { path: "/home/me/.config/gcloud", withhold: R | D },
  ]);
  const r2 = check(HOME_TREE, [{ path: "/home/me/.ssh", access: R | D }], [{
    path: "/home/me/.ssh",
    withhold: R,
  }]);
  assert.deepEqual(r2.rules, [{ path: "/home/me/.ssh", access: D, dir: true }]);
  const r3 = check(HOME_TREE, [{ path: "/", access: R | D }, {
    path: "/home/me/.ssh/known_hosts",
    access: R,
  }], [
    { path: "/home/me/.ssh", withhold: R },
  ]);
  assert.equal(accessOf(r3.rules, "/home/me/.ssh/known_hosts") & R, R);
  assert.equal(accessOf(r3.rules, "/home/me/.ssh/id_ed25519") & R, 0n);
});

Deno.test("holes outside every grant change nothing; a hole below a file is unreachable", () => {
  const res = check(HOME_TREE, [{ path: "/home/me/proj", access: W }], [{
    path: "/home/me/.ssh",
    withhold: W,
  }]);
  assert.deepEqual(res.rules, [{ path: "/home/me/proj", access: W, dir: true }]);
  assert.deepEqual(res.carved, []);
  const r2 = check(HOME_TREE, [{ path: "/", access: R }], [{ path: "/etc/passwd/x", withhold: R }]);
  assert.equal(accessOf(r2.rules, "/etc/passwd"), R);
});

Deno.test("a file with several names in a carved directory gets no rule, and is reported", () => {
  const tree = [...HOME_TREE, "/home/me/key-copy=2", "/tmp/other=2"];
  const res = check(tree, [{ path: "/", access: R | D }], [{ path: "/home/me/.ssh", withhold: R }]);
  assert.deepEqual(res.hardLinked, ["/home/me/key-copy"]);
  assert.equal(accessOf(res.rules, "/home/me/key-copy") & R, 0n);
  assert.equal(accessOf(res.rules, "/tmp/other") & R, R); // not in a carved directory: under /tmp's rule
  const granted = carve([{ path: "/", access: R }], [{ path: "/home/me/.ssh", withhold: R }], fakeFs(tree), {
    fileRights: FILE_RIGHTS,
    grantHardLinks: true,
  });
  assert.equal(accessOf(granted.rules, "/home/me/key-copy") & R, R);
});

Deno.test("bounded: past maxRules it stops with CarveLimitError naming the directory", () => {
  const tree = ["/h/", "/h/.ssh/", ...Array.from({ length: 50 }, (_, i) => `/h/f${i}`)];
  assert.throws(
    () =>
      carve([{ path: "/", access: R }], [{ path: "/h/.ssh", withhold: R }], fakeFs(tree), {
        fileRights: FILE_RIGHTS,
        maxRules: 10,
      }),
    (e) => e instanceof CarveLimitError && e.dir === "/h",
  );
});

Deno.test("random trees and holes against the model", () => {
  let seed = 7;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  for (let round = 0; round < 300; round++) {
    const tree: string[] = [];
    const dirs = ["/"];
    const all: string[] = [];
    for (let i = 0; i < 25; i++) {
      const parent = dirs[rnd(dirs.length)];
      const p = `${parent === "/" ? "" : parent}/n${i}`;
      const k = rnd(4);
      if (k === 0) {
        tree.push(`${p} -> /`);
        continue;
      }
      tree.push(k === 1 ? p : `${p}/`);
      if (k !== 1) dirs.push(p);
      all.push(p);
    }
    const pick = () => {
      const base = all.length ? all[rnd(all.length)] : "/x";
      return rnd(3) === 0 ? `${base}/missing${rnd(3)}` : base;
    };
    const bits = () => BigInt(1 + rnd(15));
    const holes = Array.from({ length: 1 + rnd(4) }, () => ({ path: pick(), withhold: bits() }));
    const grants: CarveGrant[] = [{ path: "/", access: bits() }];
    if (rnd(2) && dirs.length > 1) grants.push({ path: dirs[1 + rnd(dirs.length - 1)], access: bits() });
    const newPaths = dirs.map((d) => `${d === "/" ? "" : d}/created`);
    check(tree, grants, holes, newPaths);
  }
});

Deno.test("withAliases: a hole reached through a symlink is also where it really is", () => {
  const resolve = (p: string) => p.replace(/^\/home\/me\/\.ssh/, "/data/ssh");
  assert.deepEqual(
    withAliases([{ path: "/home/me/.ssh/", withhold: R }, { path: "/etc", withhold: R }], resolve),
    [
      { path: "/home/me/.ssh", withhold: R },
      { path: "/data/ssh", withhold: R },
      { path: "/etc", withhold: R },
    ],
  );
  assert.equal(normalise("/a/./b/../c//"), "/a/c");
  const c: CarvedDir[] = [{ path: "/", missing: R }];
  assert.equal(carvedParent(c, "/x")?.path, "/");
});

Deno.test("a shared directory (/tmp) is never carved: the holes below it are dropped and reported", () => {
  const tree = [
    "/tmp/",
    "/tmp/home/",
    "/tmp/home/.ssh/",
    "/tmp/home/.ssh/id",
    "/tmp/x",
    "/etc/",
    "/etc/shadow",
  ];
  const fs = { ...fakeFs(tree), shared: (d: string) => d === "/tmp" };
  const res = carve(
    [{ path: "/", access: R }],
    [{ path: "/tmp/home/.ssh", withhold: R }, {
      path: "/etc/shadow",
      withhold: R,
    }],
    fs,
    { fileRights: FILE_RIGHTS },
  );
  assert.deepEqual(res.dropped, ["/tmp/home/.ssh"]);
  assert.deepEqual(res.carved.map((c) => c.path), ["/", "/etc"]);
  assert.equal(accessOf(res.rules, "/tmp/new-temp-file") & R, R);
  assert.equal(accessOf(res.rules, "/etc/shadow") & R, 0n);
});

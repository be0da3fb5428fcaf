import { deepEqual } from "node:assert/strict";
import { swapFiles, withRawDiskReads } from "../lib/floor/raw_disks.ts";

Deno.test("raw disks: the swap files of /proc/swaps (not partitions), octal escapes undone", () => {
  const text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
    "/swap.img                               file\t\t4194300\t\t0\t\t-2\n" +
    "/dev/zram0                              partition\t8388604\t\t0\t\t100\n" +
    "/var/my\\040swap                        file\t\t1024\t\t0\t\t-3\n";
  deepEqual(swapFiles(text), ["/swap.img", "/var/my swap"]);
  deepEqual(swapFiles("Filename\tType\tSize\tUsed\tPriority\n"), []);
});

Deno.test("raw disks: the kernel's device names become holes at /dev (devices only, missing ones left out)", async () => {
  const sys = await Deno.makeTempDir({ prefix: "hallpass-rawdisk-" });
  try {
    await Deno.mkdir(`${sys}/block`);
    // /dev/null stands in for a device node here; a name with no node in /dev is left out
    for (const n of ["null", "no-such-disk"]) await Deno.writeTextFile(`${sys}/block/${n}`, "");
    const r = withRawDiskReads({ protect: [], lifted: [], readable: [], unused: [] }, sys, "/dev");
    deepEqual(r.protect.map((p) => p.path).filter((p) => p.startsWith("/dev/")), ["/dev/null"]);
  } finally {
    await Deno.remove(sys, { recursive: true });
  }
});

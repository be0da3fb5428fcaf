/**
 * Raw disks are read holes: a block device holds every file of the file system on it, so reading it reads the
 * protected credentials too, past every hole the read floor has (red team: root in the sandbox read a key file
 * under `~/.ssh`, unreadable by its path, through the loop device it was attached to; on a machine, the same
 * through `/dev/sda`, `/dev/nvme0n1` or a decrypted `/dev/mapper/…`; tests/e2e/redteam6_test.ts). Every block
 * device the kernel lists (`/sys/class/block`), and the character devices that pass reads to a disk (SCSI
 * generic `sg*`, `bsg/*`, NVMe's generic `ng*`), are holes at their `/dev` names (READ_FILE withheld; Landlock
 * decides on the device, so `/dev/disk/by-*` and `/dev/mapper` links lead into the holes). Only root (or the
 * `disk` group) can open them at all; a device made after start is under no read rule (`/dev` is carved). Swap
 * files in use (`/proc/swaps`) are holes too: other processes' memory is paged out there.
 * Writes to them were decided already (outside the floor).
 *
 * @module
 */
import type { ReadProtection } from "../policy/secrets.ts";

function names(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch {
    return [];
  }
}

/**
 * The swap files in use (`/proc/swaps` text): they hold other processes' memory as it was paged out, an
 * agent's keys included (a swap partition is a block device, a hole already).
 */
export function swapFiles(procSwaps: string): string[] {
  return procSwaps.split("\n").slice(1).map((l) => l.split(/\s+/)).filter((f) => f[1] === "file" && f[0])
    .map((f) => f[0].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))));
}

/** `r` with every raw disk at start added as a protection (`sys` and `dev` for tests). */
export function withRawDiskReads(r: ReadProtection, sys = "/sys/class", dev = "/dev"): ReadProtection {
  const source = { kind: "builtin" as const, what: "raw disks" };
  const candidates = [
    // a name with "/" in it (cciss/c0d0) is listed with "!"
    ...["block", "scsi_generic", "nvme-generic"].flatMap((c) => names(`${sys}/${c}`)).map((n) =>
      n.replaceAll("!", "/")
    ),
    ...names(`${dev}/bsg`).map((n) => `bsg/${n}`),
  ].map((n) => `${dev}/${n}`);
  let swaps: string[] = [];
  try {
    swaps = swapFiles(Deno.readTextFileSync("/proc/swaps"));
  } catch { /* no /proc */ }
  const disks = [
    ...candidates.filter((p) => {
      try {
        const st = Deno.lstatSync(p);
        return st.isBlockDevice || st.isCharDevice;
      } catch {
        return false;
      }
    }),
    ...swaps,
  ];
  if (disks.length === 0) return r;
  return { ...r, protect: [...r.protect, ...disks.map((path) => ({ path, source }))] };
}

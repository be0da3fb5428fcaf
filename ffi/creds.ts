/**
 * Per-thread credentials for performing a write as the sandboxed caller would (lib/supervisor/mediator.ts):
 * file system ids, supplementary groups and effective capabilities, set with raw system calls on the calling
 * thread only (the C library's wrappers would change every thread of the process).
 */
import { ptrOf, SYS, sys } from "./libc.ts";

/** setgroups, setfsgid, setfsuid on this thread. Throws when the kernel did not take them. */
export function setThreadFsCreds(uid: number, gid: number, groups: number[]): void {
  const buf = new Uint8Array(Math.max(128, groups.length * 4));
  const v = new DataView(buf.buffer);
  groups.forEach((g, i) => v.setUint32(i * 4, g, true));
  if (sys(SYS.setgroups, groups.length, ptrOf(buf)) < 0) throw new Error("setgroups failed");
  sys(SYS.setfsgid, gid);
  sys(SYS.setfsuid, uid);
  // Both return the previous id and never fail: read the ids back to be sure they took.
  if (sys(SYS.setfsuid, -1) !== uid || sys(SYS.setfsgid, -1) !== gid) {
    throw new Error("setfsuid/setfsgid failed");
  }
}

const CAP_V3 = 0x20080522;
const capHeader = new Uint8Array(8);
new DataView(capHeader.buffer).setUint32(0, CAP_V3, true); // pid 0: this thread
const capData = new Uint8Array(24); // two struct __user_cap_data_struct { effective, permitted, inheritable }

/** This thread's effective and permitted capability sets (64-bit masks). */
export function threadCaps(): { effective: bigint; permitted: bigint; inheritable: bigint } {
  if (sys(SYS.capget, ptrOf(capHeader), ptrOf(capData)) < 0) throw new Error("capget failed");
  const v = new DataView(capData.buffer);
  const word = (i: number) => BigInt(v.getUint32(i, true)) | (BigInt(v.getUint32(12 + i, true)) << 32n);
  return { effective: word(0), permitted: word(4), inheritable: word(8) };
}

/**
 * Sets this thread's effective capabilities to `effective` (within its permitted set, which is kept: the
 * thread can raise them again). Throws when the kernel refused.
 */
export function setThreadEffectiveCaps(effective: bigint): void {
  const cur = threadCaps();
  const eff = effective & cur.permitted;
  const v = new DataView(capData.buffer);
  const put = (i: number, x: bigint) => {
    v.setUint32(i, Number(x & 0xffffffffn), true);
    v.setUint32(12 + i, Number((x >> 32n) & 0xffffffffn), true);
  };
  put(0, eff);
  put(4, cur.permitted);
  put(8, cur.inheritable);
  if (sys(SYS.capset, ptrOf(capHeader), ptrOf(capData)) < 0) throw new Error("capset failed");
}

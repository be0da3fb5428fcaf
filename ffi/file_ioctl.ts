/**
 * ioctl on one of the supervisor's own fds with an argument buffer (lib/supervisor/sys_calls.ts performs a
 * sandboxed program's file ioctls this way, on its copy of the program's fd).
 */
import { errno, libc } from "./libc.ts";

/** ioctl(fd, req, buf): 0 or more on success, -errno on failure. */
export function ioctlBuffer(fd: number, req: bigint, buf: Uint8Array<ArrayBuffer>): number {
  const r = libc().ioctl_p(fd, req, buf);
  return r < 0 ? -errno() : r;
}

/*
 * nocaps_write DIR: changes nothing with its capabilities (chmod to the same mode, times omitted), then drops every
 * capability of this process (capset: effective, permitted and inheritable
 * empty — no CAP_SETPCAP needed, and no exec after, which would give root its capabilities back), then tries
 * what the files in DIR refuse to a root without capabilities, printing "NAME=0" on success, "NAME=1" on
 * failure: write DIR/victim, chmod and chown DIR/owned, create DIR/priv/new, set DIR/owned's times.
 * Used by tests/e2e/performed_creds_test.ts, with and without hallpass.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  /*
   * First, with every capability: metadata calls that succeed and change nothing. The supervisor may keep that
   * this thread's credentials were its own; the capset below must make it forget.
   */
  char o[4096];
  snprintf(o, sizeof o, "%s/owned", argv[1]);
  (void)mkdir("/proc/nocaps-write", 0755); /* fails everywhere; under hallpass its mediator starts */
  struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
  if (chmod(o, 0644) != 0 || utimensat(AT_FDCWD, o, omit, 0) != 0) { perror("before"); return 2; }
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  if (syscall(SYS_capset, &h, d) != 0) { perror("capset"); return 2; }
  char p[4096];
  snprintf(p, sizeof p, "%s/victim", argv[1]);
  int fd = open(p, O_WRONLY | O_TRUNC);
  printf("write=%d\n", fd < 0 || write(fd, "x\n", 2) != 2);
  snprintf(p, sizeof p, "%s/owned", argv[1]);
  printf("chmod=%d\n", chmod(p, 0666) != 0);
  printf("chown=%d\n", chown(p, 0, 0) != 0);
  struct timespec ts[2] = {{978307200, 0}, {978307200, 0}};
  char q[4096];
  snprintf(q, sizeof q, "%s/priv/new", argv[1]);
  int c = open(q, O_WRONLY | O_CREAT | O_EXCL, 0644);
  printf("create=%d\n", c < 0);
  printf("utime=%d\n", utimensat(AT_FDCWD, p, ts, 0) != 0);
  return 0;
}

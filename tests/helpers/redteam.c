/*
 * Red-team probes (tests/e2e/redteam_test.ts). Usage:
 *   redteam setattr PATH   file_setattr(2) (Linux 6.17) sets FS_XFLAG_NODUMP on PATH; prints "ok" or the errno
 *   redteam getattr PATH   prints the xflags file_getattr(2) reads, in hex, or the errno
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NR_FILE_GETATTR 468
#define NR_FILE_SETATTR 469
#define FS_XFLAG_NODUMP 0x80

struct file_attr {
  unsigned long long fa_xflags;
  unsigned int fa_extsize, fa_nextents, fa_projid, fa_cowextsize;
};

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: redteam setattr|getattr PATH\n");
    return 2;
  }
  struct file_attr fa;
  memset(&fa, 0, sizeof fa);
  if (syscall(NR_FILE_GETATTR, AT_FDCWD, argv[2], &fa, sizeof fa, 0) != 0) {
    printf("getattr: %s\n", strerror(errno));
    return 1;
  }
  if (strcmp(argv[1], "getattr") == 0) {
    printf("%llx\n", fa.fa_xflags);
    return 0;
  }
  fa.fa_xflags |= FS_XFLAG_NODUMP;
  if (syscall(NR_FILE_SETATTR, AT_FDCWD, argv[2], &fa, sizeof fa, 0) != 0) {
    printf("setattr: %s\n", strerror(errno));
    return 1;
  }
  printf("ok\n");
  return 0;
}

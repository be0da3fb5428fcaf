// tmpfile_link DIR NAME: makes an unnamed file in DIR (O_TMPFILE), writes to it, then tries 50 times to give
// it the name DIR/NAME (linkat through /proc/self/fd). Prints "tmpfile ok", then "linked" or "link refused ERRNO".
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int fd = open(argv[1], O_TMPFILE | O_WRONLY, 0600);
  if (fd < 0) {
    printf("tmpfile failed %d\n", errno);
    return 1;
  }
  if (write(fd, "payload", 7) != 7) return 1;
  printf("tmpfile ok\n");
  char src[64], dst[4096];
  snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
  snprintf(dst, sizeof dst, "%s/%s", argv[1], argv[2]);
  int err = 0;
  for (int i = 0; i < 50; i++) {
    if (linkat(AT_FDCWD, src, AT_FDCWD, dst, AT_SYMLINK_FOLLOW) == 0) {
      printf("linked\n");
      return 0;
    }
    err = errno;
  }
  printf("link refused %d\n", err);
  return 0;
}

// Runs a copy of /usr/bin/true from a memfd named "x/../../usr/bin/true" through a symlink in the cwd that
// points at /proc/self/fd/N: the path a rule sees must not be taken for /usr/bin/true.
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
int main(int argc, char **argv) {
  int fd = memfd_create("x/../../usr/bin/true", 0);
  int src = open("/usr/bin/true", O_RDONLY);
  char buf[65536]; ssize_t n;
  while ((n = read(src, buf, sizeof buf)) > 0) write(fd, buf, n);
  char link[64]; snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  unlink("p"); symlink(link, "p");
  char *av[] = {"p", NULL};
  execv("./p", av);
  printf("exec ./p: %s\n", strerror(errno));
  return 0;
}

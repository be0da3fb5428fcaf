/*
 * stall_fuse MOUNTPOINT: a FUSE file system (raw /dev/fuse protocol, no libfuse) whose root directory answers
 * but every name looked up in it never does, until the kernel sends FUSE_INTERRUPT for that lookup (the
 * caller was signalled); then the lookup fails with EINTR. A file system that does not answer is the kind of
 * thing a supervisor must not wait on for good (tests/e2e/watchdog_test.ts). Root only. Prints "ready" once
 * mounted; runs until killed (the test unmounts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd;

static void reply(uint64_t unique, int error, const void *body, size_t len) {
  char buf[sizeof(struct fuse_out_header) + 512];
  struct fuse_out_header *h = (void *)buf;
  h->len = sizeof *h + len;
  h->error = error;
  h->unique = unique;
  if (len) memcpy(buf + sizeof *h, body, len);
  if (write(fd, buf, h->len) < 0) { /* the request is gone */ }
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) { perror("/dev/fuse"); return 1; }
  char opts[128];
  snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
  if (mount("stall", argv[1], "fuse.stall", MS_NOSUID | MS_NODEV, opts) < 0) { perror("mount"); return 1; }
  static char buf[1 << 20 | 4096];
  int said = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == ENOENT) continue;
      return 0; /* unmounted */
    }
    struct fuse_in_header *in = (void *)buf;
    void *body = buf + sizeof *in;
    switch (in->opcode) {
    case FUSE_INIT: {
      struct fuse_init_in *ii = body;
      struct fuse_init_out o = {0};
      o.major = FUSE_KERNEL_VERSION;
      o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
      o.max_readahead = ii->max_readahead;
      o.max_write = 4096;
      o.time_gran = 1;
      o.max_background = 16;
      o.congestion_threshold = 12;
      reply(in->unique, 0, &o, sizeof o);
      if (!said) { printf("ready\n"); fflush(stdout); said = 1; }
      break;
    }
    case FUSE_GETATTR: {
      struct fuse_attr_out o = {0};
      o.attr.ino = 1;
      o.attr.mode = S_IFDIR | 0755;
      o.attr.nlink = 2;
      reply(in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_LOOKUP:
      break; /* never answered: until interrupted */
    case FUSE_INTERRUPT: {
      struct fuse_interrupt_in *ii = body;
      reply(ii->unique, -EINTR, NULL, 0);
      break;
    }
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
      break; /* no reply */
    default:
      reply(in->unique, -ENOSYS, NULL, 0);
    }
  }
}

/*
 * try_write: performs write operations with raw system calls (no libc wrappers, so the exact call under test
 * is made) and prints one line per operation: "NAME ERRNO [details]" (ERRNO is OK or the errno's name).
 * Used by tests/e2e/write_forms_test.ts to compare a run under hallpass with a bare run.
 *
 *   try_write OP ARGS... [; OP ARGS...]...
 *
 * A DIRFD argument is "." (AT_FDCWD), a directory path that is opened O_RDONLY|O_DIRECTORY first (a read), or
 * "fd:PATH" (an O_PATH fd of any file, for AT_EMPTY_PATH).
 * FLAGS are words joined with "|": open flags (rdonly wronly rdwr creat excl trunc append cloexec nofollow
 * directory nonblock), AT_* (symlink_nofollow symlink_follow removedir empty_path), rename (noreplace exchange), or 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>
#include <linux/fs.h>

static const char *ename(int e) {
  switch (e) {
  case 0: return "OK";
  case EPERM: return "EPERM";
  case ENOENT: return "ENOENT";
  case EBADF: return "EBADF";
  case EACCES: return "EACCES";
  case EEXIST: return "EEXIST";
  case EXDEV: return "EXDEV";
  case ENOTDIR: return "ENOTDIR";
  case EISDIR: return "EISDIR";
  case EINVAL: return "EINVAL";
  case ENOTEMPTY: return "ENOTEMPTY";
  case ELOOP: return "ELOOP";
  case ENOSYS: return "ENOSYS";
  case EROFS: return "EROFS";
  case EFAULT: return "EFAULT";
  case ENODATA: return "ENODATA";
  case EOPNOTSUPP: return "EOPNOTSUPP";
  case ENAMETOOLONG: return "ENAMETOOLONG";
  case EBUSY: return "EBUSY";
  case ETXTBSY: return "ETXTBSY";
  default: {
    static char buf[32];
    snprintf(buf, sizeof buf, "E%d", e);
    return buf;
  }
  }
}

static long flags_of(const char *s) {
  static const struct { const char *n; long v; } t[] = {
      {"0", 0}, {"rdonly", O_RDONLY}, {"wronly", O_WRONLY}, {"rdwr", O_RDWR}, {"creat", O_CREAT},
      {"excl", O_EXCL}, {"trunc", O_TRUNC}, {"append", O_APPEND}, {"cloexec", O_CLOEXEC},
      {"nofollow", O_NOFOLLOW}, {"directory", O_DIRECTORY}, {"nonblock", O_NONBLOCK}, {"path", O_PATH}, {"tmpfile", O_TMPFILE},
      {"symlink_nofollow", AT_SYMLINK_NOFOLLOW}, {"symlink_follow", AT_SYMLINK_FOLLOW},
      {"removedir", AT_REMOVEDIR}, {"empty_path", AT_EMPTY_PATH}, {"noreplace", RENAME_NOREPLACE},
      {"exchange", RENAME_EXCHANGE}, {"xcreate", XATTR_CREATE}, {"xreplace", XATTR_REPLACE},
  };
  long v = 0;
  char *dup = strdup(s), *save = NULL;
  for (char *w = strtok_r(dup, "|", &save); w; w = strtok_r(NULL, "|", &save)) {
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
      if (!strcmp(t[i].n, w)) break;
    if (i == sizeof t / sizeof t[0]) {
      fprintf(stderr, "try_write: unknown flag %s\n", w);
      exit(2);
    }
    v |= t[i].v;
  }
  free(dup);
  return v;
}

static int dirfd_of(const char *s) {
  if (!strcmp(s, ".")) return AT_FDCWD;
  /* "fd:PATH": an O_PATH fd of whatever is at PATH (for the AT_EMPTY_PATH fd forms, e.g. linkat(fd, "")) */
  int fd = !strncmp(s, "fd:", 3) ? open(s + 3, O_PATH | O_CLOEXEC) : open(s, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    printf("dirfd-open %s\n", ename(errno));
    fflush(stdout);
    exit(3);
  }
  return fd;
}

/* An fd to act on (fchmod and friends): opened read-only (a read, never mediated). */
static int rofd(const char *p) {
  int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) fd = open(p, O_PATH | O_CLOEXEC | O_NOFOLLOW);
  return fd;
}

/* The fd's flags and the file's mode as the kernel reports them. */
static void describe_fd(int fd) {
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(p, "re");
  unsigned flags = 0;
  if (f) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "flags: %o", &flags) == 1) break;
    fclose(f);
  }
  struct stat st;
  fstat(fd, &st);
  int fl = fcntl(fd, F_GETFL);
  int fdfl = fcntl(fd, F_GETFD);
  printf(" fdinfo=0%o getfl=0%o cloexec=%d mode=0%o", flags, (unsigned)fl, (fdfl & FD_CLOEXEC) ? 1 : 0,
         (unsigned)(st.st_mode & 07777));
}

#define ARG(i) (i < argc ? argv[i] : (fprintf(stderr, "try_write: %s needs more arguments\n", op), exit(2), ""))

int main(int argc, char **argv) {
  if (getenv("TRY_UMASK")) umask(strtol(getenv("TRY_UMASK"), NULL, 8));
  int i = 1;
  while (i < argc) {
    const char *op = argv[i++];
    long r = 0;
    int fd = -1, fd2 = -1;
    char extra[512] = "";
    errno = 0;
    if (!strcmp(op, ";")) continue;
    if (!strcmp(op, "umask")) { umask(strtol(ARG(i), NULL, 8)); i++; continue; }
    if (!strcmp(op, "open")) { /* open PATH FLAGS MODE [DATA] */
      r = syscall(SYS_open, ARG(i), flags_of(ARG(i + 1)), strtol(ARG(i + 2), NULL, 8)); i += 3; fd = r;
    } else if (!strcmp(op, "openat")) { /* openat DIRFD PATH FLAGS MODE [DATA] */
      r = syscall(SYS_openat, dirfd_of(ARG(i)), ARG(i + 1), flags_of(ARG(i + 2)), strtol(ARG(i + 3), NULL, 8));
      i += 4; fd = r;
    } else if (!strcmp(op, "creat")) {
      r = syscall(SYS_creat, ARG(i), strtol(ARG(i + 1), NULL, 8)); i += 2; fd = r;
    } else if (!strcmp(op, "truncate")) {
      r = syscall(SYS_truncate, ARG(i), atol(ARG(i + 1))); i += 2;
    } else if (!strcmp(op, "ftruncate")) { /* opens for writing, then ftruncate */
      r = fd2 = syscall(SYS_open, ARG(i), O_WRONLY | O_CLOEXEC);
      if (r >= 0) r = syscall(SYS_ftruncate, fd2, atol(ARG(i + 1)));
      i += 2;
    } else if (!strcmp(op, "mkdir")) {
      r = syscall(SYS_mkdir, ARG(i), strtol(ARG(i + 1), NULL, 8)); i += 2;
    } else if (!strcmp(op, "mkdirat")) {
      r = syscall(SYS_mkdirat, dirfd_of(ARG(i)), ARG(i + 1), strtol(ARG(i + 2), NULL, 8)); i += 3;
    } else if (!strcmp(op, "mknod-fifo")) {
      r = syscall(SYS_mknod, ARG(i), S_IFIFO | strtol(ARG(i + 1), NULL, 8), 0); i += 2;
    } else if (!strcmp(op, "mknodat-fifo")) {
      r = syscall(SYS_mknodat, dirfd_of(ARG(i)), ARG(i + 1), S_IFIFO | strtol(ARG(i + 2), NULL, 8), 0); i += 3;
    } else if (!strcmp(op, "unlink")) {
      r = syscall(SYS_unlink, ARG(i)); i += 1;
    } else if (!strcmp(op, "unlinkat")) {
      r = syscall(SYS_unlinkat, dirfd_of(ARG(i)), ARG(i + 1), flags_of(ARG(i + 2))); i += 3;
    } else if (!strcmp(op, "rmdir")) {
      r = syscall(SYS_rmdir, ARG(i)); i += 1;
    } else if (!strcmp(op, "rename")) {
      r = syscall(SYS_rename, ARG(i), ARG(i + 1)); i += 2;
    } else if (!strcmp(op, "renameat")) {
      r = syscall(SYS_renameat, dirfd_of(ARG(i)), ARG(i + 1), dirfd_of(ARG(i + 2)), ARG(i + 3)); i += 4;
    } else if (!strcmp(op, "renameat2")) {
      r = syscall(SYS_renameat2, dirfd_of(ARG(i)), ARG(i + 1), dirfd_of(ARG(i + 2)), ARG(i + 3),
                  flags_of(ARG(i + 4)));
      i += 5;
    } else if (!strcmp(op, "link")) {
      r = syscall(SYS_link, ARG(i), ARG(i + 1)); i += 2;
    } else if (!strcmp(op, "linkat")) {
      r = syscall(SYS_linkat, dirfd_of(ARG(i)), ARG(i + 1), dirfd_of(ARG(i + 2)), ARG(i + 3), flags_of(ARG(i + 4)));
      i += 5;
    } else if (!strcmp(op, "symlink")) {
      r = syscall(SYS_symlink, ARG(i), ARG(i + 1)); i += 2;
    } else if (!strcmp(op, "symlinkat")) {
      r = syscall(SYS_symlinkat, ARG(i), dirfd_of(ARG(i + 1)), ARG(i + 2)); i += 3;
    } else if (!strcmp(op, "chmod")) {
      r = syscall(SYS_chmod, ARG(i), strtol(ARG(i + 1), NULL, 8)); i += 2;
    } else if (!strcmp(op, "fchmod")) {
      fd2 = rofd(ARG(i));
      r = syscall(SYS_fchmod, fd2, strtol(ARG(i + 1), NULL, 8)); i += 2;
    } else if (!strcmp(op, "fchmodat")) {
      r = syscall(SYS_fchmodat, dirfd_of(ARG(i)), ARG(i + 1), strtol(ARG(i + 2), NULL, 8)); i += 3;
    } else if (!strcmp(op, "chown")) {
      r = syscall(SYS_chown, ARG(i), getuid(), getgid()); i += 1;
    } else if (!strcmp(op, "lchown")) {
      r = syscall(SYS_lchown, ARG(i), getuid(), getgid()); i += 1;
    } else if (!strcmp(op, "fchown")) {
      fd2 = rofd(ARG(i));
      r = syscall(SYS_fchown, fd2, getuid(), getgid()); i += 1;
    } else if (!strcmp(op, "fchownat")) {
      r = syscall(SYS_fchownat, dirfd_of(ARG(i)), ARG(i + 1), getuid(), getgid(), flags_of(ARG(i + 2))); i += 3;
    } else if (!strcmp(op, "utime")) {
      struct utimbuf u = {.actime = atol(ARG(i + 1)), .modtime = atol(ARG(i + 1))};
      r = syscall(SYS_utime, ARG(i), &u); i += 2;
    } else if (!strcmp(op, "utimes")) {
      struct timeval tv[2] = {{atol(ARG(i + 1)), 250000}, {atol(ARG(i + 1)), 500000}};
      r = syscall(SYS_utimes, ARG(i), tv); i += 2;
    } else if (!strcmp(op, "utimensat")) { /* utimensat DIRFD PATH SECONDS FLAGS */
      struct timespec ts[2] = {{atol(ARG(i + 2)), 123}, {atol(ARG(i + 2)), 456}};
      r = syscall(SYS_utimensat, dirfd_of(ARG(i)), ARG(i + 1), ts, flags_of(ARG(i + 3))); i += 4;
    } else if (!strcmp(op, "futimens")) { /* utimensat(fd, NULL, ...) */
      fd2 = rofd(ARG(i));
      struct timespec ts[2] = {{atol(ARG(i + 1)), 0}, {atol(ARG(i + 1)), 0}};
      r = syscall(SYS_utimensat, fd2, NULL, ts, 0); i += 2;
    } else if (!strcmp(op, "setxattr") || !strcmp(op, "lsetxattr")) {
      long nr = op[0] == 'l' ? SYS_lsetxattr : SYS_setxattr;
      r = syscall(nr, ARG(i), ARG(i + 1), ARG(i + 2), strlen(ARG(i + 2)), 0); i += 3;
    } else if (!strcmp(op, "fsetxattr")) {
      fd2 = rofd(ARG(i));
      r = syscall(SYS_fsetxattr, fd2, ARG(i + 1), ARG(i + 2), strlen(ARG(i + 2)), 0); i += 3;
    } else if (!strcmp(op, "removexattr") || !strcmp(op, "lremovexattr")) {
      long nr = op[0] == 'l' ? SYS_lremovexattr : SYS_removexattr;
      r = syscall(nr, ARG(i), ARG(i + 1)); i += 2;
    } else if (!strcmp(op, "fremovexattr")) {
      fd2 = rofd(ARG(i));
      r = syscall(SYS_fremovexattr, fd2, ARG(i + 1)); i += 2;
    } else if (!strcmp(op, "getxattr")) { /* a read, for checking */
      char v[256] = "";
      r = syscall(SYS_lgetxattr, ARG(i), ARG(i + 1), v, sizeof v - 1); i += 2;
      if (r >= 0) { v[r] = 0; snprintf(extra, sizeof extra, " value=%s", v); }
    } else {
      fprintf(stderr, "try_write: unknown operation %s\n", op);
      return 2;
    }
    int e = r < 0 ? errno : 0;
    printf("%s %s%s", op, ename(e), extra);
    if (fd >= 0) {
      describe_fd(fd);
      /* Data for an opened file: the word after the open's arguments unless it is ";" */
      if (i < argc && strcmp(argv[i], ";")) {
        ssize_t w = write(fd, argv[i], strlen(argv[i]));
        printf(" wrote=%zd", w);
        i++;
      }
      close(fd);
    } else if ((!strcmp(op, "open") || !strcmp(op, "openat") || !strcmp(op, "creat")) && i < argc &&
               strcmp(argv[i], ";")) {
      i++; /* skip the data of a failed open */
    }
    if (fd2 >= 0) close(fd2);
    printf("\n");
    fflush(stdout);
  }
  return 0;
}

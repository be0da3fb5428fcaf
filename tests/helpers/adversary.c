/*
 * adversary: what a hostile sandboxed program would try against hallpass (tests/e2e/adversarial_*_test.ts).
 * Each subcommand prints one line "NAME RESULT [details]" where RESULT is OK or an errno name.
 *
 *   race ALLOWED OUTSIDE N      a thread flips the path buffer between ALLOWED and OUTSIDE while the main
 *                               thread opens it O_WRONLY|O_CREAT N times; prints how many fds were outside
 *   x32 PATH                    openat through the x32 ABI (nr | 0x40000000)
 *   int80 PATH                  32-bit open through int 0x80 (x86_64 only)
 *   tiocsti FD                  TIOCSTI with the plain and the high-bits request, TIOCLINUX
 *   unshare                     unshare(CLONE_NEWUSER), unshare(CLONE_NEWNS)
 *   io_uring | openat2 PATH | open_by_handle_at PATH | userfaultfd
 *   kill PID | ptrace PID | procmem PID
 *   reopen PATH                 open PATH read-only, then reopen it for writing via /proc/self/fd, /dev/fd,
 *                               /proc/PID/fd and /proc/thread-self/fd
 *   daemon PIDFILE OUT          setsid + double fork; the grandchild writes its pid to PIDFILE, then appends a
 *                               line to OUT every 50 ms for 60 s (each through a fresh open)
 *   ancestors                   prints "ancestors PPID GPPID" (the launcher and hallpass)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e) {
  static char buf[32];
  if (e == 0) return "OK";
  const char *n = strerrorname_np(e);
  if (n) return n;
  snprintf(buf, sizeof buf, "E%d", e);
  return buf;
}

static void show(const char *what, long r) {
  printf("%s %s\n", what, ename(r < 0 ? errno : 0));
  fflush(stdout);
}

/* ---- race */
static char racebuf[4096];
static const char *pa, *pb;
static atomic_int stop;
static atomic_long flips;

static void *flipper(void *arg) {
  (void)arg;
  size_t la = strlen(pa) + 1, lb = strlen(pb) + 1;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    memcpy(racebuf, pa, la);
    memcpy(racebuf, pb, lb);
    atomic_fetch_add_explicit(&flips, 1, memory_order_relaxed);
  }
  return NULL;
}

static int race(const char *allowed, const char *outside, long n) {
  pa = allowed;
  pb = outside;
  strcpy(racebuf, allowed);
  pthread_t t;
  pthread_create(&t, NULL, flipper, NULL);
  long ok = 0, denied = 0, other = 0, outside_fds = 0;
  char link[64], target[4096];
  /* On a loaded machine the flipper may not run at all during N opens: wait for it to start, and go on past
   * N (up to 60 s) until both names have been opened at least once, so the race really happened. */
  while (atomic_load(&flips) == 0) sched_yield();
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0;; i++) {
    if (i >= n) {
      if (ok > 0 && denied > 0) break;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - t0.tv_sec > 60) break;
      if (i % 64 == 0) sched_yield();
    }
    int fd = open(racebuf, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ok++;
      snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      ssize_t l = readlink(link, target, sizeof target - 1);
      if (l > 0) {
        target[l] = 0;
        /* Inside the allowed path's directory counts as inside: the flipper's memcpy can be read half done,
         * and "PROJECT/" + the outside name's last byte is another name in the project, not an escape. */
        size_t dl = (size_t)(strrchr(allowed, '/') - allowed) + 1;
        if (strncmp(target, allowed, dl) != 0 || strchr(target + dl, '/') != NULL) {
          if (!outside_fds) fprintf(stderr, "race: an fd outside: %s\n", target);
          outside_fds++;
        }
      }
      close(fd);
    } else if (errno == EACCES) {
      denied++;
    } else {
      other++;
    }
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("race ok=%ld denied=%ld other=%ld outside=%ld\n", ok, denied, other, outside_fds);
  return 0;
}

/* ---- daemon */
static int daemonize(const char *pidfile, const char *out) {
  pid_t p = fork();
  if (p < 0) return 1;
  if (p > 0) {
    printf("daemon started\n");
    fflush(stdout);
    return 0;
  }
  setsid();
  if (fork() != 0) _exit(0);
  signal(SIGHUP, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  char buf[64];
  int n = snprintf(buf, sizeof buf, "%d\n", getpid());
  int fd = open(pidfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) write(fd, buf, n), close(fd);
  for (int i = 0; i < 1200; i++) {
    int o = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (o >= 0) {
      n = snprintf(buf, sizeof buf, "tick %d\n", i);
      write(o, buf, n);
      close(o);
    }
    usleep(50000);
  }
  _exit(0);
}

static pid_t ppid_of(pid_t pid) {
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/%d/status", pid);
  FILE *f = fopen(p, "re");
  pid_t r = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "PPid: %d", &r) == 1) break;
  fclose(f);
  return r;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *cmd = argv[1];
  const char *a = argc > 2 ? argv[2] : "";
  if (!strcmp(cmd, "race")) return race(argv[2], argv[3], atol(argv[4]));
  if (!strcmp(cmd, "x32")) {
    long r = syscall(0x40000000 | SYS_openat, AT_FDCWD, a, O_WRONLY | O_CREAT, 0644);
    show("x32-openat", r);
    r = syscall(0x40000000 | 83 /* x32 mkdir */, a, 0755);
    show("x32-mkdir", r);
    return 0;
  }
  if (!strcmp(cmd, "int80")) {
#if defined(__x86_64__)
    /* The path must be addressable with 32 bits. */
    char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    strcpy(low, a);
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(5 /* i386 open */), "b"(low), "c"(O_WRONLY | O_CREAT), "d"(0644)
                     : "memory");
    printf("int80-open %s\n", r < 0 ? ename((int)-r) : "OK");
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(39 /* i386 mkdir */), "b"(low), "c"(0755) : "memory");
    printf("int80-mkdir %s\n", r < 0 ? ename((int)-r) : "OK");
#else
    printf("int80-open SKIP\nint80-mkdir SKIP\n");
#endif
    return 0;
  }
  if (!strcmp(cmd, "tiocsti")) {
    int fd = atoi(a);
    char c = 'x';
    show("tiocsti", syscall(SYS_ioctl, fd, 0x5412UL, &c));
    show("tiocsti-highbits", syscall(SYS_ioctl, fd, 0xdeadbeef00005412UL, &c));
    char sub = 6; /* TIOCL_SETSEL-ish subcode: a paste request */
    show("tioclinux", syscall(SYS_ioctl, fd, 0x541CUL, &sub));
    show("tioclinux-highbits", syscall(SYS_ioctl, fd, 0x100000000000541CUL, &sub));
    return 0;
  }
  if (!strcmp(cmd, "unshare")) {
    show("unshare-user", syscall(SYS_unshare, CLONE_NEWUSER));
    long r = syscall(SYS_unshare, CLONE_NEWNS);
    printf("unshare-ns %s\n", ename(r < 0 ? errno : 0)); /* root may; Landlock still forbids mounting */
    show("mount-private", syscall(SYS_mount, "none", "/", NULL, MS_REC | MS_PRIVATE, NULL));
    show("mount-tmpfs", syscall(SYS_mount, "none", a, "tmpfs", 0, NULL));
    show("mount-bind", syscall(SYS_mount, "/tmp", a, NULL, MS_BIND, NULL));
    pid_t c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (c == 0) _exit(0);
    if (c > 0) waitpid(c, NULL, 0);
    show("clone-newuser", c);
    struct { unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } ca = {
        CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0};
    c = syscall(SYS_clone3, &ca, sizeof ca);
    if (c == 0) _exit(0);
    if (c > 0) waitpid(c, NULL, 0);
    show("clone3-newuser", c);
    return 0;
  }
  if (!strcmp(cmd, "io_uring")) {
    char params[120] = {0};
    show("io_uring_setup", syscall(SYS_io_uring_setup, 4, params));
    return 0;
  }
  if (!strcmp(cmd, "openat2")) {
    struct { unsigned long long flags, mode, resolve; } how = {O_WRONLY | O_CREAT, 0644, 0};
    show("openat2", syscall(SYS_openat2, AT_FDCWD, a, &how, sizeof how));
    return 0;
  }
  if (!strcmp(cmd, "open_by_handle_at")) {
    struct { unsigned int bytes; int type; unsigned char h[128]; } fh = {128, 0, {0}};
    int mnt = -1;
    long r = syscall(SYS_name_to_handle_at, AT_FDCWD, a, &fh, &mnt, 0);
    show("name_to_handle_at", r);
    int mfd = open("/", O_RDONLY | O_DIRECTORY);
    show("open_by_handle_at", syscall(SYS_open_by_handle_at, mfd, &fh, O_WRONLY));
    return 0;
  }
  if (!strcmp(cmd, "userfaultfd")) {
    show("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
    show("userfaultfd-user", syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */));
    return 0;
  }
  if (!strcmp(cmd, "kill")) {
    pid_t p = atoi(a);
    show("kill-0", kill(p, 0));
    show("kill-TERM", kill(p, SIGTERM));
    show("kill-KILL", kill(p, SIGKILL));
    return 0;
  }
  if (!strcmp(cmd, "ptrace")) {
    pid_t p = atoi(a);
    show("ptrace-attach", ptrace(PTRACE_ATTACH, p, 0, 0));
    show("ptrace-seize", ptrace(PTRACE_SEIZE, p, 0, 0));
    return 0;
  }
  if (!strcmp(cmd, "procmem")) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%s/mem", a);
    show("procmem-rdwr", open(p, O_RDWR));
    return 0;
  }
  if (!strcmp(cmd, "reopen")) {
    int fd = open(a, O_RDONLY);
    if (fd < 0) return show("reopen-setup", -1), 1;
    char p[128];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    show("reopen-proc-self", open(p, O_WRONLY | O_APPEND));
    snprintf(p, sizeof p, "/dev/fd/%d", fd);
    show("reopen-dev-fd", open(p, O_RDWR));
    snprintf(p, sizeof p, "/proc/%d/fd/%d", getpid(), fd);
    show("reopen-proc-pid", open(p, O_WRONLY | O_TRUNC));
    snprintf(p, sizeof p, "/proc/thread-self/fd/%d", fd);
    show("reopen-thread-self", open(p, O_WRONLY));
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    show("reopen-truncate", truncate(p, 0));
    show("reopen-chmod", chmod(p, 0777));
    return 0;
  }
  if (!strcmp(cmd, "daemon")) return daemonize(argv[2], argv[3]);
  if (!strcmp(cmd, "attack-ancestors")) { /* the launcher (parent) and hallpass (grandparent) */
    pid_t targets[2] = {getppid(), ppid_of(getppid())};
    const char *names[2] = {"launcher", "hallpass"};
    char what[64], p[64];
    for (int k = 0; k < 2; k++) {
      printf("%s-pid %d\n", names[k], targets[k]);
      snprintf(what, sizeof what, "%s-kill0", names[k]);
      show(what, kill(targets[k], 0));
      snprintf(what, sizeof what, "%s-killTERM", names[k]);
      show(what, kill(targets[k], SIGTERM));
      snprintf(what, sizeof what, "%s-killKILL", names[k]);
      show(what, kill(targets[k], SIGKILL));
      snprintf(what, sizeof what, "%s-ptrace", names[k]);
      show(what, ptrace(PTRACE_ATTACH, targets[k], 0, 0));
      snprintf(what, sizeof what, "%s-memwrite", names[k]);
      snprintf(p, sizeof p, "/proc/%d/mem", targets[k]);
      show(what, open(p, O_RDWR));
      snprintf(what, sizeof what, "%s-pidfd-signal", names[k]);
      int pfd = syscall(SYS_pidfd_open, targets[k], 0);
      show(what, pfd < 0 ? pfd : syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0));
      snprintf(what, sizeof what, "%s-pidfd-getfd", names[k]);
      show(what, pfd < 0 ? pfd : syscall(SYS_pidfd_getfd, pfd, 0, 0));
    }
    return 0;
  }
  if (!strcmp(cmd, "ancestors")) {
    pid_t pp = getppid();
    printf("ancestors %d %d\n", pp, ppid_of(pp));
    return 0;
  }
  fprintf(stderr, "adversary: unknown %s\n", cmd);
  return 2;
}

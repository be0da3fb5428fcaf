/*
 * rename_race PROJECT OUTSIDE SECONDS: races against the decision on both ends of a rename, for SECONDS:
 *   - a thread flips the destination path buffer between PROJECT/d/b and OUTSIDE/victim while the main
 *     thread renames PROJECT/d/a (re-created each time, content "pwn") onto it;
 *   - a thread swaps PROJECT/sw between a directory and a symlink to OUTSIDE (renameat2 RENAME_EXCHANGE of
 *     two names) while the main thread renames PROJECT/d/a onto PROJECT/sw/victim, and links it there.
 * Prints "rename_race ok=N denied=N other=N". Judged from outside: OUTSIDE must be unchanged.
 * On a loaded machine the threads may not run at all for SECONDS: the renames start once both have, and go on
 * past SECONDS (up to 60 s) until the race has happened: an allowed rename and a refused one (EACCES), or
 * (without hallpass) OUTSIDE/victim overwritten.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char dst[4096];
static char pa[4096], pb[4096], swd[4096], swl[4096];
static atomic_int stop;
static atomic_long flips, swaps;

static void *flip(void *arg) {
  (void)arg;
  size_t la = strlen(pa) + 1, lb = strlen(pb) + 1;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    memcpy(dst, pa, la);
    memcpy(dst, pb, lb);
    atomic_fetch_add_explicit(&flips, 1, memory_order_relaxed);
  }
  return NULL;
}

static void *swap(void *arg) {
  (void)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    syscall(SYS_renameat2, AT_FDCWD, swd, AT_FDCWD, swl, 2 /* RENAME_EXCHANGE */);
    atomic_fetch_add_explicit(&swaps, 1, memory_order_relaxed);
  }
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  const char *project = argv[1], *outside = argv[2];
  double secs = atof(argv[3]);
  char src[4096], d[4096], tgt[4096];
  snprintf(d, sizeof d, "%s/d", project);
  mkdir(d, 0755);
  snprintf(src, sizeof src, "%s/d/a", project);
  snprintf(pa, sizeof pa, "%s/d/b", project);
  snprintf(pb, sizeof pb, "%s/victim", outside);
  snprintf(swd, sizeof swd, "%s/sw", project);
  snprintf(swl, sizeof swl, "%s/swl", project);
  mkdir(swd, 0755);
  symlink(outside, swl);
  snprintf(tgt, sizeof tgt, "%s/sw/victim", project);
  strcpy(dst, pa);
  long ok = 0, denied = 0, other = 0;
  pthread_t t1, t2;
  pthread_create(&t1, NULL, flip, NULL);
  pthread_create(&t2, NULL, swap, NULL);
  while (atomic_load(&flips) == 0 || atomic_load(&swaps) == 0) sched_yield();
  double start = now(), end = start + secs;
  char victim[4096];
  snprintf(victim, sizeof victim, "%s/victim", outside);
  for (long i = 0;; i++) {
    double t = now();
    if (t >= end) {
      if (ok > 0 && denied > 0) break;
      if (t - start > 60) break;
      char b[8] = {0};
      int v = open(victim, O_RDONLY | O_CLOEXEC);
      if (v >= 0) {
        ssize_t n = read(v, b, sizeof b - 1);
        close(v);
        if (n == 4 && memcmp(b, "pwn\n", 4) == 0) break; /* landed (the control, without hallpass) */
      }
      if (i % 16 == 0) sched_yield();
    }
    int fd = open(src, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (write(fd, "pwn\n", 4) != 4) { /* counted below */ }
      close(fd);
    }
    int es[3];
    es[0] = rename(src, dst) == 0 ? 0 : errno;
    es[1] = access(src, F_OK) != 0 ? -1 : rename(src, tgt) == 0 ? 0 : errno;
    es[2] = link(pa, tgt) == 0 ? 0 : errno;
    for (int i = 0; i < 3; i++) {
      if (es[i] == 0) ok++;
      else if (es[i] == EACCES) denied++;
      else if (es[i] > 0) other++;
    }
  }
  atomic_store(&stop, 1);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  printf("rename_race ok=%ld denied=%ld other=%ld\n", ok, denied, other);
  return 0;
}

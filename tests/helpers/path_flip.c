/*
 * The path-in-memory race against a supervisor that checks then continues (tests/agent/protect_test.ts): a
 * thread rewrites the path buffer between a harmless name and a protected one while the main thread opens it
 * and reads what it got. Prints how many opens read the secret's first bytes (`MARK` on argv[3]) and how many
 * opens succeeded at all, and how many failed. Usage: path_flip BENIGN SECRET MARK [N]
 * On a loaded machine the flipper may not run during N opens: they go on past N (up to 60 s) until the race has
 * happened (the harmless file read, and the secret name either read or refused).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char buf[256];
static const char *benign, *secret;
static volatile int stop;

static volatile int started;

static void spin(void) {
  __asm__ volatile("" ::: "memory"); /* the stores before are not dead: another thread reads buf */
  for (volatile int i = 0; i < 2000; i++) {
  }
}

static void *flip(void *arg) {
  (void)arg;
  started = 1;
  while (!stop) {
    memcpy(buf, secret, strlen(secret));
    spin();
    memcpy(buf, benign, strlen(benign));
    spin();
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  benign = argv[1];
  secret = argv[2];
  const char *mark = argv[3];
  long n = argc > 4 ? atol(argv[4]) : 2000;
  if (strlen(benign) != strlen(secret) || strlen(benign) >= sizeof buf) return 2; /* one length: no torn names */
  strcpy(buf, benign);
  pthread_t t;
  pthread_create(&t, NULL, flip, NULL);
  while (!started) {
  }
  long leaked = 0, opened = 0, failed = 0;
  char got[64];
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0;; i++) {
    if (i >= n) {
      if (opened > leaked && (leaked > 0 || failed > 0)) break;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - t0.tv_sec > 60) break;
    }
    int fd = open(buf, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      failed++;
      continue;
    }
    opened++;
    ssize_t r = read(fd, got, sizeof got - 1);
    close(fd);
    if (r > 0) {
      got[r] = 0;
      if (strstr(got, mark)) leaked++;
    }
  }
  stop = 1;
  pthread_join(t, NULL);
  printf("leaked=%ld opened=%ld failed=%ld\n", leaked, opened, failed);
  return 0;
}

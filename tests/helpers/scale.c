// Many writers at once: `scale threads T N DIR` (T threads, N files each) or `scale procs P N DIR` (P processes).
// Every create must succeed exactly once; prints "ok COUNT SECONDS" or the first error.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static long n;
static volatile int failed;

static int work(long id) {
	char path[4096];
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/w%ld-%ld", dir, id, i);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "open %s: %s\n", path, strerror(errno));
			return 1;
		}
		if (write(fd, "x", 1) != 1) return 1;
		close(fd);
	}
	return 0;
}

static void *thread(void *arg) {
	if (work((long)arg)) failed = 1;
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: scale threads|procs COUNT N DIR\n");
		return 2;
	}
	long k = atol(argv[2]);
	n = atol(argv[3]);
	dir = argv[4];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (strcmp(argv[1], "threads") == 0) {
		pthread_t t[256];
		for (long i = 0; i < k && i < 256; i++) pthread_create(&t[i], NULL, thread, (void *)i);
		for (long i = 0; i < k && i < 256; i++) pthread_join(t[i], NULL);
	} else {
		for (long i = 0; i < k; i++) {
			pid_t p = fork();
			if (p == 0) _exit(work(i));
		}
		int st;
		while (wait(&st) > 0)
			if (!WIFEXITED(st) || WEXITSTATUS(st)) failed = 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (failed) return 1;
	printf("ok %ld %.6f\n", k * n, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}

/* notify_flood OUT PROJ SECONDS (tests/e2e/redteam6_test.ts): 64 threads create files and directories in OUT in a
 * loop while another thread forks children that do the same and SIGKILLs each at a random point (a
 * notification that vanishes mid-decision); then one file in PROJ and one more in OUT. Prints counts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static const char *out, *proj; static volatile int stop; static long ok_out, denied;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *writer(void *a) {
	long id = (long)a; char p[4200]; unsigned n = 0;
	while (!stop) {
		snprintf(p, sizeof p, "%s/t%ld-%u", out, id, n++ % 50);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		int e = errno;
		if (fd >= 0) { close(fd); pthread_mutex_lock(&mu); ok_out++; pthread_mutex_unlock(&mu); }
		else if (e == EACCES || e == EPERM) { pthread_mutex_lock(&mu); denied++; pthread_mutex_unlock(&mu); }
		if (mkdir(p, 0755) == 0) { pthread_mutex_lock(&mu); ok_out++; pthread_mutex_unlock(&mu); }
	}
	return 0;
}
static void *killer(void *a) {
	(void)a; unsigned seed = 1; long kids = 0;
	while (!stop) {
		pid_t c = fork();
		if (c == 0) {
			char p[300];
			for (int i = 0;; i++) { snprintf(p, sizeof p, "%s/k%d-%d", out, getpid(), i % 8); int fd = open(p, O_WRONLY|O_CREAT, 0644); if (fd >= 0) close(fd); }
		}
		struct timespec ts = {0, (rand_r(&seed) % 2000) * 1000};
		nanosleep(&ts, 0);
		kill(c, SIGKILL); waitpid(c, 0, 0); kids++;
	}
	printf("killed %ld children\n", kids);
	return 0;
}
int main(int argc, char **argv) {
	out = argv[1]; proj = argv[2]; int secs = atoi(argv[3]);
	pthread_t t[66];
	for (long i = 0; i < 64; i++) pthread_create(&t[i], 0, writer, (void *)i);
	pthread_create(&t[64], 0, killer, 0);
	sleep(secs); stop = 1;
	for (int i = 0; i < 65; i++) pthread_join(t[i], 0);
	char p[300]; snprintf(p, sizeof p, "%s/after", proj);
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	printf("outside-ok %ld denied %ld project-after %s\n", ok_out, denied, fd >= 0 ? "ok" : strerror(errno));
	snprintf(p, sizeof p, "%s/after", out);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	printf("outside-after %s\n", fd >= 0 ? "CREATED" : strerror(errno));
	return 0;
}

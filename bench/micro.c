/* micro — system-call micro workloads for the hallpass benchmark. Prints elapsed seconds (monotonic clock).
 *
 *   micro create N DIR   N x open(DIR/f<i>, O_CREAT|O_WRONLY|O_TRUNC) + write 1 byte + close, distinct files
 *   micro read N FILE    N x open(FILE, O_RDONLY) + close
 *   micro exec N         N x fork + execve("/bin/true") + wait
 *   micro connect N      N x TCP socket + blocking connect to a loopback listener of its own + accept + close
 *   micro sendto N       N x UDP sendto with an address (a loopback socket of its own) + recv
 *   micro run N CMD...   N x fork + execvp(CMD) + wait, CMD's stdout to /dev/null; prints the median seconds of
 *                        one run (spawn to exit); exits 1 if any run fails. With MICRO_CPU=1, a second number:
 *                        the median CPU seconds (user + system) of the run's process tree. With MICRO_PTY=1, CMD
 *                        runs on a new pty (24x80, its controlling terminal) whose other side answers as a
 *                        terminal does (CSI 18 t: its size; CSI 6 n: the cursor at the top left) and reads what
 *                        CMD writes until the pty closes
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *what, const char *arg) {
	fprintf(stderr, "micro: %s %s: %s\n", what, arg ? arg : "", strerror(errno));
	exit(1);
}

/* MICRO_PTY: a new pty for the child (slave name in *slave); the master fd. */
static int pty_open(char *slave, size_t len) {
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) || unlockpt(m) || ptsname_r(m, slave, len)) fail("pty", NULL);
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	ioctl(m, TIOCSWINSZ, &ws);
	return m;
}

/* In the child: the pty becomes its controlling terminal and its stdin, stdout and stderr. */
static void pty_child(const char *slave) {
	setsid();
	int s = open(slave, O_RDWR);
	if (s < 0 || ioctl(s, TIOCSCTTY, 0)) _exit(126);
	dup2(s, 0), dup2(s, 1), dup2(s, 2);
	if (s > 2) close(s);
}

/* Reads the master until the pty closes, answering the size (CSI 18 t) and cursor (CSI 6 n) queries. */
static void pty_serve(int m) {
	char look[4 + 65536];
	size_t t = 0; /* the last bytes of the previous read, first in look: a query may straddle two reads */
	for (;;) {
		ssize_t r = read(m, look + t, sizeof look - t);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) break;
		size_t n = t + r;
		for (size_t i = 0; i < n; i++) { /* a query ending in this read's bytes */
			if (i + 5 <= n && i + 5 > t && !memcmp(look + i, "\x1b[18t", 5)) write(m, "\x1b[8;24;80t", 10);
			if (i + 4 <= n && i + 4 > t && !memcmp(look + i, "\x1b[6n", 4)) write(m, "\x1b[1;1R", 6);
		}
		t = n < 4 ? n : 4;
		memmove(look, look + n - t, t);
	}
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: micro create N DIR | read N FILE | exec N | connect N | sendto N\n");
		return 2;
	}
	long n = atol(argv[2]);
	double t0 = now();
	if (!strcmp(argv[1], "create") && argc == 4) {
		char path[4096];
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof path, "%s/f%ld", argv[3], i);
			int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0) fail("open", path);
			if (write(fd, "x", 1) != 1) fail("write", path);
			close(fd);
		}
	} else if (!strcmp(argv[1], "read") && argc == 4) {
		for (long i = 0; i < n; i++) {
			int fd = open(argv[3], O_RDONLY | O_CLOEXEC);
			if (fd < 0) fail("open", argv[3]);
			close(fd);
		}
	} else if ((!strcmp(argv[1], "connect") || !strcmp(argv[1], "sendto")) && argc == 3) {
		int udp = !strcmp(argv[1], "sendto");
		int l = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t al = sizeof a;
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0 ||
		    (!udp && listen(l, 4096) < 0))
			fail("listener", NULL);
		int s = udp ? socket(AF_INET, SOCK_DGRAM, 0) : -1;
		char b[8];
		t0 = now();
		for (long i = 0; i < n; i++) {
			if (udp) {
				if (sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a) != 1 || recv(l, b, sizeof b, 0) != 1)
					fail("sendto", NULL);
				continue;
			}
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) fail("connect", NULL);
			int c = accept(l, NULL, NULL);
			if (c < 0) fail("accept", NULL);
			close(c);
			close(s);
		}
	} else if (!strcmp(argv[1], "exec") && argc == 3) {
		char *const args[] = {"true", NULL};
		char *const env[] = {NULL};
		for (long i = 0; i < n; i++) {
			pid_t p = fork();
			if (p < 0) fail("fork", NULL);
			if (p == 0) {
				execve("/bin/true", args, env);
				_exit(127);
			}
			int st;
			if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				errno = ECHILD;
				fail("exec /bin/true", NULL);
			}
		}
	} else if (!strcmp(argv[1], "run") && argc >= 4 && n > 0) {
		double *t = calloc(n, sizeof *t), *c = calloc(n, sizeof *c);
		const char *pty_env = getenv("MICRO_PTY");
		int on_pty = pty_env && *pty_env;
		for (long i = 0; i < n; i++) {
			char slave[128];
			int m = on_pty ? pty_open(slave, sizeof slave) : -1;
			double a = now();
			pid_t p = fork();
			if (p < 0) fail("fork", NULL);
			if (p == 0) {
				if (on_pty) pty_child(slave);
				int fd = on_pty ? -1 : open("/dev/null", O_WRONLY);
				if (fd >= 0) dup2(fd, 1);
				execvp(argv[3], argv + 3);
				fprintf(stderr, "micro: %s: %s\n", argv[3], strerror(errno));
				_exit(127);
			}
			int st;
			struct rusage ru;
			if (on_pty) {
				pty_serve(m);
				close(m);
			}
			if (wait4(p, &st, 0, &ru) != p) fail("waitpid", NULL);
			t[i] = now() - a;
			c[i] = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "micro: run %s: status 0x%x\n", argv[3], st);
				return 1;
			}
		}
		for (long i = 1; i < n; i++) /* insertion sort: n is small */
			for (long j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
		for (long i = 1; i < n; i++)
			for (long j = i; j > 0 && c[j] < c[j - 1]; j--) { double x = c[j]; c[j] = c[j - 1]; c[j - 1] = x; }
		printf("%.6f", n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2);
		if (getenv("MICRO_CPU")) printf(" %.6f", n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2);
		printf("\n");
		return 0;
	} else {
		fprintf(stderr, "micro: bad arguments\n");
		return 2;
	}
	printf("%.6f\n", now() - t0);
	return 0;
}

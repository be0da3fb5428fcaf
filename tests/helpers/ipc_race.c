/*
 * The race a hostile program runs against a supervisor that looks at a connect and then lets it continue:
 * one thread calls connect(N, buf) over and over, a second flips buf between an IPv4 address (which the
 * supervisor would let through unasked when connects are not mediated) and a unix socket path outside, and a
 * third puts an IPv4 socket and a fresh unix socket at fd N by turns (dup2). Any connect that reaches the
 * unix socket is an escape; the listener outside counts them.
 *
 *   ipc_race UNIX_PATH SECONDS      prints "attempts N connected M denied D" (M: calls that returned 0,
 *                                   D: calls refused with EACCES or EPERM: the supervisor saw the unix address)
 *   ipc_race --send UNIX_PATH SECONDS    the same with sendto of a datagram instead of connect
 *   ipc_race --sendmsg UNIX_PATH SECONDS the same with sendmsg (the address in a msghdr, also flipped)
 *   --until-denied (first): go on past SECONDS (up to 60 s) until a call was refused: the race reached the
 *   supervisor (at load a refused call can take long, and a few calls may all have met the IPv4 address).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static union {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_un un;
} buf;
static struct sockaddr_in in4;
static struct sockaddr_un un;
static atomic_int stop;
static atomic_int started;
static int N = 100;
static int send_mode;

static void *flip_addr(void *arg) {
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop)) {
		memcpy(&buf, &in4, sizeof in4);
		memcpy(&buf, &un, sizeof un);
	}
	return NULL;
}

static void *flip_fd(void *arg) {
	(void)arg;
	/* non-blocking: hallpass's fast path performs IP connects of non-blocking sockets itself */
	int inet = socket(AF_INET, (send_mode ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK, 0);
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop)) {
		int u = socket(AF_UNIX, send_mode ? SOCK_DGRAM : SOCK_STREAM, 0);
		dup2(inet, N);
		dup2(u, N);
		close(u);
	}
	return NULL;
}

int main(int argc, char **argv) {
	int a = 1, until_denied = 0;
	if (argc > 1 && strcmp(argv[1], "--until-denied") == 0) {
		until_denied = 1;
		a++;
	}
	if (argc > a && strcmp(argv[a], "--send") == 0) {
		send_mode = 1;
		a++;
	} else if (argc > a && strcmp(argv[a], "--sendmsg") == 0) {
		send_mode = 2;
		a++;
	}
	if (argc - a != 2) {
		fprintf(stderr, "usage: ipc_race [--send] UNIX_PATH SECONDS\n");
		return 2;
	}
	un.sun_family = AF_UNIX;
	strncpy(un.sun_path, argv[a], sizeof un.sun_path - 1);
	in4.sin_family = AF_INET;
	in4.sin_port = htons(9); /* discard: nothing listens */
	in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int secs = atoi(argv[a + 1]);
	int s = socket(AF_INET, send_mode ? SOCK_DGRAM : SOCK_STREAM, 0);
	dup2(s, N);
	pthread_t t1, t2;
	pthread_create(&t1, NULL, flip_addr, NULL);
	pthread_create(&t2, NULL, flip_fd, NULL);
	/* On a loaded machine a thread may not run at all for SECONDS: the clock starts once both have. */
	while (atomic_load(&started) < 2) sched_yield();
	time_t start = time(NULL), end = start + secs;
	long attempts = 0, connected = 0, denied = 0;
	for (;;) {
		time_t now = time(NULL);
		if (now >= end && (!until_denied || denied > 0 || now - start > 60)) break;
		int r;
		if (send_mode == 2) {
			struct iovec iov = {"x", 1};
			struct msghdr m = {.msg_name = &buf, .msg_namelen = sizeof un, .msg_iov = &iov, .msg_iovlen = 1};
			r = (int)sendmsg(N, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		} else if (send_mode) r = (int)sendto(N, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL, &buf.sa, sizeof un);
		else r = connect(N, &buf.sa, sizeof un);
		attempts++;
		if (r >= 0) connected++;
		else if (errno == EACCES || errno == EPERM) denied++;
	}
	atomic_store(&stop, 1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("attempts %ld connected %ld denied %ld\n", attempts, connected, denied);
	return 0;
}

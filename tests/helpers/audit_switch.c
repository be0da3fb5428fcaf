/*
 * Audit for tests (root): `get` prints 1 when audit is enabled, 0 when not; `set N` enables (1) or disables
 * (0) it; `control FILE` is the control for refused-read reporting without hallpass: it joins the audit
 * read-only multicast group, runs `cat FILE` in a Landlock domain that handles reads and grants none below
 * /etc (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON), and prints the Landlock access record naming FILE, or
 * exits 1 when none comes within 3 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int request(int fd, int type, const void *data, int len) {
	struct {
		struct nlmsghdr h;
		char d[256];
	} m;
	memset(&m, 0, sizeof m);
	m.h.nlmsg_len = NLMSG_LENGTH(len);
	m.h.nlmsg_type = type;
	m.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	memcpy(m.d, data, len);
	struct sockaddr_nl k = {.nl_family = AF_NETLINK};
	if (sendto(fd, &m, m.h.nlmsg_len, 0, (void *)&k, sizeof k) < 0) return -errno;
	char buf[8192];
	for (int i = 0; i < 4; i++) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 1000) <= 0) return -ETIMEDOUT;
		if (recv(fd, buf, sizeof buf, 0) < (ssize_t)NLMSG_HDRLEN) continue;
		struct nlmsghdr *h = (void *)buf;
		if (h->nlmsg_type == AUDIT_GET && type == AUDIT_GET)
			return ((struct audit_status *)NLMSG_DATA(h))->enabled;
		if (h->nlmsg_type == NLMSG_ERROR) {
			int err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (err < 0 || type != AUDIT_GET) return err;
		}
	}
	return -EPROTO;
}

static long ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
	if (argc < 2) return 2;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	if (fd < 0) return perror("socket"), 2;
	if (!strcmp(argv[1], "get")) {
		int r = request(fd, AUDIT_GET, "", 0);
		if (r < 0) return fprintf(stderr, "AUDIT_GET: %s\n", strerror(-r)), 2;
		printf("%d\n", r != 0);
		return 0;
	}
	if (!strcmp(argv[1], "set") && argc == 3) {
		struct audit_status s;
		memset(&s, 0, sizeof s);
		s.mask = AUDIT_STATUS_ENABLED;
		s.enabled = atoi(argv[2]);
		int r = request(fd, AUDIT_SET, &s, sizeof s);
		if (r < 0) return fprintf(stderr, "AUDIT_SET: %s\n", strerror(-r)), 2;
		return 0;
	}
	if (!strcmp(argv[1], "control") && argc == 3) {
		struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = 1 /* AUDIT_NLGRP_READLOG */};
		if (bind(fd, (void *)&a, sizeof a) < 0) return perror("bind"), 2;
		pid_t pid = fork();
		if (pid == 0) {
			uint64_t attr[1] = {1ull << 2 /* READ_FILE */};
			int rs = syscall(444, attr, 8, 0);
			const char *grant[] = {"/usr", "/lib", "/lib64", "/bin", NULL};
			for (int i = 0; grant[i]; i++) {
				int pf = open(grant[i], O_PATH | O_CLOEXEC);
				if (pf < 0) continue;
				struct __attribute__((packed)) {
					uint64_t access;
					int32_t fd;
				} rule = {1ull << 2, pf};
				syscall(445, rs, 1, &rule, 0);
				close(pf);
			}
			prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
			if (syscall(446, rs, 2 /* LOG_NEW_EXEC_ON */) < 0) _exit(3);
			execl("/bin/cat", "cat", argv[2], (char *)NULL);
			_exit(4);
		}
		waitpid(pid, NULL, 0);
		char want[4200];
		snprintf(want, sizeof want, "path=\"%s\"", argv[2]);
		char buf[8192];
		for (long end = ms() + 3000; ms() < end;) {
			struct pollfd p = {fd, POLLIN, 0};
			if (poll(&p, 1, 200) <= 0) continue;
			ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
			if (n < (ssize_t)NLMSG_HDRLEN) continue;
			buf[n] = 0;
			struct nlmsghdr *h = (void *)buf;
			if (h->nlmsg_type == 1423 && strstr(NLMSG_DATA(h), want)) {
				printf("%s\n", (char *)NLMSG_DATA(h));
				return 0;
			}
		}
		return 1;
	}
	return 2;
}

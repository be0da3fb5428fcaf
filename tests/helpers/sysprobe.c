/*
 * sysprobe: one call aimed at another process, a keyring, a file ioctl or the machine, for
 * tests/e2e/sys_calls_test.ts. Prints "ok" or the errno's name, and exits 0 either way (the test judges the
 * effect from outside).
 *
 *   sysprobe prlimit PID BYTES        RLIMIT_FSIZE of PID set to BYTES
 *   sysprobe nice PID N               setpriority(PRIO_PROCESS, PID, N)
 *   sysprobe nice-user N              setpriority(PRIO_USER, 0, N)
 *   sysprobe affinity PID CPU         sched_setaffinity(PID) to one CPU
 *   sysprobe sched PID                sched_setscheduler(PID, SCHED_BATCH)
 *   sysprobe ioprio PID N             ioprio_set(IOPRIO_WHO_PROCESS, PID, best-effort N)
 *   sysprobe pidfd PID                pidfd_open(PID)
 *   sysprobe kcmp PID                 kcmp(self, PID, KCMP_VM)
 *   sysprobe madvise PID              process_madvise(pidfd_open(PID), ...)
 *   sysprobe migrate PID              migrate_pages(PID, ...)
 *   sysprobe child-nice N             fork a child, renice it to N, print its nice as seen by the kernel
 *   sysprobe add-key NAME             add_key("user", NAME, "planted", @u)
 *   sysprobe find-key NAME            keyctl(KEYCTL_SEARCH, @u, "user", NAME): "ok" when found
 *   sysprobe setflags FILE FLAGS      open FILE read-only, FS_IOC_SETFLAGS adding FLAGS (hex)
 *   sysprobe setflags-race FILE DECOY SECONDS   FS_IOC_SETFLAGS +A on fd 3 while a thread dup2s DECOY/FILE,
 *                                     for SECONDS once the thread runs, and on (up to 60 s) until the race has
 *                                     happened: FILE has the flag, and DECOY has it or a call was refused
 *   sysprobe setversion FILE N        open FILE read-only, FS_IOC_SETVERSION
 *   sysprobe reboot | sethostname | bpf | syslog | unshare-ns | mknod-block FILE | raw-socket | caps
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

static int report(long r) {
	if (r < 0) printf("%s\n", strerrorname_np(errno));
	else printf("ok\n");
	return 0;
}

static int race_fd_file, race_fd_decoy;
static volatile int stop, swapping;
static void *swapper(void *a) {
	(void)a;
	swapping = 1;
	while (!stop) {
		dup2(race_fd_decoy, 3);
		dup2(race_fd_file, 3);
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 2) return 2;
	const char *c = argv[1];
	int pid = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(c, "prlimit")) {
		struct rlimit r = {atol(argv[3]), atol(argv[3])};
		return report(syscall(SYS_prlimit64, pid, RLIMIT_FSIZE, &r, NULL));
	}
	if (!strcmp(c, "nice")) return report(setpriority(PRIO_PROCESS, pid, atoi(argv[3])));
	if (!strcmp(c, "nice-user")) return report(setpriority(PRIO_USER, 0, atoi(argv[2])));
	if (!strcmp(c, "affinity")) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(atoi(argv[3]), &s);
		return report(sched_setaffinity(pid, sizeof s, &s));
	}
	if (!strcmp(c, "sched")) {
		struct sched_param p = {0};
		return report(sched_setscheduler(pid, SCHED_BATCH, &p));
	}
	if (!strcmp(c, "ioprio")) return report(syscall(SYS_ioprio_set, 1, pid, (2 << 13) | atoi(argv[3])));
	if (!strcmp(c, "pidfd")) return report(syscall(SYS_pidfd_open, pid, 0));
	if (!strcmp(c, "kcmp")) return report(syscall(SYS_kcmp, getpid(), pid, 1 /* KCMP_VM */, 0, 0));
	if (!strcmp(c, "madvise")) {
		int fd = syscall(SYS_pidfd_open, pid, 0);
		if (fd < 0) return report(-1);
		struct iovec v = {(void *)0x10000, 4096};
		return report(syscall(SYS_process_madvise, fd, &v, 1, MADV_COLD, 0));
	}
	if (!strcmp(c, "migrate")) {
		unsigned long from = 1, to = 1;
		return report(syscall(SYS_migrate_pages, pid, 64, &from, &to));
	}
	if (!strcmp(c, "child-nice")) {
		int fds[2];
		if (pipe(fds) < 0) return 2;
		pid_t ch = fork();
		if (ch == 0) {
			char b;
			read(fds[0], &b, 1);
			_exit(0);
		}
		long r = setpriority(PRIO_PROCESS, ch, atoi(argv[2]));
		errno = r < 0 ? errno : 0;
		int n = getpriority(PRIO_PROCESS, ch);
		if (r < 0) printf("%s\n", strerrorname_np(errno));
		else printf("ok %d\n", n);
		write(fds[1], "x", 1);
		waitpid(ch, NULL, 0);
		return 0;
	}
	if (!strcmp(c, "add-key"))
		return report(syscall(SYS_add_key, "user", argv[2], "planted", 7, -4 /* KEY_SPEC_USER_KEYRING */));
	if (!strcmp(c, "find-key"))
		return report(syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -4, "user", argv[2], 0));
	if (!strcmp(c, "setflags") || !strcmp(c, "setversion")) {
		int fd = open(argv[2], O_RDONLY);
		if (fd < 0) return report(-1);
		int v = (int)strtol(argv[3], NULL, 16);
		if (!strcmp(c, "setflags")) {
			int old = 0; /* keep what is set (ext4's extents flag cannot be cleared this way) */
			if (ioctl(fd, 0x80086601 /* FS_IOC_GETFLAGS */, &old) == 0) v |= old;
		}
		return report(ioctl(fd, !strcmp(c, "setflags") ? 0x40086602 : 0x40087602, &v));
	}
	if (!strcmp(c, "setflags-race")) {
		/* Kept at fds 10 and 11: fd 3 is the one swapped. */
		race_fd_file = fcntl(open(argv[2], O_RDONLY), F_DUPFD, 10);
		race_fd_decoy = fcntl(open(argv[3], O_RDONLY), F_DUPFD, 10);
		if (race_fd_file < 0 || race_fd_decoy < 0) return report(-1);
		dup2(race_fd_file, 3);
		pthread_t t;
		pthread_create(&t, 0, swapper, 0);
		while (!swapping) sched_yield();
		time_t start = time(NULL), end = start + atoi(argv[4]);
		long n = 0, refused = 0;
		int old = 0;
		ioctl(race_fd_file, 0x80086601 /* FS_IOC_GETFLAGS */, &old);
		for (;;) {
			time_t now = time(NULL);
			if (now >= end) {
				int ff = 0, fd = 0;
				ioctl(race_fd_file, 0x80086601, &ff);
				ioctl(race_fd_decoy, 0x80086601, &fd);
				if ((ff & 0x80) && ((fd & 0x80) || refused)) break;
				if (now - start > 60) break;
			}
			int v = old | 0x80; /* FS_NOATIME_FL */
			if (ioctl(3, 0x40086602, &v) < 0) refused++;
			n++;
		}
		stop = 1;
		pthread_join(t, NULL);
		printf("ok %ld\n", n);
		return 0;
	}
	if (!strcmp(c, "reboot")) return report(syscall(SYS_reboot, 0xfee1dead, 0x28121969, 0x12345678, 0));
	if (!strcmp(c, "sethostname")) return report(sethostname("hallpass-pwned", 14));
	if (!strcmp(c, "bpf")) return report(syscall(SYS_bpf, 0 /* MAP_CREATE */, NULL, 0));
	if (!strcmp(c, "syslog")) return report(syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0));
	if (!strcmp(c, "unshare-ns")) return report(unshare(CLONE_NEWNS));
	if (!strcmp(c, "mknod-block")) return report(mknod(argv[2], S_IFBLK | 0600, makedev(7, 0)));
	if (!strcmp(c, "raw-socket")) return report(socket(AF_INET, SOCK_RAW, IPPROTO_RAW));
	if (!strcmp(c, "caps")) {
		FILE *f = fopen("/proc/self/status", "r");
		char line[256];
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "Cap", 3)) fputs(line, stdout);
		return 0;
	}
	return 2;
}

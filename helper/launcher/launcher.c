/*
 * hallpass-launcher: the small static program between the hallpass supervisor and the sandboxed command.
 *
 *   hallpass-launcher --version
 *   hallpass-launcher SOCKFD PROGRAM ARGV0 [ARG...]
 *
 * SOCKFD is one end of a SOCK_SEQPACKET socketpair whose other end the supervisor keeps for its whole life.
 * Protocol (all integers native-endian u32/i32):
 *
 *   supervisor -> launcher  CONFIG  {magic, version, flags, umask} + SCM_RIGHTS [bpf memfd, ruleset?, pty slave?, fd 0?, fd 1?, fd 2?]
 *   child      -> supervisor READY  {magic, 'R', pid, listener fd number}  (the supervisor takes a copy of
 *                                                                       the listener with pidfd_getfd)
 *   child      -> supervisor EXECFAIL {magic, 'E', errno, 0}       (the execve of PROGRAM failed)
 *   launcher   -> supervisor STOPPED {magic, 'S', signal, 0}      (the command was stopped: job control)
 *   supervisor -> launcher  CONT    {magic, 'C', 0, 0}            (continue the stopped command)
 *   supervisor -> launcher  SIGNAL  {magic, 'K', signal, 0}       (forward a signal to the command)
 *
 * The launcher forks the command's process and stays as its parent: a child subreaper, so every descendant
 * that is orphaned (double fork, setsid) is re-parented to it. When the command exits, or when the
 * supervisor goes away (its socket end closes), the launcher kills every remaining descendant and then exits
 * with the command's status (re-raising the signal that killed it). The launcher itself is not sandboxed;
 * Landlock's signal scope keeps the sandbox from signalling it.
 *
 * The child applies, in this order: pty as controlling terminal, umask, signal dispositions, capabilities
 * dropped to what file work as root needs (drop_capabilities), no_new_privs,
 * Landlock restrict_self, the seccomp filter with a user-notification listener; it hands the listener to the
 * supervisor and execs PROGRAM (that first exec is itself trapped and answered by the supervisor).
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HP_MAGIC 0x31504c48u /* "HLP1" */
#define HP_VERSION 1u
#define CFG_RULESET 1u
#define CFG_PTY 2u
#define CFG_WAIT_KILLABLE 4u
#define CFG_SIGINT_IGN 8u
#define CFG_SIGQUIT_IGN 16u
/* Landlock ABI 7: log the command's denials to audit, which hallpass reads (lib/floor/refused_reads.ts). */
#define CFG_LOG_DENIALS 32u
/* Without the pty, the terminal among fds 0-2 replaced (lib/sandbox/tty_guard.ts): fd 0 by a read-only reopen,
 * fds 1/2 by an output-only pty's slave. One fd each, in this order, after the pty's. */
#define CFG_STDIN 64u
#define CFG_STDOUT 128u
#define CFG_STDERR 256u
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF 1u
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON 2u

/* Kernel ABI, spelled out so that musl-gcc needs no kernel headers (values from linux/seccomp.h, filter.h). */
struct sock_filter {
	uint16_t code;
	uint8_t jt;
	uint8_t jf;
	uint32_t k;
};
struct sock_fprog {
	unsigned short len;
	struct sock_filter *filter;
};
#define SECCOMP_SET_MODE_FILTER 1
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

/* Capabilities (linux/capability.h, prctl.h), spelled out for musl-gcc. */
struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};
#define CAP_VERSION_3 0x20080522
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/*
 * What a root-run sandbox keeps (docs/threat-model.md, "Root"): file work as root (tar x restoring owners and
 * modes, cp -a, package managers that drop to another uid) and nothing that changes the machine: CHOWN,
 * DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, NET_BIND_SERVICE, AUDIT_WRITE (Docker's default set
 * without MKNOD, NET_RAW, SETFCAP, SETPCAP and SYS_CHROOT). lib/cli/doctor.ts shows the same list.
 */
static const int KEEP_CAPS[] = {0 /* CHOWN */, 1 /* DAC_OVERRIDE */, 3 /* FOWNER */, 4 /* FSETID */, 5 /* KILL */,
				6 /* SETGID */, 7 /* SETUID */, 10 /* NET_BIND_SERVICE */, 29 /* AUDIT_WRITE */};

static void die(const char *what);

static int kept(int cap) {
	for (unsigned i = 0; i < sizeof KEEP_CAPS / sizeof KEEP_CAPS[0]; i++)
		if (KEEP_CAPS[i] == cap) return 1;
	return 0;
}

/*
 * Drops every capability but KEEP_CAPS from the bounding set (what exec can ever give, also to root) and from
 * the permitted, effective and inheritable sets, and clears the ambient set: after the command's exec, root
 * holds exactly KEEP_CAPS and any other user holds none. Fails closed when a capability is held that cannot
 * be dropped.
 */
static void drop_capabilities(void) {
	struct cap_header h = {CAP_VERSION_3, 0};
	struct cap_data d[2];
	if (syscall(SYS_capget, &h, d) < 0) die("reading capabilities");
	uint64_t keep = 0;
	for (int cap = 0; cap < 64; cap++)
		if (kept(cap)) keep |= 1ULL << cap;
	for (int cap = 0; cap < 64; cap++) {
		int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (r < 0) break; /* past the kernel's last capability */
		if (r == 1 && !kept(cap)) {
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
				/* Without CAP_SETPCAP the bounding set stays; harmless only for a process that holds and can
				 * gain nothing (no_new_privs is set below, so exec cannot add capabilities). */
				if (d[0].permitted || d[1].permitted || d[0].inheritable || d[1].inheritable)
					die("dropping a capability");
				break;
			}
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) die("clearing ambient capabilities");
	for (int i = 0; i < 2; i++) {
		uint32_t k = (uint32_t)(keep >> (32 * i));
		d[i].effective &= k;
		d[i].permitted &= k;
		d[i].inheritable &= k;
	}
	if (syscall(SYS_capset, &h, d) < 0) die("dropping capabilities");
}

struct msg {
	uint32_t magic;
	uint32_t kind;
	int32_t a;
	int32_t b;
};

struct config {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t umask;
};

static void die(const char *what) {
	/* One line, for the supervisor to show; 125 = hallpass failed before the command ran. */
	dprintf(2, "hallpass-launcher: %s: %s\n", what, strerror(errno));
	_exit(125);
}

static int send_msg(int sock, uint32_t kind, int32_t a, int fd) {
	struct msg m = {HP_MAGIC, kind, a, 0};
	struct iovec iov = {&m, sizeof m};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {0};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (fd >= 0) {
		memset(&u, 0, sizeof u);
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	ssize_t n;
	do n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof m ? 0 : -1;
}

/* Receives the CONFIG message and up to 6 fds. Returns the number of fds received. */
static int recv_config(int sock, struct config *cfg, int fds[6]) {
	struct iovec iov = {cfg, sizeof *cfg};
	union {
		char buf[CMSG_SPACE(6 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {0};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof u.buf;
	ssize_t n;
	do n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) die("receiving the configuration");
	/* hallpass is gone before it configured this: it failed first (and said why), or was killed */
	if (n == 0) _exit(125);
	if (n != (ssize_t)sizeof *cfg || cfg->magic != HP_MAGIC || cfg->version != HP_VERSION) {
		errno = EPROTO;
		die("bad configuration message");
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		errno = EPROTO;
		die("too many descriptors in the configuration");
	}
	int count = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
		int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < k && count < 6; i++) memcpy(&fds[count++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	return count;
}

/* Reads the BPF program (an array of struct sock_filter) from a memfd. */
static struct sock_fprog read_bpf(int fd) {
	struct stat st;
	if (fstat(fd, &st) < 0) die("reading the filter");
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 || st.st_size > 65536 * 8) {
		errno = EINVAL;
		die("bad filter size");
	}
	struct sock_filter *f = malloc(st.st_size);
	if (!f) die("allocating the filter");
	ssize_t got = 0;
	while (got < st.st_size) {
		ssize_t n = pread(fd, (char *)f + got, st.st_size - got, got);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) die("reading the filter");
		got += n;
	}
	struct sock_fprog p = {(unsigned short)(st.st_size / sizeof(struct sock_filter)), f};
	return p;
}

/* Sends SIG to every direct child. Returns how many were signalled. Uses /proc/self/task/TID/children
 * (the launcher is single-threaded) and falls back to scanning /proc when the kernel lacks it. */
static int signal_children(int sig) {
	pid_t self = getpid();
	char path[300], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)self);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n >= 0 && n < (ssize_t)sizeof buf - 1) {
			buf[n] = 0;
			int count = 0;
			for (char *p = buf; *p;) {
				char *e;
				long pid = strtol(p, &e, 10);
				if (e == p) break;
				if (pid > 0) kill((pid_t)pid, sig), count++;
				p = e;
				while (*p == ' ' || *p == '\n') p++;
			}
			return count;
		}
	}
	int count = 0;
	DIR *d = opendir("/proc");
	if (!d) return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		int sfd = open(path, O_RDONLY | O_CLOEXEC);
		if (sfd < 0) continue;
		ssize_t n = read(sfd, buf, 511);
		close(sfd);
		if (n <= 0) continue;
		buf[n] = 0;
		char *rp = strrchr(buf, ')');
		if (!rp) continue;
		char state;
		int ppid;
		if (sscanf(rp + 1, " %c %d", &state, &ppid) != 2) continue;
		if (ppid == self) {
			kill(atoi(e->d_name), sig);
			count++;
		}
	}
	closedir(d);
	return count;
}

/* Kills every descendant: orphans are re-parented to us (child subreaper), so repeat until none is left. */
static void kill_descendants(void) {
	for (;;) {
		signal_children(SIGKILL);
		pid_t p = waitpid(-1, NULL, __WALL);
		if (p < 0 && errno == ECHILD) return;
		if (p < 0 && errno != EINTR) return;
	}
}

static void exit_like(int status) {
	if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		signal(sig, SIG_DFL);
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		sigprocmask(SIG_UNBLOCK, &s, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(125);
}

static void child(int sock, const struct config *cfg, int bpf_fd, int ruleset_fd, int pty_fd, const int stdio[3],
                  char **argv) {
	for (int i = 0; i < 3; i++)
		if (stdio[i] >= 0 && dup2(stdio[i], i) < 0) die("dup2 of a terminal fd");
	for (int i = 0; i < 3; i++)
		if (stdio[i] > 2) close(stdio[i]);
	if (cfg->flags & CFG_PTY) {
		/* The launcher leads the pty's session; the command gets its own process group, in the foreground.
		 * Its group is not orphaned (its parent is in the same session), so Ctrl-Z stops it as usual. */
		if (setpgid(0, 0) < 0) die("setpgid");
		sigset_t ttou, old;
		sigemptyset(&ttou);
		sigaddset(&ttou, SIGTTOU);
		sigprocmask(SIG_BLOCK, &ttou, &old);
		if (tcsetpgrp(pty_fd, getpid()) < 0) die("making the command the terminal's foreground");
		sigprocmask(SIG_SETMASK, &old, NULL);
		for (int i = 0; i < 3; i++)
			if (dup2(pty_fd, i) < 0) die("dup2 of the pty");
		if (pty_fd > 2) close(pty_fd);
	}
	umask(cfg->umask & 0777);

	/* Signal dispositions as the user had them: SIGPIPE default (Deno ignores it), INT/QUIT as inherited. */
	for (int sig = 1; sig < 32; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) continue;
		if ((sig == SIGINT && (cfg->flags & CFG_SIGINT_IGN)) || (sig == SIGQUIT && (cfg->flags & CFG_SIGQUIT_IGN)))
			signal(sig, SIG_IGN);
		else
			signal(sig, SIG_DFL);
	}
	/* The real-time signals too (the C library's signal() refuses the ones it reserves): the raw call. */
	for (int sig = 32; sig <= 64; sig++) {
		struct {
			void *handler;
			unsigned long flags;
			void *restorer;
			unsigned long mask;
		} dfl = {SIG_DFL, 0, NULL, 0};
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* System V IPC (shared memory, message queues, semaphores) and POSIX message queues belong to the IPC
	 * namespace: in the host's, the sandbox could attach to another process's segment by key or id and write
	 * it. A new one needs CAP_SYS_ADMIN (root); without it the host's stays (docs/threat-model.md, "Network
	 * and local IPC"). */
	if (unshare(CLONE_NEWIPC) < 0 && errno != EPERM && errno != EINVAL) die("a new IPC namespace");
	drop_capabilities();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
	if (ruleset_fd >= 0) {
		unsigned log = (cfg->flags & CFG_LOG_DENIALS)
			? LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON | LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
			: 0;
		if (syscall(SYS_landlock_restrict_self, ruleset_fd, log) < 0) die("landlock_restrict_self");
		close(ruleset_fd);
	}
	struct sock_fprog prog = read_bpf(bpf_fd);
	close(bpf_fd);
	unsigned long flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
	if (cfg->flags & CFG_WAIT_KILLABLE) flags |= SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	int listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	if (listener < 0 && (flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) && errno == EINVAL)
		listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (listener < 0) die("installing the seccomp filter");
	/* Tell the supervisor where the listener is; it takes a copy with pidfd_getfd. Only write(2), never
	 * sendmsg(2): sendmsg may itself be trapped now (connect mediation), and nobody serves the listener yet.
	 * The listener is close-on-exec: it stays open while the execve below waits for the supervisor's answer. */
	struct msg ready = {HP_MAGIC, 'R', getpid(), listener};
	if (write(sock, &ready, sizeof ready) != (ssize_t)sizeof ready) die("announcing the listener");

	execv(argv[0], argv + 1);
	int err = errno;
	struct msg fail = {HP_MAGIC, 'E', err, 0};
	if (write(sock, &fail, sizeof fail) < 0) _exit(125);
	_exit(err == ENOENT ? 127 : 126);
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("hallpass-launcher %u\n", HP_VERSION);
		return 0;
	}
	if (argc < 4) {
		dprintf(2, "usage: hallpass-launcher SOCKFD PROGRAM ARGV0 [ARG...] (started by hallpass, not by hand)\n");
		return 125;
	}
	char *end;
	long sl = strtol(argv[1], &end, 10);
	if (*end || sl < 3 || sl > 1 << 20) {
		dprintf(2, "hallpass-launcher: bad socket fd\n");
		return 125;
	}
	int sock = (int)sl;
	if (fcntl(sock, F_SETFD, FD_CLOEXEC) < 0) die("socket");
	/*
	 * hallpass starts this with posix_spawn, which passes on its signal mask and ignored signals (Deno ignores
	 * SIGPIPE): start from the defaults. The command's own dispositions are set in the child (below).
	 */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);

	struct config cfg;
	int fds[6] = {-1, -1, -1, -1, -1, -1};
	int nfd = recv_config(sock, &cfg, fds);
	int want = 1 + !!(cfg.flags & CFG_RULESET) + !!(cfg.flags & CFG_PTY) + !!(cfg.flags & CFG_STDIN) +
	           !!(cfg.flags & CFG_STDOUT) + !!(cfg.flags & CFG_STDERR);
	if (nfd != want) {
		errno = EPROTO;
		die("wrong number of descriptors in the configuration");
	}
	int k = 0;
	int bpf_fd = fds[k++];
	int ruleset_fd = (cfg.flags & CFG_RULESET) ? fds[k++] : -1;
	int pty_fd = (cfg.flags & CFG_PTY) ? fds[k++] : -1;
	int stdio[3];
	stdio[0] = (cfg.flags & CFG_STDIN) ? fds[k++] : -1;
	stdio[1] = (cfg.flags & CFG_STDOUT) ? fds[k++] : -1;
	stdio[2] = (cfg.flags & CFG_STDERR) ? fds[k++] : -1;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) die("child subreaper");
	if (pty_fd >= 0) {
		if (setsid() < 0) die("setsid");
		if (ioctl(pty_fd, TIOCSCTTY, 0) < 0) die("making the pty the controlling terminal");
	}

	sigset_t watched;
	sigemptyset(&watched);
	sigaddset(&watched, SIGCHLD);
	sigaddset(&watched, SIGTERM);
	sigaddset(&watched, SIGHUP);
	sigaddset(&watched, SIGINT);
	sigaddset(&watched, SIGQUIT);
	sigprocmask(SIG_BLOCK, &watched, NULL);
	int sfd = signalfd(-1, &watched, SFD_CLOEXEC);
	if (sfd < 0) die("signalfd");

	pid_t pid = fork();
	if (pid < 0) die("fork");
	if (pid == 0) {
		close(sfd);
		child(sock, &cfg, bpf_fd, ruleset_fd, pty_fd, stdio, argv + 2);
	}
	close(bpf_fd);
	if (ruleset_fd >= 0) close(ruleset_fd);
	if (pty_fd >= 0) close(pty_fd); /* the launcher must not hold the pty: EOF on the master means "gone" */
	for (int i = 0; i < 3; i++)
		if (stdio[i] >= 0) close(stdio[i]);

	struct pollfd pfd[2] = {{sfd, POLLIN, 0}, {sock, POLLIN, 0}};
	for (;;) {
		int r = poll(pfd, 2, -1);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) die("poll");
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			struct msg m;
			ssize_t n = recv(sock, &m, sizeof m, MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				/* The supervisor is gone: nothing in the sandbox may outlive it. */
				kill(pid, SIGKILL);
				kill_descendants();
				_exit(125);
			}
			if (n == (ssize_t)sizeof m && m.magic == HP_MAGIC) {
				if (m.kind == 'C') kill(-pid, SIGCONT), kill(pid, SIGCONT);
				else if (m.kind == 'K' && m.a > 0 && m.a < 65) kill(pid, m.a);
			}
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) != sizeof si) continue;
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP) kill(pid, si.ssi_signo);
			/* SIGINT/SIGQUIT: the terminal already sent them to the command's process group. */
			for (;;) {
				int st;
				pid_t p = waitpid(-1, &st, WNOHANG | WUNTRACED | __WALL);
				if (p <= 0) break;
				if (p != pid) continue; /* an orphaned descendant: reaped */
				if (WIFSTOPPED(st)) {
					send_msg(sock, 'S', WSTOPSIG(st), -1);
					continue;
				}
				kill_descendants();
				exit_like(st);
			}
		}
	}
}

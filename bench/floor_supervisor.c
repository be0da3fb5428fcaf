/* floor_supervisor — the floor of hallpass's mechanism, for benchmarks only.
 *
 *   floor_supervisor [--landlock DIR] -- CMD [ARG...]
 *   floor_supervisor --landlock-only DIR -- CMD [ARG...]
 *   floor_supervisor --landlock-read DIR -- CMD [ARG...]
 *
 * Default mode: fork; the child sets no_new_privs, optionally restricts itself with Landlock (writes only below
 * DIR and to the terminal/null devices), installs a hand-written seccomp BPF filter that returns
 * SECCOMP_RET_USER_NOTIF for write-ish opens (O_WRONLY|O_RDWR|O_CREAT|O_TRUNC), creat, mkdir(at), unlink(at),
 * rename(at,at2) and execve(at), sends the listener fd to the parent (socketpair, SCM_RIGHTS) and execs CMD.
 * The parent answers every notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE — no path read, no policy — and
 * exits with the child's status (128+N when killed by signal N).
 *
 * --landlock-only DIR: no seccomp, no fork: set no_new_privs, apply the Landlock ruleset, exec CMD.
 * --landlock-read DIR: as --landlock-only, with the rights hallpass's ruleset also handles, EXECUTE and READ_FILE
 * (the execute floor, and reads for the protected files: docs/threat-model.md), granted below "/" (and DIR), as
 * hallpass does when nothing is protected: a read-only open is then checked by Landlock too (without them it is
 * not: --landlock-only handles no read right).
 *
 * No libseccomp, no kernel headers (musl-gcc does not see them, and Debian 12's are older than the flags used
 * here): every constant and layout below is copied from the Linux UAPI headers, x86_64 only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "floor_supervisor is x86_64 only"
#endif

/* ---- seccomp (include/uapi/linux/seccomp.h, filter.h, audit.h) ---- */
struct sock_filter { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct sock_fprog { unsigned short len; struct sock_filter *filter; };
#define BPF_LD 0x00
#define BPF_JMP 0x05
#define BPF_RET 0x06
#define BPF_W 0x00
#define BPF_ABS 0x20
#define BPF_JEQ 0x10
#define BPF_JGE 0x30
#define BPF_JSET 0x40
#define BPF_K 0x00
#define STMT(c, k) ((struct sock_filter){(uint16_t)(c), 0, 0, (uint32_t)(k)})
#define JUMP(c, k, t, f) ((struct sock_filter){(uint16_t)(c), (uint8_t)(t), (uint8_t)(f), (uint32_t)(k)})

#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#define SECCOMP_RET_ALLOW 0x7fff0000U
#define AUDIT_ARCH_X86_64 0xc000003eU
#define X32_SYSCALL_BIT 0x40000000U
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
/* struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6] */
#define OFF_NR 0
#define OFF_ARCH 4
#define OFF_ARG_LO(i) (16 + 8 * (i)) /* little endian: low 32 bits of args[i] */

struct seccomp_notif {
	uint64_t id;
	uint32_t pid;
	uint32_t flags;
	struct { int32_t nr; uint32_t arch; uint64_t ip; uint64_t args[6]; } data;
};
struct seccomp_notif_resp { uint64_t id; int64_t val; int32_t error; uint32_t flags; };
#define SECCOMP_IOCTL_NOTIF_RECV 0xc0502100UL
#define SECCOMP_IOCTL_NOTIF_SEND 0xc0182101UL
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS 0x40082104UL /* _IOW('!', 4, __u64), Linux 6.6 */

/* ---- Landlock (include/uapi/linux/landlock.h) ---- */
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define LANDLOCK_RULE_PATH_BENEATH 1
#define LL_EXECUTE (1ULL << 0)
#define LL_WRITE_FILE (1ULL << 1)
#define LL_READ_FILE (1ULL << 2)
#define LL_READ_DIR (1ULL << 3)
#define LL_REMOVE_DIR (1ULL << 4)
#define LL_REMOVE_FILE (1ULL << 5)
#define LL_MAKE_CHAR (1ULL << 6)
#define LL_MAKE_DIR (1ULL << 7)
#define LL_MAKE_REG (1ULL << 8)
#define LL_MAKE_SOCK (1ULL << 9)
#define LL_MAKE_FIFO (1ULL << 10)
#define LL_MAKE_BLOCK (1ULL << 11)
#define LL_MAKE_SYM (1ULL << 12)
#define LL_REFER (1ULL << 13)    /* ABI 2 */
#define LL_TRUNCATE (1ULL << 14) /* ABI 3 */
struct landlock_ruleset_attr { uint64_t handled_access_fs; }; /* the ABI 1-3 prefix; the kernel accepts it */
struct __attribute__((packed)) landlock_path_beneath_attr { uint64_t allowed_access; int32_t parent_fd; };

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

static void die(const char *what) {
	fprintf(stderr, "floor_supervisor: %s: %s\n", what, strerror(errno));
	_exit(125);
}

static void add_path(int rs, const char *path, uint64_t access, int must_exist) {
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (must_exist) die(path);
		return;
	}
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0) die("landlock_add_rule");
	close(fd);
}

static int handle_read; /* --landlock-read */

/* Writes only below dir, plus the terminal and null devices; everything readable and executable. */
static void apply_landlock(const char *dir) {
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) die("landlock not available");
	uint64_t file_w = LL_WRITE_FILE | (abi >= 3 ? LL_TRUNCATE : 0);
	uint64_t dir_w = file_w | LL_REMOVE_DIR | LL_REMOVE_FILE | LL_MAKE_CHAR | LL_MAKE_DIR | LL_MAKE_REG |
	                 LL_MAKE_SOCK | LL_MAKE_FIFO | LL_MAKE_BLOCK | LL_MAKE_SYM | (abi >= 2 ? LL_REFER : 0);
	uint64_t read = handle_read ? LL_READ_FILE | LL_EXECUTE : 0;
	struct landlock_ruleset_attr attr = {.handled_access_fs = dir_w | read};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0) die("landlock_create_ruleset");
	if (read) add_path(rs, "/", read, 1);
	add_path(rs, dir, dir_w | read, 1);
	static const char *devs[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"};
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) add_path(rs, devs[i], file_w, 0);
	add_path(rs, "/dev/pts", file_w, 0);
	if (syscall(SYS_landlock_restrict_self, rs, 0) != 0) die("landlock_restrict_self");
	close(rs);
}

static int install_filter(void) {
	const uint32_t wflags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC;
	/* Indices: the two flag checks and the NOTIF/ALLOW returns are at the end; jumps are relative. */
	struct sock_filter f[] = {
		/* 0 */ STMT(BPF_LD | BPF_W | BPF_ABS, OFF_ARCH),
		/* 1 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		/* 2 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		/* 3 */ STMT(BPF_LD | BPF_W | BPF_ABS, OFF_NR),
		/* 4 */ JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1),
		/* 5 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		/* 6 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 13, 0),   /* -> 20 */
		/* 7 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 14, 0),     /* -> 22 */
		/* 8 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_creat, 10, 0),    /* -> 19 */
		/* 9 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdir, 9, 0),
		/* 10 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdirat, 8, 0),
		/* 11 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlink, 7, 0),
		/* 12 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlinkat, 6, 0),
		/* 13 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rename, 5, 0),
		/* 14 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_renameat, 4, 0),
		/* 15 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_renameat2, 3, 0),
		/* 16 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 2, 0),
		/* 17 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 1, 0),
		/* 18 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 19 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		/* 20 openat: flags in args[2] */ STMT(BPF_LD | BPF_W | BPF_ABS, OFF_ARG_LO(2)),
		/* 21 */ JUMP(BPF_JMP | BPF_JSET | BPF_K, wflags, 2, 3), /* -> 24 NOTIF : -> 25 ALLOW */
		/* 22 open: flags in args[1] */ STMT(BPF_LD | BPF_W | BPF_ABS, OFF_ARG_LO(1)),
		/* 23 */ JUMP(BPF_JMP | BPF_JSET | BPF_K, wflags, 0, 1),
		/* 24 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		/* 25 */ STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof *f, .filter = f};
	int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0) die("seccomp(SET_MODE_FILTER, NEW_LISTENER)");
	return fd;
}

static void send_fd(int sock, int fd) {
	char byte = 0;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sock, &msg, 0) != 1) die("sendmsg");
}

static int recv_fd(int sock) {
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0) return -1; /* the child failed before sending: its status tells why */
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

static pid_t child_pid;

static int status_code(int st) {
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 125;
}

/* Exits from the handler: the RECV loop blocks in the kernel, and a filter whose last user exited never wakes
 * it. Exiting here is race-free (no check-then-block window). */
static void on_sigchld(int sig) {
	(void)sig;
	int st;
	int saved = errno;
	if (waitpid(child_pid, &st, WNOHANG) == child_pid) _exit(status_code(st));
	errno = saved;
}

static void usage(void) {
	fprintf(stderr, "usage: floor_supervisor [--landlock DIR | --landlock-only DIR | --landlock-read DIR] -- CMD [ARG...]\n");
	_exit(2);
}

int main(int argc, char **argv) {
	const char *ll_dir = NULL;
	int landlock_only = 0, i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--")) { i++; break; }
		if (!strcmp(argv[i], "--landlock") && i + 1 < argc) ll_dir = argv[++i];
		else if (!strcmp(argv[i], "--landlock-only") && i + 1 < argc) { ll_dir = argv[++i]; landlock_only = 1; }
		else if (!strcmp(argv[i], "--landlock-read") && i + 1 < argc) {
			ll_dir = argv[++i];
			landlock_only = handle_read = 1;
		}
		else usage();
	}
	if (i >= argc) usage();
	char **cmd = argv + i;

	if (landlock_only) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("PR_SET_NO_NEW_PRIVS");
		apply_landlock(ll_dir);
		execvp(cmd[0], cmd);
		fprintf(stderr, "floor_supervisor: %s: %s\n", cmd[0], strerror(errno));
		return errno == ENOENT ? 127 : 126;
	}

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
	struct sigaction sa = {.sa_handler = on_sigchld, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
	sigemptyset(&sa.sa_mask);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old); /* the handler must see child_pid set */
	sigaction(SIGCHLD, &sa, NULL);

	child_pid = fork();
	if (child_pid < 0) die("fork");
	if (child_pid == 0) {
		signal(SIGCHLD, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(sv[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("PR_SET_NO_NEW_PRIVS");
		if (ll_dir) apply_landlock(ll_dir);
		int lfd = install_filter();
		send_fd(sv[1], lfd);
		close(lfd);
		/* Wait until the parent holds the fd: our own execve below is trapped. */
		char ack;
		if (read(sv[1], &ack, 1) != 1) _exit(125);
		close(sv[1]);
		execvp(cmd[0], cmd);
		fprintf(stderr, "floor_supervisor: %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(sv[1]);
	int lfd = recv_fd(sv[0]);
	if (lfd >= 0) {
		uint64_t fl = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
		(void)ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, fl); /* Linux 6.6+; without it, plain wake-ups */
		if (write(sv[0], "", 1) != 1) die("write ack");
	}
	close(sv[0]);
	sigprocmask(SIG_SETMASK, &old, NULL); /* from here the handler may exit for us */
	if (lfd < 0) {
		for (;;) pause(); /* the child died before handing over the fd; SIGCHLD exits with its status */
	}
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	for (;;) {
		memset(&req, 0, sizeof req);
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
			if (errno == EINTR || errno == ENOENT) continue;
			die("SECCOMP_IOCTL_NOTIF_RECV");
		}
		resp.id = req.id;
		resp.val = 0;
		resp.error = 0;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT && errno != EINTR)
			die("SECCOMP_IOCTL_NOTIF_SEND");
	}
}

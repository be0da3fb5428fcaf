/*
 * hallpass supervisor fast path (docs/performance.md): the supervisor Worker hands its wait for the next
 * notification to this loop, which answers by itself the writes that plainly fall inside the Landlock floor —
 * CONTINUE for the calls Landlock covers, and the metadata calls (which it does not cover) performed here —
 * and returns every other notification to the TypeScript mediator.
 *
 * Why this is safe (docs/threat-model.md): CONTINUE is only ever used inside the floor, for calls Landlock covers, in floor
 * roots that hold no deny rule. The kernel re-checks every such call against the same Landlock ruleset, so a
 * classification made stale by a racing thread (a directory swapped for a symlink after the check) cannot let
 * a write leave the floor: the worst it can do is turn an allowed write into EACCES. The checks below exist to
 * keep hallpass's answers the same as the mediator's, not to enforce anything; anything unusual goes to the
 * mediator:
 *   - only open/openat/creat (not O_TMPFILE), mkdir(at), unlink(at), rmdir, rename(at, at2 without flags
 *     other than RENAME_NOREPLACE), link(at, without flags), of the native architecture;
 *   - the path is printable ASCII, < 4096 bytes, without `..`, not under /proc or /dev/fd, not /dev/std*;
 *   - its directory is below a root the mediator gave (a floor tree with no deny rule), and opens with
 *     openat2 RESOLVE_NO_SYMLINKS (no symlink anywhere on it);
 *   - for calls that follow a final symlink, the last component is not a symlink.
 * The metadata calls (chmod, chown, utimensat: see meta()) cannot be continued — nothing in the kernel would
 * check the file a racing thread put in place — so they are performed here exactly as the mediator performs
 * them: on our own copy of the program's fd (pidfd_getfd), whose canonical path the kernel gives, or through
 * the directory opened above and checked, never following the last component. The file acted on is the file
 * checked.
 * Programs of the allowed exec trees are run (exec_fast()); binds of anything but a unix socket path are
 * continued, as the mediator does. chdir and fchdir are trapped too, only so that the kept working
 * directories can be forgotten; they are always continued.
 * The mediator sets no roots while it logs every decision (--log), in a container (no floor), or when the
 * library is missing; then everything goes to it, as before.
 *
 * Built as a shared library (glibc) and loaded with Deno.dlopen; one handle per listener.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#define SYS_fchmodat2_nr 452 /* the same number on every architecture */
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif
#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "unsupported architecture"
#endif

/*
 * SEND, ID_VALID and ADDFD on the listener, again while they fail with EINTR: the kernel takes the listener's
 * lock interruptibly, so a signal to this thread (a terminal's SIGWINCH, the watchdog's) fails the call having
 * done nothing. Taken for "the thread is gone", the call would stay unanswered and the sandboxed thread blocked.
 */
static int notif_ioctl(int listener, unsigned long request, const void *arg) {
	int r;
	while ((r = ioctl(listener, request, arg)) < 0 && errno == EINTR) {
		/* each EINTR is a real signal (libc.ts transient): never a reason to give up */
	}
	return r;
}

#define PATH_MAX_BYTES 4096
#define MAX_ROOTS 512
#define DIR_CACHE 1024 /* direct-mapped by a hash of the path */
#define DIR_PATH_MAX 512
#define DIR_CACHE_NS 500000000LL /* directories checked in the last 0.5 s are not checked again */
#define CWD_CACHE 256                 /* working directories, by thread id */
#define CWD_CACHE_NS 200000000LL      /* kept 0.2 s, and forgotten at every chdir/fchdir */
#define CWD_SETTLE_NS 20000000LL      /* not kept in the 20 ms after a chdir (another thread may still be in it) */

/* Canonical absolute paths, never "/" itself. */
struct roots {
	int n;
	char *path[MAX_ROOTS];
	size_t len[MAX_ROOTS];
};

/*
 * The exceptions of the perform region (lib/supervisor/fast_roots.ts fastPerformRegion): paths with what they
 * exclude, in an open-addressing hash table. Every directory above an exception is in it too (EX_ABOVE).
 */
#define EX_TREE 1     /* the path and everything below it */
#define EX_EXACT 2    /* the path itself */
#define EX_CHILDREN 4 /* the names directly in it */
#define EX_ABOVE 8    /* a directory above an exception: itself */
#define EX_NEWNAMES 16 /* new names directly in it are reported by the mediator: only existing ones here */
#define EXCEPT_MAX 60000
struct except {
	unsigned cap; /* a power of two, or 0 */
	unsigned n;
	char **path;
	size_t *len;
	unsigned *hash;
	unsigned char *flags;
	char *arena; /* a copy of the list: every path points into it (a directory above an entry: into the entry) */
	int bad;     /* the last list could not be taken: nothing is performed */
};

struct hp_fast {
	/* lib/supervisor/fast_roots.ts: */
	struct roots write; /* floor trees without a deny rule: writes continued or performed here */
	struct roots exec;  /* trees whose programs run without asking */
	struct roots files; /* floor entries that are single files (/dev/null...): opens of them continued */
	struct roots perform; /* trees whose writes (outside the floor) are performed here: see perform_ok() */
	struct roots project; /* the project: no rename into it from outside is performed here (perform_write) */
	/* The Worker's state shared with the watchdog (lib/supervisor/worker.ts state): [1] busy, [3] handled,
	 * bytes 16..24 the id being handled; set by HP_CTL_WATCH, else NULL. */
	int32_t *watch;
	struct except except; /* where in those trees the mediator decides (complete, or `bad`: none performed) */
	struct {
		char path[DIR_PATH_MAX]; /* longer directories are checked every time */
		long long at;
	} cache[DIR_CACHE];
	int cache_used; /* an entry was set since the cache was last cleared (its ~0.5 MB is touched only then) */
	/*
	 * Threads' working directories. The filter traps chdir and fchdir (and nothing else changes a cwd in the
	 * sandbox: no new mount namespaces), so every change clears them all (a thread's chdir moves its whole
	 * process). A stale entry could only misclassify, never let a write out of the floor.
	 */
	struct {
		pid_t tid;
		unsigned gen;
		long long at;
		ssize_t len;
		char path[DIR_PATH_MAX];
	} cwd[CWD_CACHE];
	unsigned cwd_gen;
	long long cwd_changed_at;
	/*
	 * Threads whose credentials were found to be the supervisor's (same_creds()), by thread id. The filter traps
	 * every call that changes a thread's ids, groups or capabilities, and exec; each makes all of them stale
	 * (creds_gen), and so does every return to the mediator (which may have seen such calls itself).
	 */
	struct {
		pid_t tid;
		unsigned gen;
		int umask; /* its umask, or -1: not read */
	} creds[CWD_CACHE];
	unsigned creds_gen;
	/* Threads' effective capabilities (caps_as_caller), kept as the finding above (the same creds_gen). */
	struct {
		pid_t tid;
		unsigned gen;
		unsigned long long eff;
	} caps[CWD_CACHE];
	/* The last directory checked, kept open for the next call in it (readlinkat of one name, not a path walk) */
	int last_dfd;
	long long last_at;
	char last_dir[DIR_PATH_MAX];
	/* This thread's effective set while lowered for the metadata calls (caps_keep_as_caller): */
	int kept_lowered;                          /* lowered, to own & kept_for */
	struct __user_cap_data_struct kept_d[2]; /* what to give back */
	unsigned long long kept_for;               /* the callers' effective set it was lowered for */
	int pidfd; /* of thread pidfd_tid, kept for the next metadata call */
	pid_t pidfd_tid;
	unsigned long long continued;
	unsigned long long handed;
	unsigned long long emulated;
	unsigned long long refused; /* execs of what is not there or cannot run: the kernel's errno */
	int net_direct;             /* connects not mediated: IP connects and sends performed here (net_fast) */
	int connecting;             /* the socket of a connect handed to the mediator (hp_fast_take_connecting) */
	/*
	 * HALLPASS_FASTPATH_RECORD=FILE: every answer given here is appended to FILE, one line each, for
	 * tests/e2e/fast_replay_test.ts to replay through the TypeScript decision (lib/supervisor/fast_replay.ts):
	 * "F <hallpass pid> <syscall nr> <answer> <path>[ <path>]" with tabs; answer: continue, perform, exec,
	 * errno:N, net, bind, cwd; "H <hallpass pid> <syscall nr>" for each call handed to the mediator; and when the
	 * handle is freed, its counters (an "S" line). rec_path holds the
	 * canonical paths the current call was decided on.
	 */
	int rec_fd;
	int rec_n;
	uint64_t cur_id; /* the notification being answered */
	uint64_t rd_id, rd_addr; /* the last path read (in_floor_at), for that notification and argument */
	int rd_len;
	char rd_buf[PATH_MAX_BYTES + 1];
	int walk_err; /* in_floor_at(): the directory of a path in the floor or perform region is not there */
	int end_in_project; /* in_floor_at(): the last path read lies in the project (h->project) */
	char rec_path[2][PATH_MAX_BYTES + 1];
};

void *hp_fast_new(void) {
	struct hp_fast *h = calloc(1, sizeof(struct hp_fast));
	if (!h) return h;
	h->except.bad = 1;
	h->pidfd = h->last_dfd = h->rec_fd = h->connecting = -1;
	const char *rec = getenv("HALLPASS_FASTPATH_RECORD");
	if (rec && rec[0]) h->rec_fd = open(rec, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	return h;
}

static void clear_list(struct roots *r) {
	for (int i = 0; i < r->n; i++) free(r->path[i]);
	r->n = 0;
}

static void clear_except(struct except *e) {
	free(e->arena);
	free(e->path);
	free(e->len);
	free(e->hash);
	free(e->flags);
	memset(e, 0, sizeof *e);
	e->bad = 1;
}

static unsigned hash_bytes(const char *p, size_t n) {
	unsigned h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* The flags of `path` (`len` bytes) in the exceptions; 0 when absent. */
static unsigned except_flags(const struct except *e, const char *path, size_t len, unsigned hash) {
	if (e->cap == 0) return 0;
	for (unsigned i = hash & (e->cap - 1);; i = (i + 1) & (e->cap - 1)) {
		if (!e->path[i]) return 0;
		if (e->hash[i] == hash && e->len[i] == len && memcmp(e->path[i], path, len) == 0) return e->flags[i];
	}
}

/* Adds `flags` to `path` (`len` bytes, in e->arena: kept, not copied). 0, or -1 (full). */
static int except_add(struct except *e, char *path, size_t len, unsigned flags) {
	unsigned hash = hash_bytes(path, len);
	for (unsigned i = hash & (e->cap - 1);; i = (i + 1) & (e->cap - 1)) {
		if (!e->path[i]) {
			if (e->n + 1 > e->cap / 2) return -1;
			e->path[i] = path;
			e->len[i] = len;
			e->hash[i] = hash;
			e->flags[i] = (unsigned char)flags;
			e->n++;
			return 0;
		}
		if (e->hash[i] == hash && e->len[i] == len && memcmp(e->path[i], path, len) == 0) {
			e->flags[i] |= (unsigned char)flags;
			return 0;
		}
	}
}

/*
 * Sets the exceptions: NUL-terminated entries, each a kind letter (T tree, E exact, C children, N new names)
 * and a canonical absolute path. 0, or -EINVAL/-ENOMEM (then `bad`: nothing is performed until a good list).
 */
static int set_except(struct except *e, const char *buf, int len) {
	clear_except(e);
	/* every entry and each directory above it, in a table at most half full */
	size_t count = 0, slots = 0;
	for (int off = 0; off < len; off++) {
		if (buf[off] == 0) count++;
		if (buf[off] == 0 || buf[off] == '/') slots++;
	}
	if (count > EXCEPT_MAX) return -EINVAL;
	unsigned cap = 64;
	while (cap < slots * 2 && cap < (1u << 24)) cap <<= 1;
	e->path = calloc(cap, sizeof *e->path);
	e->len = calloc(cap, sizeof *e->len);
	e->hash = calloc(cap, sizeof *e->hash);
	e->flags = calloc(cap, sizeof *e->flags);
	e->arena = malloc(len > 0 ? (size_t)len : 1);
	if (!e->path || !e->len || !e->hash || !e->flags || !e->arena) {
		clear_except(e);
		return -ENOMEM;
	}
	e->cap = cap;
	if (len > 0) memcpy(e->arena, buf, (size_t)len);
	int off = 0;
	while (off < len) {
		char *s = e->arena + off;
		size_t n = strnlen(s, (size_t)(len - off));
		if (n == (size_t)(len - off) || n < 2 || s[1] != '/') {
			clear_except(e);
			return -EINVAL;
		}
		unsigned kind = s[0] == 'T'   ? EX_TREE
		                : s[0] == 'E' ? EX_EXACT
		                : s[0] == 'C' ? EX_CHILDREN
		                : s[0] == 'N' ? EX_NEWNAMES
		                              : 0;
		char *path = s + 1;
		size_t pl = n - 1;
		while (pl > 1 && path[pl - 1] == '/') pl--;
		if (!kind || except_add(e, path, pl, kind) < 0) {
			clear_except(e);
			return kind ? -ENOMEM : -EINVAL;
		}
		/* every directory above it ("/" never counts: the region's roots are below it) */
		for (size_t i = pl - 1; i > 0; i--) {
			if (path[i] == '/' && except_add(e, path, i, EX_ABOVE) < 0) {
				clear_except(e);
				return -ENOMEM;
			}
		}
		off += (int)n + 1;
	}
	e->bad = 0;
	return 0;
}

void hp_fast_free(void *p) {
	struct hp_fast *h = p;
	if (!h) return;
	clear_list(&h->write);
	clear_list(&h->exec);
	clear_list(&h->files);
	clear_list(&h->perform);
	clear_list(&h->project);
	clear_except(&h->except);
	if (h->pidfd >= 0) close(h->pidfd);
	if (h->last_dfd >= 0) close(h->last_dfd);
	if (h->connecting >= 0) close(h->connecting);
	if (h->rec_fd >= 0) {
		/* the record's last line from this handle: what it saw ("S pid continued handed performed refused") */
		char line[160];
		int len = snprintf(line, sizeof line, "S\t%d\t%llu\t%llu\t%llu\t%llu\n", (int)getpid(), h->continued,
		                   h->handed, h->emulated, h->refused);
		if (len > 0 && (size_t)len < sizeof line && write(h->rec_fd, line, (size_t)len) < 0) { /* a test's record */ }
		close(h->rec_fd);
	}
	free(h);
}

enum { LIST_WRITE = 0, LIST_EXEC = 1, LIST_FILES = 2, LIST_PERFORM = 3, LIST_EXCEPT = 4, LIST_PROJECT = 5 };

/*
 * Sets one list (LIST_*): canonical absolute paths, each NUL-terminated, `len` bytes in all; none hands those
 * decisions to the mediator. 0, or -EINVAL (the list is then empty).
 */
int hp_fast_set_list(void *p, int which, const char *paths, int len) {
	struct hp_fast *h = p;
	if (which == LIST_EXCEPT) return set_except(&h->except, paths, len);
	struct roots *r = which == LIST_WRITE     ? &h->write
	                  : which == LIST_EXEC    ? &h->exec
	                  : which == LIST_FILES   ? &h->files
	                  : which == LIST_PERFORM ? &h->perform
	                  : which == LIST_PROJECT ? &h->project
	                                          : NULL;
	if (!r) return -EINVAL;
	clear_list(r);
	if (which == LIST_WRITE) {
		/* clearing an untouched cache would fault in every page of it (~0.3 ms, on the first trapped call) */
		if (h->cache_used) memset(h->cache, 0, sizeof h->cache);
		h->cache_used = 0;
		if (h->last_dfd >= 0) close(h->last_dfd);
		h->last_dfd = -1;
	}
	int off = 0;
	while (off < len) {
		const char *s = paths + off;
		size_t n = strnlen(s, (size_t)(len - off));
		size_t keep = n;
		while (keep > 1 && s[keep - 1] == '/') keep--; /* a trailing slash */
		if (n == (size_t)(len - off) || n == 0 || s[0] != '/' || keep == 1 || r->n == MAX_ROOTS) {
			clear_list(r);
			return -EINVAL;
		}
		r->path[r->n] = strndup(s, keep);
		r->len[r->n] = keep;
		r->n++;
		off += (int)n + 1;
	}
	return 0;
}

/* [continued, handed to the mediator, performed here, execs refused with the kernel's errno] */
void hp_fast_stats(void *p, unsigned long long *out) {
	struct hp_fast *h = p;
	out[0] = h->continued;
	out[1] = h->handed;
	out[2] = h->emulated;
	out[3] = h->refused;
}

static long long now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Notes a canonical path the current call is decided on (for the record; see rec_fd). */
static void rec_note(struct hp_fast *h, const char *path, size_t len) {
	if (h->rec_fd < 0 || h->rec_n >= 2 || len > PATH_MAX_BYTES) return;
	memcpy(h->rec_path[h->rec_n], path, len);
	h->rec_path[h->rec_n][len] = 0;
	h->rec_n++;
}

/* Appends one answer to the record (one write: lines of several processes do not mix). */
static void rec_answer(struct hp_fast *h, const struct seccomp_notif *n, const char *answer) {
	if (h->rec_fd < 0) return;
	char line[2 * PATH_MAX_BYTES + 128];
	int len = snprintf(line, sizeof line, "F\t%d\t%d\t%s", (int)getpid(), (int)n->data.nr, answer);
	for (int i = 0; i < h->rec_n && len > 0 && (size_t)len < sizeof line; i++) {
		len += snprintf(line + len, sizeof line - (size_t)len, "\t%s", h->rec_path[i]);
	}
	if (len <= 0 || (size_t)len >= sizeof line - 1) return;
	line[len++] = '\n';
	ssize_t w = write(h->rec_fd, line, (size_t)len);
	(void)w;
}

/*
 * Reads the NUL-terminated string at `addr` in thread `tid`, page by page, into `buf` of `max` bytes. Its
 * length, or -1 (unreadable, or no NUL in `max` bytes).
 */
static int read_path(pid_t tid, uint64_t addr, char *buf, size_t max) {
	size_t got = 0;
	while (got < max) {
		uint64_t a = addr + got;
		size_t chunk = 4096 - (size_t)(a & 4095);
		/* Most paths are short: the first read copies at most 256 bytes (not the rest of the page). */
		if (got == 0 && chunk > 256) chunk = 256;
		if (chunk > max - got) chunk = max - got;
		struct iovec local = {buf + got, chunk}, remote = {(void *)(uintptr_t)a, chunk};
		ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
		if (n <= 0) return -1;
		char *nul = memchr(buf + got, 0, (size_t)n);
		if (nul) return (int)(nul - buf);
		got += (size_t)n;
	}
	return -1;
}

/* Whether `path` is one of the list's paths or lies below one. */
static int in_list(const struct roots *r, const char *path, size_t len) {
	for (int i = 0; i < r->n; i++) {
		size_t rl = r->len[i];
		if (len == rl && memcmp(path, r->path[i], rl) == 0) return 1;
		if (len > rl && path[rl] == '/' && memcmp(path, r->path[i], rl) == 0) return 1;
	}
	return 0;
}

static int under_root(struct hp_fast *h, const char *dir, size_t len) { return in_list(&h->write, dir, len); }

/*
 * Whether the canonical `path` lies in the perform region (lib/supervisor/fast_roots.ts fastPerformRegion):
 * at or below a perform root, and touched by no exception. There the decision is "allow", never "floor":
 * the mediator would perform the call, and so may the fast path. 1: yes; 2: a name directly in a directory
 * whose new entries the mediator reports (read-carved): only a call that makes nothing new there (mkdir of what
 * exists); 3: a directory above an exception: yes, except for a rename (which would carry the exception's path
 * along: lib/policy/protected_paths.ts protectedHit's `names`); 0: no.
 */
static int perform_ok(struct hp_fast *h, const char *path, size_t len) {
	if (h->except.bad || h->perform.n == 0) return 0;
	int below = 0; /* the root itself too: a tree rule covers its own path */
	for (int i = 0; i < h->perform.n && !below; i++) {
		size_t rl = h->perform.len[i];
		below = len >= rl && (len == rl || path[rl] == '/') && memcmp(path, h->perform.path[i], rl) == 0;
	}
	if (!below) return 0;
	/* each directory on the way (not "/"), then the path itself; FNV-1a of the prefix as it grows */
	unsigned hash = 2166136261u, parent = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i > 0 && (i == len || path[i] == '/')) {
			unsigned f = except_flags(&h->except, path, i, hash);
			if (f & EX_TREE) return 0;
			if (i == len) {
				if ((f & EX_EXACT) || (parent & EX_CHILDREN)) return 0;
				if (parent & EX_NEWNAMES) return (f & EX_ABOVE) ? 0 : 2;
				return (f & EX_ABOVE) ? 3 : 1;
			}
			parent = f;
		}
		if (i < len) hash = (hash ^ (unsigned char)path[i]) * 16777619u;
	}
	return 0;
}

static int is_file_entry(struct hp_fast *h, const char *path, size_t len) {
	for (int i = 0; i < h->files.n; i++) {
		if (len == h->files.len[i] && memcmp(path, h->files.path[i], len) == 0) return 1;
	}
	return 0;
}

static unsigned path_hash(const char *p) {
	unsigned h = 2166136261u; /* FNV-1a */
	for (; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
	return h % DIR_CACHE;
}

static int dir_cached(struct hp_fast *h, const char *dir, long long t) {
	unsigned i = path_hash(dir);
	return h->cache[i].at && t - h->cache[i].at < DIR_CACHE_NS && strcmp(h->cache[i].path, dir) == 0;
}

static void dir_remember(struct hp_fast *h, const char *dir, long long t) {
	size_t n = strlen(dir);
	if (n >= DIR_PATH_MAX) return;
	unsigned i = path_hash(dir);
	memcpy(h->cache[i].path, dir, n + 1);
	h->cache[i].at = t;
	h->cache_used = 1;
}

enum { IN_FLOOR = 1, IN_PERFORM = 2, IN_EXISTING = 4, IN_NAMES = 8 };

/*
 * Whether the path argument of a call falls plainly inside the floor (see the file comment). `dirfd` is the
 * call's directory fd (AT_FDCWD for the path forms), `follow` whether the call follows a final symlink.
 * `region`: IN_FLOOR, and IN_PERFORM to accept the perform region too (perform_ok(); then `dfd_out` is
 * needed: the call is performed through it), IN_EXISTING also its names that count only when they exist,
 * IN_NAMES for an end of a rename (never a directory above an exception).
 * Returns the region the path is in (IN_FLOOR, IN_PERFORM or IN_EXISTING), or 0: for the mediator.
 */
static int in_floor_at(struct hp_fast *h, pid_t tid, int dirfd, uint64_t addr, int follow, int contents,
                      int *dfd_out, char *name_out, int region) {
	/*
	 * Read once per notification and argument: a later look at the same call (perform_write after classify)
	 * decides on what the first one read, not on what a racing thread has written since.
	 */
	char raw[PATH_MAX_BYTES + 1];
	int n;
	if (h->rd_id == h->cur_id && h->rd_addr == addr && h->rd_len > 0) {
		n = h->rd_len;
		memcpy(raw, h->rd_buf, (size_t)n + 1);
	} else {
		n = read_path(tid, addr, raw, PATH_MAX_BYTES);
		h->rd_id = h->cur_id, h->rd_addr = addr, h->rd_len = n;
		if (n > 0) memcpy(h->rd_buf, raw, (size_t)n + 1);
	}
	if (n <= 0) return 0;
	/*
	 * A last component written with a trailing slash or as "." ("f/", "d/sub/."): the kernel refuses many of these
	 * before any check (unlink "f/": ENOTDIR), which a call performed on the canonical name would not; the mediator
	 * answers them (lib/supervisor/path_forms.ts). Continued calls are the kernel's own.
	 */
	if (dfd_out && (raw[n - 1] == '/' || (raw[n - 1] == '.' && (n == 1 || raw[n - 2] == '/')))) return 0;
	for (int i = 0; i < n; i++) {
		if (raw[i] < 0x20 || raw[i] > 0x7e) return 0; /* not plain ASCII: the mediator decides */
	}
	char full[2 * PATH_MAX_BYTES + 2];
	size_t len = 0;
	if (raw[0] != '/') {
		char link[64];
		ssize_t b = -1;
		long long t = now_ns();
		unsigned slot = (unsigned)tid % CWD_CACHE;
		/* A call performed here is performed at the path it was decided on: the working directory read now. */
		if (dirfd == AT_FDCWD && !(region & IN_PERFORM) && h->cwd[slot].tid == tid &&
		    h->cwd[slot].gen == h->cwd_gen && t - h->cwd[slot].at < CWD_CACHE_NS) {
			b = h->cwd[slot].len;
			memcpy(full, h->cwd[slot].path, (size_t)b);
		} else {
			if (dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", tid);
			else snprintf(link, sizeof link, "/proc/%d/fd/%d", tid, dirfd);
			b = readlink(link, full, PATH_MAX_BYTES);
			if (dirfd == AT_FDCWD && b > 0 && b < DIR_PATH_MAX && t - h->cwd_changed_at > CWD_SETTLE_NS) {
				h->cwd[slot].tid = tid;
				h->cwd[slot].gen = h->cwd_gen;
				h->cwd[slot].at = t;
				h->cwd[slot].len = b;
				memcpy(h->cwd[slot].path, full, (size_t)b);
			}
		}
		if (b <= 0 || b >= PATH_MAX_BYTES || full[0] != '/') return 0;
		if (b > 10 && memcmp(full + b - 10, " (deleted)", 10) == 0) return 0;
		for (ssize_t i = 0; i < b; i++) {
			if (full[i] < 0x20 || full[i] > 0x7e) return 0; /* a directory not named in plain ASCII: the mediator */
		}
		len = (size_t)b;
	}
	/* Append the path's components, dropping "." and empty ones; ".." goes to the mediator. */
	char *save = NULL;
	for (char *c = strtok_r(raw, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (c[0] == '.' && c[1] == 0) continue;
		if (c[0] == '.' && c[1] == '.' && c[2] == 0) return 0;
		size_t cl = strlen(c);
		if (len == 1 && full[0] == '/') len = 0; /* the root: "/" + name, not "//name" */
		if (len + 1 + cl >= PATH_MAX_BYTES) return 0;
		full[len++] = '/';
		memcpy(full + len, c, cl);
		len += cl;
	}
	full[len] = 0;
	if (len < 2) return 0;
	if (strncmp(full, "/proc", 5) == 0 && (full[5] == 0 || full[5] == '/')) return 0;
	/* the names that mean the calling process (the mediator rewrites them); /dev/shm and the rest are files */
	if (strncmp(full, "/dev/fd", 7) == 0 && (full[7] == 0 || full[7] == '/')) return 0;
	if (strcmp(full, "/dev/stdin") == 0 || strcmp(full, "/dev/stdout") == 0 || strcmp(full, "/dev/stderr") == 0)
		return 0;
	rec_note(h, full, len);
	h->end_in_project = in_list(&h->project, full, len);
	if (contents && !dfd_out && is_file_entry(h, full, len)) {
		/* A floor file itself (/dev/null): its contents may be written if this very path names it. */
		struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		int fd = (int)syscall(SYS_openat2, AT_FDCWD, full, &how, sizeof how);
		if (fd < 0) return 0;
		close(fd);
		return 1;
	}
	if (!dfd_out) {
		/* A root itself (`mkdir -p` of the project): the mediator continues it too (EEXIST from the kernel) */
		for (int i = 0; i < h->write.n; i++) {
			if (len == h->write.len[i] && memcmp(full, h->write.path[i], len) == 0) return 1;
		}
	}
	char *slash = strrchr(full, '/');
	size_t dirlen = slash == full ? 1 : (size_t)(slash - full);
	const char *name = slash + 1;
	int in = IN_FLOOR;
	if (!under_root(h, full, dirlen)) {
		int pk = region & IN_PERFORM && dfd_out ? perform_ok(h, full, len) : 0;
		if (pk == 3) pk = region & IN_NAMES ? 0 : 1;
		if (pk == 0 || (pk == 2 && !(region & IN_EXISTING))) return 0;
		in = pk == 2 ? IN_EXISTING : IN_PERFORM;
	}
	*slash = 0;
	const char *dir = dirlen == 1 ? "/" : full;
	long long t = now_ns();
	int dfd = -1;
	if (dfd_out || !dir_cached(h, dir, t)) {
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		                       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		dfd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
		if (dfd < 0) {
			/*
			 * ENOENT, ENOTDIR: a directory on the way is missing (or a file), before any symlink (that would be
			 * ELOOP): every component up to there is a real directory below the root, so the call fails in the
			 * kernel, or — should a racing thread create it — Landlock decides. The mediator would continue it
			 * too. A symlink on the way (ELOOP) or anything else: the mediator resolves it.
			 */
			if (errno == ENOENT || errno == ENOTDIR) h->walk_err = errno;
			return !dfd_out && (errno == ENOENT || errno == ENOTDIR);
		}
		if (in == IN_FLOOR) dir_remember(h, dir, t);
	}
	int ok = 1;
	if (follow) {
		char target[8];
		ssize_t r;
		if (dfd >= 0) {
			r = readlinkat(dfd, name, target, sizeof target);
		} else if (h->last_dfd >= 0 && t - h->last_at < DIR_CACHE_NS && strcmp(h->last_dir, dir) == 0) {
			r = readlinkat(h->last_dfd, name, target, sizeof target);
		} else {
			*slash = '/';
			r = readlink(full, target, sizeof target);
		}
		if (r >= 0 || (errno != EINVAL && errno != ENOENT)) ok = 0; /* a symlink: followed where? ask */
	}
	if (dfd >= 0 && !dfd_out && strlen(dir) < DIR_PATH_MAX) {
		/* keep it for the next call in this directory (as stale, at worst, as the directory cache) */
		if (h->last_dfd >= 0) close(h->last_dfd);
		h->last_dfd = dfd;
		h->last_at = t;
		strcpy(h->last_dir, dir);
		return ok;
	}
	if (ok && dfd_out) {
		size_t nl = strlen(name);
		if (nl >= 256) ok = 0;
		else {
			memcpy(name_out, name, nl + 1);
			*dfd_out = dfd;
			return in;
		}
	}
	if (dfd >= 0) close(dfd);
	return ok;
}

static int in_floor(struct hp_fast *h, pid_t tid, int dirfd, uint64_t addr, int follow) {
	return in_floor_at(h, tid, dirfd, addr, follow, 0, NULL, NULL, IN_FLOOR);
}


/* ---- metadata calls, performed here (Landlock does not cover them, so they are never continued) ---------- */

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/*
 * A copy of thread `tid`'s fd `fd`, through a pidfd of that thread kept from the last call (threads that
 * made the last metadata calls are usually the next ones). A kept pidfd names one thread: if that thread is
 * gone, pidfd_getfd fails with ESRCH and a fresh one is opened. A fresh one names whatever thread has the
 * number now; the caller checks ID_VALID after the copy, which proves the notifying thread was alive all along,
 * so the number was still its own. -1 on any error (the mediator then answers as it would).
 */
static int remote_fd(struct hp_fast *h, pid_t tid, int fd) {
	for (int fresh = 0; fresh < 2; fresh++) {
		if (fresh || h->pidfd_tid != tid || h->pidfd < 0) {
			if (h->pidfd >= 0) close(h->pidfd);
			h->pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
			h->pidfd_tid = tid;
			if (h->pidfd < 0) return -1;
		}
		int c = (int)syscall(SYS_pidfd_getfd, h->pidfd, fd, 0);
		if (c >= 0) return c;
		if (errno != ESRCH) return -1;
	}
	return -1;
}

/* Reads `len` bytes at `addr` in thread `tid`. 0, or -1. */
static int read_mem(pid_t tid, uint64_t addr, void *buf, size_t len) {
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	return process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* Whether our copy of a program's fd is a file plainly inside the floor (its canonical path, from the kernel). */
static int fd_in_floor(struct hp_fast *h, int copy) {
	char link[40], path[PATH_MAX_BYTES];
	snprintf(link, sizeof link, "/proc/self/fd/%d", copy);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n < 2 || path[0] != '/') return 0; /* pipe:[..], anon_inode:..: the mediator */
	path[n] = 0;
	if (n > 10 && memcmp(path + n - 10, " (deleted)", 10) == 0) return 0;
	for (ssize_t i = 0; i < n; i++) {
		if (path[i] < 0x20 || path[i] > 0x7e) return 0;
	}
	if (strncmp(path, "/proc/", 6) == 0) return 0;
	rec_note(h, path, (size_t)n);
	int pk = under_root(h, path, (size_t)n) ? 1 : perform_ok(h, path, (size_t)n);
	return pk == 1 || pk == 3;
}

enum { META_NONE, META_CHMOD, META_CHOWN, META_UTIMENS };

/*
 * chmod, chown and utimensat, in their fd forms (fchmod, fchown, utimensat(fd, NULL, times, 0)) and path forms
 * (chmod, fchmodat, chown, lchown, fchownat, utimensat), on files plainly inside the floor: performed here
 * as the mediator would (docs/threat-model.md): the fd forms on our own copy of the program's fd, so a thread that
 * swaps the fd number after the check changes nothing; the path forms through the directory we opened with
 * RESOLVE_NO_SYMLINKS and checked, never following the last component. 1: answered (or the call was
 * withdrawn), 0: for the mediator.
 */
/*
 * The lines of /proc/<tid>/status the kernel checks a metadata call with (Uid, Gid, Groups, CapEff), joined
 * into `out`; 0, or -1 when unreadable.
 */
static int cred_lines(const char *status_path, char *out, size_t size, unsigned *umask) {
	char buf[4096];
	int fd = open(status_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return -1;
	buf[n] = 0;
	if (umask) {
		const char *u = strstr(buf, "\nUmask:");
		if (!u) return -1;
		char *end;
		unsigned long v = strtoul(u + 7, &end, 8);
		if (end == u + 7 || v > 0777) return -1;
		*umask = (unsigned)v;
	}
	size_t len = 0;
	static const char *const want[] = {"\nUid:", "\nGid:", "\nGroups:", "\nCapEff:"};
	for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
		const char *l = strstr(buf, want[i]);
		if (!l) return -1;
		const char *e = strchr(l + 1, '\n');
		size_t ll = e ? (size_t)(e - l) : strlen(l);
		if (len + ll >= size) return -1;
		memcpy(out + len, l, ll);
		len += ll;
	}
	out[len] = 0;
	return 0;
}

/* The capabilities chmod, chown and utimensat are decided with: CHOWN, DAC_OVERRIDE, FOWNER, FSETID. */
#define META_CAPS ((1ull << 0) | (1ull << 1) | (1ull << 3) | (1ull << 4))

/*
 * Whether a metadata call of thread `tid` may be performed here, with our credentials: only when the outcome is
 * the caller's (the same ids and groups; and capabilities that decide these calls alike). A supervisor without
 * capabilities has the caller's (the sandbox cannot gain any: no_new_privs). A privileged one (root) performs
 * only for a caller with the same ids and groups that holds every capability these calls are decided with
 * (META_CAPS: within the set a root sandbox keeps, helper/launcher/launcher.c KEEP_CAPS); a caller that changed users or dropped one of
 * them goes to the mediator, which performs as the caller. What the supervisor holds beyond META_CAPS changes
 * none of these calls' outcomes on a file the sandbox may write (path lookup: DAC_OVERRIDE covers search).
 */
/*
 * `umask`: also reads the caller's umask into it (a call that creates a file applies it: the supervisor runs
 * with umask 0).
 */
static int same_creds(struct hp_fast *h, pid_t tid, unsigned *umask) {
	static int own_ok = -1; /* -1 unknown, 0 privileged (compare), 1 without capabilities */
	unsigned slot = (unsigned)tid % CWD_CACHE;
	/* kept: unchanged since (see hp_fast creds; umask() is trapped too) */
	if (h->creds[slot].tid == tid && h->creds[slot].gen == h->creds_gen + 1) {
		if (!umask) return 1;
		if (h->creds[slot].umask >= 0) {
			*umask = (unsigned)h->creds[slot].umask;
			return 1;
		}
	}
	h->creds[slot].tid = 0; /* whatever the reading finds now replaces what was kept */
	static char own[1024];
	if (own_ok < 0) {
		if (cred_lines("/proc/thread-self/status", own, sizeof own, NULL) < 0) return 0;
		const char *c = strstr(own, "\nCapEff:");
		own_ok = c && strspn(c + 8, "\t 0") == strlen(c + 8) ? 1 : 0;
	}
	if (own_ok == 1 && !umask) return 1;
	char path[40], theirs[1024];
	snprintf(path, sizeof path, "/proc/%d/status", tid);
	if (cred_lines(path, theirs, sizeof theirs, umask) != 0) return 0;
	if (own_ok == 1) {
		h->creds[slot].tid = tid;
		h->creds[slot].gen = h->creds_gen + 1; /* +1: a zeroed slot never matches */
		h->creds[slot].umask = umask ? (int)*umask : -1;
		return 1;
	}
	/* Uid, Gid and Groups come before CapEff: those must be the same text. */
	const char *oc = strstr(own, "\nCapEff:"), *tc = strstr(theirs, "\nCapEff:");
	if (!oc || !tc || oc - own != tc - theirs || strncmp(own, theirs, (size_t)(oc - own)) != 0) return 0;
	unsigned long long caps = strtoull(tc + 8, NULL, 16);
	if ((caps & META_CAPS) != META_CAPS) return 0;
	h->creds[slot].tid = tid;
	h->creds[slot].gen = h->creds_gen + 1; /* +1: a zeroed slot never matches */
	h->creds[slot].umask = umask ? (int)*umask : -1;
	return 1;
}

/*
 * A privileged supervisor performs a call with the caller's effective capabilities, never its own (as the
 * mediator: lib/supervisor/emulate.ts asCaller): the kernel checks some calls against the capabilities of the
 * thread making them — opening /dev/kmsg for reading (CAP_SYSLOG), a netlink message with a destination
 * (CAP_NET_ADMIN: a root sandbox changed the host's links and routes through a performed sendto) — and an open
 * file keeps the opener's (f_cred). `caps_as_caller` lowers this thread's effective set to the caller's (its
 * permitted set is kept) and says in `s` how to give it back (caps_restore). 0, or -1: not known (nothing was
 * changed; for the mediator).
 */
struct caps_saved {
	int lowered;
	struct __user_cap_data_struct d[2];
};

static int caps_as_caller(struct hp_fast *h, pid_t tid, struct caps_saved *s) {
	s->lowered = 0;
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	if (syscall(SYS_capget, &hdr, s->d) < 0) return -1;
	unsigned long long own = s->d[0].effective | (unsigned long long)s->d[1].effective << 32;
	if (own == 0) return 0; /* nothing to lend */
	unsigned slot = (unsigned)tid % CWD_CACHE;
	unsigned long long theirs;
	if (h->caps[slot].tid == tid && h->caps[slot].gen == h->creds_gen + 1) {
		theirs = h->caps[slot].eff;
	} else {
		char path[40], buf[4096];
		snprintf(path, sizeof path, "/proc/%d/status", tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) return -1;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0) return -1;
		buf[n] = 0;
		const char *c = strstr(buf, "\nCapEff:");
		char *end;
		if (!c) return -1;
		theirs = strtoull(c + 8, &end, 16);
		if (end == c + 8) return -1;
		h->caps[slot].tid = tid;
		h->caps[slot].gen = h->creds_gen + 1; /* +1: a zeroed slot never matches */
		h->caps[slot].eff = theirs;
	}
	if ((own & ~theirs) == 0) return 0;
	struct __user_cap_data_struct d[2] = {s->d[0], s->d[1]};
	d[0].effective &= (uint32_t)theirs;
	d[1].effective &= (uint32_t)(theirs >> 32);
	if (syscall(SYS_capset, &hdr, d) < 0) return -1;
	s->lowered = 1;
	return 0;
}

/* Gives this thread back the effective capabilities caps_as_caller() lowered. */
static void caps_restore(struct caps_saved *s) {
	if (!s->lowered) return;
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	if (syscall(SYS_capset, &hdr, s->d) < 0) { /* within the permitted set: does not fail */ }
	s->lowered = 0;
}

/* Gives back what caps_keep_as_caller() kept lowered. */
static void caps_give_back(struct hp_fast *h) {
	if (!h->kept_lowered) return;
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	if (syscall(SYS_capset, &hdr, h->kept_d) < 0) { /* within the permitted set: does not fail */ }
	h->kept_lowered = 0;
}

/*
 * caps_as_caller() for the metadata calls, whose lowering is kept from one to the next: `tar x` as root makes
 * three per file, and each lowering and each giving back is a capset (new credentials for this thread, the old
 * freed after an RCU grace period) — 6 of the ~40 system calls the supervisor made per file, the most costly.
 * Lowered again only for a caller whose effective set differs; given back (caps_give_back) before a
 * notification that is not a metadata call or an open is handled, and before hp_fast_serve returns. What
 * runs between two metadata calls while lowered (an open's checks in classify() and perform_write(), a metadata
 * call's own checks) runs with the caller's set, a subset of ours: a check can only fail where it would have
 * passed (the call then goes on to the next step or to the mediator, which decides it as it would any other),
 * never pass where it would have failed; and what perform_write() performs then is performed with the caller's
 * set, as it would be anyway. 0, or -1 (as caps_as_caller).
 */
static int caps_keep_as_caller(struct hp_fast *h, pid_t tid) {
	unsigned slot = (unsigned)tid % CWD_CACHE;
	if (h->kept_lowered) {
		if (h->caps[slot].tid == tid && h->caps[slot].gen == h->creds_gen + 1 && h->caps[slot].eff == h->kept_for)
			return 0;
		caps_give_back(h);
	}
	struct caps_saved s;
	if (caps_as_caller(h, tid, &s) < 0) return -1;
	if (s.lowered) {
		h->kept_lowered = 1;
		memcpy(h->kept_d, s.d, sizeof h->kept_d);
		h->kept_for = h->caps[slot].eff;
	}
	return 0;
}

static int meta(struct hp_fast *h, int listener, const struct seccomp_notif *n) {
	const __u64 *a = n->data.args;
	pid_t tid = (pid_t)n->pid;
	int kind = META_NONE, fd = -1, dirfd = AT_FDCWD, follow = 1, fdform = 0;
	uint64_t path = 0, times = 0;
	unsigned mode = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	switch (n->data.nr) {
	case SYS_fchmod:
		kind = META_CHMOD, fdform = 1, fd = (int)a[0], mode = (unsigned)a[1] & 07777;
		break;
	case SYS_fchown:
		kind = META_CHOWN, fdform = 1, fd = (int)a[0], uid = (uid_t)a[1], gid = (gid_t)a[2];
		break;
#ifdef SYS_chmod
	case SYS_chmod:
		kind = META_CHMOD, path = a[0], mode = (unsigned)a[1] & 07777;
		break;
	case SYS_chown:
	case SYS_lchown:
		kind = META_CHOWN, path = a[0], uid = (uid_t)a[1], gid = (gid_t)a[2];
		follow = n->data.nr == SYS_chown;
		break;
#endif
	case SYS_fchmodat:
		kind = META_CHMOD, dirfd = (int)a[0], path = a[1], mode = (unsigned)a[2] & 07777;
		break;
	case SYS_fchownat:
		if (a[4] & ~(uint64_t)AT_SYMLINK_NOFOLLOW) return 0; /* AT_EMPTY_PATH: the mediator */
		kind = META_CHOWN, dirfd = (int)a[0], path = a[1], uid = (uid_t)a[2], gid = (gid_t)a[3];
		follow = !(a[4] & AT_SYMLINK_NOFOLLOW);
		break;
	case SYS_utimensat:
		if (a[3] & ~(uint64_t)AT_SYMLINK_NOFOLLOW) return 0;
		kind = META_UTIMENS, times = a[2];
		if (a[1] == 0) {
			if (a[3] != 0) return 0; /* the kernel's EINVAL: the mediator */
			fdform = 1, fd = (int)a[0];
		} else {
			dirfd = (int)a[0], path = a[1], follow = !(a[3] & AT_SYMLINK_NOFOLLOW);
		}
		break;
	default:
		return 0;
	}
	if (!same_creds(h, tid, NULL)) return 0;
	if (kind == META_CHMOD && (mode & 06000)) return 0; /* S_ISUID/S_ISGID: the mediator refuses it */
	/*
	 * The program's own fd named as /proc/self/fd/N (glibc's fchmodat(AT_SYMLINK_NOFOLLOW) on kernels before
	 * fchmodat2, and what programs do with O_PATH fds): the fd form, through the same name on our copy.
	 */
	int viaproc = 0;
	if (!fdform && follow && dirfd == AT_FDCWD) {
		char p[48];
		int len = read_path(tid, path, p, sizeof p);
		int at = len > 14 && memcmp(p, "/proc/self/fd/", 14) == 0           ? 14
		         : len > 21 && memcmp(p, "/proc/thread-self/fd/", 21) == 0 ? 21
		                                                                   : 0;
		if (at) {
			long v = 0;
			int i = at;
			for (; i < len && i - at < 9 && p[i] >= '0' && p[i] <= '9'; i++) v = v * 10 + (p[i] - '0');
			if (i == len && i > at) fdform = 1, viaproc = 1, fd = (int)v;
		}
	}
	struct timespec ts[2];
	if (kind == META_UTIMENS && times != 0 && read_mem(tid, times, ts, sizeof ts) < 0) return 0;
	int target = -1, r;
	char name[256];
	if (fdform) {
		if (fd < 0) return 0;
		target = remote_fd(h, tid, fd);
		if (target < 0) return 0;
		if (!fd_in_floor(h, target)) {
			close(target);
			return 0;
		}
	} else if (!in_floor_at(h, tid, dirfd, path, follow, 0, &target, name, IN_FLOOR | IN_PERFORM)) {
		return 0;
	}
	/* Act only for a call still waiting: this also proves a fresh pidfd named the notifying thread. */
	if (notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
		close(target);
		return 1;
	}
	const struct timespec *tp = kind == META_UTIMENS && times != 0 ? ts : NULL;
	if (caps_keep_as_caller(h, tid) < 0) {
		close(target);
		return 0;
	}
	if (viaproc) {
		char self[40];
		snprintf(self, sizeof self, "/proc/self/fd/%d", target);
		if (kind == META_CHMOD) r = fchmodat(AT_FDCWD, self, mode, 0);
		else if (kind == META_CHOWN) r = fchownat(AT_FDCWD, self, uid, gid, 0);
		else r = utimensat(AT_FDCWD, self, tp, 0);
	} else if (fdform) {
		if (kind == META_CHMOD) r = fchmod(target, mode);
		else if (kind == META_CHOWN) r = fchown(target, uid, gid);
		else r = futimens(target, tp);
	} else {
		if (kind == META_CHMOD) r = (int)syscall(SYS_fchmodat2_nr, target, name, mode, AT_SYMLINK_NOFOLLOW);
		else if (kind == META_CHOWN) r = fchownat(target, name, uid, gid, AT_SYMLINK_NOFOLLOW);
		else r = utimensat(target, name, tp, AT_SYMLINK_NOFOLLOW);
	}
	int err = r < 0 ? errno : 0;
	close(target);
	if (kind == META_CHMOD && !fdform && err == ENOSYS) return 0; /* no fchmodat2 (Linux < 6.6): the mediator */
	struct seccomp_notif_resp resp = {.id = n->id, .val = 0, .error = -err, .flags = 0};
	notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	h->emulated++;
	rec_answer(h, n, "perform");
	return 1;
}

/* ---- writes performed here, outside the floor ------------------------------------------------------------ */

#ifndef SECCOMP_IOCTL_NOTIF_ADDFD
#define SECCOMP_IOCTL_NOTIF_ADDFD SECCOMP_IOW(3, struct seccomp_notif_addfd)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif
#define VALID_OPEN_FLAGS 037777703 /* the kernel's (x86_64 and aarch64) */

/*
 * A call on a path in the perform region whose directory is not there (ENOENT, or ENOTDIR through a file),
 * found by a walk that met no symlink before it: the kernel's own walk fails there too, and the mediator
 * answers it so before any decision (lib/supervisor/resolve.ts kernelWalkError). Nothing is done. 1.
 */
static int walk_error(struct hp_fast *h, int listener, const struct seccomp_notif *n, int err) {
	if (notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) return 1;
	struct seccomp_notif_resp resp = {.id = n->id, .error = -err};
	notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	h->refused++;
	char answer[16];
	snprintf(answer, sizeof answer, "errno:%d", err);
	rec_answer(h, n, answer);
	return 1;
}

/*
 * open, mkdir, unlink, rmdir, rename and symlink in the perform region (perform_ok(): below a directory the sandbox
 * made at the project's top, in a carved directory, below a tree a rule allows outside the floor): performed
 * here exactly as the mediator performs them (lib/supervisor/mediator.ts #emulate), never continued — Landlock
 * does not cover these paths. Each end is read and canonicalised as in_floor_at() does, its directory opened
 * with openat2 RESOLVE_NO_SYMLINKS from "/" (no symlink on the way, none swapped in later: the fd holds that
 * directory), and the call made through that fd on the name, never following it: the file acted on is the one
 * decided on. An open is made with RESOLVE_NO_SYMLINKS too (a symlink there: the mediator follows it and
 * decides on its target) and handed to the program with ADDFD. Only with the caller's credentials
 * (same_creds()) and its umask. 1: answered, 0: for the mediator (nothing was done).
 */
static int perform_write(struct hp_fast *h, int listener, const struct seccomp_notif *n) {
	if (h->perform.n == 0 || h->except.bad) return 0;
	const __u64 *a = n->data.args;
	pid_t tid = (pid_t)n->pid;
	enum { P_OPEN, P_MKDIR, P_UNLINK, P_RENAME, P_SYMLINK } kind;
	int dirfd = AT_FDCWD, dirfd2 = AT_FDCWD, follow = 0;
	uint64_t path = 0, path2 = 0, text = 0;
	unsigned flags = 0, mode = 0;
	switch (n->data.nr) {
#ifdef SYS_open
	case SYS_open:
		kind = P_OPEN, path = a[0], flags = (unsigned)a[1], mode = (unsigned)a[2];
		break;
	case SYS_creat:
		kind = P_OPEN, path = a[0], flags = O_CREAT | O_WRONLY | O_TRUNC, mode = (unsigned)a[1];
		break;
	case SYS_mkdir:
		kind = P_MKDIR, path = a[0], mode = (unsigned)a[1];
		break;
	case SYS_unlink:
		kind = P_UNLINK, path = a[0];
		break;
	case SYS_rmdir:
		kind = P_UNLINK, path = a[0], flags = AT_REMOVEDIR;
		break;
	case SYS_rename:
		kind = P_RENAME, path = a[0], path2 = a[1];
		break;
	case SYS_symlink:
		kind = P_SYMLINK, text = a[0], path = a[1];
		break;
#endif
	case SYS_symlinkat:
		kind = P_SYMLINK, text = a[0], dirfd = (int)a[1], path = a[2];
		break;
	case SYS_openat:
		kind = P_OPEN, dirfd = (int)a[0], path = a[1], flags = (unsigned)a[2], mode = (unsigned)a[3];
		break;
	case SYS_mkdirat:
		kind = P_MKDIR, dirfd = (int)a[0], path = a[1], mode = (unsigned)a[2];
		break;
	case SYS_unlinkat:
		if (a[2] & ~(uint64_t)AT_REMOVEDIR) return 0; /* the kernel's EINVAL: the mediator */
		kind = P_UNLINK, dirfd = (int)a[0], path = a[1], flags = (unsigned)a[2];
		break;
#ifdef SYS_renameat
	case SYS_renameat:
#endif
	case SYS_renameat2:
		if (n->data.nr == SYS_renameat2 && (a[4] & ~(uint64_t)RENAME_NOREPLACE)) return 0;
		kind = P_RENAME, dirfd = (int)a[0], path = a[1], dirfd2 = (int)a[2], path2 = a[3];
		if (n->data.nr == SYS_renameat2) flags = (unsigned)a[4];
		break;
	default:
		return 0;
	}
	if (kind == P_OPEN) {
		/* O_TMPFILE, and a mode with S_ISUID/S_ISGID (refused: lib/policy/privileged_bits.ts): the mediator */
		if ((flags & O_TMPFILE) == O_TMPFILE || ((flags & O_CREAT) && (mode & 06000))) return 0;
		follow = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
	}
	if (kind == P_MKDIR && (mode & 06000)) return 0; /* the mediator decides what a setgid directory is */
	/* A symlink's text, read once into our memory (the program may change its own afterwards). */
	char target[PATH_MAX_BYTES + 1];
	if (kind == P_SYMLINK && read_path(tid, text, target, PATH_MAX_BYTES) < 0) return 0;
	unsigned umask = 0;
	if (!same_creds(h, tid, kind == P_OPEN || kind == P_MKDIR ? &umask : NULL)) return 0;
	int dfd = -1, dfd2 = -1, r;
	char name[256], name2[256];
	h->walk_err = 0;
	int in = in_floor_at(h, tid, dirfd, path, follow, kind == P_OPEN, &dfd, name,
	                     IN_PERFORM | (kind == P_MKDIR ? IN_EXISTING : 0) | (kind == P_RENAME ? IN_NAMES : 0));
	if (in == 0 && h->walk_err) return walk_error(h, listener, n, h->walk_err);
	struct stat st;
	/* A directory whose new names the mediator reports: only a mkdir of what is there (EEXIST, nothing new). */
	if (in == IN_EXISTING && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) in = IN_PERFORM;
	if (in != IN_PERFORM) {
		if (dfd >= 0) close(dfd);
		return 0;
	}
	int from_in = h->end_in_project;
	if (kind == P_RENAME &&
	    in_floor_at(h, tid, dirfd2, path2, 0, 0, &dfd2, name2, IN_PERFORM | IN_NAMES) != IN_PERFORM) {
		close(dfd);
		if (dfd2 >= 0) close(dfd2);
		return h->walk_err ? walk_error(h, listener, n, h->walk_err) : 0;
	}
	/* Into the project from outside it (or no project given): the mediator refuses it (lib/supervisor/moved_in.ts) */
	if (kind == P_RENAME && (h->project.n == 0 || (!from_in && h->end_in_project))) {
		close(dfd);
		close(dfd2);
		return 0;
	}
	/* Act only for a call still waiting: this also proves the thread's id named the caller all along. */
	if (notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
		close(dfd);
		if (dfd2 >= 0) close(dfd2);
		return 1;
	}
	struct caps_saved saved;
	if (caps_as_caller(h, tid, &saved) < 0) {
		close(dfd);
		if (dfd2 >= 0) close(dfd2);
		return 0;
	}
	int answered = 0;
	switch (kind) {
	case P_OPEN: {
		/*
		 * As the mediator: never blocking on what the sandbox controls (O_NONBLOCK, cleared again when the program
		 * did not ask for it); a FIFO without a reader or a leased file (the kernel would make the caller wait)
		 * goes to the mediator, which waits without blocking. O_NOCTTY always.
		 */
		struct open_how how = {
		    .flags = (flags & VALID_OPEN_FLAGS) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		    .mode = flags & (O_CREAT | O_TMPFILE) ? (mode & 07777 & ~umask) : 0,
		    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, dfd, name, &how, sizeof how);
		int err = fd < 0 ? errno : 0;
		if (fd < 0 && (err == ELOOP || (!(flags & O_NONBLOCK) && (err == EAGAIN || err == ENXIO)))) {
			/* a symlink (swapped in since the check), or a call that waits: nothing was done */
			caps_restore(&saved);
			close(dfd);
			return 0;
		}
		if (fd >= 0 && !(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		if (fd >= 0) {
			struct seccomp_notif_addfd add = {
			    .id = n->id,
			    .flags = SECCOMP_ADDFD_FLAG_SEND,
			    .srcfd = (unsigned)fd,
			    .newfd = 0,
			    .newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0,
			};
			r = notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
			err = r < 0 ? errno : 0;
			close(fd);
			answered = r >= 0 || err == ENOENT; /* ENOENT: the caller is gone */
		}
		r = err ? -1 : 0;
		errno = err;
		break;
	}
	case P_MKDIR:
		r = mkdirat(dfd, name, mode & 07777 & ~umask);
		break;
	case P_UNLINK:
		r = unlinkat(dfd, name, (int)(flags & AT_REMOVEDIR));
		break;
	case P_RENAME:
		r = (int)syscall(SYS_renameat2, dfd, name, dfd2, name2, flags);
		break;
	case P_SYMLINK:
		r = symlinkat(target, dfd, name);
		break;
	}
	int err = r < 0 ? errno : 0;
	caps_restore(&saved);
	close(dfd);
	if (dfd2 >= 0) close(dfd2);
	if (!answered) {
		struct seccomp_notif_resp resp = {.id = n->id, .val = 0, .error = -err, .flags = 0};
		notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	h->emulated++;
	rec_answer(h, n, "perform");
	return 1;
}

/* ---- exec ------------------------------------------------------------------------------------------------ */


static int plain_ascii(const char *p) {
	for (; *p; p++) {
		if (*p < 0x20 || *p > 0x7e) return 0;
	}
	return 1;
}

/*
 * The canonical path of `path` (absolute), resolved as the kernel resolves it for the program — symlinks
 * followed, but never a magic link: /proc/self here would be the supervisor's own, so a symlink into
 * /proc/self/fd (a memfd in disguise) must go to the mediator, which reads it as the program's. 0; the errno the
 * kernel would give the program (ENOENT, ENOTDIR, EACCES); -1: for the mediator.
 */
static int canonical(const char *path, char *out, size_t size) {
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? errno : -1;
	char link[40];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, out, size - 1);
	close(fd);
	if (n < 2 || out[0] != '/') return -1;
	out[n] = 0;
	if (n > 10 && memcmp(out + n - 10, " (deleted)", 10) == 0) return -1;
	if (strncmp(out, "/proc/", 6) == 0) return -1;
	return 0;
}

/*
 * Whether the canonical program `canon` may run: in an exec tree, a regular file we may execute, and, for a
 * `#!` script, its interpreter too (one level; deeper goes to the mediator). 0: yes; an errno the kernel would
 * give without running anything (ENOENT, ENOTDIR, EACCES); -1: for the mediator.
 */
/* Whether s ends with ".so" followed by any number of ".DIGITS" (the names' version suffixes). */
static int ends_so(const char *s) {
	for (const char *p = strstr(s, ".so"); p; p = strstr(p + 1, ".so")) {
		const char *q = p + 3;
		while (*q == '.' && q[1] >= '0' && q[1] <= '9') {
			q++;
			while (*q >= '0' && *q <= '9') q++;
		}
		if (*q == 0) return 1;
	}
	return 0;
}

/*
 * The dynamic loader, by the canonical path's last name: the same test as lib/policy/loader.ts isDynamicLoader. Its
 * execs go to the mediator, which denies them unless a rule names the loader (it runs any file as a program).
 */
static int loader_name(const char *canon) {
	const char *b = strrchr(canon, '/');
	b = b ? b + 1 : canon;
	if (strcmp(b, "libc.so") == 0) return strstr(canon, "musl") != NULL;
	if (strncmp(b, "ld-linux", 8) == 0) return ends_so(b + 8);
	if (strncmp(b, "ld-musl-", 8) == 0) return ends_so(b + 8);
	if (strncmp(b, "libc.musl-", 10) == 0) return ends_so(b + 10);
	if (strncmp(b, "ld-", 3) == 0 && b[3] >= '0' && b[3] <= '9') {
		size_t n = strlen(b);
		return n >= 7 && strcmp(b + n - 3, ".so") == 0;
	}
	if (strncmp(b, "ld.so", 5) == 0) return ends_so(b);
	if (strncmp(b, "ld64.so", 7) == 0) return ends_so(b + 4);
	return 0;
}

static int runnable(struct hp_fast *h, const char *canon, int level) {
	size_t len = strlen(canon);
	if (!plain_ascii(canon) || !in_list(&h->exec, canon, len)) return -1;
	if (access(canon, X_OK) < 0) return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? errno : -1;
	int fd = open(canon, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) return -1;
	struct stat st;
	char head[256];
	ssize_t n = -1;
	int dir = 0;
	if (fstat(fd, &st) == 0) {
		if (S_ISREG(st.st_mode)) n = read(fd, head, sizeof head - 1);
		dir = S_ISDIR(st.st_mode);
	}
	close(fd);
	if (dir) return EACCES; /* as the kernel says for a directory */
	if (n < 0) return -1; /* not a regular file, or unreadable: the mediator */
	if (n < 2 || head[0] != '#' || head[1] != '!') return 0; /* a binary (or too short to be a script) */
	if (level > 0) return -1;
	/* #!interpreter [arg]: an absolute interpreter, resolved, in an exec tree too */
	head[n] = 0;
	char *nl = memchr(head, '\n', (size_t)n);
	if (!nl) return -1; /* longer than we read: the mediator */
	*nl = 0;
	char *ip = head + 2;
	while (*ip == ' ' || *ip == '\t') ip++;
	char *end = ip;
	while (*end && *end != ' ' && *end != '\t') end++;
	*end = 0;
	if (ip[0] != '/') return -1;
	char icanon[PATH_MAX_BYTES];
	if (canonical(ip, icanon, sizeof icanon) != 0 || loader_name(icanon)) return -1;
	rec_note(h, icanon, strlen(icanon));
	return runnable(h, icanon, level + 1) == 0 ? 0 : -1;
}

/*
 * execve of a program in an exec tree (fast_roots.ts says the policy allows every program there): continued
 * as the mediator would, after the same checks: the path is read and resolved as the kernel will (from the
 * thread's working directory; symlinks followed, magic links left to the mediator), a program that cannot run is answered with the kernel's
 * errno without running anything, and a `#!` script's interpreter must be in an exec tree too. Like the
 * mediator's, this decision is about the path at the time of the check (docs/guarantees.md: exec is a
 * check, not a guarantee against a thread that swaps the file afterwards). 1: answered, 0: for the mediator.
 */
static int exec_fast(struct hp_fast *h, int listener, const struct seccomp_notif *n) {
	if (h->exec.n == 0 || n->data.nr != SYS_execve) return 0;
	pid_t tid = (pid_t)n->pid;
	char raw[PATH_MAX_BYTES + 1];
	int len = read_path(tid, n->data.args[0], raw, PATH_MAX_BYTES);
	if (len <= 0 || !plain_ascii(raw)) return 0;
	if (strncmp(raw, "/.hallpass", 10) == 0) return 0; /* hallpass-request */
	char full[2 * PATH_MAX_BYTES + 2];
	if (raw[0] == '/') {
		memcpy(full, raw, (size_t)len + 1);
	} else {
		/*
		 * Read now, not from the kept working directories of in_floor_at(): a stale one there can only turn a
		 * write into EACCES (Landlock checks it), but nothing in the kernel would check an exec decided on it.
		 */
		char link[40];
		snprintf(link, sizeof link, "/proc/%d/cwd", tid);
		ssize_t b = readlink(link, full, PATH_MAX_BYTES);
		if (b <= 0 || full[0] != '/' || (b > 10 && memcmp(full + b - 10, " (deleted)", 10) == 0)) return 0;
		full[b] = '/';
		memcpy(full + b + 1, raw, (size_t)len + 1);
	}
	if (strncmp(full, "/proc/", 6) == 0 || strncmp(full, "/dev/fd/", 8) == 0) return 0;
	char canon[PATH_MAX_BYTES];
	/* not there (a shell searching $PATH tries many): answered with the kernel's errno, nothing runs */
	int err = canonical(full, canon, sizeof canon);
	if (err == 0 && loader_name(canon)) return 0; /* the mediator decides (lib/policy/loader.ts) */
	if (err == 0) rec_note(h, canon, strlen(canon));
	else rec_note(h, full, strlen(full));
	if (err == 0) err = runnable(h, canon, 0);
	if (err < 0) return 0;
	if (notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) return 1;
	struct seccomp_notif_resp resp = {.id = n->id};
	if (err) resp.error = -err;
	else resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	if (err) h->refused++;
	else h->continued++;
	char answer[16];
	snprintf(answer, sizeof answer, err ? "errno:%d" : "exec", err);
	rec_answer(h, n, answer);
	return 1;
}

static int creds_call(int nr) {
	return nr == SYS_setuid || nr == SYS_setgid || nr == SYS_setreuid || nr == SYS_setregid || nr == SYS_setresuid ||
	       nr == SYS_setresgid || nr == SYS_setfsuid || nr == SYS_setfsgid || nr == SYS_setgroups || nr == SYS_capset ||
	       nr == SYS_umask;
}

static int classify(struct hp_fast *h, const struct seccomp_notif *n) {
	if (n->data.arch != NATIVE_ARCH) return 0;
	const __u64 *a = n->data.args;
	pid_t tid = (pid_t)n->pid;
	switch (n->data.nr) {
	case SYS_bind: {
		/*
		 * Only a unix socket's path or abstract name is the mediator's (a write; a socket the sandbox owns); any
		 * other family is continued, as the mediator does — also when the address cannot be read.
		 */
		size_t len = (size_t)(a[2] & 0xffffffffu);
		unsigned char sa[3];
		if (len < 3 || len > 110 || read_mem(tid, a[1], sa, sizeof sa) < 0) return 1;
		return (sa[0] | sa[1] << 8) != AF_UNIX;
	}
	case SYS_chdir:
	case SYS_fchdir:
		/* Trapped only to be seen: every kept working directory may be stale now. Always continued. */
		h->cwd_gen++;
		h->cwd_changed_at = now_ns();
		return 1;
	case SYS_setuid:
	case SYS_setgid:
	case SYS_setreuid:
	case SYS_setregid:
	case SYS_setresuid:
	case SYS_setresgid:
	case SYS_setfsuid:
	case SYS_setfsgid:
	case SYS_setgroups:
	case SYS_capset:
	case SYS_umask:
		/* Trapped only to be seen (lib/filter/filter_plan.ts): every kept credential check is stale now. */
		h->creds_gen++;
		return 1;
#ifdef SYS_open
	case SYS_open:
	case SYS_creat:
#endif
	case SYS_openat: {
		int dirfd = AT_FDCWD;
		uint64_t path;
		unsigned flags;
		if (n->data.nr == SYS_openat) {
			dirfd = (int)a[0];
			path = a[1];
			flags = (unsigned)a[2];
		}
#ifdef SYS_open
		else if (n->data.nr == SYS_open) {
			path = a[0];
			flags = (unsigned)a[1];
		} else {
			path = a[0];
			flags = O_CREAT | O_WRONLY | O_TRUNC;
		}
#endif
		if ((flags & O_TMPFILE) == O_TMPFILE) return 0;
		/* A mode with S_ISUID/S_ISGID: the mediator refuses it (lib/policy/privileged_bits.ts). */
		unsigned mode = (unsigned)a[3]; /* openat */
#ifdef SYS_open
		if (n->data.nr == SYS_open) mode = (unsigned)a[2];
		else if (n->data.nr == SYS_creat) mode = (unsigned)a[1];
#endif
		if ((flags & O_CREAT) && (mode & 06000)) return 0;
		int follow = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
		return in_floor_at(h, tid, dirfd, path, follow, 1, NULL, NULL, IN_FLOOR);
	}
#ifdef SYS_mkdir
	case SYS_mkdir:
	case SYS_unlink:
	case SYS_rmdir:
		return in_floor(h, tid, AT_FDCWD, a[0], 0);
	case SYS_rename:
		return in_floor(h, tid, AT_FDCWD, a[0], 0) && in_floor(h, tid, AT_FDCWD, a[1], 0);
#endif
	case SYS_mkdirat:
	case SYS_unlinkat:
		return in_floor(h, tid, (int)a[0], a[1], 0);
#ifdef SYS_link
	case SYS_link:
		return in_floor(h, tid, AT_FDCWD, a[0], 0) && in_floor(h, tid, AT_FDCWD, a[1], 0);
#endif
	case SYS_linkat:
		/* AT_SYMLINK_FOLLOW and AT_EMPTY_PATH (an fd form) go to the mediator */
		if (a[4] != 0) return 0;
		return in_floor(h, tid, (int)a[0], a[1], 0) && in_floor(h, tid, (int)a[2], a[3], 0);
#ifdef SYS_renameat
	case SYS_renameat:
#endif
	case SYS_renameat2:
		if (n->data.nr == SYS_renameat2 && (a[4] & ~(uint64_t)RENAME_NOREPLACE)) return 0;
		return in_floor(h, tid, (int)a[0], a[1], 0) && in_floor(h, tid, (int)a[2], a[3], 0);
	}
	return 0;
}

/* ---- IP connects and sends while connects are not mediated ----------------------------------------------- */

/*
 * Set by hp_fast_set_net: `direct` 1: connects are not mediated (lib/policy/socket_policy.ts netVerdict says
 * "perform" for every IP destination); 2: also blocking connects, whose socket may be handed to the mediator to
 * wait on (hp_fast_serve returns 4; the main thread's loop cannot wait, so it passes 1). 0: none.
 */
int hp_fast_set_net(void *p, int direct) {
	((struct hp_fast *)p)->net_direct = direct;
	return 0;
}

/* The socket of a blocking connect handed to the mediator to wait on (hp_fast_serve returned 4), or -1. */
int hp_fast_take_connecting(void *p) {
	struct hp_fast *h = p;
	int fd = h->connecting;
	h->connecting = -1;
	return fd;
}

/*
 * The one entry point besides hp_fast_new and hp_fast_serve (ffi/fastpath.ts: every symbol of a Deno FFI table
 * costs ~0.15 ms to open, and the main thread opens this table when the first notification waits):
 *   HP_CTL_SET: `buf` holds the six lists (LIST_WRITE .. LIST_PROJECT, in that order), each path NUL-terminated
 *     and each list ended by one more NUL, `len` bytes in all; set as hp_fast_set_list would, the exceptions
 *     before the perform roots (a region is never without its exceptions). 0; -EINVAL: every list is emptied.
 *   HP_CTL_NET: hp_fast_set_net(len). HP_CTL_STATS: hp_fast_stats into `buf`. HP_CTL_TAKE_CONNECTING:
 *   hp_fast_take_connecting. HP_CTL_FREE: hp_fast_free.
 *   HP_CTL_WATCH: `buf` (24 bytes, shared memory that outlives the handle) is the Worker's state the watchdog
 *     reads (lib/supervisor/host.ts): each notification the fast path handles is marked there as the
 *     mediator's are, so one that holds it (a userfaultfd under the path it reads) is failed and interrupted.
 */
enum { HP_CTL_SET = 0, HP_CTL_NET = 1, HP_CTL_STATS = 2, HP_CTL_TAKE_CONNECTING = 3, HP_CTL_FREE = 4, HP_CTL_WATCH = 5 };

int hp_fast_ctl(void *p, int op, void *buf, int len) {
	switch (op) {
	case HP_CTL_SET: {
		const char *b = buf;
		int start[6], size[6], off = 0;
		for (int which = 0; which < 6; which++) {
			start[which] = off;
			while (off < len && b[off] != 0) off += (int)strnlen(b + off, (size_t)(len - off)) + 1;
			if (off >= len) goto none;
			size[which] = off - start[which];
			off++; /* the list's end */
		}
		static const int order[6] = {LIST_WRITE, LIST_EXEC, LIST_FILES, LIST_EXCEPT, LIST_PROJECT, LIST_PERFORM};
		for (int i = 0; i < 6; i++) {
			if (hp_fast_set_list(p, order[i], b + start[order[i]], size[order[i]]) != 0) goto none;
		}
		return 0;
	none:; /* the perform roots first, then the rest */
		static const int none[6] = {LIST_PERFORM, LIST_WRITE, LIST_EXEC, LIST_FILES, LIST_EXCEPT, LIST_PROJECT};
		for (int k = 0; k < 6; k++) hp_fast_set_list(p, none[k], "", 0);
		return -EINVAL;
	}
	case HP_CTL_NET:
		return hp_fast_set_net(p, len);
	case HP_CTL_STATS:
		hp_fast_stats(p, buf);
		return 0;
	case HP_CTL_TAKE_CONNECTING:
		return hp_fast_take_connecting(p);
	case HP_CTL_FREE:
		hp_fast_free(p);
		return 0;
	case HP_CTL_WATCH:
		((struct hp_fast *)p)->watch = len >= 24 ? buf : NULL;
		return 0;
	}
	return -EINVAL;
}

/*
 * Whether a netlink address names another process or a multicast group (nl_pid or nl_groups set), not the
 * kernel: the mediator refuses such a send or connect (lib/policy/socket_policy.ts netlinkPeer).
 */
static int netlink_peer(const unsigned char *addr, size_t alen) {
	if (alen < 12 || (addr[0] | addr[1] << 8) != AF_NETLINK) return 0;
	uint32_t pid, groups;
	memcpy(&pid, addr + 4, 4);
	memcpy(&groups, addr + 8, 4);
	return pid != 0 || groups != 0;
}

/*
 * Notes a destination for the record: "ip4 ADDR PORT", "ip6 ADDR PORT", "netlink PID GROUPS" (a netlink socket's)
 * or "other".
 */
static void rec_ip(struct hp_fast *h, const unsigned char *addr, size_t alen, int dom) {
	if (h->rec_fd < 0) return;
	char text[INET6_ADDRSTRLEN + 32], a[INET6_ADDRSTRLEN];
	int fam = addr[0] | addr[1] << 8;
	if (dom == AF_NETLINK && fam == AF_NETLINK && alen >= 12) {
		uint32_t pid, groups;
		memcpy(&pid, addr + 4, 4);
		memcpy(&groups, addr + 8, 4);
		rec_note(h, text, (size_t)snprintf(text, sizeof text, "netlink %u %u", pid, groups));
		return;
	}
	const void *raw = fam == AF_INET ? (const void *)(addr + 4) : (const void *)(addr + 8);
	if ((fam == AF_INET && alen < 8) || (fam == AF_INET6 && alen < 24) || (fam != AF_INET && fam != AF_INET6) ||
	    !inet_ntop(fam, raw, a, sizeof a)) {
		rec_note(h, "other", 5);
		return;
	}
	int n = snprintf(text, sizeof text, "%s %s %u", fam == AF_INET ? "ip4" : "ip6", a, addr[2] << 8 | addr[3]);
	rec_note(h, text, (size_t)n);
}

/*
 * A unix socket path that is not there: the errno the kernel gives the program's connect (ENOENT, ENOTDIR),
 * answered as the mediator does before any decision (glibc tries nscd's socket in every user lookup), or 0.
 * Resolved as the kernel resolves it for the program — symlinks followed — but never through a magic link
 * (this process's /proc/self would not be the program's): the deepest directory that exists on the way must
 * lie outside /proc. No "..": each shorter prefix is a directory the walk went through.
 */
static int unix_missing(const char *path) {
	if (path[0] != '/' || strstr(path, "/..") || strncmp(path, "/proc", 5) == 0 || strlen(path) >= 108) return 0;
	char canon[PATH_MAX_BYTES];
	int err = canonical(path, canon, sizeof canon);
	if (err != ENOENT && err != ENOTDIR) return 0;
	char prefix[108];
	strcpy(prefix, path);
	for (;;) {
		char *slash = strrchr(prefix, '/');
		if (!slash || slash == prefix) return err; /* "/" exists: nothing on the way was in /proc */
		*slash = 0;
		int e = canonical(prefix, canon, sizeof canon);
		if (e == 0) return strncmp(canon, "/proc", 5) == 0 && (canon[5] == 0 || canon[5] == '/') ? 0 : err;
		if (e != ENOENT && e != ENOTDIR) return 0;
	}
}

/*
 * connect, and sendto with an address: what the mediator does, done here, for
 *   - an IPv4/IPv6 socket while network connects are not mediated (lib/policy/socket_policy.ts netVerdict:
 *     "perform"). Performed, never continued, on our copy of the socket with our copy of the address and data:
 *     the socket at the fd number or the address in the program's memory may change after the check (a unix
 *     socket dup2'ed over the fd), ours do not. A blocking connect is started non-blocking (as the mediator
 *     does): answered at once when it completed at once (loopback), else its socket is handed to the mediator,
 *     which answers when it completes (return 2);
 *   - a unix socket's path that is not there (unix_missing): the kernel's errno, in every mode.
 * Netlink and the rest, a datagram over 64 KiB, a stream socket's sendto and a send that would block go to
 * the mediator. 1: answered, 2: answered later by the mediator (h->connecting), 0: for the mediator.
 */
static int net_fast(struct hp_fast *h, int listener, const struct seccomp_notif *n) {
	static char data[65536];
	const __u64 *a = n->data.args;
	int is_connect = n->data.nr == SYS_connect;
	if (!is_connect && n->data.nr != SYS_sendto) return 0;
	uint64_t aptr = is_connect ? a[1] : a[4];
	size_t alen = (size_t)((is_connect ? a[2] : a[5]) & 0xffffffffu);
	size_t len = is_connect ? 0 : (size_t)a[2];
	unsigned flags = is_connect ? 0 : (unsigned)a[3];
	unsigned char addr[128];
	if (aptr == 0 || alen < 2 || alen > sizeof addr || len > sizeof data) return 0;
	if (read_mem((pid_t)n->pid, aptr, addr, alen) < 0) return 0;
	int afam = addr[0] | addr[1] << 8;
	int unix_path = afam == AF_UNIX && alen > 2 && addr[2] != 0;
	if (!unix_path && !h->net_direct) return 0;
	int copy = remote_fd(h, (pid_t)n->pid, (int)(int32_t)a[0]);
	if (copy < 0) return 0;
	int dom = -1, type = -1;
	socklen_t sl = sizeof dom;
	int ok = getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &dom, &sl) == 0;
	sl = sizeof type;
	ok = ok && getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &sl) == 0;
	if (ok && unix_path) {
		/* A unix socket given a path: only one that is not there is answered here. */
		char path[109];
		memcpy(path, addr + 2, alen - 2);
		path[alen - 2] = 0;
		int err = dom == AF_UNIX && (is_connect || type == SOCK_DGRAM) ? unix_missing(path) : 0;
		close(copy);
		if (!err || notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) return err != 0;
		struct seccomp_notif_resp resp = {.id = n->id, .error = -err};
		notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		char note[120];
		rec_note(h, note, (size_t)snprintf(note, sizeof note, "unix %s", path));
		snprintf(note, sizeof note, "errno:%d", err);
		rec_answer(h, n, note);
		h->refused++;
		return 1;
	}
	/* netlink to the kernel (no destination to decide): performed like a datagram; to a process: the mediator */
	int netlink = dom == AF_NETLINK && !is_connect && !netlink_peer(addr, alen);
	ok = ok && (dom == AF_INET || dom == AF_INET6 || netlink);
	int fl = fcntl(copy, F_GETFL);
	int nonblock = fl >= 0 && (fl & O_NONBLOCK) != 0;
	if (is_connect) ok = ok && fl >= 0 && (nonblock || h->net_direct >= 2);
	else ok = ok && (type == SOCK_DGRAM || netlink) && (len == 0 || read_mem((pid_t)n->pid, a[1], data, len) == 0);
	/* Act only for a call still waiting: this also proves a fresh pidfd named the notifying thread. */
	if (!ok || notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
		close(copy);
		return ok;
	}
	rec_ip(h, addr, alen, dom);
	struct caps_saved saved;
	if (caps_as_caller(h, (pid_t)n->pid, &saved) < 0) {
		close(copy);
		return 0;
	}
	long r;
	if (is_connect) {
		if (!nonblock) fcntl(copy, F_SETFL, fl | O_NONBLOCK);
		r = connect(copy, (struct sockaddr *)addr, (socklen_t)alen);
		int e = errno;
		if (!nonblock) fcntl(copy, F_SETFL, fl);
		errno = e;
		if (!nonblock && r < 0 && e == EINPROGRESS) {
			struct pollfd pf = {.fd = copy, .events = POLLOUT};
			if (poll(&pf, 1, 0) != 1) {
				/* Not yet (a remote host): the mediator answers when it completes (its pending connects). */
				caps_restore(&saved);
				h->connecting = copy;
				h->emulated++;
				rec_answer(h, n, "net");
				return 2;
			}
			int soerr = 0;
			sl = sizeof soerr;
			getsockopt(copy, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			r = soerr ? -1 : 0;
			errno = soerr;
		}
	} else {
		r = sendto(copy, data, len, (int)(flags | MSG_DONTWAIT | MSG_NOSIGNAL), (struct sockaddr *)addr,
		           (socklen_t)alen);
	}
	int err = r < 0 ? errno : 0;
	caps_restore(&saved);
	close(copy);
	if (!is_connect && err == EAGAIN && !nonblock && !(flags & MSG_DONTWAIT)) return 0; /* it would block */
	struct seccomp_notif_resp resp = {.id = n->id, .val = r < 0 ? 0 : r, .error = -err, .flags = 0};
	notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	h->emulated++;
	rec_answer(h, n, "net");
	return 1;
}

/*
 * sendmsg, and sendmmsg's first message, without ancillary data, to the connected peer (no address, or a
 * stream socket's, which the kernel ignores): decided when the socket was connected (netVerdict of no
 * destination: "perform"), performed on our copy with our copy of the data (DNS lookups: glibc's sendmmsg on
 * a connected UDP socket). Unix sockets in every mode; IP and netlink sockets while connects are not mediated,
 * with an address too (an IP destination is "perform" then; netlink reaches the kernel only). Ancillary data
 * (SCM_RIGHTS), a unix datagram's address, over 64 KiB, TCP Fast Open and a send that would block go to the
 * mediator. 1: answered, 0: for the mediator (nothing was sent).
 */
static int msg_fast(struct hp_fast *h, int listener, const struct seccomp_notif *n) {
	static char data[65536];
	const __u64 *a = n->data.args;
	int mmsg = n->data.nr == SYS_sendmmsg;
	if (!mmsg && n->data.nr != SYS_sendmsg) return 0;
	if (mmsg && (a[2] & 0xffffffffu) == 0) return 0; /* vlen 0: the mediator */
	unsigned flags = (unsigned)(mmsg ? a[3] : a[2]);
	struct msghdr m;
	if (read_mem((pid_t)n->pid, a[1], &m, sizeof m) < 0) return 0;
	if (m.msg_controllen != 0 || m.msg_iovlen > 64 || (flags & MSG_FASTOPEN)) return 0;
	int copy = remote_fd(h, (pid_t)n->pid, (int)(int32_t)a[0]);
	if (copy < 0) return 0;
	int dom = -1, type = -1, proto = -1;
	socklen_t sl = sizeof dom;
	int ok = getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &dom, &sl) == 0;
	sl = sizeof type;
	ok = ok && getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &sl) == 0;
	sl = sizeof proto;
	ok = ok && getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &proto, &sl) == 0;
	int stream = type == SOCK_STREAM || type == SOCK_SEQPACKET;
	if (stream && proto != IPPROTO_SCTP) m.msg_name = NULL, m.msg_namelen = 0; /* the kernel ignores it */
	unsigned char addr[128];
	if (dom == AF_UNIX) ok = ok && m.msg_name == NULL;
	else ok = ok && h->net_direct && (dom == AF_INET || dom == AF_INET6 || dom == AF_NETLINK);
	ok = ok && (m.msg_name == NULL || (m.msg_namelen >= 2 && m.msg_namelen <= sizeof addr &&
	                                   read_mem((pid_t)n->pid, (uint64_t)(uintptr_t)m.msg_name, addr,
	                                            m.msg_namelen) == 0));
	/* a netlink message to another process or a group: the mediator refuses it */
	ok = ok && !(dom == AF_NETLINK && m.msg_name != NULL && netlink_peer(addr, m.msg_namelen));
	struct iovec iov[64];
	size_t total = 0;
	ok = ok && (m.msg_iovlen == 0 ||
	            read_mem((pid_t)n->pid, (uint64_t)(uintptr_t)m.msg_iov, iov, m.msg_iovlen * sizeof *iov) == 0);
	for (size_t i = 0; ok && i < m.msg_iovlen; i++) {
		if (iov[i].iov_len > sizeof data - total) ok = 0;
		else if (iov[i].iov_len > 0)
			ok = read_mem((pid_t)n->pid, (uint64_t)(uintptr_t)iov[i].iov_base, data + total, iov[i].iov_len) == 0;
		total += ok ? iov[i].iov_len : 0;
	}
	int fl = fcntl(copy, F_GETFL);
	ok = ok && fl >= 0;
	/* Act only for a call still waiting: this also proves a fresh pidfd named the notifying thread. */
	if (!ok || notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
		close(copy);
		return ok;
	}
	if (m.msg_name == NULL) rec_note(h, "none", 4);
	else rec_ip(h, addr, m.msg_namelen, dom);
	struct caps_saved saved;
	if (caps_as_caller(h, (pid_t)n->pid, &saved) < 0) {
		close(copy);
		return 0;
	}
	struct iovec one = {data, total};
	struct msghdr ours = {.msg_name = m.msg_name ? addr : NULL, .msg_namelen = m.msg_name ? m.msg_namelen : 0,
	                      .msg_iov = &one, .msg_iovlen = 1};
	ssize_t r = sendmsg(copy, &ours, (int)(flags | MSG_DONTWAIT | MSG_NOSIGNAL));
	int err = r < 0 ? errno : 0;
	caps_restore(&saved);
	close(copy);
	if (err == EAGAIN && !(fl & O_NONBLOCK) && !(flags & MSG_DONTWAIT)) return 0; /* it would block */
	/* sendmmsg: one message sent (its msg_len is not written back), as the mediator answers */
	struct seccomp_notif_resp resp = {.id = n->id, .val = r < 0 ? 0 : mmsg ? 1 : r, .error = -err};
	notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	h->emulated++;
	rec_answer(h, n, "net");
	return 1;
}

/*
 * Waits for notifications on `listener` and answers those in the floor; returns when one is for the
 * mediator (1: it is in `out`, a struct seccomp_notif of `out_size` bytes), when `wakefd` is readable (0),
 * when every sandboxed process is gone (2), after `timeout_ms` (3; -1: no timeout), or on an error (-errno).
 * `wakefd` -1: no wake-up pipe; it waits in RECV itself (blocking until a notification comes).
 */
/* The calls during which the lowering of the metadata calls is kept (caps_keep_as_caller). */
static int keeps_lowered(int nr) {
	switch (nr) {
	case SYS_fchmod:
	case SYS_fchown:
	case SYS_fchmodat:
	case SYS_fchownat:
	case SYS_utimensat:
	case SYS_openat:
#ifdef SYS_chmod
	case SYS_chmod:
	case SYS_chown:
	case SYS_lchown:
	case SYS_open:
	case SYS_creat:
#endif
		return 1;
	}
	return 0;
}

static int serve(struct hp_fast *h, int listener, int wakefd, void *out, int out_size, int timeout_ms);

/* The watchdog's view (HP_CTL_WATCH): a notification is being handled (its id), or none. */
static void watch_busy(struct hp_fast *h, uint64_t id) {
	if (!h->watch) return;
	__atomic_store_n((uint64_t *)(void *)((char *)h->watch + 16), id, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&h->watch[3], 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&h->watch[1], 1, __ATOMIC_SEQ_CST);
}

static void watch_idle(struct hp_fast *h) {
	if (h->watch) __atomic_store_n(&h->watch[1], 0, __ATOMIC_SEQ_CST);
}

int hp_fast_serve(void *p, int listener, int wakefd, void *out, int out_size, int timeout_ms) {
	struct hp_fast *h = p;
	int r = serve(h, listener, wakefd, out, out_size, timeout_ms);
	watch_idle(h);
	caps_give_back(h); /* the thread is Deno's again */
	return r;
}

static int serve(struct hp_fast *h, int listener, int wakefd, void *out, int out_size, int timeout_ms) {
	if ((size_t)out_size < sizeof(struct seccomp_notif)) return -EINVAL;
	struct pollfd fds[2] = {{.fd = listener, .events = POLLIN}, {.fd = wakefd, .events = POLLIN}};
	h->creds_gen++; /* since the last call, the mediator may have seen credentials change */
	for (;;) {
		watch_idle(h);
		if (wakefd < 0) {
			/* Nothing can wake us but a notification: wait in RECV itself (one system call less). */
			fds[0].revents = POLLIN;
			fds[1].revents = 0;
			goto recv;
		}
		int r = poll(fds, 2, timeout_ms);
		if (r < 0) {
			if (errno == EINTR) continue;
			return -errno;
		}
		if (r == 0) return 3;
		if (fds[1].revents) return 0;
		if (fds[0].revents & POLLIN) {
		recv:
			memset(out, 0, (size_t)out_size);
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, out) < 0) {
				if (errno == ENOENT || errno == EINTR) {
					/* the thread died or was interrupted — or every sandboxed process is gone: RECV then
					 * fails with ENOENT at once, every time, so look before receiving again */
					struct pollfd q = {.fd = listener, .events = POLLIN};
					if (poll(&q, 1, 0) > 0 && (q.revents & (POLLHUP | POLLERR | POLLNVAL))) return 2;
					continue;
				}
				return -errno;
			}
			struct seccomp_notif *n = out;
			watch_busy(h, n->id);
			if (h->kept_lowered && (n->data.arch != NATIVE_ARCH || !keeps_lowered((int)n->data.nr))) caps_give_back(h);
			h->rec_n = 0;
			h->cur_id = n->id;
			/* an exec may change a thread's capabilities (a root program's are recomputed) */
			if (n->data.nr == SYS_execve || n->data.nr == SYS_execveat) h->creds_gen++;
			if (n->data.arch == NATIVE_ARCH && exec_fast(h, listener, n)) continue;
			h->rec_n = 0;
			if (n->data.arch == NATIVE_ARCH) {
				int net = net_fast(h, listener, n);
				if (!net) net = msg_fast(h, listener, n);
				if (net == 2) return 4; /* a connect the mediator waits on (hp_fast_take_connecting) */
				if (net) continue;
			}
			h->rec_n = 0;
			if ((h->write.n > 0 || h->perform.n > 0) && n->data.arch == NATIVE_ARCH && meta(h, listener, n)) continue;
			h->rec_n = 0;
			if ((h->write.n > 0 || h->files.n > 0) && classify(h, n)) {
				struct seccomp_notif_resp resp = {.id = n->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
				notif_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp); /* ENOENT: the thread is gone; nothing to do */
				h->continued++;
				int nr = (int)n->data.nr;
				rec_answer(h, n, nr == SYS_bind                          ? "bind"
				                 : nr == SYS_chdir || nr == SYS_fchdir ? "cwd"
				                 : creds_call(nr)                      ? "creds"
				                                                       : "continue");
				continue;
			}
			h->rec_n = 0;
			if (n->data.arch == NATIVE_ARCH && perform_write(h, listener, n)) continue;
			h->handed++;
			if (h->rec_fd >= 0) {
				/* what the mediator gets (a test's record: which calls are still its) */
				char line[64];
				int len = snprintf(line, sizeof line, "H\t%d\t%d\n", (int)getpid(), (int)n->data.nr);
				if (len > 0 && write(h->rec_fd, line, (size_t)len) < 0) { /* a test's record */ }
			}
			return 1;
		}
		if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) return 2;
	}
}

/*
 * The supervisor's watchdog (lib/supervisor/host.ts): `sig` gets a handler that does nothing and no
 * SA_RESTART, so a system call the supervisor Worker is blocked in when the watchdog signals that thread returns
 * EINTR (where the kernel's wait can be interrupted) instead of holding the loop. 0, or -errno.
 */
static void hp_nothing(int sig) {
	(void)sig;
}

int hp_interruptible(int sig) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hp_nothing;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL) == 0 ? 0 : -errno;
}

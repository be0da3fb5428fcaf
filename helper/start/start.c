/*
 * hallpass's start-up work over many paths, in one call (ffi/start.ts, lib/floor/read_floor_fast.ts): the carve
 * of the read side (lib/floor/read_floor.ts readFloor, which stays the reference: tests/start_lib_test.ts
 * compares the two) with its Landlock rules added to the ruleset as the carve finds them, each opened relative
 * to the directory it was listed in. The JavaScript made these system calls one FFI call (or one Deno op) at a
 * time, for the ~300 protected paths and ~230 Landlock rules of a session.
 *
 * Loaded by the Deno process (built against its libc, like the fast path); called off the main thread
 * (a nonblocking FFI symbol), so it touches no state of its own between calls.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif

struct path_beneath {
	uint64_t allowed;
	int32_t parent_fd;
} __attribute__((packed));

/* --- resolution: a path's longest existing prefix made canonical, the rest appended */

#define MEMO_SIZE 4096 /* power of two */
struct memo_entry {
	char *path;  /* NULL: empty slot */
	char *canon; /* NULL: realpath failed */
};

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	return h;
}

/*
 * realpath(3) of the first `n` bytes of `p`, remembered for this call of hp_read_floor: 1 and *out (not to be
 * freed) when it resolves, 0 when not. A path whose parent does not resolve does not either (ENOENT, ENOTDIR,
 * EACCES and ELOOP all carry down), so it is not asked.
 */
static int canonical(struct memo_entry *memo, int *used, char **spare, const char *p, size_t n, const char **out)
{
	uint64_t h = hash(p, n);
	size_t slot = h & (MEMO_SIZE - 1);
	while (memo[slot].path != NULL) {
		if (strlen(memo[slot].path) == n && memcmp(memo[slot].path, p, n) == 0) {
			*out = memo[slot].canon;
			return memo[slot].canon != NULL;
		}
		slot = (slot + 1) & (MEMO_SIZE - 1);
	}
	char head[PATH_MAX];
	if (n >= sizeof head) return 0;
	memcpy(head, p, n);
	head[n] = 0;
	char *canon = NULL;
	size_t cut = n;
	while (cut > 0 && head[cut - 1] != '/') cut--;
	const char *parent_canon = "/";
	/* the parent: "/" for "/x", none for "/" itself */
	int parent_ok = n == 1 || canonical(memo, used, spare, p, cut > 1 ? cut - 1 : 1, &parent_canon);
	if (parent_ok && n == 1) canon = realpath(head, NULL);
	else if (parent_ok) {
		/* The parent is canonical already: a name that is not a symlink is that plus the name (one lstat
		   instead of realpath's walk of every component); a symlink is resolved by realpath. */
		struct stat st;
		if (lstat(head, &st) != 0) canon = NULL;
		else if (S_ISLNK(st.st_mode)) canon = realpath(head, NULL);
		else {
			size_t pl = strlen(parent_canon), nl = n - cut;
			/* realpath fails past PATH_MAX (ENAMETOOLONG): so does this */
			canon = pl + 1 + nl < PATH_MAX ? malloc(pl + 1 + nl + 1) : NULL;
			if (canon != NULL) {
				size_t o = pl == 1 ? 0 : pl; /* "/" + name */
				memcpy(canon, parent_canon, o);
				canon[o] = '/';
				memcpy(canon + o + 1, p + cut, nl);
				canon[o + 1 + nl] = 0;
			}
		}
	}
	if (*used >= MEMO_SIZE / 2) { /* full: kept only until the next one (the caller uses it right away) */
		free(*spare);
		*spare = canon;
		*out = canon;
		return canon != NULL;
	}
	/* the recursion may have filled slots: find a free one again */
	slot = h & (MEMO_SIZE - 1);
	while (memo[slot].path != NULL) slot = (slot + 1) & (MEMO_SIZE - 1);
	memo[slot].path = strndup(p, n);
	memo[slot].canon = canon;
	(*used)++;
	*out = canon;
	return canon != NULL;
}

/* --- hp_read_floor: lib/floor/read_floor.ts readFloor, for the case start-up has (one right, READ_FILE) */

struct strset { /* open addressing; paths owned; grows at half full */
	char **slot;
	size_t cap, n;
};

static int set_init(struct strset *s, size_t cap)
{
	s->slot = calloc(cap, sizeof *s->slot);
	s->cap = cap;
	s->n = 0;
	return s->slot != NULL;
}

static void set_free(struct strset *s)
{
	for (size_t i = 0; i < s->cap; i++) free(s->slot[i]);
	free(s->slot);
}

/* The slot of `p`: found (1) or where it would go (0). */
static size_t set_find(const struct strset *s, const char *p, int *found)
{
	size_t i = hash(p, strlen(p)) & (s->cap - 1);
	while (s->slot[i] != NULL) {
		if (strcmp(s->slot[i], p) == 0) {
			*found = 1;
			return i;
		}
		i = (i + 1) & (s->cap - 1);
	}
	*found = 0;
	return i;
}

/* Adds `p` (copied) when it is not there: 1 added, 0 there already, -1 out of memory. *kept: the set's copy. */
static int set_add(struct strset *s, const char *p, const char **kept)
{
	if (2 * (s->n + 1) > s->cap) { /* grow: sized for what this call meets, not for the worst case */
		struct strset g;
		if (!set_init(&g, s->cap * 2)) return -1;
		for (size_t i = 0; i < s->cap; i++) {
			if (s->slot[i] == NULL) continue;
			int f;
			g.slot[set_find(&g, s->slot[i], &f)] = s->slot[i];
		}
		g.n = s->n;
		free(s->slot);
		*s = g;
	}
	int found;
	size_t i = set_find(s, p, &found);
	if (found) {
		if (kept) *kept = s->slot[i];
		return 0;
	}
	s->slot[i] = strdup(p);
	if (s->slot[i] == NULL) return -1;
	s->n++;
	if (kept) *kept = s->slot[i];
	return 1;
}

struct buf {
	uint8_t *p;
	size_t n, cap;
	int failed;
};

static void put_bytes(struct buf *b, const void *p, size_t n)
{
	if (b->failed) return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->n + n) cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (q == NULL) {
			b->failed = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}
static void put_str(struct buf *b, const char *s) { put_bytes(b, s, strlen(s) + 1); }
static void put_u32(struct buf *b, uint32_t v) { put_bytes(b, &v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put_bytes(b, &v, 8); }

struct floor {
	uint64_t right, file_rights, max_rules, handled;
	int ruleset; /* -1: rules only packed */
	char **holes;
	size_t nholes;
	struct strset rules; /* a rule once per path */
	struct buf rules_out, carved_out, carved_strs, hard_strs, dropped_strs;
	uint32_t ncarved, nhard, ndropped, listed;
	struct strset carved; /* carved once */
	int stop; /* set when max_rules was reached (limit_path), a rule was refused (add_errno, limit_path) or
		     memory ran out (oom) */
	int oom, add_errno;
	char limit_path[PATH_MAX];
};

/* `p` is `dir` or below it. */
static int at_or_below(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1) return p[0] == '/';
	return strncmp(p, dir, n) == 0 && (p[n] == 0 || p[n] == '/');
}

/*
 * add(path, access, dir, where) with access a single right: a rule once per path (the first one's kind). Also
 * added to the ruleset (when there is one): `path` opened as `name` relative to `at` (the directory it was
 * listed in, or AT_FDCWD and the whole path) without following a final symlink, and as a directory when `dir`
 * (else it is skipped: it is gone or was replaced, and no rule is narrower); rights `access & handled`.
 */
static void add_rule(struct floor *f, int at, const char *name, const char *path, int dir, const char *where)
{
	if (f->stop) return;
	uint64_t a = dir ? f->right : f->right & f->file_rights;
	if (a == 0) return;
	int found;
	set_find(&f->rules, path, &found);
	if (found) return;
	if (f->rules.n >= f->max_rules) {
		snprintf(f->limit_path, sizeof f->limit_path, "%s", where);
		f->stop = 1;
		return;
	}
	if (set_add(&f->rules, path, NULL) < 0) {
		f->oom = f->stop = 1;
		return;
	}
	put_u64(&f->rules_out, a);
	uint8_t how = dir ? 2 : 1;
	put_bytes(&f->rules_out, &how, 1);
	put_str(&f->rules_out, path);
	uint64_t allowed = a & f->handled;
	if (f->ruleset < 0 || allowed == 0) return;
	int fd = openat(at, name, O_PATH | O_CLOEXEC | O_NOFOLLOW | (dir ? O_DIRECTORY : 0));
	if (fd < 0) return;
	struct path_beneath pb = {.allowed = allowed, .parent_fd = fd};
	if (syscall(SYS_landlock_add_rule, f->ruleset, 1 /* PATH_BENEATH */, &pb, 0) != 0) {
		f->add_errno = errno;
		snprintf(f->limit_path, sizeof f->limit_path, "%s", path);
		f->stop = 1;
	}
	close(fd);
}

/* dir + "/" + name into out (PATH_MAX): 0 when it does not fit (realpath's ENAMETOOLONG). */
static int join_path(char *out, const char *dir, const char *name)
{
	size_t dl = strcmp(dir, "/") == 0 ? 0 : strlen(dir), nl = strlen(name);
	if (dl + 1 + nl + 1 > PATH_MAX) return 0;
	memcpy(out, dir, dl);
	out[dl] = '/';
	memcpy(out + dl + 1, name, nl + 1);
	return 1;
}

struct entry {
	char *name;
	uint8_t kind; /* 1 dir, 2 file, 3 symlink, 4 other */
	uint8_t has_ino;
	uint32_t links;
	uint64_t ino;
};

/*
 * realCarveFs.list of `name` in `at`: NULL when it is not a directory that can be listed (a symlink, a file,
 * missing). *fd: the directory, open, for opening its entries (the caller closes it).
 */
static struct entry *list_dir(int at, const char *name, size_t *count, int *fd)
{
	*fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0) return NULL;
	int dfd = fcntl(*fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (d == NULL) {
		if (dfd >= 0) close(dfd);
		close(*fd);
		*fd = -1;
		return NULL;
	}
	size_t n = 0, cap = 64;
	struct entry *es = malloc(cap * sizeof *es);
	struct dirent *e;
	errno = 0;
	while (es != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0))) continue;
		if (n == cap) {
			struct entry *q = realloc(es, (cap *= 2) * sizeof *es);
			if (q == NULL) break;
			es = q;
		}
		struct entry *x = &es[n];
		x->kind = e->d_type == DT_DIR ? 1 : e->d_type == DT_REG ? 2 : e->d_type == DT_LNK ? 3 : 4;
		struct stat st;
		int have = 0;
		if (e->d_type == DT_UNKNOWN) {
			have = fstatat(*fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
			x->kind = !have ? 4 : S_ISDIR(st.st_mode) ? 1 : S_ISREG(st.st_mode) ? 2 : S_ISLNK(st.st_mode) ? 3 : 4;
		}
		x->has_ino = 0;
		x->links = 1;
		x->ino = 0;
		if (x->kind == 2 || x->kind == 4) {
			if (!have) have = fstatat(*fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
			if (have) {
				x->has_ino = 1;
				x->links = st.st_nlink;
				x->ino = st.st_ino;
			}
		}
		x->name = strdup(e->d_name);
		if (x->name == NULL) break;
		n++;
		errno = 0;
	}
	int failed = es == NULL || e != NULL || errno != 0;
	closedir(d);
	if (failed) { /* a listing cut short is no listing (as a failed readDirSync) */
		for (size_t i = 0; es != NULL && i < n; i++) free(es[i].name);
		free(es);
		close(*fd);
		*fd = -1;
		return NULL;
	}
	*count = n;
	return es;
}

static void free_entries(struct entry *es, size_t n)
{
	for (size_t i = 0; i < n; i++) free(es[i].name);
	free(es);
}

/*
 * carve()'s walk, with every hole withholding the one right: `below` indexes the holes at or below `path`,
 * which is `name` in the directory `at` (or AT_FDCWD and the whole path, for a grant).
 */
static void walk(struct floor *f, int at, const char *name, const char *path, int has, int dir, const size_t *below,
		 size_t nbelow)
{
	if (f->stop) return;
	int acc = has;
	for (size_t k = 0; k < nbelow; k++)
		if (strcmp(f->holes[below[k]], path) == 0) acc = 0;
	size_t *deeper = malloc((nbelow + 1) * sizeof *deeper);
	if (deeper == NULL) {
		f->oom = f->stop = 1;
		return;
	}
	size_t nd = 0;
	if (dir)
		for (size_t k = 0; k < nbelow; k++)
			if (strcmp(f->holes[below[k]], path) != 0) deeper[nd++] = below[k];
	int w = nd > 0 && acc;
	if (w) {
		struct stat st;
		if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & 01002) == 01002) {
			/* shared: not carved, the holes dropped */
			add_rule(f, at, name, path, dir, path);
			for (size_t k = 0; k < nd; k++) {
				put_str(&f->dropped_strs, f->holes[deeper[k]]);
				f->ndropped++;
			}
			free(deeper);
			return;
		}
	}
	if (acc && !w) add_rule(f, at, name, path, dir, path);
	if (!w) {
		free(deeper);
		return;
	}
	size_t n = 0;
	int fd;
	struct entry *es = list_dir(at, name, &n, &fd);
	f->listed++;
	if (es == NULL) {
		free(deeper);
		return;
	}
	int added = set_add(&f->carved, path, NULL);
	if (added < 0) f->oom = f->stop = 1;
	/* carved (and its listing recorded) once: a second grant reaching it lists it again, the same names */
	if (added == 1) {
		f->ncarved++;
		put_str(&f->carved_strs, path);
		put_u32(&f->carved_out, (uint32_t)n);
		for (size_t i = 0; i < n; i++) {
			put_bytes(&f->carved_out, &es[i].has_ino, 1);
			put_u64(&f->carved_out, es[i].ino);
			put_str(&f->carved_strs, es[i].name);
		}
	}
	/* the name each deeper hole has right below `path`: compared with every entry */
	size_t skip = strcmp(path, "/") == 0 ? 1 : strlen(path) + 1;
	size_t *clen = malloc((nd + 1) * sizeof *clen);
	size_t *way = malloc((nd + 1) * sizeof *way);
	char *child = malloc(PATH_MAX);
	if (clen == NULL || way == NULL || child == NULL) f->oom = f->stop = 1;
	for (size_t k = 0; clen != NULL && k < nd; k++) {
		const char *rest = f->holes[deeper[k]] + skip;
		const char *slash = strchr(rest, '/');
		clen[k] = slash ? (size_t)(slash - rest) : strlen(rest);
	}
	for (size_t i = 0; i < n && !f->stop; i++) {
		struct entry *e = &es[i];
		if (e->kind == 3) continue; /* judged where it points */
		if (!join_path(child, path, e->name)) continue; /* past PATH_MAX: nothing can name it */
		if (e->kind != 1 && e->links > 1) {
			put_str(&f->hard_strs, child);
			f->nhard++;
			continue;
		}
		size_t nw = 0, nl = strlen(e->name);
		for (size_t k = 0; k < nd; k++)
			if (clen[k] == nl && memcmp(f->holes[deeper[k]] + skip, e->name, nl) == 0) way[nw++] = deeper[k];
		if (nw > 0) walk(f, fd, e->name, child, 1, e->kind == 1, way, nw);
		else add_rule(f, fd, e->name, child, e->kind == 1, path);
	}
	close(fd);
	free(child);
	free(way);
	free(clen);
	free(deeper);
	free_entries(es, n);
}

/* Absolute, without "//", "." or ".." components and without a trailing "/" (but "/"). */
static int plain(const char *p)
{
	if (p[0] != '/') return 0;
	if (p[1] == 0) return 1;
	for (const char *c = p; *c; c++) {
		if (*c != '/') continue;
		if (c[1] == '/' || c[1] == 0) return 0;
		if (c[1] == '.' && (c[2] == '/' || c[2] == 0 || (c[2] == '.' && (c[3] == '/' || c[3] == 0)))) return 0;
	}
	return 1;
}

static const char *take_str(const uint8_t **p, const uint8_t *end)
{
	const char *s = (const char *)*p;
	size_t n = strnlen(s, end - *p);
	if (*p + n >= end) return NULL;
	*p += n + 1;
	return s;
}

/*
 * readFloor for start-up (lib/floor/read_floor.ts; tests/start_lib_test.ts compares the two). `in`: u64 right
 * (READ_FILE), u64 file rights, u64 max rules, u64 the ruleset's handled rights, i64 the ruleset (-1: none),
 * the project, NUL; u32 grants, each a normalised canonical path and NUL; u32 paths, each u8 1 (protected,
 * builtin), 2 (protected, yours) or 3 (readable: a grant, after those, where it really is) and a plain
 * absolute path, NUL. Each rule is added to the ruleset as the carve makes
 * it (add_rule). Writes to `out` (`outlen`): u32 count and u32 index of each protected path not kept (a
 * builtin one inside the project); u32 directories listed; u32 rules and u64 their bytes, each u64 access, u8
 * 1 file / 2 directory, the path, NUL; u32 carved directories, each u32 entries, each u8 has_ino and u64 ino;
 * u32 hard-linked paths; u32 dropped holes; u32 count and u32 index of each path whose canonical form differs; u64 bytes of NUL-terminated strings: each carved directory and its entries' names, the hard-linked
 * paths, the dropped holes, those canonical forms. Returns the bytes written; -1 when `out` is too small or
 * memory ran out (called again, it adds the same rules again: Landlock merges them); -2 when more than max
 * rules were needed (`out` then holds the directory being carved, NUL-terminated); -3 on input it does not
 * take (a path that is not plain, a NUL inside a path: the caller carves in TypeScript; nothing was added);
 * -4 when the kernel refused a rule (`out`: u32 errno, the path, NUL).
 */
long hp_read_floor(const uint8_t *in, uint64_t inlen, uint8_t *out, uint64_t outlen)
{
	const uint8_t *p = in, *end = in + inlen;
	if (inlen < 40) return -3;
	struct floor f;
	memset(&f, 0, sizeof f);
	int64_t ruleset;
	memcpy(&f.right, p, 8);
	memcpy(&f.file_rights, p + 8, 8);
	memcpy(&f.max_rules, p + 16, 8);
	memcpy(&f.handled, p + 24, 8);
	memcpy(&ruleset, p + 32, 8);
	f.ruleset = ruleset < 0 || ruleset > INT32_MAX ? -1 : (int)ruleset;
	p += 40;
	const char *project = take_str(&p, end);
	if (project == NULL || p + 4 > end) return -3;
	uint32_t ngrants;
	memcpy(&ngrants, p, 4);
	p += 4;
	const char **grants = calloc(ngrants + 1, sizeof *grants);
	if (grants == NULL) return -1;
	for (uint32_t i = 0; i < ngrants; i++)
		if ((grants[i] = take_str(&p, end)) == NULL) {
			free(grants);
			return -3;
		}
	uint32_t nprot;
	if (p + 4 > end) {
		free(grants);
		return -3;
	}
	memcpy(&nprot, p, 4);
	p += 4;
	struct buf head = {0}, notkept = {0}, aliases = {0}, alias_strs = {0};
	uint32_t nnotkept = 0, naliases = 0;
	f.holes = calloc(2 * (size_t)nprot + 1, sizeof *f.holes);
	char **readable = calloc((size_t)nprot + 1, sizeof *readable); /* grants after `grants`, resolved here */
	uint32_t nreadable = 0;
	struct strset holeset = {0};
	struct memo_entry *memo = calloc(MEMO_SIZE, sizeof *memo);
	char *spare = NULL;
	int used = 0;
	long rc = 0;
	if (f.holes == NULL || readable == NULL || memo == NULL || !set_init(&holeset, 1024) || !set_init(&f.rules, 1024) ||
	    !set_init(&f.carved, 64)) {
		rc = -1;
		goto done;
	}
	size_t inside_len = strlen(project);
	for (uint32_t i = 0; i < nprot; i++) {
		if (p + 1 > end) {
			rc = -3;
			goto done;
		}
		uint8_t flag = *p++;
		const char *path = take_str(&p, end);
		if ((flag < 1 || flag > 3) || path == NULL || !plain(path)) {
			rc = -3;
			goto done;
		}
		/* resolve(path): the canonical form of its longest existing prefix, the rest appended */
		char resolved[2 * PATH_MAX];
		size_t n = strlen(path), h = n;
		const char *canon = NULL;
		for (;;) {
			if (canonical(memo, &used, &spare, path, h, &canon)) break;
			if (h <= 1) {
				canon = NULL;
				break;
			}
			size_t j = h;
			while (j > 0 && path[j - 1] != '/') j--;
			h = j > 1 ? j - 1 : 1;
		}
		if (canon == NULL) memcpy(resolved, path, n + 1);
		else if (strcmp(canon, "/") == 0 && path[h] == '/') memcpy(resolved, path + h, n - h + 1);
		else {
			size_t cl = strlen(canon); /* < PATH_MAX: realpath's, or checked when made */
			memcpy(resolved, canon, cl);
			memcpy(resolved + cl, path + h, n - h + 1);
		}
		int inside = strncmp(resolved, project, inside_len) == 0 &&
			     (resolved[inside_len] == 0 || resolved[inside_len] == '/');
		if (strcmp(path, resolved) != 0) { /* where it really is, for the caller's resolver */
			put_u32(&aliases, i);
			put_str(&alias_strs, resolved);
			naliases++;
		}
		if (flag == 3) { /* a readable path: a grant, where it really is */
			if ((readable[nreadable++] = strdup(resolved)) == NULL) {
				rc = -1;
				goto done;
			}
			continue;
		}
		if (flag == 1 && inside) { /* a builtin one inside the project: not kept */
			put_u32(&notkept, i);
			nnotkept++;
			continue;
		}
		/* withAliases: the hole, and where it really is when that differs */
		const char *both[2] = {path, resolved};
		for (int k = 0; k < (strcmp(path, resolved) != 0 ? 2 : 1); k++) {
			const char *kept;
			int added = set_add(&holeset, both[k], &kept);
			if (added < 0) {
				rc = -1;
				goto done;
			}
			if (added == 1) f.holes[f.nholes++] = (char *)kept;
		}
	}
	if (p != end) { /* a NUL inside a path */
		rc = -3;
		goto done;
	}
	size_t *below = malloc((f.nholes + 1) * sizeof *below);
	if (below == NULL) {
		rc = -1;
		goto done;
	}
	for (uint32_t g = 0; g < ngrants + nreadable && !f.stop; g++) {
		const char *root = g < ngrants ? grants[g] : readable[g - ngrants];
		size_t nb = 0;
		for (size_t k = 0; k < f.nholes; k++)
			if (at_or_below(f.holes[k], root)) below[nb++] = k;
		int dir;
		if (strcmp(root, "/") == 0) dir = 1;
		else {
			struct stat st;
			if (lstat(root, &st) != 0 || S_ISLNK(st.st_mode)) continue; /* missing, or not where it really is */
			dir = S_ISDIR(st.st_mode);
		}
		walk(&f, AT_FDCWD, root, root, 1, dir, below, nb);
	}
	free(below);
	if (f.add_errno != 0) {
		size_t n = strlen(f.limit_path);
		if (n + 5 > outlen) rc = -1;
		else {
			uint32_t e = (uint32_t)f.add_errno;
			memcpy(out, &e, 4);
			memcpy(out + 4, f.limit_path, n + 1);
			rc = -4;
		}
		goto done;
	}
	if (f.stop && !f.oom) {
		size_t n = strlen(f.limit_path);
		if (n + 1 > outlen) rc = -1;
		else {
			memcpy(out, f.limit_path, n + 1);
			rc = -2;
		}
		goto done;
	}
	if (f.oom || notkept.failed || aliases.failed || alias_strs.failed || f.rules_out.failed ||
	    f.carved_out.failed || f.carved_strs.failed || f.hard_strs.failed || f.dropped_strs.failed) {
		rc = -1;
		goto done;
	}
	put_u32(&head, nnotkept);
	put_bytes(&head, notkept.p, notkept.n);
	put_u32(&head, f.listed);
	put_u32(&head, (uint32_t)f.rules.n);
	put_u64(&head, f.rules_out.n);
	put_bytes(&head, f.rules_out.p, f.rules_out.n);
	put_u32(&head, f.ncarved);
	put_bytes(&head, f.carved_out.p, f.carved_out.n);
	put_u32(&head, f.nhard);
	put_u32(&head, f.ndropped);
	put_u32(&head, naliases);
	put_bytes(&head, aliases.p, aliases.n);
	put_u64(&head, f.carved_strs.n + f.hard_strs.n + f.dropped_strs.n + alias_strs.n);
	put_bytes(&head, f.carved_strs.p, f.carved_strs.n);
	put_bytes(&head, f.hard_strs.p, f.hard_strs.n);
	put_bytes(&head, f.dropped_strs.p, f.dropped_strs.n);
	put_bytes(&head, alias_strs.p, alias_strs.n);
	if (head.failed || head.n > outlen) rc = -1;
	else {
		memcpy(out, head.p, head.n);
		rc = (long)head.n;
	}
done:
	free(grants);
	free(head.p);
	free(f.rules_out.p);
	free(notkept.p);
	free(aliases.p);
	free(alias_strs.p);
	free(f.carved_out.p);
	free(f.carved_strs.p);
	free(f.hard_strs.p);
	free(f.dropped_strs.p);
	if (holeset.slot != NULL) set_free(&holeset);
	if (f.rules.slot != NULL) set_free(&f.rules);
	if (f.carved.slot != NULL) set_free(&f.carved);
	free(f.holes);
	for (uint32_t i = 0; readable != NULL && i < nreadable; i++) free(readable[i]);
	free(readable);
	for (size_t s = 0; memo != NULL && s < MEMO_SIZE; s++) {
		free(memo[s].path);
		free(memo[s].canon);
	}
	free(memo);
	free(spare);
	return rc;
}

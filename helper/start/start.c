/*
 * hallpass's start-up work over many paths, in one call each (lib/floor/start_lib.ts, ffi/start.ts): the
 * system calls the JavaScript made one FFI call (or one Deno op) at a time, for the ~300 protected paths and
 * ~230 Landlock rules of a session. Mechanism only: which paths, which rights and what the carve makes of the
 * listings stay in TypeScript (lib/floor/landlock_carve.ts is the one carve); these functions answer exactly
 * what lib/floor/carve_fs.ts and ffi/landlock.ts answer (tests/start_lib_test.ts compares them).
 *
 * Loaded by the Deno process (built against its libc, like the fast path).
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

/*
 * Adds a path-beneath rule to `ruleset` for each record of `buf`: u64 access (little-endian), u8 how to open
 * (0: follow symlinks, and fstat tells a directory; 1: not following a final symlink, a non-directory; 2: the
 * same, and it must be a directory), the path, NUL. The rights are `access & handled` on a directory and
 * `access & file_rights & handled` on anything else; nothing is added when that is 0. A path that cannot be
 * opened is skipped (`skipped[i] = 1`). Returns the number of records, or -(i + 1) when landlock_add_rule
 * failed for record i (errno says why).
 */
long hp_add_rules(int ruleset, const uint8_t *buf, uint64_t len, uint64_t handled, uint64_t file_rights,
		  uint8_t *skipped)
{
	uint64_t off = 0;
	long i = 0;
	while (off + 9 < len) {
		uint64_t access;
		memcpy(&access, buf + off, 8);
		uint8_t how = buf[off + 8];
		const char *path = (const char *)buf + off + 9;
		size_t n = strnlen(path, len - off - 9);
		if (off + 9 + n >= len) break; /* no NUL: the record is cut */
		off += 9 + n + 1;
		int flags = O_PATH | O_CLOEXEC | (how == 0 ? 0 : O_NOFOLLOW | (how == 2 ? O_DIRECTORY : 0));
		int fd = openat(AT_FDCWD, path, flags);
		if (fd < 0) {
			skipped[i++] = 1;
			continue;
		}
		int dir = how == 2;
		if (how == 0) {
			struct stat st;
			if (fstat(fd, &st) != 0) {
				int e = errno;
				close(fd);
				errno = e;
				return -(i + 1);
			}
			dir = S_ISDIR(st.st_mode);
		}
		struct path_beneath pb = {.allowed = (dir ? access : access & file_rights) & handled, .parent_fd = fd};
		if (pb.allowed != 0 && syscall(SYS_landlock_add_rule, ruleset, 1 /* PATH_BENEATH */, &pb, 0) != 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -(i + 1);
		}
		close(fd);
		i++;
	}
	return i;
}

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
 * realpath(3) of the first `n` bytes of `p`, remembered for this call of hp_resolve: 1 and *out (not to be
 * freed) when it resolves, 0 when not. A path whose parent does not resolve does not either (ENOENT, ENOTDIR,
 * EACCES and ELOOP all carry down), so it is not asked.
 */
static int canonical(struct memo_entry *memo, int *used, const char *p, size_t n, const char **out)
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
	int parent_ok = n == 1 || canonical(memo, used, p, cut > 1 ? cut - 1 : 1, &parent_canon);
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
		static char *spare;
		free(spare);
		spare = canon;
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

struct strset { /* open addressing; paths owned */
	char **slot;
	uint8_t *val;
	size_t cap, n;
};

static int set_init(struct strset *s, size_t cap)
{
	s->slot = calloc(cap, sizeof *s->slot);
	s->val = calloc(cap, 1);
	s->cap = cap;
	s->n = 0;
	return s->slot != NULL && s->val != NULL;
}

static void set_free(struct strset *s)
{
	for (size_t i = 0; i < s->cap; i++) free(s->slot[i]);
	free(s->slot);
	free(s->val);
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
	uint64_t right, file_rights, max_rules;
	char **holes;
	size_t nholes;
	struct strset rules; /* path -> how (1 file, 2 dir) */
	size_t nrules;
	struct buf rules_out, carved_out, carved_strs, hard_strs, dropped_strs;
	uint32_t ncarved, nhard, ndropped, listed;
	struct strset carved; /* carved once */
	const char *limit_at; /* set when max_rules was reached */
	char limit_path[PATH_MAX];
	int oom;
};

/* `p` is `dir` or below it. */
static int at_or_below(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1) return p[0] == '/';
	return strncmp(p, dir, n) == 0 && (p[n] == 0 || p[n] == '/');
}

/* add(path, access, dir, where) with access a single right: a rule once per path (the first one's kind). */
static void add_rule(struct floor *f, const char *path, int dir, const char *where)
{
	if (f->limit_at != NULL || f->oom) return;
	uint64_t a = dir ? f->right : f->right & f->file_rights;
	if (a == 0) return;
	int found;
	size_t i = set_find(&f->rules, path, &found);
	if (found) return;
	if (f->nrules >= f->max_rules || f->rules.n + 1 > f->rules.cap / 2) {
		snprintf(f->limit_path, sizeof f->limit_path, "%s", where);
		f->limit_at = f->limit_path;
		return;
	}
	f->rules.slot[i] = strdup(path);
	if (f->rules.slot[i] == NULL) {
		f->oom = 1;
		return;
	}
	f->rules.n++;
	f->nrules++;
	put_u64(&f->rules_out, a);
	uint8_t how = dir ? 2 : 1;
	put_bytes(&f->rules_out, &how, 1);
	put_str(&f->rules_out, path);
}

static void join_path(char *out, const char *dir, const char *name)
{
	if (strcmp(dir, "/") == 0) snprintf(out, PATH_MAX, "/%s", name);
	else snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

/* The first component of hole `h` below `dir` (h strictly below dir): its start and length. */
static const char *next_component(const char *h, const char *dir, size_t *len)
{
	const char *rest = h + (strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1);
	const char *slash = strchr(rest, '/');
	*len = slash ? (size_t)(slash - rest) : strlen(rest);
	return rest;
}

struct entry {
	char *name;
	uint8_t kind; /* 1 dir, 2 file, 3 symlink, 4 other */
	uint8_t has_ino;
	uint32_t links;
	uint64_t ino;
};

/* realCarveFs.list: NULL when `dir` is not a directory that can be listed (a symlink, a file, missing). */
static struct entry *list_dir(const char *dir, size_t *count)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) return NULL;
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
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
			have = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
			x->kind = !have ? 4 : S_ISDIR(st.st_mode) ? 1 : S_ISREG(st.st_mode) ? 2 : S_ISLNK(st.st_mode) ? 3 : 4;
		}
		x->has_ino = 0;
		x->links = 1;
		x->ino = 0;
		if (x->kind == 2 || x->kind == 4) {
			if (!have) have = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
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

/* carve()'s walk, with every hole withholding the one right: `below` indexes the holes at or below `path`. */
static void walk(struct floor *f, const char *path, int has, int dir, const size_t *below, size_t nbelow)
{
	if (f->limit_at != NULL || f->oom) return;
	int acc = has;
	for (size_t k = 0; k < nbelow; k++)
		if (strcmp(f->holes[below[k]], path) == 0) acc = 0;
	size_t *deeper = malloc((nbelow + 1) * sizeof *deeper);
	if (deeper == NULL) {
		f->oom = 1;
		return;
	}
	size_t nd = 0;
	if (dir)
		for (size_t k = 0; k < nbelow; k++)
			if (strcmp(f->holes[below[k]], path) != 0) deeper[nd++] = below[k];
	int w = nd > 0 && acc;
	if (w) {
		struct stat st;
		if (lstat(path, &st) == 0 && (st.st_mode & 01002) == 01002) { /* shared: not carved, the holes dropped */
			add_rule(f, path, dir, path);
			for (size_t k = 0; k < nd; k++) {
				put_str(&f->dropped_strs, f->holes[deeper[k]]);
				f->ndropped++;
			}
			free(deeper);
			return;
		}
	}
	if (acc && !w) add_rule(f, path, dir, path);
	if (!w) {
		free(deeper);
		return;
	}
	size_t n = 0;
	struct entry *es = list_dir(path, &n);
	f->listed++;
	if (es == NULL) {
		free(deeper);
		return;
	}
	int found;
	size_t slot = set_find(&f->carved, path, &found);
	/* carved (and its listing recorded) once: a second grant reaching it lists it again, the same names */
	if (!found) {
		f->carved.slot[slot] = strdup(path);
		f->carved.n++;
		f->ncarved++;
		put_str(&f->carved_strs, path);
		put_u32(&f->carved_out, (uint32_t)n);
		for (size_t i = 0; i < n; i++) {
			put_bytes(&f->carved_out, &es[i].has_ino, 1);
			put_u64(&f->carved_out, es[i].ino);
			put_str(&f->carved_strs, es[i].name);
		}
	}
	size_t *way = malloc((nd + 1) * sizeof *way);
	char *child = malloc(PATH_MAX);
	if (way == NULL || child == NULL) f->oom = 1;
	for (size_t i = 0; i < n && !f->oom && f->limit_at == NULL; i++) {
		struct entry *e = &es[i];
		if (e->kind == 3) continue; /* judged where it points */
		join_path(child, path, e->name);
		if (e->kind != 1 && e->links > 1) {
			put_str(&f->hard_strs, child);
			f->nhard++;
			continue;
		}
		size_t nw = 0, nl = strlen(e->name);
		for (size_t k = 0; k < nd; k++) {
			size_t cl;
			const char *c = next_component(f->holes[deeper[k]], path, &cl);
			if (cl == nl && memcmp(c, e->name, nl) == 0) way[nw++] = deeper[k];
		}
		if (nw > 0) walk(f, child, 1, e->kind == 1, way, nw);
		else add_rule(f, child, e->kind == 1, path);
	}
	free(child);
	free(way);
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
 * (READ_FILE), u64 file rights, u64 max rules, the project, NUL; u32 grants, each a normalised canonical path
 * and NUL; u32 protected paths, each u8 1 (builtin) or 2 (yours) and a plain absolute path, NUL. Writes to
 * `out` (`outlen`): u32 count and u32 index of each protected path not kept (a builtin one inside the
 * project); u32 directories listed; u32 rules and u64 their bytes, in hp_add_rules's format; u32 carved
 * directories, each u32 entries, each u8 has_ino and u64 ino; u32 hard-linked paths; u32 dropped holes; u32
 * count and u32 index of each protected path whose canonical form differs; u64 bytes of NUL-terminated
 * strings: each carved directory and its entries' names, the hard-linked paths, the dropped holes, those
 * canonical forms. Returns the bytes written; -1 when `out` is too small or memory ran out, -2 when more than
 * max rules were needed (`out` then holds the directory being carved, NUL-terminated), -3 on input it does
 * not take (a path that is not plain, a NUL inside a path: the caller carves in TypeScript).
 */
long hp_read_floor(const uint8_t *in, uint64_t inlen, uint8_t *out, uint64_t outlen)
{
	const uint8_t *p = in, *end = in + inlen;
	if (inlen < 24) return -3;
	struct floor f;
	memset(&f, 0, sizeof f);
	memcpy(&f.right, p, 8);
	memcpy(&f.file_rights, p + 8, 8);
	memcpy(&f.max_rules, p + 16, 8);
	p += 24;
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
	struct strset holeset = {0};
	size_t cap = 64;
	while (cap < 8 * ((size_t)nprot + 1)) cap *= 2;
	size_t rcap = 1 << 16;
	while (rcap / 2 < f.max_rules + 1) rcap *= 2;
	struct memo_entry *memo = calloc(MEMO_SIZE, sizeof *memo);
	int used = 0;
	long rc = 0;
	if (f.holes == NULL || memo == NULL || !set_init(&holeset, cap) || !set_init(&f.rules, rcap) ||
	    !set_init(&f.carved, 1024)) {
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
		if ((flag != 1 && flag != 2) || path == NULL || !plain(path)) {
			rc = -3;
			goto done;
		}
		/* resolve(path): the canonical form of its longest existing prefix, the rest appended */
		char resolved[2 * PATH_MAX];
		size_t n = strlen(path), h = n;
		const char *canon = NULL;
		for (;;) {
			if (canonical(memo, &used, path, h, &canon)) break;
			if (h <= 1) {
				canon = NULL;
				break;
			}
			size_t j = h;
			while (j > 0 && path[j - 1] != '/') j--;
			h = j > 1 ? j - 1 : 1;
		}
		if (canon == NULL) snprintf(resolved, sizeof resolved, "%s", path);
		else if (strcmp(canon, "/") == 0 && path[h] == '/') snprintf(resolved, sizeof resolved, "%s", path + h);
		else snprintf(resolved, sizeof resolved, "%s%s", canon, path + h);
		int inside = strncmp(resolved, project, inside_len) == 0 &&
			     (resolved[inside_len] == 0 || resolved[inside_len] == '/');
		if (strcmp(path, resolved) != 0) { /* where it really is, for the caller's resolver */
			put_u32(&aliases, i);
			put_str(&alias_strs, resolved);
			naliases++;
		}
		if (flag == 1 && inside) { /* a builtin one inside the project: not kept */
			put_u32(&notkept, i);
			nnotkept++;
			continue;
		}
		/* withAliases: the hole, and where it really is when that differs */
		const char *both[2] = {path, resolved};
		for (int k = 0; k < (strcmp(path, resolved) != 0 ? 2 : 1); k++) {
			int found;
			size_t slot = set_find(&holeset, both[k], &found);
			if (found) continue;
			holeset.slot[slot] = strdup(both[k]);
			holeset.n++;
			f.holes[f.nholes++] = holeset.slot[slot];
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
	for (uint32_t g = 0; g < ngrants && f.limit_at == NULL && !f.oom; g++) {
		const char *root = grants[g];
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
		walk(&f, root, 1, dir, below, nb);
	}
	free(below);
	if (f.limit_at != NULL) {
		size_t n = strlen(f.limit_at);
		if (n + 1 > outlen) rc = -1;
		else {
			memcpy(out, f.limit_at, n + 1);
			rc = -2;
		}
		goto done;
	}
	if (f.oom || notkept.failed || aliases.failed || alias_strs.failed || f.rules_out.failed || f.carved_out.failed || f.carved_strs.failed ||
	    f.hard_strs.failed || f.dropped_strs.failed) {
		rc = -1;
		goto done;
	}
	put_u32(&head, nnotkept);
	put_bytes(&head, notkept.p, notkept.n);
	put_u32(&head, f.listed);
	put_u32(&head, (uint32_t)f.nrules);
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
	for (size_t s = 0; memo != NULL && s < MEMO_SIZE; s++) {
		free(memo[s].path);
		free(memo[s].canon);
	}
	free(memo);
	return rc;
}

/*
 * ./hallpass where `deno compile` could not get its runtime (Makefile): runs the bundle `make` built
 * (build/js/main.js, helper/bundle/bundle.ts) with the pinned deno, or the sources when the bundle is missing or
 * any source file (main.ts, every .ts below lib/ and ffi/) is newer than it. It replaces a sh script
 * (helper/bundle/hallpass.sh.in, still the fallback without a C compiler) whose start and ~120 `-nt` tests cost
 * ~2 ms of every start; this costs ~0.3 ms (bench/README.md). Built by `make` with the paths compiled in:
 *   -DHP_ROOT='"/path/to/checkout"' -DHP_DENO='"/path/to/deno"' -DHP_V8_FLAGS='"--max-semi-space-size=1"'
 * --no-lazy (the bundle only): V8 compiles every function of a module when it loads it, so Deno's code cache
 * holds them all and the start-up runs no compiler (docs/performance.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef HP_ROOT
#error "HP_ROOT, HP_DENO and HP_V8_FLAGS are set by make"
#endif

static struct timespec bundle_time;

static int newer(const struct stat *st) {
	return st->st_mtim.tv_sec > bundle_time.tv_sec ||
	       (st->st_mtim.tv_sec == bundle_time.tv_sec && st->st_mtim.tv_nsec > bundle_time.tv_nsec);
}

/* Whether a .ts file at any depth below the directory NAME (in the directory AT) is newer than the bundle, or
 * something there cannot be looked at. Directories are entered as bundle.ts enters them (not through a
 * symlink); a file is stat'ed through a symlink, as `test -nt` does. Names starting with '.' are skipped, as
 * the script's globs skipped them. */
static int changed_below(int at, const char *name, int depth) {
	if (depth > 16) return 1;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) return errno != ENOENT;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 1;
	}
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.') continue;
		unsigned char t = e->d_type;
		if (t == DT_UNKNOWN) {
			struct stat l;
			if (fstatat(fd, e->d_name, &l, AT_SYMLINK_NOFOLLOW) != 0) continue;
			t = S_ISDIR(l.st_mode) ? DT_DIR : S_ISLNK(l.st_mode) ? DT_LNK : DT_REG;
		}
		if (t == DT_DIR) {
			found = changed_below(fd, e->d_name, depth + 1);
			continue;
		}
		size_t n = strlen(e->d_name);
		if (n < 4 || strcmp(e->d_name + n - 3, ".ts") != 0) continue;
		struct stat st;
		if (fstatat(fd, e->d_name, &st, 0) == 0 && newer(&st)) found = 1;
	}
	closedir(d);
	return found;
}

static void run(char **argv, const char *const *pre, int npre) {
	int argc = 0;
	while (argv[argc]) argc++;
	char **args = calloc((size_t)(npre + argc + 1), sizeof *args);
	if (!args) {
		fputs("hallpass: out of memory\n", stderr);
		_exit(125);
	}
	for (int i = 0; i < npre; i++) args[i] = (char *)pre[i];
	for (int i = 1; i < argc; i++) args[npre + i - 1] = argv[i];
	execv(HP_DENO, args);
	fprintf(stderr, "hallpass: cannot run %s: %s\n", HP_DENO, strerror(errno));
	fputs("hint: run `make` again in " HP_ROOT "\n", stderr);
	_exit(125);
}

int main(int argc, char **argv) {
	(void)argc;
	static const char *const bundle[] = {
		HP_DENO, "run", "--quiet", "--allow-all", "--no-prompt", "--no-config", "--no-lock",
		"--v8-flags=" HP_V8_FLAGS ",--no-lazy", HP_ROOT "/build/js/main.js",
	};
	static const char *const sources[] = {
		HP_DENO, "run", "--quiet", "--allow-all", "--no-prompt", "--cached-only", "--lock=" HP_ROOT "/runtime.lock",
		"--frozen", "--v8-flags=" HP_V8_FLAGS, HP_ROOT "/main.ts",
	};
	/* A working directory deleted under the caller: deno could not start (its own coloured error and a
	 * backtrace, exit 1). One line and 125 instead (README.md's exit statuses). One getcwd call: ERANGE with
	 * this buffer whenever the directory is there (but "/"), ENOENT when it is gone. */
	char cwd[2];
	if (!getcwd(cwd, sizeof cwd) && errno == ENOENT) {
		fputs("hallpass: the current directory no longer exists: cd to one that does; nothing was run\n", stderr);
		return 125;
	}
	struct stat b, m;
	int stale = stat(HP_ROOT "/build/js/main.js", &b) != 0;
	if (!stale) {
		bundle_time = b.st_mtim;
		stale = (stat(HP_ROOT "/main.ts", &m) == 0 && newer(&m)) || changed_below(AT_FDCWD, HP_ROOT "/lib", 0) ||
		        changed_below(AT_FDCWD, HP_ROOT "/ffi", 0);
	}
	if (stale) run(argv, sources, sizeof sources / sizeof *sources);
	run(argv, bundle, sizeof bundle / sizeof *bundle);
	return 125;
}

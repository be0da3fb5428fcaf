/*
 * A program that makes a Landlock domain of its own (the sandbox may): `nested_landlock GRANT DENIED KEY`
 * handles reads, grants them below GRANT (and the system's library directories), so that opening DENIED is
 * refused by its own domain (which logs it: same exec), then opens KEY, which its domain allows. Run in place
 * of the command's shell (exec: the same pid as the command), its domain's record names the command's pid:
 * it must not pass for the session's. Prints "DENIED: errno" and "KEY: ok|errno".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void try(const char *label, const char *path) {
	int fd = open(path, O_RDONLY);
	if (fd < 0) printf("%s: %s\n", label, strerror(errno));
	else {
		printf("%s: ok\n", label);
		close(fd);
	}
	fflush(stdout);
}

int main(int argc, char **argv) {
	if (argc != 4) return 2;
	uint64_t attr[1] = {1ull << 2 /* READ_FILE */};
	int rs = syscall(444, attr, 8, 0);
	if (rs < 0) return perror("landlock_create_ruleset"), 3;
	const char *grant[] = {argv[1], "/usr", "/lib", "/lib64", NULL};
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
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return perror("no_new_privs"), 3;
	if (syscall(446, rs, 0) < 0) return perror("landlock_restrict_self"), 3;
	try("DENIED", argv[2]);
	usleep(200000); /* its domain's record first */
	try("KEY", argv[3]);
	return 0;
}

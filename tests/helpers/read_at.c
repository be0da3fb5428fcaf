/* read_at: how a hostile program reads a file the sandbox must not read.
 *   read_at at DIR REL      open DIR, then openat(dirfd, REL, O_RDONLY)
 *   read_at handle PATH     name_to_handle_at + open_by_handle_at (needs CAP_DAC_READ_SEARCH; refused by hallpass)
 *   read_at mmap PATH       open O_RDONLY and mmap the first page
 * Prints "ok CONTENT" (first line) or "errno N", exit 0 either way; 2 on bad use. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int report(int fd) {
	if (fd < 0) {
		printf("errno %d\n", errno);
		return 0;
	}
	char buf[256] = {0};
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n < 0) {
		printf("errno %d\n", errno);
		return 0;
	}
	buf[strcspn(buf, "\n")] = 0;
	printf("ok %s\n", buf);
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 4 && !strcmp(argv[1], "at")) {
		int d = open(argv[2], O_RDONLY | O_DIRECTORY);
		if (d < 0) {
			printf("dir errno %d\n", errno);
			return 0;
		}
		return report(openat(d, argv[3], O_RDONLY));
	}
	if (argc == 3 && !strcmp(argv[1], "handle")) {
		struct file_handle *h = malloc(sizeof *h + MAX_HANDLE_SZ);
		h->handle_bytes = MAX_HANDLE_SZ;
		int mnt;
		if (name_to_handle_at(AT_FDCWD, argv[2], h, &mnt, 0) < 0) {
			printf("errno %d\n", errno);
			return 0;
		}
		return report(open_by_handle_at(AT_FDCWD, h, O_RDONLY));
	}
	if (argc == 3 && !strcmp(argv[1], "mmap")) {
		int fd = open(argv[2], O_RDONLY);
		if (fd < 0) {
			printf("errno %d\n", errno);
			return 0;
		}
		char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			printf("errno %d\n", errno);
			return 0;
		}
		printf("ok %.*s\n", (int)strcspn(p, "\n"), p);
		return 0;
	}
	fprintf(stderr, "usage: read_at at DIR REL | handle PATH | mmap PATH\n");
	return 2;
}

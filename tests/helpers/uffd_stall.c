/* Red team (tests/e2e/redteam5_test.ts): gets a userfaultfd through /dev/userfaultfd (root; the userfaultfd call
 * itself is refused by the filter) and, with argv[1] == "stall", registers a page and passes a path in it to
 * mkdir: whoever reads that path waits for a fault nobody resolves. Prints "uffd=OK" (or what failed),
 * "stalling", then mkdir's result. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int dev = open("/dev/userfaultfd", O_RDONLY | O_CLOEXEC);
	if (dev < 0) { printf("open errno=%d\n", errno); return 0; }
	int u = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
	if (u < 0) { printf("uffd errno=%d\n", errno); return 0; }
	struct uffdio_api api = {.api = UFFD_API};
	if (ioctl(u, UFFDIO_API, &api) < 0) { printf("api errno=%d\n", errno); return 0; }
	printf("uffd=OK\n");
	fflush(stdout);
	if (argc < 2 || strcmp(argv[1], "stall") != 0) return 0;
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register reg = {
		.range = {.start = (unsigned long)p, .len = ps},
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	if (ioctl(u, UFFDIO_REGISTER, &reg) < 0) { printf("register errno=%d\n", errno); return 0; }
	printf("stalling\n");
	fflush(stdout);
	alarm(50); /* a bare mkdir waits too (the kernel reads p): the caller waits, nobody else should */
	int r = mkdir(p, 0755);
	printf("mkdir=%d errno=%d\n", r, r < 0 ? errno : 0);
	return 0;
}

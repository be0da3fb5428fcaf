/*
 * The floor of a pty relay, for bench/pty.sh only: the smallest program that puts a command on a pty of its own
 * and copies what it prints to the terminal. A blocking read of the master, a blocking write of what it read,
 * nothing else (no input side, no signals, no filter, no screen model). What any pty relay costs on this
 * machine: hallpass's relay (helper/relay/relay.c) cannot cost less than this.
 *
 *   cc -O2 -o floor_relay floor_relay.c -lutil && ./floor_relay seq 1 5000000
 */
#include <errno.h>
#include <pty.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: floor_relay COMMAND [ARG]...\n");
		return 2;
	}
	struct winsize ws;
	struct termios saved, raw;
	int tty = isatty(1) && tcgetattr(1, &saved) == 0;
	if (!tty || ioctl(1, TIOCGWINSZ, &ws) < 0) ws = (struct winsize){ .ws_row = 24, .ws_col = 80 };
	int master;
	pid_t pid = forkpty(&master, 0, tty ? &saved : 0, &ws);
	if (pid < 0) {
		perror("floor_relay: forkpty");
		return 125;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror("floor_relay: exec");
		_exit(127);
	}
	/* Output as the relays under test do it: the outer terminal passes bytes as they are (the inner pty did the
	   output processing already). */
	if (tty) {
		raw = saved;
		cfmakeraw(&raw);
		tcsetattr(1, TCSANOW, &raw);
	}
	static char buf[65536];
	for (;;) {
		ssize_t n = read(master, buf, sizeof buf);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break; /* EIO: the command and everything on its pty closed it */
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(1, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR) continue;
			if (w <= 0) goto done;
			off += w;
		}
	}
done:
	if (tty) tcsetattr(1, TCSANOW, &saved);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

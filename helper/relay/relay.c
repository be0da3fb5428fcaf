/*
 * hallpass pty relay (lib/ui/pty_session.ts, docs/terminal.md): copies the command's output from the pty master
 * to the person's terminal while nothing needs to look at it byte by byte, so that hallpass in the terminal path
 * costs what any pty relay costs (`script`), not a trip through JavaScript per read.
 *
 * Called through Deno FFI on a thread of Deno's pool (`nonblocking: true`); the event loop goes on meanwhile.
 * It returns to JavaScript, which then handles what it returns:
 *   - RELAY_WOKEN: the wake fd was written (a bar is about to open, a resize, the end of the session): what the
 *     master held at that moment was read and copied first (bounded), so output printed before a question is
 *     shown above it;
 *   - RELAY_HANDOFF: a read held bytes the output filter (lib/ui/output_filter.ts) must see: an OSC or DCS string
 *     (ESC ] / ESC P, or their UTF-8 C1 forms C2 9D / C2 90), a private mode (ESC [ ?), or a chunk ending in ESC,
 *     C2 or ESC [ (a sequence split between reads). Those bytes are NOT written; they are st[HANDOFF_*];
 *   - RELAY_FULL: the buffer is full (every byte copied is kept in it for the screen model);
 *   - RELAY_EOF: the master reported end of file, EIO or a hang-up;
 *   - RELAY_ERROR: a read or write failed otherwise (st[ERRNO]).
 * Every byte read before the returned state is in buf[0, st[USED]); the first st[WRITTEN] of them reached the
 * terminal, and the rest must be written by the caller before anything else. st[CLEAN]: see clean_from(). Bytes this loop writes are exactly
 * the bytes read (the filter would have passed them unchanged and left its state as it was: tested by
 * tests/ui_relay_test.ts against the filter).
 *
 * The output fd must be non-blocking (a file description of its own: the caller reopens the terminal) so that a
 * terminal that stops reading (XOFF) never keeps this loop from noticing the wake fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

enum { RELAY_WOKEN = 1, RELAY_HANDOFF = 2, RELAY_FULL = 3, RELAY_EOF = 4, RELAY_ERROR = 5 };
/* st[]: in/out state shared with the caller (int64 each). */
enum { ST_USED = 0, ST_WRITTEN = 1, ST_HANDOFF_AT = 2, ST_HANDOFF_LEN = 3, ST_ERRNO = 4, ST_CLEAN = 5 };

/* Largest single read: a pty master returns at most what its line discipline holds (4 KiB), a little more is
   harmless. A read is only attempted with this much room left. */
#define READ_MAX 16384
/* Reads taken after a wake before returning (what was printed before the question). */
#define WAKE_READS 16

/* 1 when the output filter passes buf[0, n) unchanged and stays in its ground state (see the file comment). */
int hallpass_relay_plain(const uint8_t *buf, size_t n) {
	/* Only ESC and C2 start anything the filter acts on: found with memchr (most output has neither). */
	for (int k = 0; k < 2; k++) {
		const uint8_t lead = k == 0 ? 0x1b : 0xc2;
		const uint8_t *p = buf, *end = buf + n;
		while ((p = memchr(p, lead, (size_t)(end - p))) != 0) {
			if (p + 1 >= end) return 0;
			uint8_t c = p[1];
			if (lead == 0xc2) {
				if (c == 0x9d || c == 0x90) return 0;
			} else {
				if (c == ']' || c == 'P') return 0;
				if (c == '[' && (p + 2 >= end || p[2] == '?')) return 0;
			}
			p++;
		}
	}
	return 1;
}

/*
 * The screen model's hint (lib/ui/mirror_skip.ts, findSkip): from buf[from] on, after the last byte that is a C0
 * control other than LF, CR, TAB and BS (ESC included), or the second byte of a UTF-8 C1 control (C2 80-9F);
 * `clean` is what it was for buf[0, from). Scanning back from the end, the model's skip passes over everything
 * after the returned index without looking.
 */
typedef uint8_t v16 __attribute__((vector_size(16)));

/* True when none of the 16 bytes at p (p[-1] readable) is a control clean_from stops at. */
static int block_clean(const uint8_t *p) {
	v16 b, prev;
	memcpy(&b, p, 16);
	memcpy(&prev, p - 1, 16);
	v16 c0 = (v16)((b < 0x20) & (b != '\n') & (b != '\r') & (b != '\t') & (b != '\b'));
	v16 c1 = (v16)(((b & 0xe0) == 0x80) & (prev == 0xc2));
	v16 m = c0 | c1;
	uint64_t w[2];
	memcpy(w, &m, 16);
	return (w[0] | w[1]) == 0;
}

static size_t clean_from(const uint8_t *buf, size_t from, size_t n, size_t clean) {
	/* Backwards from the end: the last byte that is not clean decides (most pieces have none: one pass, 16 bytes
	   at a time). */
	size_t i = n;
	while (i > from) {
		if (i - from >= 16 && i >= 17 && block_clean(buf + i - 16)) {
			i -= 16;
			continue;
		}
		uint8_t b = buf[i - 1];
		if (b < 0x20) {
			if (b != '\n' && b != '\r' && b != '\t' && b != '\b') return i;
		} else if (b <= 0x9f && b >= 0x80 && i >= 2 && buf[i - 2] == 0xc2) {
			return i; /* the second byte of a UTF-8 C1 control (maybe read before) */
		}
		i--;
	}
	return clean; /* nothing in [from, n) */
}

/* clean_from over a whole buffer (for the tests). */
size_t hallpass_relay_clean_from(const uint8_t *buf, size_t n) {
	return clean_from(buf, 0, n, 0);
}

static int drain_wake(int wake) {
	uint64_t v;
	return read(wake, &v, sizeof v) > 0;
}

/* Writes what is pending without blocking; 0, or -1 with errno (EAGAIN: the terminal is full). */
static int flush_out(int out, const uint8_t *buf, int64_t *st) {
	while (st[ST_WRITTEN] < st[ST_USED]) {
		ssize_t w = write(out, buf + st[ST_WRITTEN], (size_t)(st[ST_USED] - st[ST_WRITTEN]));
		if (w > 0) {
			st[ST_WRITTEN] += w;
			continue;
		}
		if (w < 0 && errno == EINTR) continue;
		return -1;
	}
	return 0;
}

/* One non-blocking read into the buffer: 1 data kept, 0 nothing there, or a RELAY_* state to return. */
static int take(int master, uint8_t *buf, size_t cap, int64_t *st) {
	size_t room = cap - (size_t)st[ST_USED];
	if (room < READ_MAX) return RELAY_FULL;
	ssize_t n = read(master, buf + st[ST_USED], READ_MAX);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR) return 0;
		if (errno == EIO) return RELAY_EOF;
		st[ST_ERRNO] = errno;
		return RELAY_ERROR;
	}
	if (n == 0) return RELAY_EOF;
	if (!hallpass_relay_plain(buf + st[ST_USED], (size_t)n)) {
		st[ST_HANDOFF_AT] = st[ST_USED];
		st[ST_HANDOFF_LEN] = n;
		return RELAY_HANDOFF;
	}
	st[ST_CLEAN] = (int64_t)clean_from(buf, (size_t)st[ST_USED], (size_t)(st[ST_USED] + n), (size_t)st[ST_CLEAN]);
	st[ST_USED] += n;
	return 1;
}

/* After a wake: what the master holds now is read (bounded) and written as far as the terminal takes it. */
static int woken(int master, int out, int wake, uint8_t *buf, size_t cap, int64_t *st) {
	drain_wake(wake);
	int r = RELAY_WOKEN;
	for (int i = 0; i < WAKE_READS; i++) {
		int t = take(master, buf, cap, st);
		if (t != 1) {
			if (t > 1) r = t;
			break;
		}
	}
	if (flush_out(out, buf, st) < 0 && errno != EAGAIN) st[ST_ERRNO] = errno;
	return r;
}

/*
 * Copies master → out until one of the states above. buf[0, cap) is the caller's; st[USED] and st[WRITTEN] are
 * where to go on from (0, 0 for a fresh buffer).
 *
 * The loop is what the smallest relay does (bench/floor_relay.c: a read, then a write of what it read), with a
 * poll before each read for the wake fd. While the terminal has not taken everything read, the master is not
 * read: the command waits on its pty as it would on the terminal itself. (Reading ahead of a slow terminal and
 * reading until EAGAIN cost twice the floor's CPU: a refused write, an empty read — which waits for the pty's
 * buffer work — and a poll per few hundred bytes, and the command never blocked, competing with the terminal for
 * the CPU.)
 */
int hallpass_relay(int master, int out, int wake, uint8_t *buf, size_t cap, int64_t *st) {
	st[ST_HANDOFF_AT] = st[ST_HANDOFF_LEN] = st[ST_ERRNO] = 0;
	for (;;) {
		int pending = st[ST_WRITTEN] < st[ST_USED];
		struct pollfd p[2] = {
			{ .fd = wake, .events = POLLIN },
			pending ? (struct pollfd){ .fd = out, .events = POLLOUT } : (struct pollfd){ .fd = master, .events = POLLIN },
		};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR) continue;
			st[ST_ERRNO] = errno;
			return RELAY_ERROR;
		}
		if (p[0].revents) return woken(master, out, wake, buf, cap, st);
		int r = 0;
		if (pending) {
			if (p[1].revents & (POLLERR | POLLNVAL)) {
				st[ST_ERRNO] = EIO;
				return RELAY_ERROR;
			}
		} else if (p[1].revents) {
			/* Readable, or hung up: the read tells (what is left first, then EOF or EIO). */
			r = take(master, buf, cap, st);
			if (r == 0 && !(p[1].revents & POLLIN)) return RELAY_EOF;
		}
		if (flush_out(out, buf, st) < 0 && errno != EAGAIN) {
			st[ST_ERRNO] = errno;
			return r > 1 ? r : RELAY_ERROR;
		}
		if (r > 1) return r;
	}
}

/* A non-blocking file description of its own on the terminal at `fd` (its O_NONBLOCK is not the shell's), or -1. */
int hallpass_relay_open_out(int fd) {
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (!isatty(fd)) return -1;
	return open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
}

/* The wake fd: an eventfd (non-blocking, close-on-exec), or -1. */
int hallpass_relay_wake_fd(void) {
	return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/* Wakes a running relay (or makes the next one return at once). */
int hallpass_relay_wake(int wake) {
	uint64_t one = 1;
	return write(wake, &one, sizeof one) == sizeof one ? 0 : -1;
}

int hallpass_relay_close(int fd) {
	return close(fd);
}

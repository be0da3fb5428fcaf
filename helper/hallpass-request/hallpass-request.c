/*
 * hallpass-request: ask hallpass in advance for a write, exec or connect grant (docs/request-protocol.md).
 *
 *   hallpass-request [check] write|exec|connect TARGET [--for DURATION] [--reason TEXT] [--timeout DURATION]
 *   hallpass-request release write|exec|connect TARGET
 *
 * The request is an execve() of the magic path
 *
 *   /.hallpass/v1/<verb>/<op>/<target>[/for=<d>][/timeout=<d>][/reason=<text>]
 *
 * (every value percent-encoded, see docs/request-protocol.md) that hallpass traps and answers with an
 * errno; the exec never happens. Outside hallpass the path does not exist and execve fails with ENOENT.
 *
 * Exit codes: 0 granted/released, 1 already allowed, 2 usage, 3 denied, 4 timed out, 5 (check) would ask,
 * 6 malformed/too long/PROG not in $PATH, 7 not mediated, 8 not under hallpass, 9 other, 10 (release) no match.
 *
 * Exactly one line goes to stderr in every case; stdout is used only by --help, --version and the debugging
 * aid HALLPASS_REQUEST_DRY_RUN=1 (print the path that would be executed, do not execute it, exit 0).
 *
 * No dependencies beyond libc; builds with musl-gcc -static -Wall -Wextra -Werror.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VERSION "0.1.0"
#define PROTOCOL "v1"
#define MAGIC "/.hallpass/" PROTOCOL "/"
#define REQ_MAX 4096 /* PATH_MAX, including the terminating NUL */
#define MSG_MAX 2048 /* one stderr line */
#define ECHO_MAX 300 /* longest piece of user input echoed in a message */

#define EXIT_GRANTED 0
#define EXIT_ALREADY 1
#define EXIT_USAGE 2
#define EXIT_DENIED 3
#define EXIT_TIMEOUT 4
#define EXIT_WOULD_ASK 5
#define EXIT_MALFORMED 6
#define EXIT_NOT_MEDIATED 7
#define EXIT_NOT_HALLPASS 8
#define EXIT_OTHER 9
#define EXIT_NO_MATCH 10

#define MAX_DURATION_MS (366ULL * 86400000ULL)

static const char USAGE[] =
    "usage: hallpass-request [check] write|exec|connect TARGET [--for DURATION] [--reason TEXT] [--timeout DURATION]\n"
    "       hallpass-request release write|exec|connect TARGET\n"
    "\n"
    "Ask hallpass in advance for a grant, before a long task.\n"
    "\n"
    "  write PATH      a file, or a folder and everything below it when PATH ends in /** (relative to the\n"
    "                  working directory; no other glob)\n"
    "  exec PROG       a path, a name looked up in $PATH, or DIR/**\n"
    "  connect DEST    [tcp:|udp:]ADDR[/N][:PORT[-PORT]], [IPv6]..., unix:/path, unix:/dir/**, unix:@name,\n"
    "                  unix:@prefix* (addresses only, never host names, never *)\n"
    "  check           only say whether a request would ask (exit 1 allowed, 5 would ask, 3 denied)\n"
    "  release         give back the grants that requests of this session got for TARGET\n"
    "\n"
    "  --for DURATION      how long the grant lasts (90s, 10m, 2h, 1h30m; default: the rest of the session)\n"
    "  --reason TEXT       why, in a few honest words; shown to the person who answers\n"
    "  --timeout DURATION  give up when nobody answers within DURATION\n"
    "  -h, --help          this text;  --version  the version\n"
    "\n"
    "Exit: 0 granted/released, 1 already allowed, 2 usage error, 3 denied, 4 no answer in time,\n"
    "      5 (check) would ask, 6 malformed or too long or PROG not in $PATH, 7 category not mediated,\n"
    "      8 not running under hallpass, 9 unexpected error, 10 (release) no grant matches.\n"
    "Debugging: HALLPASS_REQUEST_DRY_RUN=1 prints the request path on stdout instead of making the request.\n";

/* ---------------------------------------------------------------- output: one line, bounded, escaped */

struct line {
  char buf[MSG_MAX];
  size_t len;
};

static void line_raw(struct line *l, const char *s, size_t n) {
  size_t room = sizeof l->buf - 2 - l->len; /* keep space for "\n" and a spare byte */
  if (n > room) n = room;
  memcpy(l->buf + l->len, s, n);
  l->len += n;
}

static void line_str(struct line *l, const char *s) { line_raw(l, s, strlen(s)); }

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when the bytes there are not valid UTF-8. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
  else return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

static int utf8_valid(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  while (n > 0) {
    size_t k = utf8_seq(p, n);
    if (k == 0) return 0;
    p += k;
    n -= k;
  }
  return 1;
}

/* Appends user input: control bytes, DEL, C1 controls and invalid UTF-8 become \xNN, a backslash becomes \\;
 * at most ECHO_MAX bytes of input, then "...". The result is always one line of valid UTF-8. */
static void line_echo(struct line *l, const char *s) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s), used = 0;
  while (n > 0) {
    if (used >= ECHO_MAX) {
      line_str(l, "...");
      return;
    }
    size_t k = utf8_seq(p, n);
    int c1 = k == 2 && p[0] == 0xC2 && p[1] < 0xA0; /* U+0080..U+009F */
    if (k == 0 || c1 || p[0] < 0x20 || p[0] == 0x7F || p[0] == '\\') {
      char esc[4] = {'\\', 'x', hex[p[0] >> 4], hex[p[0] & 15]};
      if (p[0] == '\\') line_str(l, "\\\\");
      else line_raw(l, esc, 4);
      k = 1;
    } else {
      line_raw(l, (const char *)p, k);
    }
    p += k;
    n -= k;
    used += k;
  }
}

/* Formats a message: %s is a trusted string, %e user input (escaped, bounded), %z a size_t. */
static void line_vfmt(struct line *l, const char *fmt, va_list ap) {
  for (const char *f = fmt; *f; f++) {
    if (*f != '%' || f[1] == '\0') {
      line_raw(l, f, 1);
      continue;
    }
    f++;
    if (*f == 's') line_str(l, va_arg(ap, const char *));
    else if (*f == 'e') line_echo(l, va_arg(ap, const char *));
    else if (*f == 'z') {
      size_t v = va_arg(ap, size_t);
      char d[32];
      int i = (int)sizeof d;
      do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
      } while (v > 0 && i > 0);
      line_raw(l, d + i, sizeof d - (size_t)i);
    } else line_raw(l, f, 1);
  }
}

static void write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

/* Prints "hallpass-request: <message>\n" on stderr and exits with code. */
__attribute__((noreturn)) static void finish(int code, const char *fmt, ...);
static void finish(int code, const char *fmt, ...) {
  struct line l;
  l.len = 0;
  line_str(&l, "hallpass-request: ");
  va_list ap;
  va_start(ap, fmt);
  line_vfmt(&l, fmt, ap);
  va_end(ap);
  l.buf[l.len++] = '\n';
  write_all(2, l.buf, l.len);
  _exit(code);
}

#define USAGE_HINT " (see hallpass-request --help)"

/* ---------------------------------------------------------------- durations */

/* Parses `90s`, `10m`, `2h`, `1h30m`, `500ms`, `1d` (digits + unit, repeated; no spaces, no fractions),
 * more than zero, at most 366 days, at most 64 characters: the same as lib/policy/request_protocol.ts.
 * Returns 0 and sets *ms, or -1. */
static int parse_duration(const char *s, uint64_t *ms) {
  size_t n = strlen(s);
  uint64_t total = 0;
  if (n == 0 || n > 64) return -1;
  const char *p = s;
  while (*p) {
    uint64_t v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
      if (v <= MAX_DURATION_MS) v = v * 10 + (uint64_t)(*p - '0'); /* v stays small: no overflow */
      p++;
      digits++;
    }
    if (digits == 0) return -1;
    uint64_t unit;
    if (p[0] == 'm' && p[1] == 's') { unit = 1; p += 2; }
    else if (p[0] == 's') { unit = 1000; p++; }
    else if (p[0] == 'm') { unit = 60000; p++; }
    else if (p[0] == 'h') { unit = 3600000; p++; }
    else if (p[0] == 'd') { unit = 86400000; p++; }
    else return -1;
    if (v > MAX_DURATION_MS) return -1;
    v *= unit; /* <= 366d * 1d in ms < 2^64 */
    if (v > MAX_DURATION_MS) return -1;
    total += v;
    if (total > MAX_DURATION_MS) return -1;
  }
  if (total == 0) return -1;
  *ms = total;
  return 0;
}

static char *utoa(uint64_t v, char *end) {
  *--end = '\0';
  do {
    *--end = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  return end;
}

/* Go-style, like formatDuration in lib/policy/duration.ts: 250ms, 1.5s, 5m0s, 1h30m0s. */
static void format_duration(uint64_t ms, char out[64]) {
  char tmp[24];
  out[0] = '\0';
  if (ms < 1000) {
    strcat(out, utoa(ms, tmp + sizeof tmp));
    strcat(out, "ms");
    return;
  }
  uint64_t h = ms / 3600000, m = ms % 3600000 / 60000, sec_ms = ms % 60000;
  if (h > 0) {
    strcat(out, utoa(h, tmp + sizeof tmp));
    strcat(out, "h");
  }
  if (h > 0 || m > 0) {
    strcat(out, utoa(m, tmp + sizeof tmp));
    strcat(out, "m");
  }
  strcat(out, utoa(sec_ms / 1000, tmp + sizeof tmp));
  uint64_t frac = sec_ms % 1000;
  if (frac) {
    char f[5] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10), '\0'};
    for (int i = 3; i > 0 && f[i] == '0'; i--) f[i] = '\0';
    strcat(out, f);
  }
  strcat(out, "s");
}

/* ---------------------------------------------------------------- targets */

static int has_glob(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '*' || s[i] == '?' || s[i] == '[') return 1;
  return 0;
}

/* A path target: no glob characters except one trailing slash-star-star. */
static int path_glob_ok(const char *s) {
  size_t n = strlen(s);
  if (n >= 3 && strcmp(s + n - 3, "/**") == 0) n -= 3;
  return !has_glob(s, n);
}

static int has_control(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  for (; *p; p++) {
    if (*p < 0x20 || *p == 0x7F) return 1;
    if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] < 0xA0) return 1; /* C1 controls */
  }
  return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* Light validation of a connect DEST (hallpass validates it fully): no `*` except unix:@prefix*, addresses
 * only. Returns NULL when it looks fine, else why not. */
static const char *connect_problem(const char *t) {
  if (strncmp(t, "unix:", 5) == 0) {
    const char *r = t + 5;
    if (r[0] == '/') return path_glob_ok(r) ? NULL : "a unix socket path takes no glob except a trailing /**";
    if (r[0] == '@') {
      size_t n = strlen(r);
      if (n < 2 || (n == 2 && r[1] == '*')) return "an abstract unix socket needs a name after @";
      if (strchr(r, '*') != NULL && strchr(r, '*') != r + n - 1) return "`*` is allowed only at the end of unix:@prefix*";
      return NULL;
    }
    return "unix: takes /path, /dir/**, @name or @prefix*";
  }
  const char *r = t;
  if (strncmp(r, "tcp:", 4) == 0 || strncmp(r, "udp:", 4) == 0) r += 4;
  if (strchr(r, '*') != NULL) return "`*` (anywhere) cannot be requested: ask for an address";
  if (r[0] == '\0') return "missing address";
  const char *rest;
  if (r[0] == '[') {
    const char *close = strchr(r, ']');
    if (close == NULL || close == r + 1) return "unterminated [IPv6] address";
    for (const char *p = r + 1; p < close; p++)
      if (!is_hex(*p) && *p != ':' && *p != '.') return "not an IPv6 address inside [ ]";
    rest = close + 1;
  } else {
    size_t colons = 0;
    for (const char *p = r; *p; p++) colons += *p == ':';
    if (colons >= 2) { /* a bare IPv6 address, optionally /N */
      for (const char *p = r; *p; p++)
        if (!is_hex(*p) && *p != ':' && *p != '.' && *p != '/') return "not an address (IPv6 with a port goes in [ ])";
      return NULL;
    }
    const char *p = r;
    while (is_digit(*p) || *p == '.') p++;
    if (p == r || (*p != '\0' && *p != '/' && *p != ':')) return "host names cannot be requested, only addresses";
    rest = p;
  }
  for (const char *p = rest; *p; p++)
    if (!is_digit(*p) && *p != '/' && *p != ':' && *p != '-') return "bad /N or :PORT[-PORT] after the address";
  return NULL;
}

/* ---------------------------------------------------------------- exec: resolve PROG */

static char resolved[REQ_MAX + 256];

static int cwd_join(const char *rel, char *out, size_t outsz) {
  char cwd[REQ_MAX];
  if (getcwd(cwd, sizeof cwd) == NULL) return -1;
  while (rel[0] == '.' && rel[1] == '/') { /* ./x -> x */
    rel += 2;
    while (rel[0] == '/') rel++;
  }
  size_t a = strlen(cwd), b = strlen(rel);
  int slash = a > 0 && cwd[a - 1] != '/';
  if (a + (size_t)slash + b + 1 > outsz) return -2;
  memcpy(out, cwd, a);
  if (slash) out[a++] = '/';
  memcpy(out + a, rel, b + 1);
  return 0;
}

static int is_executable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Turns PROG into an absolute path (or an absolute DIR tree); exits with 6 when a bare name is not found in $PATH. */
static const char *resolve_exec(const char *prog) {
  if (prog[0] == '@') finish(EXIT_MALFORMED, "exec takes a program, not a group: %e", prog);
  if (!path_glob_ok(prog)) finish(EXIT_MALFORMED, "exec takes a path, a name or DIR/**, no other glob: %e", prog);
  if (prog[0] == '/') return prog;
  if (strchr(prog, '/') != NULL) {
    int r = cwd_join(prog, resolved, sizeof resolved);
    if (r == -1) finish(EXIT_OTHER, "cannot get the working directory: %s", strerror(errno));
    if (r == -2) finish(EXIT_MALFORMED, "request too long (ENAMETOOLONG): the program path exceeds PATH_MAX");
    return resolved;
  }
  if (strcmp(prog, ".") == 0 || strcmp(prog, "..") == 0) finish(EXIT_MALFORMED, "not a program: %e", prog);
  const char *path = getenv("PATH");
  if (path == NULL) path = "/usr/local/bin:/bin:/usr/bin";
  size_t nlen = strlen(prog);
  const char *p = path;
  for (;;) {
    const char *end = strchr(p, ':');
    size_t dlen = end ? (size_t)(end - p) : strlen(p);
    char cand[REQ_MAX];
    if (dlen + 1 + nlen + 1 <= sizeof cand) {
      if (dlen == 0) { /* an empty entry means the working directory */
        memcpy(cand, prog, nlen + 1);
      } else {
        memcpy(cand, p, dlen);
        cand[dlen] = '/';
        memcpy(cand + dlen + 1, prog, nlen + 1);
      }
      if (is_executable_file(cand)) {
        if (cand[0] == '/') {
          memcpy(resolved, cand, strlen(cand) + 1);
          return resolved;
        }
        int r = cwd_join(cand, resolved, sizeof resolved);
        if (r == -1) finish(EXIT_OTHER, "cannot get the working directory: %s", strerror(errno));
        if (r == 0) return resolved;
      }
    }
    if (end == NULL) break;
    p = end + 1;
  }
  finish(EXIT_MALFORMED, "%e: not found in $PATH", prog);
  return NULL;
}

/* ---------------------------------------------------------------- the request path */

struct req {
  char buf[REQ_MAX];
  size_t len; /* may exceed sizeof buf - 1: then the request is too long */
};

static void req_raw(struct req *r, const char *s) {
  for (; *s; s++) {
    if (r->len < sizeof r->buf - 1) r->buf[r->len] = *s;
    r->len++;
  }
}

static void req_enc(struct req *r, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    unsigned char c = *p;
    int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '~' || c == '-';
    char enc[4] = {(char)c, 0, 0, 0};
    if (!plain) {
      enc[0] = '%';
      enc[1] = hex[c >> 4];
      enc[2] = hex[c & 15];
    }
    req_raw(r, enc);
  }
}

/* ---------------------------------------------------------------- main */

static int take_value(int argc, char **argv, int *i, const char *name, const char **slot) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  const char *v;
  if (a[n] == '=') v = a + n + 1;
  else if (a[n] == '\0') {
    if (*i + 1 >= argc) finish(EXIT_USAGE, "%s needs a value" USAGE_HINT, name);
    v = argv[++*i];
  } else return 0;
  if (*slot != NULL) finish(EXIT_USAGE, "%s given twice" USAGE_HINT, name);
  *slot = v;
  return 1;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  const char *pos[3];
  int npos = 0, dashdash = 0;
  const char *opt_for = NULL, *opt_reason = NULL, *opt_timeout = NULL;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!dashdash && a[0] == '-' && a[1] != '\0') {
      if (strcmp(a, "--") == 0) dashdash = 1;
      else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        write_all(1, USAGE, sizeof USAGE - 1);
        return 0;
      } else if (strcmp(a, "--version") == 0) {
        static const char v[] = "hallpass-request " VERSION " (request protocol " PROTOCOL ")\n";
        write_all(1, v, sizeof v - 1);
        return 0;
      } else if (take_value(argc, argv, &i, "--for", &opt_for)) {
      } else if (take_value(argc, argv, &i, "--reason", &opt_reason)) {
      } else if (take_value(argc, argv, &i, "--timeout", &opt_timeout)) {
      } else finish(EXIT_USAGE, "unknown option %e" USAGE_HINT, a);
      continue;
    }
    if (npos == 3) finish(EXIT_USAGE, "unexpected argument %e" USAGE_HINT, a);
    pos[npos++] = a;
  }

  if (npos == 0) finish(EXIT_USAGE, "missing write|exec|connect TARGET" USAGE_HINT);
  const char *verb = "ask";
  int k = 0;
  if (strcmp(pos[0], "check") == 0 || strcmp(pos[0], "release") == 0) verb = pos[k++];
  if (k >= npos) finish(EXIT_USAGE, "missing write|exec|connect after %s" USAGE_HINT, verb);
  const char *op = pos[k++];
  if (strcmp(op, "write") != 0 && strcmp(op, "exec") != 0 && strcmp(op, "connect") != 0)
    finish(EXIT_USAGE, "unknown operation %e: expected [check|release] write|exec|connect" USAGE_HINT, op);
  if (k >= npos) finish(EXIT_USAGE, "missing the %s target" USAGE_HINT, op);
  const char *target = pos[k++];
  if (k < npos) finish(EXIT_USAGE, "unexpected argument %e" USAGE_HINT, pos[k]);
  if (target[0] == '\0') finish(EXIT_USAGE, "empty %s target" USAGE_HINT, op);
  int release = strcmp(verb, "release") == 0, check = strcmp(verb, "check") == 0;
  if (release && (opt_for || opt_reason || opt_timeout))
    finish(EXIT_USAGE, "release takes no --for, --reason or --timeout" USAGE_HINT);

  /* Malformed values: exit 6, like hallpass would answer EINVAL. */
  uint64_t for_ms = 0, timeout_ms = 0;
  if (opt_for && parse_duration(opt_for, &for_ms) != 0)
    finish(EXIT_MALFORMED, "bad --for duration %e: expected e.g. 90s, 10m, 1h30m (more than 0, at most 366d)", opt_for);
  if (opt_timeout && parse_duration(opt_timeout, &timeout_ms) != 0)
    finish(EXIT_MALFORMED, "bad --timeout duration %e: expected e.g. 90s, 10m, 1h30m (more than 0, at most 366d)",
           opt_timeout);
  if (opt_reason) {
    if (opt_reason[0] == '\0') finish(EXIT_MALFORMED, "empty --reason");
    if (!utf8_valid(opt_reason)) finish(EXIT_MALFORMED, "--reason is not valid UTF-8: %e", opt_reason);
    if (has_control(opt_reason)) finish(EXIT_MALFORMED, "--reason contains control characters: %e", opt_reason);
  }
  if (!utf8_valid(target)) finish(EXIT_MALFORMED, "the %s target is not valid UTF-8: %e", op, target);

  if (strcmp(op, "write") == 0) {
    if (!path_glob_ok(target))
      finish(EXIT_MALFORMED, "write takes a file or DIR/**, no other glob: %e", target);
  } else if (strcmp(op, "exec") == 0) {
    target = resolve_exec(target);
  } else {
    const char *why = connect_problem(target);
    if (why) finish(EXIT_MALFORMED, "bad connect destination %e: %s", target, why);
  }

  struct req r;
  r.len = 0;
  req_raw(&r, MAGIC);
  req_raw(&r, verb);
  req_raw(&r, "/");
  req_raw(&r, op);
  req_raw(&r, "/");
  req_enc(&r, target);
  if (opt_for) {
    req_raw(&r, "/for=");
    req_enc(&r, opt_for);
  }
  if (opt_timeout) {
    req_raw(&r, "/timeout=");
    req_enc(&r, opt_timeout);
  }
  if (opt_reason) {
    req_raw(&r, "/reason=");
    req_enc(&r, opt_reason);
  }
  if (r.len > sizeof r.buf - 1)
    finish(EXIT_MALFORMED, "request too long (ENAMETOOLONG): %z bytes encoded, at most %z fit in PATH_MAX", r.len,
           (size_t)(sizeof r.buf - 1));
  r.buf[r.len] = '\0';

  const char *dry = getenv("HALLPASS_REQUEST_DRY_RUN");
  if (dry && dry[0] != '\0' && strcmp(dry, "0") != 0) {
    r.buf[r.len] = '\n';
    write_all(1, r.buf, r.len + 1);
    finish(EXIT_GRANTED, "dry run (HALLPASS_REQUEST_DRY_RUN): printed the request path, did not make it");
  }

  char *const child_argv[] = {(char *)"hallpass-request", NULL};
  extern char **environ;
  execve(r.buf, child_argv, environ);
  int e = errno;

  char dur[64] = "";
  switch (e) {
  case EALREADY:
  case ECANCELED:
    if (release) finish(EXIT_GRANTED, "released %s %e", op, target);
    if (check) finish(EXIT_GRANTED, "allowed: %s %e", op, target);
    if (opt_for) {
      format_duration(for_ms, dur);
      finish(EXIT_GRANTED, "granted %s %e for %s", op, target, dur);
    }
    finish(EXIT_GRANTED, "granted %s %e for the rest of the session", op, target);
    break;
  case EEXIST:
    if (check) finish(EXIT_ALREADY, "allowed, nobody would be asked: %s %e", op, target);
    finish(EXIT_ALREADY, "already allowed, nobody was asked: %s %e", op, target);
    break;
  case EPERM:
    if (check) finish(EXIT_DENIED, "denied (a rule denies it): %s %e", op, target);
    finish(EXIT_DENIED, "denied: %s %e", op, target);
    break;
  case ETIMEDOUT:
    if (opt_timeout) {
      format_duration(timeout_ms, dur);
      finish(EXIT_TIMEOUT, "nobody answered within %s: %s %e", dur, op, target);
    }
    finish(EXIT_TIMEOUT, "nobody answered in time: %s %e", op, target);
    break;
  case ENOMSG:
    finish(EXIT_WOULD_ASK, "a request would ask: %s %e", op, target);
    break;
  case EINVAL:
    finish(EXIT_MALFORMED, "hallpass refused the request as malformed (EINVAL): %s %e", op, target);
    break;
  case ENAMETOOLONG:
    finish(EXIT_MALFORMED, "hallpass refused the request as too long (ENAMETOOLONG): %s", op);
    break;
  case ENOSYS:
    finish(EXIT_NOT_MEDIATED, "%s is not mediated in this hallpass session: nothing to %s", op,
           release ? "release" : check ? "check" : "ask for");
    break;
  case ENOENT:
    finish(EXIT_NOT_HALLPASS, "not running under hallpass (no /.hallpass)");
    break;
  case ESRCH:
    finish(EXIT_NO_MATCH, "no grant of a request matches %s %e", op, target);
    break;
  default:
    break;
  }
  finish(EXIT_OTHER, "unexpected error from the request: %s (errno %z)", strerror(e), (size_t)(e < 0 ? 0 : e));
  return EXIT_OTHER;
}

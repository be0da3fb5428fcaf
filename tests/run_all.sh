#!/usr/bin/env bash
# Runs every test: once as the current user (root in CI), then the end-to-end suite again as an unprivileged
# user (created here when missing), since our users are not root. Lists the tests reported skipped (deno's
# "ignored", each named with its reason by tests/helpers/skip.ts) and ends with the line
# "N passed, N failed, N skipped" (skipped counts tests and steps). Under CI=true a skip of something
# `make test` installs is a failure.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
DENO="$ROOT/.tools/node_modules/deno/deno"
export DENO_DIR="$ROOT/.tools/deno_dir"
export NO_COLOR=1
mkdir -p "$DENO_DIR" build
LOG1=build/test-root.log
LOG2=build/test-user.log
: >"$LOG2"

"$DENO" test --allow-all --no-prompt --frozen tests/ 2>&1 | tee "$LOG1"
rc1=${PIPESTATUS[0]}

rc2=0
TEST_USER=hallpass-test
if [ "$(id -u)" = 0 ]; then
  id "$TEST_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$TEST_USER"
  # The user needs to read the tree and the deno cache, and nothing more.
  chmod -R a+rX "$ROOT" 2>/dev/null || true
  chmod a+x "$(dirname "$ROOT")" 2>/dev/null || true
  if [ "${CI:-}" = true ]; then # on a CI machine, every directory above it (a runner's home may be 0750)
    d=$(dirname "$ROOT")
    while [ "$d" != / ]; do chmod a+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
  fi
  # Its own DENO_DIR for Deno's sqlite caches (root's are not writable for it, and Deno prints a warning on
  # every start when it cannot open one), sharing root's downloaded modules and emitted code read-only.
  USER_DENO_DIR="$ROOT/build/deno-dir-$TEST_USER"
  rm -rf "$USER_DENO_DIR" && mkdir -p "$USER_DENO_DIR"
  for d in npm gen remote; do [ -e "$DENO_DIR/$d" ] && ln -s "$DENO_DIR/$d" "$USER_DENO_DIR/$d"; done
  chown -R "$TEST_USER" "$USER_DENO_DIR"
  echo "=== end-to-end tests again as the unprivileged user $TEST_USER ==="
  runuser -u "$TEST_USER" -- env HOME="/home/$TEST_USER" DENO_DIR="$USER_DENO_DIR" NO_COLOR=1 PATH="/usr/local/bin:/usr/bin:/bin" \
    ${CI:+CI="$CI"} ${HALLPASS_BIN:+HALLPASS_BIN="$HALLPASS_BIN"} ${HALLPASS_TEST_MISSING:+HALLPASS_TEST_MISSING="$HALLPASS_TEST_MISSING"} \
    "$DENO" test --allow-all --no-prompt --frozen --cached-only tests/e2e/ 2>&1 | tee "$LOG2"
  rc2=${PIPESTATUS[0]}
fi

count() { # passed/failed from deno test's summary lines
  grep -E '^(ok|FAILED) \| [0-9]+ passed' "$1" | sed -E 's/.*\| ([0-9]+) passed.*\| ([0-9]+) failed.*/\1 \2/' |
    awk '{p+=$1; f+=$2} END {print p+0, f+0}'
}
skipped_in() { # "NAME [skipped: REASON]" of every test and step deno reported ignored
  sed -nE 's/^ *(.*) \.\.\. ignored( \(.*)?$/\1/p' "$1"
}
read -r p1 f1 < <(count "$LOG1")
read -r p2 f2 < <(count "$LOG2")
passed=$((p1 + p2))
failed=$((f1 + f2))
# A run that crashed before its summary counts as a failure.
[ "$rc1" != 0 ] && [ "$f1" = 0 ] && failed=$((failed + 1))
[ "$rc2" != 0 ] && [ "$f2" = 0 ] && failed=$((failed + 1))

failed_in() { # "FILE: NAME" of every test and step deno reported FAILED (its file from the "running" header)
  sed -nE 's/^running [0-9]+ tests? from (.*)$/\1/p; s/^ *(.*) \.\.\. FAILED( \(.*)?$/  \1/p' "$1" |
    awk '/^  / { print file ": " substr($0, 3); next } { file = $0 }'
}

SKIPS=build/test-skipped.txt
{
  skipped_in "$LOG1" | sed 's/^/as '"$(id -un)"': /'
  skipped_in "$LOG2" | sed 's/^/as '"$TEST_USER"': /'
} >"$SKIPS"
skipped=$(grep -c . "$SKIPS")
echo
if [ "$skipped" -gt 0 ]; then
  echo "=== skipped ($skipped) ==="
  sed -E 's/^(.*) \[skipped: (.*)\]$/  \1\n      why: \2/; t; s/^/  /; s/$/\n      why: (no reason given: the test must use tests\/helpers\/skip.ts)/' "$SKIPS"
fi
fails=$( { failed_in "$LOG1" | sed 's/^/as '"$(id -un)"': /'; failed_in "$LOG2" | sed 's/^/as '"$TEST_USER"': /'; } )
if [ -n "$fails" ]; then
  echo "=== failed ==="
  printf '%s\n' "$fails" | sed 's/^/  /'
fi
if [ "${CI:-}" = true ]; then
  # tests/helpers/skip.ts already turns these into failures; a skip that still names one is one too.
  ci_bad=$(grep -c 'make test installs' "$SKIPS" || true)
  if [ "$ci_bad" -gt 0 ]; then
    echo "CI=true: $ci_bad skip(s) of something make test installs count as failures"
    failed=$((failed + ci_bad))
  fi
fi
if [ "$(id -u)" != 0 ]; then
  echo "NOTE: not root: the end-to-end suite was NOT run again as the unprivileged user $TEST_USER" \
    "(run as root for that; the root-only tests ran as $(id -un))"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]

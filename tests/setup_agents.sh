#!/usr/bin/env bash
# Installs the agent CLIs that tests/e2e/agents_test.ts runs under hallpass, from the npm registry, with pinned
# versions, into .tools/agents/NAME (one prefix each: NAME/bin/PROGRAM). Only what is missing is installed;
# an agent already there at its pinned version is left alone. Safe to run concurrently (flock).
#
#   tests/setup_agents.sh [NAME...]      # default: every agent below
#
# Prints one line per agent: "NAME ok DIR/bin/PROG" or "NAME unavailable REASON". Exit 0 unless the
# arguments are wrong: an agent that cannot be installed (no registry, no such package) is only reported, and
# the tests skip it with a note. aider is a pip package and PyPI is not reachable here: always "unavailable"
# unless an `aider` is already on PATH.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
AGENTS_DIR="$ROOT/.tools/agents"

# name  package  version  program
PINS="
claude   @anthropic-ai/claude-code 2.1.332 claude
codex    @openai/codex             0.171.0 codex
gemini   @google/gemini-cli        0.61.0  gemini
copilot  @github/copilot           1.0.102 copilot
"

export PATH="/usr/local/bin:/usr/bin:/bin"
want=("$@")

selected() {
  [ ${#want[@]} = 0 ] && return 0
  local w
  for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

install_one() { # name package version program
  local name=$1 pkg=$2 ver=$3 prog=$4 dir="$AGENTS_DIR/$1"
  if [ -x "$dir/bin/$prog" ] && [ "$(cat "$dir/.version" 2>/dev/null)" = "$pkg@$ver" ]; then
    echo "$name ok $dir/bin/$prog"
    return
  fi
  if ! command -v npm >/dev/null; then
    echo "$name unavailable npm not found"
    return
  fi
  if ! mkdir -p "$AGENTS_DIR" 2>/dev/null || [ ! -w "$AGENTS_DIR" ]; then
    echo "$name unavailable $AGENTS_DIR is not writable (run tests/setup_agents.sh as its owner)"
    return
  fi
  rm -rf "$dir.tmp"
  local log="$AGENTS_DIR/$name.install.log"
  if timeout 600 npm install --global --prefix "$dir.tmp" --cache "$AGENTS_DIR/.npm-cache" \
    --no-audit --no-fund --loglevel=error "$pkg@$ver" >"$log" 2>&1 && [ -x "$dir.tmp/bin/$prog" ]; then
    echo "$pkg@$ver" >"$dir.tmp/.version"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
    # tests/run_all.sh runs the end-to-end tests again as an unprivileged user: it must read and run these.
    chmod -R a+rX "$dir"
    chmod a+rx "$AGENTS_DIR"
    echo "$name ok $dir/bin/$prog"
  else
    rm -rf "$dir.tmp"
    echo "$name unavailable npm install $pkg@$ver failed: $(tail -n 3 "$log" | tr '\n' ' ')"
  fi
}

mkdir -p "$AGENTS_DIR" 2>/dev/null
exec 9>>"$AGENTS_DIR/.lock" 2>/dev/null || exec 9>/dev/null
flock 9 2>/dev/null || true

while read -r name pkg ver prog; do
  [ -z "$name" ] && continue
  selected "$name" || continue
  install_one "$name" "$pkg" "$ver" "$prog"
done <<<"$PINS"

if selected aider; then
  if command -v aider >/dev/null; then
    echo "aider ok $(command -v aider)"
  else
    echo "aider unavailable aider-chat is a pip package and PyPI is not reachable here"
  fi
fi

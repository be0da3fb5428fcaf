#!/usr/bin/env bash
# The read-protection rows (bench/README.md): what the protected list (docs/threat-model.md "Secrets") costs.
# Each round runs every variant once, the starting one rotating, R rounds (SECRETS_REPEAT, default 15); a cell
# is the median with the spread (min–max) over the rounds, and the ratio is of medians.
#
#   read micro   `micro read N W/readme` (N = SECRETS_N, default 20000 opens), µs per open, timed inside micro:
#                hallpass with the list on (this user's real $HOME: every entry carved) and off
#                (`--allow-read` of $HOME, /home and /etc lifts every protection: no read rule at all; checked
#                with `hallpass rules`), and `floor --landlock-only`,
#                the Landlock-only run the list must stay within 1.05× of
#   claude       `claude --version` under hallpass (--agent claude), list on and off, spawn to exit (ms)
#
#   bash bench/secrets.sh                  # R=15
#   SECRETS_REPEAT=30 bash bench/secrets.sh
# Prints Markdown rows to stdout.
set -uo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
R=${SECRETS_REPEAT:-15}
N=${SECRETS_N:-20000}
HALLPASS=${HALLPASS:-$ROOT/hallpass}
BUILD=$ROOT/bench/build
mkdir -p "$BUILD"
for p in floor_supervisor micro; do
	if [ ! -x "$BUILD/$p" ] || [ "$ROOT/bench/$p.c" -nt "$BUILD/$p" ]; then
		gcc -O2 -o "$BUILD/$p" "$ROOT/bench/$p.c" || exit 1
	fi
done
MICRO=$BUILD/micro
FLOOR=$BUILD/floor_supervisor
[ -x "$ROOT/.tools/agents/claude/bin/claude" ] && PATH=$ROOT/.tools/agents/claude/bin:$PATH
export PATH
D=$(mktemp -d "${TMPDIR:-/tmp}/hallpass-bench-secrets.XXXXXX")
trap 'rm -rf "$D"' EXIT
W=$D/w
mkdir -p "$W"
echo readme >"$W/readme"

OFF="--allow-read $HOME --allow-read /etc"
[ -d /home ] && OFF+=" --allow-read /home"
if $HALLPASS $OFF rules 2>/dev/null | grep -q '^protect'; then
	echo "bench/secrets.sh: $OFF leaves protections in force: no 'off' variant" >&2
	exit 1
fi

# name|unit|command (from $W, the project; $HOME is the real one, so the list is this user's)
ROWS=(
	"read-landlock|us|$FLOOR --landlock-only $W -- $MICRO read $N $W/readme"
	"read-on|us|$HALLPASS --no-ask -q --project $W -- $MICRO read $N $W/readme"
	"read-off|us|$HALLPASS --no-ask -q $OFF --project $W -- $MICRO read $N $W/readme"
)
if command -v claude >/dev/null && claude --version >/dev/null 2>&1; then
	ROWS+=(
		"claude-on|ms|$MICRO run 1 $HALLPASS --no-ask -q --agent claude --project $W -- claude --version"
		"claude-off|ms|$MICRO run 1 $HALLPASS --no-ask -q --agent claude $OFF --project $W -- claude --version"
	)
else
	echo "bench/secrets.sh: claude is not installed (tests/setup_agents.sh claude): no claude row" >&2
fi

declare -A VALS
n=${#ROWS[@]}
for ((r = 0; r < R; r++)); do
	for ((k = 0; k < n; k++)); do
		row=${ROWS[$(((r + k) % n))]}
		name=${row%%|*}
		rest=${row#*|}
		unit=${rest%%|*}
		cmd=${rest#*|}
		s=$(cd "$W" && $cmd </dev/null 2>>"$D/err") || {
			echo "bench/secrets.sh: $name failed:" >&2
			cat "$D/err" >&2
			exit 1
		}
		s=$(printf '%s\n' "$s" | tail -1)
		if [ "$unit" = us ]; then v=$(awk -v s="$s" -v n="$N" 'BEGIN{printf "%.3f", s*1e6/n}'); else v=$(awk -v s="$s" 'BEGIN{printf "%.1f", s*1e3}'); fi
		VALS[$name]+="$v "
	done
done

stat() { # median min max of the values
	tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%s %s %s", m, a[1], a[NR]}'
}
cell() { # "median (min–max)"
	read -r m lo hi <<<"$(stat "${VALS[$1]}")"
	printf '%s (%s–%s)' "$m" "$lo" "$hi"
}
med() { stat "${VALS[$1]}" | cut -d' ' -f1; }
# Paired: the ratio within each round (the two runs close in time, under the same load), then the median of
# those ratios with their quartiles.
ratio() {
	paste <(tr ' ' '\n' <<<"${VALS[$1]}" | grep .) <(tr ' ' '\n' <<<"${VALS[$2]}" | grep .) |
		awk '{print $1/$2}' | sort -g |
		awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; q1=a[int((NR+3)/4)]; q3=a[int((3*NR+1)/4)]; printf "%.2f× (%.2f–%.2f)", m, q1, q3}'
}

printf '| row | list on | list off | Landlock-only | on/off | on/Landlock-only |\n|---|---|---|---|---|---|\n'
printf '| read micro (µs per open, N=%s) | %s | %s | %s | %s | %s |\n' "$N" "$(cell read-on)" "$(cell read-off)" \
	"$(cell read-landlock)" "$(ratio read-on read-off)" "$(ratio read-on read-landlock)"
if [ -n "${VALS[claude-on]:-}" ]; then
	printf '| `claude --version` (ms, spawn to exit) | %s | %s | – | %s | – |\n' "$(cell claude-on)" \
		"$(cell claude-off)" "$(ratio claude-on claude-off)"
fi
printf '\n%s rounds, each variant once per round (rotating order); cells: median (min–max); ratios: median of the per-round ratios (quartiles). uid %s, HOME %s, %s, load %s\n' \
	"$R" "$(id -u)" "$HOME" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# The start-up rows (bench/README.md): hallpass's own start-up as a ratio to an empty `deno run` of the same
# Deno, and what a command's start costs under hallpass beyond that start-up (`node -e 0`, and `claude
# --version` / `codex --version` when installed: PATH, or .tools/agents/NAME/bin from tests/setup_agents.sh).
# Every command runs once per round, the starting one rotating, R rounds (STARTUP_REPEAT, default 20); cells
# are medians of spawn-to-exit times (bench/build/micro run 1). An agent row's extra is the median over the
# rounds of that round's (under hallpass − bare − hallpass's start-up), with its quartiles. The start-up row
# also gives the ratio of the 25th percentiles and of the median CPU time (user + system of the process tree),
# which a loaded machine disturbs less than wall time. The interactive row runs `hallpass --no-ask -- /bin/true`
# on a new pty that answers as a terminal does (bench/micro.c, MICRO_PTY=1): the pty session, the screen model,
# the terminal's modes, against the plain start of the same round. Prints Markdown rows to stdout, then the exact command of every row (paths
# shortened: ./hallpass, WORK for the project directory, EMPTY.js for the empty script).
#
#   bash bench/startup.sh                 # R=20
#   STARTUP_REPEAT=40 bash bench/startup.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
R=${STARTUP_REPEAT:-20}
HALLPASS=${HALLPASS:-$ROOT/hallpass}
DENO=${DENO:-$ROOT/.tools/node_modules/deno/deno}
MICRO=$ROOT/bench/build/micro
if [ ! -x "$MICRO" ] || [ "$ROOT/bench/micro.c" -nt "$MICRO" ]; then
	mkdir -p "$ROOT/bench/build" && gcc -O2 -o "$MICRO" "$ROOT/bench/micro.c" || exit 1
fi
[ -x "$HALLPASS" ] && [ -x "$DENO" ] || { echo "bench/startup.sh: needs ./hallpass and $DENO (make)" >&2; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
mkdir -p "$D/w"
: >"$D/empty.js"
for a in claude codex; do
	[ -x "$ROOT/.tools/agents/$a/bin/$a" ] && PATH=$ROOT/.tools/agents/$a/bin:$PATH
done
export PATH

# name|command (run from $D/w, the project)
ROWS=(
	"deno|$DENO run --quiet --allow-all --no-prompt --v8-flags=--max-semi-space-size=1 $D/empty.js"
	"hp-true|$HALLPASS --no-ask -q --project $D/w -- /bin/true"
	"hp-pty|$HALLPASS --no-ask --project $D/w -- /bin/true"
	"node|node -e 0"
	"hp-node|$HALLPASS --no-ask -q --project $D/w -- node -e 0"
)
AGENTS=()
for a in claude codex; do
	if command -v "$a" >/dev/null && "$a" --version >/dev/null 2>&1; then
		AGENTS+=("$a")
		ROWS+=("$a|$a --version" "hp-$a|$HALLPASS --no-ask -q --agent $a --project $D/w -- $a --version")
	fi
done
command -v node >/dev/null || ROWS=("${ROWS[@]:0:3}")

declare -A T C
n=${#ROWS[@]}
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
cd "$D/w" || exit 1
for ((rep = -1; rep < R; rep++)); do # round -1: untimed warm-up
	for ((k = 0; k < n; k++)); do
		row=${ROWS[$(((k + rep + n) % n))]}
		name=${row%%|*}
		# shellcheck disable=SC2086 # the command's words
		s=$(MICRO_PTY=$([ "$name" = hp-pty ] && echo 1) MICRO_CPU=1 "$MICRO" run 1 ${row#*|} </dev/null 2>>"$D/err") || { echo "bench/startup.sh: $name failed:" \
			"$(tail -3 "$D/err")" >&2; exit 1; }
		[ "$rep" -ge 0 ] && T[$name]+="${s% *} " && C[$name]+="${s#* } "
	done
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END{print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
p25() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END{print a[int((NR-1)/4)+1]}'; }
ms() { awk -v s="$1" 'BEGIN{printf "%.1f", s*1000}'; }
DENO_S=$(med "${T[deno]}")
HP_S=$(med "${T[hp-true]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
printf '| start-up: `hallpass --no-ask -q -- /bin/true` vs an empty `deno run` (same Deno), ms | %s | %s | %s× (p25 %s×, CPU %s×) | ≤ 1.25×: **%s** |\n' \
	"$(ms "$DENO_S")" "$(ms "$HP_S")" "$(ratio "$HP_S" "$DENO_S")" \
	"$(ratio "$(p25 "${T[hp-true]}")" "$(p25 "${T[deno]}")")" "$(ratio "$(med "${C[hp-true]}")" "$(med "${C[deno]}")")" \
	"$(awk -v a="$HP_S" -v b="$DENO_S" 'BEGIN{print (a/b <= 1.25) ? "met" : "MISSED"}')"
# The interactive start: on a terminal − the plain start, per round ("median p25 p75" in seconds).
diff2() {
	paste <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) | awk '{print $1 - $2}' | sort -g |
		awk '{a[NR]=$1} END{m=(NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; print m, a[int((NR-1)/4)+1], a[NR-int((NR-1)/4)]}'
}
read -r -a PW <<<"$(diff2 "${T[hp-pty]}" "${T[hp-true]}")"
read -r -a PC <<<"$(diff2 "${C[hp-pty]}" "${C[hp-true]}")"
printf '| interactive start-up: `hallpass --no-ask -- /bin/true` on a terminal vs the plain start, ms | %s | %s | %s ms (rounds p25–p75 %s–%s); CPU %s → %s ms (%s ms, p25–p75 %s–%s) | — |\n' \
	"$(ms "$HP_S")" "$(ms "$(med "${T[hp-pty]}")")" \
	"$(awk -v x="${PW[0]}" 'BEGIN{printf "%+.1f", x*1000}')" "$(awk -v x="${PW[1]}" 'BEGIN{printf "%+.1f", x*1000}')" \
	"$(awk -v x="${PW[2]}" 'BEGIN{printf "%+.1f", x*1000}')" \
	"$(ms "$(med "${C[hp-true]}")")" "$(ms "$(med "${C[hp-pty]}")")" \
	"$(awk -v x="${PC[0]}" 'BEGIN{printf "%+.1f", x*1000}')" "$(awk -v x="${PC[1]}" 'BEGIN{printf "%+.1f", x*1000}')" \
	"$(awk -v x="${PC[2]}" 'BEGIN{printf "%+.1f", x*1000}')"
# Per round: under hallpass − bare − hallpass's start-up, all three from the same round (a loaded machine
# moves the three medians apart; the rounds' own differences move less). Prints "median p25 p75" in seconds.
extra() {
	paste <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) <(tr ' ' '\n' <<<"$3" | grep .) |
		awk '{print $1 - $2 - $3}' | sort -g |
		awk '{a[NR]=$1} END{m=(NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; print m, a[int((NR-1)/4)+1], a[NR-int((NR-1)/4)]}'
}
row() { # row NAME LABEL: bare, under hallpass, and the extra beyond hallpass's start-up as a share of it
	local w c
	read -r -a w <<<"$(extra "${T[hp-$1]}" "${T[$1]}" "${T[hp-true]}")"
	read -r -a c <<<"$(extra "${C[hp-$1]}" "${C[$1]}" "${C[hp-true]}")"
	printf '| %s | %s | %s | %s ms beyond start-up (%s%% of it; rounds p25–p75 %s–%s ms; CPU %s ms, %s%%) | ≤ 5%%: **%s** |\n' \
		"$2" "$(ms "$(med "${T[$1]}")")" "$(ms "$(med "${T[hp-$1]}")")" \
		"$(awk -v x="${w[0]}" 'BEGIN{printf "%+.1f", x*1000}')" \
		"$(awk -v x="${w[0]}" -v s="$HP_S" 'BEGIN{printf "%+.0f", 100*x/s}')" \
		"$(awk -v x="${w[1]}" 'BEGIN{printf "%+.1f", x*1000}')" "$(awk -v x="${w[2]}" 'BEGIN{printf "%+.1f", x*1000}')" \
		"$(awk -v x="${c[0]}" 'BEGIN{printf "%+.1f", x*1000}')" \
		"$(awk -v x="${c[0]}" -v s="$(med "${C[hp-true]}")" 'BEGIN{printf "%+.0f", 100*x/s}')" \
		"$(awk -v x="${w[0]}" -v s="$HP_S" 'BEGIN{print (x/s <= 0.05) ? "met" : "MISSED"}')"
}
command -v node >/dev/null && row node '`node -e 0`, ms'
for a in "${AGENTS[@]}"; do row "$a" "\`$a --version\` (\`--agent $a\`), ms"; done

# The command of every row, as it ran (from WORK, the project).
short() { sed -e "s|$ROOT/|./|g" -e "s|$D/w|WORK|g" -e "s|$D/empty.js|EMPTY.js|g" <<<"$1"; }
printf '\n%s rounds (each command once per round, the first one rotating; one untimed round first), %s, git %s,' \
	"$R" "$(date -u +%Y-%m-%dT%H:%MZ)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf ' load %s → %s; `PATH=%s`. Each row measured:\n\n' "$LOAD0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(short "$PATH")"
for row in "${ROWS[@]}"; do
	name=${row%%|*}
	ver=""
	case $name in node | claude | codex) ver=" ($("$name" --version 2>/dev/null | head -1))" ;; esac
	[ "$name" = hp-pty ] && ver=" (on a pty that answers as a terminal: \`MICRO_PTY=1 bench/build/micro run 1 CMD\`)"
	printf -- '- %s%s: `%s`\n' "$name" "$ver" "$(short "${row#*|}")"
done

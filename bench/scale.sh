#!/usr/bin/env bash
# Scale (issue 6): µs per create with 1, 2, 8 and 32 threads and 50 processes creating 20,000 files in all,
# bare, under the floor supervisor and under hallpass, median of R runs. Prints a Markdown table.
#   bash bench/scale.sh            (R=3; BENCH_REPEAT to change)
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
R=${BENCH_REPEAT:-3}
mkdir -p bench/build
gcc -O2 -pthread -o bench/build/scale tests/helpers/scale.c || exit 1
[ -x bench/build/floor_supervisor ] || musl-gcc -static -O2 -o bench/build/floor_supervisor bench/floor_supervisor.c || exit 1
SCALE=$ROOT/bench/build/scale
FLOOR=$ROOT/bench/build/floor_supervisor
HP=${HALLPASS:-$ROOT/hallpass}
BASE=$(mktemp -d /dev/shm/hallpass-scale.XXXXXX)
trap 'rm -rf "$BASE"' EXIT
export XDG_CONFIG_HOME=$BASE/xdg XDG_CACHE_HOME=$BASE/xdg-cache PATH=/usr/local/bin:/usr/bin:/bin
TOTAL=20000

run() { # variant mode count -> seconds
	local W=$BASE/w
	rm -rf "$W" && mkdir -p "$W/out" && cd "$W" || return 1
	local each=$((TOTAL / $3))
	case $1 in
	bare) "$SCALE" "$2" "$3" "$each" "$W/out" ;;
	floor) "$FLOOR" --landlock "$W" -- "$SCALE" "$2" "$3" "$each" "$W/out" ;;
	hallpass) "$HP" --no-ask --project "$W" --allow-exec "$SCALE" -- "$SCALE" "$2" "$3" "$each" "$W/out" ;;
	esac | awk '/^ok/ {print $3}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
us() { awk -v s="$1" -v n="$TOTAL" 'BEGIN{printf "%.1f", s*1e6/n}'; }

printf '| writers (20,000 creates in all) | bare µs/op | floor µs/op | hallpass µs/op | hallpass / floor |\n|---|---|---|---|---|\n'
for spec in "threads 1" "threads 2" "threads 8" "threads 32" "procs 50"; do
	set -- $spec
	declare -A t=()
	for v in bare floor hallpass; do
		t[$v]=$(for ((i = 0; i < R; i++)); do run $v "$1" "$2"; done | median)
	done
	printf '| %s %s | %s | %s | %s | %s |\n' "$2" "$1" "$(us "${t[bare]}")" "$(us "${t[floor]}")" "$(us "${t[hallpass]}")" \
		"$(awk -v a="${t[hallpass]}" -v b="${t[floor]}" 'BEGIN{printf "%.2f×", a/b}')"
done

#!/usr/bin/env bash
# The pty-throughput row: `seq 1 N` printed to a real terminal (a tmux pane, 100×30), bare and under hallpass
# (which then runs the command on its own pty and copies its output to the terminal). Wall time of the command,
# start-up of hallpass excluded (`hallpass -q -- true` measured in the same pane and subtracted), median of R
# interleaved repetitions. See bench/README.md.
#
#   bash bench/pty.sh            # N=2000000, R=5
#   PTY_N=5000000 PTY_REPEAT=3 bash bench/pty.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${PTY_N:-2000000}
R=${PTY_REPEAT:-5}
HALLPASS=${HALLPASS:-$ROOT/hallpass}
command -v tmux >/dev/null || { echo "bench/pty.sh: tmux is needed" >&2; exit 1; }
D=$(mktemp -d)
SOCK=hp-bench-pty-$$
trap 'tmux -L $SOCK kill-server 2>/dev/null; rm -rf "$D"' EXIT
cat >"$D/pane.sh" <<SCRIPT
t() { out=\$1; shift; s=\$(date +%s%N); "\$@"; e=\$(date +%s%N); echo \$(( (e - s) / 1000 )) > "\$out"; }
cd "$D"
for i in \$(seq $R); do
	t "$D/warm" seq 1 $N
	t "$D/bare.\$i" seq 1 $N
	t "$D/hp.\$i" "$HALLPASS" -q -- seq 1 $N
	t "$D/true.\$i" "$HALLPASS" -q -- true
done
touch "$D/done"
sleep 600
SCRIPT
tmux -L "$SOCK" -f /dev/null new-session -d -x 100 -y 30 "sh $D/pane.sh"
while [ ! -e "$D/done" ]; do sleep 0.5; done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
bare=$(cat "$D"/bare.[0-9]* | median)
hp=$(cat "$D"/hp.[0-9]* | median)
st=$(cat "$D"/true.[0-9]* | median)
awk -v b="$bare" -v h="$hp" -v s="$st" -v n="$N" -v r="$R" 'BEGIN {
	printf "| pty throughput: seq 1 %d to a tmux pane, s (median of %d) | %.3f | %.3f (%.2f×) | start-up %.3f s subtracted; ≤ 1.2× bare: %s |\n",
		n, r, b / 1e6, (h - s) / 1e6, (h - s) / b, s / 1e6, ((h - s) / b <= 1.2 ? "**met**" : "**missed**")
}'

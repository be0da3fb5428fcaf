#!/usr/bin/env bash
# The pty-throughput row: `seq 1 N` printed to a real terminal (a tmux pane, 100×30), bare and under hallpass
# (which then runs the command on its own pty and copies its output to the terminal: the C relay,
# helper/relay/relay.c). Wall time of the command, start-up of hallpass excluded (`hallpass -q -- true` measured
# in the same pane, right after, and subtracted), R interleaved repetitions (the order rotating from one to the
# next): median [min–max] of each, the ratio of the medians (the row's verdict) and the median [min–max] of the
# R pairwise ratios. Reference rows, run in the same repetitions: the floor relay (bench/floor_relay.c, the
# smallest pty relay in C: what one more pty in the chain costs on this machine, whoever copies) and util-linux
# script(1). See bench/README.md.
#
#   bash bench/pty.sh                              # N=5000000, R=5: bare, hallpass, floor relay, script(1)
#   PTY_N=2000000 PTY_REPEAT=9 bash bench/pty.sh
#   PTY_JS=1 bash bench/pty.sh                     # also a row for the JavaScript pump (HALLPASS_PTY_RELAY=0)
#   PTY_FLOOR=0 PTY_SCRIPT=0 bash bench/pty.sh     # bare and hallpass only
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${PTY_N:-5000000}
R=${PTY_REPEAT:-5}
HALLPASS=${HALLPASS:-$ROOT/hallpass}
command -v tmux >/dev/null || { echo "bench/pty.sh: tmux is needed" >&2; exit 1; }
FLOOR=$ROOT/bench/build/floor_relay
if [ "${PTY_FLOOR:-1}" != 0 ] && { [ ! -x "$FLOOR" ] || [ "$ROOT/bench/floor_relay.c" -nt "$FLOOR" ]; }; then
	mkdir -p "$ROOT/bench/build" && gcc -O2 -o "$FLOOR" "$ROOT/bench/floor_relay.c" -lutil ||
		{ echo "bench/pty.sh: no floor relay row (bench/floor_relay.c does not build)" >&2; PTY_FLOOR=0; }
fi
D=$(mktemp -d)
SOCK=hp-bench-pty-$$
trap 'tmux -L $SOCK kill-server 2>/dev/null; rm -rf "$D"' EXIT
# One line per contestant, run in turn (the first one rotating): kind, then the command.
{
	echo "bare seq 1 $N"
	echo "hp $HALLPASS -q -- seq 1 $N"
	[ "${PTY_FLOOR:-1}" != 0 ] && echo "floor $FLOOR seq 1 $N"
	[ "${PTY_SCRIPT:-1}" != 0 ] && command -v script >/dev/null && echo "script script -q /dev/null -c 'seq 1 $N'"
	[ -n "${PTY_JS:-}" ] && echo "js env HALLPASS_PTY_RELAY=0 $HALLPASS -q -- seq 1 $N"
} >"$D/kinds"
K=$(wc -l <"$D/kinds")
cat >"$D/pane.sh" <<SCRIPT
t() { out=\$1; shift; s=\$(date +%s%N); eval "\$@"; e=\$(date +%s%N); echo \$(( (e - s) / 1000 )) > "\$out"; }
cd "$D"
for i in \$(seq $R); do
	t "$D/warm" seq 1 $N
	for j in \$(seq 0 $((K - 1))); do
		line=\$(sed -n "\$(( (i + j) % $K + 1 ))p" "$D/kinds")
		t "$D/\${line%% *}.\$i" "\${line#* }"
	done
	t "$D/true.\$i" "$HALLPASS" -q -- true
done
touch "$D/done"
sleep 600
SCRIPT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
tmux -L "$SOCK" -f /dev/null new-session -d -x 100 -y 30 "sh $D/pane.sh"
while [ ! -e "$D/done" ]; do sleep 0.5; done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# One row: label, then the files' runs (hallpass rows: start-up of the same repetition subtracted).
row() {
	local label=$1 kind=$2
	for i in $(seq "$R"); do
		# only hallpass's rows have hallpass's start-up to subtract
		echo "$(cat "$D/bare.$i") $(cat "$D/$kind.$i") $(case $kind in hp | js) cat "$D/true.$i" ;; *) echo 0 ;; esac)"
	done | awk -v label="$label" -v n="$N" -v r="$R" -v l0="$load0" -v l1="$load1" '
		function med(a, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return a[int((k + 1) / 2)] }
		function lo(a, k,   i, m) { m = a[1]; for (i = 2; i <= k; i++) if (a[i] < m) m = a[i]; return m }
		function hi(a, k,   i, m) { m = a[1]; for (i = 2; i <= k; i++) if (a[i] > m) m = a[i]; return m }
		{ k++; b[k] = $1 / 1e6; h[k] = ($2 - $3) / 1e6; s[k] = $3 / 1e6; q[k] = b[k] > 0 ? h[k] / b[k] : 0 }
		END {
			bl = lo(b, k); bh = hi(b, k); hl = lo(h, k); hh = hi(h, k); ql = lo(q, k); qh = hi(q, k)
			bm = med(b, k); hm = med(h, k); sm = med(s, k); qm = med(q, k)
			printf "| %s: `seq 1 %d` to a tmux pane, s (median [min–max] of %d; load %s → %s) | %.3f [%.3f–%.3f] | %.3f [%.3f–%.3f] (%.2f×) | pairs %.2f× [%.2f–%.2f]; start-up %.3f s subtracted; ≤ 1.2× bare: %s |\n",
				label, n, r, l0, l1, bm, bl, bh, hm, hl, hh, hm / bm, qm, ql, qh, sm, (hm / bm <= 1.2 ? "**met**" : "**missed**")
		}'
}
row "pty throughput" hp
grep -q '^floor ' "$D/kinds" && row "floor: the smallest pty relay in C (bench/floor_relay.c), no hallpass" floor
grep -q '^script ' "$D/kinds" && row "reference: script(1), a pty relay without hallpass" script
grep -q '^js ' "$D/kinds" && row "the same, JavaScript pump (HALLPASS_PTY_RELAY=0)" js
exit 0

#!/usr/bin/env bash
# hallpass benchmark harness — `make bench` runs this. See bench/README.md.
#
#   bash bench/run.sh                   full run (BENCH_REPEAT=5 interleaved repetitions, ~5-20 min on 2 cores)
#   BENCH_QUICK=1 bash bench/run.sh     smoke run: small N, 3 repetitions, well under 5 minutes
#
# Environment: BENCH_REPEAT (repetitions, default 5; 3 when quick), BENCH_QUICK=1, BENCH_DIR (where the work
# trees go; default a tmpfs: /dev/shm), HALLPASS (default ./hallpass), HALLPASS_FLAGS (extra flags for every
# hallpass run; default --allow-exec for bench/build/micro), BENCH_VARIANTS (subset, e.g. "bare floor hallpass"),
# BENCH_WORKLOADS (subset, e.g. "create read exec"), BENCH_OUT (default bench/results/latest.md), BENCH_PATH
# (PATH for every run; default the system directories only).
set -uo pipefail
export LC_ALL=C
# A plain PATH for every variant: with ~/.cargo/bin, pyenv shims etc. first, execvp's failed attempts would be
# exec requests that hallpass (and only hallpass) mediates. BENCH_PATH to override.
export PATH=${BENCH_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
BUILD=$BENCH/build
OUT=${BENCH_OUT:-$BENCH/results/latest.md}
QUICK=${BENCH_QUICK:-0}
[ "$QUICK" = 0 ] && QUICK=""
if [ -n "$QUICK" ]; then
	R=${BENCH_REPEAT:-3}
	N_CREATE=2000 N_READ=2000 N_EXEC=200 N_CONNECT=200 N_GIT=200 N_MAKE=10 N_NPM=10 N_TAR=1000 N_START=5 TMO=60
else
	R=${BENCH_REPEAT:-5}
	N_CREATE=20000 N_READ=20000 N_EXEC=2000 N_CONNECT=2000 N_GIT=2000 N_MAKE=50 N_NPM=60 N_TAR=10000 N_START=20
	TMO=300
fi
HALLPASS=${HALLPASS:-$ROOT/hallpass}
ALL_VARIANTS=(bare landlock floor hallpass bwrap firejail)
WORKLOADS=(${BENCH_WORKLOADS:-create newdir read readsub exec connect git make npm tar})

log() { printf 'bench: %s\n' "$*" >&2; }

# ---- build -----------------------------------------------------------------------------------------------
mkdir -p "$BUILD"
CC=${BENCH_CC:-}
if [ -z "$CC" ]; then command -v musl-gcc >/dev/null 2>&1 && CC=musl-gcc || CC=gcc; fi
for p in floor_supervisor micro; do
	if [ ! -x "$BUILD/$p" ] || [ "$BENCH/$p.c" -nt "$BUILD/$p" ]; then
		log "building $p with $CC"
		$CC -static -O2 -Wall -Wextra -o "$BUILD/$p" "$BENCH/$p.c" 2>/dev/null ||
			gcc -O2 -Wall -Wextra -o "$BUILD/$p" "$BENCH/$p.c" || { log "cannot build $p"; exit 1; }
	fi
done
FLOOR=$BUILD/floor_supervisor
MICRO=$BUILD/micro
[ -x /usr/bin/time ] || log "GNU time (/usr/bin/time) missing: no RSS row (apt-get install time)"

# ---- work area: a tmpfs by default, so the micro workloads measure system calls, not the disk ----------------
if [ -n "${BENCH_DIR:-}" ]; then PARENT=$BENCH_DIR
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then PARENT=/dev/shm
else PARENT=${TMPDIR:-/tmp}; fi
BASE=$(mktemp -d "$PARENT/hallpass-bench.XXXXXX") || exit 1
FIX=$BASE/fix  # fixtures, read-only for the sandboxes
W=$BASE/w      # the project / work directory of one run (recreated for every run)
LOGF=$BASE/errors.log
cleanup() { rm -rf "$BASE"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$FIX"
FSTYPE=$(stat -f -c %T "$BASE" 2>/dev/null || echo '?')

# ---- variants --------------------------------------------------------------------------------------------
CUR_WL= # the workload run1 runs (prefix() reads it)
HP_FLAGS=(${HALLPASS_FLAGS:---allow-exec $MICRO})
declare -A AVAIL NOTE
for v in "${ALL_VARIANTS[@]}"; do AVAIL[$v]=1; done
mkdir -p "$W"
if [ ! -x "$HALLPASS" ]; then AVAIL[hallpass]=""; NOTE[hallpass]="$HALLPASS missing"
elif ! timeout -k 5 60 "$HALLPASS" --no-ask --project "$W" -- /bin/true </dev/null >/dev/null 2>"$BASE/hp-smoke"; then
	AVAIL[hallpass]=""; NOTE[hallpass]="smoke test failed: $(head -c 300 "$BASE/hp-smoke" | tr '\n' ' ')"
fi
command -v bwrap >/dev/null 2>&1 || { AVAIL[bwrap]=""; NOTE[bwrap]="bwrap not installed"; }
command -v firejail >/dev/null 2>&1 || { AVAIL[firejail]=""; NOTE[firejail]="firejail not installed"; }
if [ -n "${AVAIL[bwrap]}" ] && ! timeout 30 bwrap --ro-bind / / --dev /dev --bind "$W" "$W" -- /bin/true 2>/dev/null; then
	AVAIL[bwrap]=""; NOTE[bwrap]="bwrap fails here (user namespaces?)"
fi
if [ -n "${AVAIL[firejail]}" ] && ! timeout 30 firejail --quiet --noprofile --read-only=/ --read-write="$W" -- /bin/true >/dev/null 2>&1; then
	AVAIL[firejail]=""; NOTE[firejail]="firejail fails here"
fi
VARIANTS=()
for v in ${BENCH_VARIANTS:-${ALL_VARIANTS[*]}}; do [ -n "${AVAIL[$v]:-}" ] && VARIANTS+=("$v"); done
for v in "${ALL_VARIANTS[@]}"; do [ -z "${AVAIL[$v]}" ] && log "no $v column: ${NOTE[$v]}"; done

# prefix VARIANT: sets PFX, the words that run a command in the variant's sandbox (writable: $W only).
prefix() {
	case $1 in
	bare) PFX=() ;;
	# the read rows: a ruleset that also handles the read and execute rights hallpass's handles (secrets, the
	# execute floor), granted below / — without them Landlock does not look at a read-only open at all
	landlock) PFX=("$FLOOR" "$([[ $CUR_WL == read* ]] && echo --landlock-read || echo --landlock-only)" "$W" --) ;;
	floor) PFX=("$FLOOR" --landlock "$W" --) ;;
	hallpass) PFX=("$HALLPASS" --no-ask --project "$W" "${HP_FLAGS[@]}" --) ;;
	bwrap) PFX=(bwrap --ro-bind / / --dev /dev --ro-bind "$FIX" "$FIX" --bind "$W" "$W" --chdir "$W" --) ;;
	firejail) PFX=(firejail --quiet --noprofile --read-only=/ --read-write="$W" --) ;;
	esac
}

# ---- fixtures (built once, outside the timings) ------------------------------------------------------------
gen_fixtures() {
	local i d
	# git: N_GIT small text files in 20 directories
	mkdir -p "$FIX/git"
	for ((i = 0; i < N_GIT; i++)); do
		d=$FIX/git/d$((i % 20)); [ -d "$d" ] || mkdir "$d"
		printf 'file %d\nline two of %d\n%0200d\n' "$i" "$i" "$i" >"$d/f$i.txt"
	done
	# make: N_MAKE C files with a few functions each, and main.c
	mkdir -p "$FIX/make"
	for ((i = 0; i < N_MAKE; i++)); do
		{
			printf '#include <stdio.h>\n#include <string.h>\n'
			for f in a b c d e f; do
				printf 'int f%d_%s(int x){int s=0;for(int i=0;i<x;i++){s+=i*%d^(s>>3);}char b[64];snprintf(b,sizeof b,"%%d",s);return (int)strlen(b)+s;}\n' "$i" "$f" "$i"
			done
		} >"$FIX/make/m$i.c"
	done
	{
		for ((i = 0; i < N_MAKE; i++)); do printf 'int f%d_a(int);\n' "$i"; done
		printf 'int main(void){int s=0;\n'
		for ((i = 0; i < N_MAKE; i++)); do printf 's+=f%d_a(3);\n' "$i"; done
		printf 'return s==0;}\n'
	} >"$FIX/make/main.c"
	{
		printf 'CC=gcc\nCFLAGS=-O1\nSRCS=$(wildcard *.c)\nOBJS=$(SRCS:.c=.o)\n'
		printf 'prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) $(CFLAGS) -c -o $@ $<\n'
	} >"$FIX/make/Makefile"
	# npm: N_NPM local package tarballs (npm's layout: package/...), 15 files each, and an app depending on all
	mkdir -p "$FIX/npm/src" "$FIX/npm/tgz" "$FIX/npm/app"
	local deps="" j
	for ((i = 0; i < N_NPM; i++)); do
		d=$FIX/npm/src/p$i/package; mkdir -p "$d/lib"
		printf '{"name":"bench-pkg-%d","version":"1.0.%d","main":"index.js","license":"MIT"}\n' "$i" "$i" >"$d/package.json"
		printf 'module.exports = require("./lib/f0.js");\n' >"$d/index.js"
		for ((j = 0; j < 13; j++)); do printf 'module.exports = function f%d(x) { return x * %d; };\n' "$j" "$j" >"$d/lib/f$j.js"; done
		tar czf "$FIX/npm/tgz/bench-pkg-$i-1.0.$i.tgz" -C "$FIX/npm/src/p$i" package
		deps+="${deps:+,}\"bench-pkg-$i\":\"file:$FIX/npm/tgz/bench-pkg-$i-1.0.$i.tgz\""
	done
	printf '{"name":"bench-app","version":"1.0.0","private":true,"dependencies":{%s}}\n' "$deps" >"$FIX/npm/app/package.json"
	# tar: N_TAR small files in 100 directories
	mkdir -p "$FIX/tree"
	for ((i = 0; i < N_TAR; i++)); do
		d=$FIX/tree/t/d$((i % 100)); [ -d "$d" ] || mkdir -p "$d"
		printf '%0100d\n' "$i" >"$d/f$i"
	done
	tar cf "$FIX/tree.tar" -C "$FIX/tree" t && rm -rf "$FIX/tree"
	printf 'x\n' >"$FIX/readme"
}

# prep WORKLOAD: a fresh $W for one run (untimed); sets CMD (the timed command) and KIND (micro: the command
# prints its own elapsed seconds; wall: the wall time of the whole command, sandbox start-up included).
prep() {
	rm -rf "$W" && mkdir -p "$W/home" "$W/tmp" && cd "$W" || return 1
	export HOME=$W/home TMPDIR=$W/tmp npm_config_cache=$W/home/.npm
	# hallpass's own rules and program copies live outside the work tree, as on a workstation: with $HOME in
	# the project, its rules and cache directories (which the sandbox may never write) would be denies inside
	# the project, and hallpass then emulates every write there instead of continuing it (docs/performance.md).
	export XDG_CONFIG_HOME=$BASE/xdg XDG_CACHE_HOME=$BASE/xdg-cache
	KIND=wall
	case $1 in
	create) mkdir "$W/c"; CMD=("$MICRO" create "$N_CREATE" "$W/c"); KIND=micro ;;
	# a directory made at the project's top during the session (a first node_modules/): outside the Landlock floor
	newdir) CMD=(sh -c "mkdir '$W/n' && exec '$MICRO' create $N_CREATE '$W/n'"); KIND=micro ;;
	connect) CMD=("$MICRO" connect "$N_CONNECT"); KIND=micro ;;
	read) cp "$FIX/readme" "$W/readme"; CMD=("$MICRO" read "$N_READ" "$W/readme"); KIND=micro ;;
	# the same file one directory down: below a directory of the Landlock write floor (a file at the project's
	# top is not: the top is carved around the protected .git, HEAD, .hallpass — bench/README.md)
	readsub) mkdir "$W/d" && cp "$FIX/readme" "$W/d/readme"; CMD=("$MICRO" read "$N_READ" "$W/d/readme"); KIND=micro ;;
	exec) CMD=("$MICRO" exec "$N_EXEC"); KIND=micro ;;
	git)
		cp -r "$FIX/git/." "$W/" && git init -q "$W" || return 1
		CMD=(sh -c 'git add -A && git commit -q -m bench') ;;
	make) cp -r "$FIX/make/." "$W/"; CMD=(make -s -j2) ;;
	npm) cp "$FIX/npm/app/package.json" "$W/"; CMD=(npm install --offline --no-audit --no-fund --loglevel=error --no-update-notifier) ;;
	tar) mkdir "$W/x"; CMD=(tar xf "$FIX/tree.tar" -C "$W/x") ;;
	start) CMD=(/bin/true) ;;
	esac
}

export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid GIT_COMMITTER_NAME=bench
export GIT_COMMITTER_EMAIL=bench@example.invalid GIT_CONFIG_NOSYSTEM=1 npm_config_update_notifier=false

declare -A RES RSS FAILS
# run1 WORKLOAD VARIANT [warm-up]: one timed run; appends seconds to RES[wl,v] (and the peak RSS in KB to RSS[v] for git)
run1() {
	local wl=$1 v=$2 warm=${3:-} out rc
	prep "$wl" || { log "prep $wl failed"; cd "$BASE"; return 1; }
	CUR_WL=$wl
	prefix "$v"
	local tm=()
	[ "$wl" = git ] && [ -x /usr/bin/time ] && tm=(/usr/bin/time -f %M -o "$BASE/rss")
	printf '== %s/%s\n' "$wl" "$v" >>"$LOGF"
	if [ "$KIND" = micro ]; then
		out=$(timeout -k 5 "$TMO" "${PFX[@]}" "${CMD[@]}" </dev/null 2>>"$LOGF")
	else # micro run: spawn-to-exit of the sandbox + command (N_START times for start-up, else once)
		out=$(timeout -k 5 "$TMO" "$MICRO" run "$([ "$wl" = start ] && echo "$N_START" || echo 1)" \
			"${tm[@]}" "${PFX[@]}" "${CMD[@]}" </dev/null 2>>"$LOGF")
	fi
	rc=$?
	cd "$BASE" || true
	[ -n "$warm" ] && return 0
	if [ $rc != 0 ]; then
		FAILS[$wl,$v]=$((${FAILS[$wl,$v]:-0} + 1))
		printf '%s/%s: exit %s\n' "$wl" "$v" "$rc" >>"$LOGF"
		return 1
	fi
	[ ${#tm[@]} -gt 0 ] && RSS[$v]+="$(tail -1 "$BASE/rss") "
	RES[$wl,$v]+="$(tail -1 <<<"$out") "
}

median() { tr ' ' '\n' | { grep . || true; } | sort -g | awk '{a[NR]=$1} END{n=NR; if(!n) exit; if(n%2) print a[(n+1)/2]; else printf "%.6f\n", (a[n/2]+a[n/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="" || b=="" || b+0==0) print ""; else printf "%.2f", a/b }'; }

# ---- run ------------------------------------------------------------------------------------------------
START_TS=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T_BEGIN=$EPOCHREALTIME
log "work dir $BASE ($FSTYPE); variants: ${VARIANTS[*]}; repeat $R${QUICK:+ (quick)}"
log "generating fixtures"
gen_fixtures
cd "$BASE" || exit 1
for wl in "${WORKLOADS[@]}"; do
	log "$wl"
	for v in "${VARIANTS[@]}"; do run1 "$wl" "$v" warm-up; done # untimed: page cache, first-run effects
	for ((rep = 0; rep < R; rep++)); do
		nv=${#VARIANTS[@]}
		for ((k = 0; k < nv; k++)); do run1 "$wl" "${VARIANTS[$(((k + rep) % nv))]}"; done
	done
done
log "start-up of /bin/true: $R x $N_START runs"
for ((rep = 0; rep < R; rep++)); do
	nv=${#VARIANTS[@]}
	for ((k = 0; k < nv; k++)); do run1 start "${VARIANTS[$(((k + rep) % nv))]}"; done
done

# ---- table ----------------------------------------------------------------------------------------------
declare -A MED
for wl in "${WORKLOADS[@]}" start; do
	for v in "${ALL_VARIANTS[@]}"; do MED[$wl,$v]=$(median <<<"${RES[$wl,$v]:-}"); done
done
declare -A LABEL=(
	[create]="create micro: $N_CREATE × open(O_CREAT\\|O_WRONLY\\|O_TRUNC)+write+close, µs/op"
	[newdir]="create micro in a directory made at the project's top in the session: $N_CREATE creates, µs/op"
	[connect]="connect micro: $N_CONNECT × blocking TCP connect to its own loopback listener + accept + close, µs/op"
	[read]="read micro: $N_READ × open(O_RDONLY)+close of a file at the project's top, µs/op"
	[readsub]="read micro, the file one directory down, µs/op"
	[exec]="exec micro: $N_EXEC × fork+execve(/bin/true)+wait, µs/op"
	[git]="git add -A + commit, $N_GIT files, s"
	[make]="make -j2, $N_MAKE C files + main, s"
	[npm]="npm install --offline, $N_NPM local tarball deps, s"
	[tar]="tar x, $N_TAR files, s"
	[start]="start-up: spawn to exit of \`/bin/true\`, ms (median of $R × $N_START)"
)
declare -A OPS=([create]=$N_CREATE [newdir]=$N_CREATE [read]=$N_READ [readsub]=$N_READ [exec]=$N_EXEC [connect]=$N_CONNECT)
fmt() { # fmt WORKLOAD SECONDS
	case $1 in
	create | newdir | read | readsub | exec | connect) awk -v s="$2" -v n="${OPS[$1]}" 'BEGIN{printf "%.2f", s*1e6/n}' ;;
	start) awk -v s="$2" 'BEGIN{printf "%.1f", s*1e3}' ;;
	*) awk -v s="$2" 'BEGIN{printf "%.3f", s}' ;;
	esac
}
cell() { # cell WORKLOAD VARIANT
	local wl=$1 v=$2 m r
	if [ -z "${AVAIL[$v]}" ]; then printf 'n/a'; return; fi
	if ! [[ " ${VARIANTS[*]} " == *" $v "* ]]; then printf '—'; return; fi
	m=${MED[$wl,$v]}
	if [ -z "$m" ]; then printf 'fail'; return; fi
	fmt "$wl" "$m"
	r=$(ratio "$m" "${MED[$wl,bare]}")
	[ "$v" != bare ] && [ -n "$r" ] && printf ' (%s×)' "$r"
	[ -n "${FAILS[$wl,$v]:-}" ] && printf ' [%s failed]' "${FAILS[$wl,$v]}"
	return 0
}
target() { # target WORKLOAD: the issue-6 target and whether hallpass meets it
	local wl=$1 t base r ok
	local hp=${MED[$wl,hallpass]}
	case $wl in
	create | newdir) t="≤ 1.3× floor"; base=floor; lim=1.3 ;;
	connect) printf '— (none: every connect is performed by hallpass)'; return ;;
	read | readsub) t="≤ 1.05× landlock-only"; base=landlock; lim=1.05 ;;
	exec) t="≤ 1.5× bare"; base=bare; lim=1.5 ;;
	start) t="≤ 60 ms"; base=""; lim=0.060 ;;
	*) t="≤ 1.10× bare"; base=bare; lim=1.10 ;;
	esac
	if [ -z "$hp" ]; then printf '%s: n/a' "$t"; return; fi
	if [ -n "$base" ]; then r=$(ratio "$hp" "${MED[$wl,$base]}"); else r=$hp; fi
	[ -z "$r" ] && { printf '%s: n/a' "$t"; return; }
	ok=$(awk -v r="$r" -v l="$lim" 'BEGIN{print (r<=l) ? "met" : "MISSED"}')
	printf '%s: **%s**' "$t" "$ok"
}
hpvs() { # hallpass against floor (and landlock-only for read)
	local wl=$1 hp=${MED[$1,hallpass]} s="" r
	[ -z "$hp" ] && { printf 'n/a'; return; }
	r=$(ratio "$hp" "${MED[$wl,floor]}"); [ -n "$r" ] && s="$r× floor"
	if [[ $wl == read* ]]; then r=$(ratio "$hp" "${MED[$wl,landlock]}"); [ -n "$r" ] && s="$s, $r× landlock"; fi
	printf '%s' "${s:-n/a}"
}

CMDLINE="${BENCH_QUICK:+BENCH_QUICK=$BENCH_QUICK }${BENCH_REPEAT:+BENCH_REPEAT=$BENCH_REPEAT }${BENCH_WORKLOADS:+BENCH_WORKLOADS=\"$BENCH_WORKLOADS\" }${BENCH_VARIANTS:+BENCH_VARIANTS=\"$BENCH_VARIANTS\" }${STARTUP_REPEAT:+STARTUP_REPEAT=$STARTUP_REPEAT }bash bench/run.sh"
T_END=$EPOCHREALTIME
{
	printf '# hallpass benchmark%s\n\n' "${QUICK:+ (QUICK smoke run: small N, not for comparison)}"
	printf -- '- date: %s\n' "$START_TS"
	printf -- '- command: `%s` (git %s)\n' "$CMDLINE" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	printf -- '- machine: %s, %s CPUs, %s MB RAM; kernel %s; %s\n' "$(uname -m)" "$(nproc)" \
		"$(awk '/MemTotal/{printf "%d", $2/1024}' /proc/meminfo)" "$(uname -r)" \
		"$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null)"
	printf -- '- work directory on %s (%s); %s interleaved repetitions per cell, median shown; ratio in () is to bare\n' "$PARENT" "$FSTYPE" "$R"
	printf -- '- took %s s; load average at start %s, at end %s (anything else running distorts the table)\n\n' \
		"$(awk -v a="$T_BEGIN" -v b="$T_END" 'BEGIN{printf "%d", b-a}')" "$LOAD0" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '| workload | bare | landlock-only | floor (C supervisor) | hallpass | bwrap | firejail | hallpass vs | issue 6 target (hallpass) |\n'
	printf '|---|---|---|---|---|---|---|---|---|\n'
	for wl in "${WORKLOADS[@]}" start; do
		printf '| %s |' "${LABEL[$wl]}"
		for v in "${ALL_VARIANTS[@]}"; do printf ' %s |' "$(cell "$wl" "$v")"; done
		printf ' %s | %s |\n' "$(hpvs "$wl")" "$(target "$wl")"
	done
	if [[ " ${WORKLOADS[*]} " == *" git "* ]] && [ -x /usr/bin/time ]; then
		printf '| peak RSS during git, MB (GNU time %%M: largest single process of the tree) |'
		for v in "${ALL_VARIANTS[@]}"; do
			m=$(median <<<"${RSS[$v]:-}")
			if [ -z "${AVAIL[$v]}" ]; then printf ' n/a |'; elif [ -z "$m" ]; then printf ' — |'
			else printf ' %s |' "$(awk -v k="$m" 'BEGIN{printf "%.1f", k/1024}')"; fi
		done
		m=$(median <<<"${RSS[hallpass]:-}")
		if [ -n "$m" ]; then
			printf ' | < 80 MB: **%s** |\n' "$(awk -v k="$m" 'BEGIN{print (k/1024<80) ? "met" : "MISSED"}')"
		else printf ' | < 80 MB: n/a |\n'; fi
	fi
	printf '\nSpread of each cell, (max − min) / mean over its %s runs — how far to trust a ratio:\n\n' "$R"
	printf '| workload | bare | landlock-only | floor | hallpass | bwrap | firejail |\n|---|---|---|---|---|---|---|\n'
	for wl in "${WORKLOADS[@]}" start; do
		printf '| %s |' "$wl"
		for v in "${ALL_VARIANTS[@]}"; do
			printf ' %s |' "$(tr ' ' '\n' <<<"${RES[$wl,$v]:-}" | awk 'NF{n++; if(n==1||$1<lo)lo=$1; if(n==1||$1>hi)hi=$1; a[n]=$1}
				END{if(!n){print "—"; exit} m=0; for(i=1;i<=n;i++)m+=a[i]; m/=n; printf "%.0f%%", m ? 100*(hi-lo)/m : 0}')"
		done
		printf '\n'
	done
	printf '\n'
	for v in "${ALL_VARIANTS[@]}"; do [ -z "${AVAIL[$v]}" ] && printf -- '- %s: n/a — %s\n' "$v" "${NOTE[$v]}"; done
	nf=0; for k in ${FAILS[*]:+"${!FAILS[@]}"}; do nf=$((nf + FAILS[$k])); printf -- '- %s: %s failed run(s)\n' "$k" "${FAILS[$k]}"; done
	[ "$nf" -gt 0 ] && printf -- '- failed runs are left out of the medians; their stderr is in bench/results/errors.log\n'
	[ -n "${AVAIL[hallpass]}" ] && printf -- '- hallpass flags: `--no-ask --project WORKDIR %s`\n' "${HP_FLAGS[*]}"
	printf -- '- micro rows: time measured inside the workload (sandbox start-up excluded); other rows: spawn-to-exit time of the sandbox and the command (start-up included)\n'
} >"$BASE/table.md"
# The start-up and agent rows (bench/startup.sh): ratios to an empty `deno run` and to hallpass's own start-up.
if [ -n "${AVAIL[hallpass]}" ] && [ -z "${BENCH_NO_STARTUP:-}" ]; then
	log "start-up and agent rows (bench/startup.sh)"
	{
		printf '
## Start-up and agents (`%sbash bench/startup.sh`, interleaved, medians)

' \
			"${QUICK:+STARTUP_REPEAT=5 }"
		printf '| what | bare | under hallpass | ratio / extra | target |\n|---|---|---|---|---|\n'
		STARTUP_REPEAT=${STARTUP_REPEAT:-${QUICK:+5}} HALLPASS=$HALLPASS bash "$BENCH/startup.sh" ||
			printf '| bench/startup.sh failed (stderr above) | | | | |\n'
	} >>"$BASE/table.md"
fi
# The pty-throughput row (bench/pty.sh, needs tmux): bare vs hallpass's pty and its C relay.
if [ -n "${AVAIL[hallpass]}" ] && [ -z "${BENCH_NO_PTY:-}" ] && command -v tmux >/dev/null; then
	log "pty-throughput row (bench/pty.sh)"
	{
		printf '\n## Output through the pty (`%sbash bench/pty.sh`, interleaved)\n\n' "${QUICK:+PTY_N=200000 PTY_REPEAT=3 }"
		printf '| what | bare | hallpass | pairs, start-up, target |\n|---|---|---|---|\n'
		PTY_N=${PTY_N:-${QUICK:+200000}} PTY_REPEAT=${PTY_REPEAT:-${QUICK:+3}} HALLPASS=$HALLPASS bash "$BENCH/pty.sh" ||
			printf '| bench/pty.sh failed (stderr above) | | | |\n'
	} >>"$BASE/table.md"
fi

mkdir -p "$(dirname "$OUT")"
cp "$BASE/table.md" "$OUT"
[ -n "${FAILS[*]:-}" ] && cp "$LOGF" "$BENCH/results/errors.log"
cat "$BASE/table.md"
log "written to ${OUT#$ROOT/}"

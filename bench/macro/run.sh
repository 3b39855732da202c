#!/bin/bash
# bench/macro/run.sh MODE BUILD REPS - table 7: memcached, from its Debian
# source package, with 60 markers at hot sites:
#   - its 47 DTrace probe sites (memcached_dtrace.d, built with
#     ./configure --enable-dtrace DTRACE=mark-dtrace: every probe becomes a mark marker), and
#   - 13 MARK() sites, one per state of the connection state machine
#     (drive_machine(), memcached-state-markers.patch).
# Three configurations, each driven by bench/macro/loadgen.c over 127.0.0.1:
#   out        configure without dtrace, -DMARK_DISABLE: every marker compiled out
#   disarmed   the marked build, nothing armed
#   armed      the marked build, every marker armed and recorded by the tracer
#              (MARK_TRACE=dir MARK_ENABLE='*', discard mode)
# Runs are interleaved (out, disarmed, armed, out, ...) so drift spreads
# evenly.  Prints result lines (bench/common/bench.h format).
set -u
MODE=${1:?usage: run.sh MODE BUILD REPS}
BUILD=${2:?}
REPS=${3:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/macro
W=$BUILD/macro
mkdir -p "$W"
LOG=$W/macro.log
: >"$LOG"
case "$MODE" in
quick) REQUESTS=100000 ;;
*) REQUESTS=400000 ;;
esac
BATCH=100
KEYS=10000

skip() { echo "S t7 all not measured: $*"; exit 0; }

# ---- the source: Debian's memcached source package, through a private apt
# configuration (deb-src lines of its own; the system's sources are untouched).
SRC=$(ls -d "$W"/src/memcached-*/ 2>/dev/null | head -1)
if [ -z "$SRC" ]; then
	A=$W/apt
	mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$W/src"
	. /etc/os-release
	CODENAME=${VERSION_CODENAME:-bookworm}
	KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
	{
		echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian $CODENAME main"
		echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian $CODENAME-updates main"
		echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian-security $CODENAME-security main"
	} >"$A/sources.list"
	APT=(apt-get -q -o "Dir::Etc::SourceList=$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache")
	"${APT[@]}" update >>"$LOG" 2>&1 || skip "apt-get update of the deb-src index failed (network?), see $LOG"
	(cd "$W/src" && "${APT[@]}" source memcached >>"$LOG" 2>&1) ||
		skip "apt-get source memcached failed (needs dpkg-dev and network), see $LOG"
	SRC=$(ls -d "$W"/src/memcached-*/ 2>/dev/null | head -1)
	[ -n "$SRC" ] || skip "apt-get source memcached produced no source tree"
fi
SRC=${SRC%/}
VERSION=$(basename "$SRC")

# ---- builds (cached: rebuilt when mark.h, the patch or this script change)
MARK_DTRACE=$BUILD/mark-dtrace
[ -x "$MARK_DTRACE" ] || skip "$MARK_DTRACE is missing (the mark CLI was not built)"
KEY=$(cat "$ROOT/include/mark/mark.h" "$HERE/memcached-state-markers.patch" "$0" "$ROOT"/cli/dtrace*.c 2>/dev/null | md5sum | cut -c1-12)
build() { # VARIANT
	local v=$1 d=$W/$1
	if [ -x "$d/memcached" ] && [ "$(cat "$d/.stamp" 2>/dev/null)" = "$KEY" ]; then return 0; fi
	rm -rf "$d"
	cp -a "$SRC" "$d"
	(cd "$d" && patch -p1 <"$HERE/memcached-state-markers.patch") >>"$LOG" 2>&1 || return 1
	if [ "$v" = out ]; then
		(cd "$d" && ./configure CFLAGS="-O2 -g -DMARK_DISABLE -I$ROOT/include") >>"$LOG" 2>&1 || return 1
	else
		(cd "$d" && ./configure --enable-dtrace DTRACE="$MARK_DTRACE" CFLAGS="-O2 -g -I$ROOT/include" \
			LDFLAGS="-L$BUILD -Wl,-rpath,$BUILD" LIBS="-lmark") >>"$LOG" 2>&1 || return 1
	fi
	if [ "$v" != out ]; then (cd "$d" && make memcached_dtrace.h) >>"$LOG" 2>&1 || return 1; fi
	(cd "$d" && make -j"$(nproc)" memcached) >>"$LOG" 2>&1 || return 1
	echo "$KEY" >"$d/.stamp"
}
build out || skip "building $VERSION (compiled out) failed, see $LOG"
build in || skip "building $VERSION with DTRACE=mark-dtrace failed, see $LOG"
cc -O2 -Wall -Wextra -o "$W/loadgen" "$HERE/loadgen.c" >>"$LOG" 2>&1 || skip "building loadgen failed, see $LOG"

# No CPU pinning: memcached's worker, its maintenance threads and (armed)
# the tracer's consumer thread share the CPUs with loadgen as the scheduler
# sees fit, as they would in production.  Set MARK_BENCH_PIN=1 to put
# memcached on CPU 0 and loadgen on CPU 1 instead.
PIN_SERVER=() PIN_CLIENT=()
PINNING="unpinned"
if [ "${MARK_BENCH_PIN:-0}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_SERVER=(taskset -c 0) PIN_CLIENT=(taskset -c 1)
	PINNING="memcached on CPU 0 and loadgen on CPU 1 (taskset)"
fi
NSITES=$("$BUILD/mark" list "$W/in/memcached" 2>>"$LOG" | grep -c 'memcached' || true)
NOUT=$("$BUILD/mark" list "$W/out/memcached" 2>>"$LOG" | grep -c 'memcached' || true)
echo "I t7_method **$VERSION** (Debian source package) with 60 marker sites: its 47 DTrace probe sites built by \`./configure --enable-dtrace DTRACE=mark-dtrace\` (conn, slabs, assoc, item, process_command and command_* probes, hit on every request) plus 13 \`MARK()\` sites, one per state of the connection state machine \`drive_machine()\` (bench/macro/memcached-state-markers.patch).  \`mark list\` finds $NSITES marker lines in the marked binary and $NOUT in the compiled-out one.  Workload: bench/macro/loadgen.c over 127.0.0.1, one connection, $REQUESTS requests per run in pipelined batches of $BATCH (1 set : 3 gets, $KEYS keys of 32 bytes, all hits), memcached \`-t 1\`, $PINNING; a sample is one run's requests/s.  *armed* = every marker armed and recorded by the mark tracer (\`MARK_TRACE=dir MARK_ENABLE='*'\`, discard mode).  Runs interleave out / disarmed / armed."

BASEPORT=$((20000 + $$ % 20000))
NOTES=$W/notes
: >"$NOTES"
# run_one VARIANT PORT: prints the requests/s of one run, or nothing.
# Every process is bounded: loadgen by `timeout`, the server by SIGTERM,
# then SIGKILL if it has not exited 20 s later (noted, never silent).
run_one() {
	local v=$1 port=$2 bin=$W/in/memcached tdir=""
	[ "$v" = out ] && bin=$W/out/memcached
	local -a env=()
	if [ "$v" = armed ]; then
		tdir=$W/trace-$$-$port
		rm -rf "$tdir"
		env=(MARK_TRACE="$tdir" MARK_ENABLE='*')
	fi
	env "${env[@]}" "${PIN_SERVER[@]}" "$bin" -p "$port" -l 127.0.0.1 -U 0 -t 1 -m 64 -c 64 -u root 2>>"$LOG" &
	local pid=$!
	local rate
	rate=$(timeout 90 "${PIN_CLIENT[@]}" "$W/loadgen" "$port" "$REQUESTS" "$BATCH" "$KEYS" 2>>"$LOG")
	kill -TERM "$pid" 2>/dev/null
	local waited=0
	while kill -0 "$pid" 2>/dev/null && [ $waited -lt 200 ]; do
		sleep 0.1
		waited=$((waited + 1))
		# a zombie has exited: stop polling
		[ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ] && break
	done
	if kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" != Z ]; then
		kill -KILL "$pid" 2>/dev/null
		echo "$v run on port $port: memcached had not exited 20 s after SIGTERM; killed (its requests/s were measured before)" >>"$NOTES"
	fi
	wait "$pid" 2>/dev/null
	if [ -n "$tdir" ]; then
		du -sk "$tdir" 2>/dev/null | awk '{print $1}' >"$W/trace-kb"
		rm -rf "$tdir"
	fi
	echo "$rate"
}

declare -A R=([out]="" [disarmed]="" [armed]="")
n=0
run_one out $((BASEPORT + n)) >/dev/null   # warm-up: page cache, CPU frequency
for ((r = 0; r < REPS; r++)); do
	for v in out disarmed armed; do
		n=$((n + 1))
		x=$(run_one "$v" $((BASEPORT + n)))
		if [ -z "$x" ]; then
			echo "$v run on port $((BASEPORT + n)) failed: no rate (see $LOG)" >>"$NOTES"
			continue
		fi
		R[$v]="${R[$v]} $x"
	done
done
for v in out disarmed armed; do
	[ -n "${R[$v]}" ] && echo "R t7 $v rate requests/s${R[$v]}"
done
while read -r line; do echo "I t7_note $line"; done <"$NOTES"
echo "I t7_note The armed runs wrote about $(cat "$W/trace-kb" 2>/dev/null || echo '?') KiB of trace each (last run)."

#!/bin/bash
# bench/run.sh MODE - build the benchmarks at -O2, run every table of
# issue 7, print the tables and write the page.
#
#   MODE full   (make bench)        21 repetitions; writes docs/benchmarks.md and docs/bench-*.svg
#   MODE quick  (make bench-quick)  5 repetitions, shorter loops; the page goes to
#                                   $BUILD/results-quick/ so a smoke run never replaces the real page
#
# Environment: MARK_BENCH_BUILD (build directory, default build-bench/),
#              MARK_BENCH_REPS (repetitions, default 21 full / 5 quick; at least 5).
# The uprobe, bpftrace and LTTng rows need root; without it they are skipped with the reason.
set -u
MODE=${1:-}
case "$MODE" in
quick) REPS=${MARK_BENCH_REPS:-5}; SCALE=0.25 ;;
full) REPS=${MARK_BENCH_REPS:-21}; SCALE=1 ;;
*) echo "usage: $0 quick|full" >&2; exit 2 ;;
esac
[ "$REPS" -ge 5 ] 2>/dev/null || REPS=5

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${MARK_BENCH_BUILD:-$ROOT/build-bench}
OUT=$BUILD/results-$MODE
RESULTS=$OUT/results.txt
PY=/usr/bin/python3
JOBS=$(nproc 2>/dev/null || echo 2)
START=$(date +%s)
mkdir -p "$OUT"
: >"$RESULTS"
LOG=$OUT/run.log
: >"$LOG"

say() { printf '\n== [%4ds] %s\n' "$(($(date +%s) - START))" "$*" | tee -a "$LOG" >&2; }

# run TABLE NAME CMD...: append the program's result lines; a failure
# becomes a skip line that says so, never a silent gap.
run() {
	local table=$1 name=$2
	shift 2
	say "$table: $*"
	local tmp=$OUT/.step.out
	"$@" >"$tmp" 2>>"$LOG"
	local rc=$?
	cat "$tmp" >>"$RESULTS"
	grep -E '^(R|S) ' "$tmp" | cut -c1-150 >&2
	if [ $rc -ne 0 ]; then
		echo "S $table $name $(basename "$1") exited with status $rc (see $LOG)" >>"$RESULTS"
		echo "   (exit status $rc, see $LOG)" >&2
	fi
	return 0
}

# ---------------------------------------------------------------- build
say "configure and build (-O2) in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DMARK_BUILD_BENCH=ON -DMARK_BUILD_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" \
	"-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" >>"$LOG" 2>&1 ||
	{ echo "bench/run.sh: cmake configure failed; see $LOG" >&2; tail -20 "$LOG" >&2; exit 1; }
cmake --build "$BUILD" -j "$JOBS" >>"$LOG" 2>&1 ||
	{ echo "bench/run.sh: build failed; see $LOG" >&2; grep -E 'error|FAILED' "$LOG" | head -20 >&2; exit 1; }
B=$BUILD/bench
OPTS=(--reps "$REPS" --scale "$SCALE")

# ---------------------------------------------------------------- table 1
run t1 all "$B/bench_disabled" "${OPTS[@]}"
if [ -x "$B/bench_disabled_lttng" ]; then
	# no LTTng session exists yet: the tracepoint is compiled in and not enabled
	run t1 lttng "$B/bench_disabled_lttng" "${OPTS[@]}"
else
	echo "S t1 lttng not measured: liblttng-ust-dev (pkg-config lttng-ust) not found at configure time" >>"$RESULTS"
fi

# ---------------------------------------------------------------- table 2
run t2 all "$B/bench_pressure" "${OPTS[@]}"

# ---------------------------------------------------------------- table 3
run t3 local "$B/bench_enabled" "${OPTS[@]}" --only local

# LTTng-UST recording into an active snapshot session.
# lttng_daemon TABLE ROW: make sure a session daemon runs (start one when
# none does: LTTNG_STARTED=1, lttng_daemon_end stops it); else print the
# skip line and fail.
LTTNG_STARTED=""
lttng_daemon() {
	if [ ! -x "$B/bench_lttng_enabled" ]; then
		echo "S $1 $2 not measured: liblttng-ust-dev not found at configure time"; return 1; fi
	if ! command -v lttng >/dev/null || ! command -v lttng-sessiond >/dev/null; then
		echo "S $1 $2 not measured: lttng-tools (lttng, lttng-sessiond) not installed"; return 1; fi
	LTTNG_STARTED=""
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --daemonize >>"$LOG" 2>&1 || {
			echo "S $1 $2 not measured: lttng-sessiond --daemonize failed (see $LOG)"; return 1; }
		LTTNG_STARTED=1
		for _ in 1 2 3 4 5 6 7 8 9 10; do lttng list >/dev/null 2>&1 && break; sleep 0.5; done
	fi
}
lttng_daemon_end() {
	local pidfile=/var/run/lttng/lttng-sessiond.pid
	[ "$(id -u)" = 0 ] || pidfile=$HOME/.lttng/lttng-sessiond.pid
	if [ -n "$LTTNG_STARTED" ] && [ -r "$pidfile" ]; then
		kill "$(cat "$pidfile")" 2>/dev/null
	fi
}
lttng_row() {
	lttng_daemon t3 lttng || return
	local s=markbench$$ snap=$OUT/lttng-snapshot
	rm -rf "$snap"
	if lttng create "$s" --snapshot --output "$snap" >>"$LOG" 2>&1 &&
		lttng enable-event -u -s "$s" bench_lttng:subsys_mark1 >>"$LOG" 2>&1 &&
		lttng start "$s" >>"$LOG" 2>&1; then
		"$B/bench_lttng_enabled" "${OPTS[@]}" 2>>"$LOG"
		lttng stop "$s" >>"$LOG" 2>&1
		lttng snapshot record -s "$s" >>"$LOG" 2>&1
		if command -v babeltrace2 >/dev/null; then
			echo "I lttng_snapshot the snapshot holds $(babeltrace2 "$snap" 2>/dev/null | grep -c subsys_mark1) bench_lttng:subsys_mark1 events (the newest ones: overwrite mode)"
		fi
	else
		echo "S t3 lttng not measured: creating the LTTng session failed (see $LOG)"
	fi
	lttng destroy "$s" >>"$LOG" 2>&1
	rm -rf "$snap"
	lttng_daemon_end
}
run t3 lttng lttng_row

# ---------------------------------------------------------------- table 3b (issue 14)
# The recordings users run: discard mode streaming to the disk (the build
# tree's file system), overwrite rings in and out of cache, 2 producers, a
# fresh thread, block mode sustained beside dd (disk and tmpfs), and the
# same cost rows without glibc's rseq registration.
SDIR=$OUT/streaming
mkdir -p "$SDIR"
run t3s all "$B/bench_streaming" "${OPTS[@]}" --only cost,first,drop,block --arg "$SDIR"
run t3s norseq env GLIBC_TUNABLES=glibc.pthread.rseq=0 "$B/bench_streaming" "${OPTS[@]}" --only norseq --arg "$SDIR"

# LTTng-UST in the matching modes: its default (discard) channel with
# lttng-consumerd writing to the same disk, and snapshot mode.
lttng_stream_row() {
	local mode=$1
	lttng_daemon t3s "lttng_$mode" || return
	local s=markstream$$ d=$SDIR/lttng-$mode
	rm -rf "$d"
	local create=(lttng create "$s" --output "$d")
	[ "$mode" = snapshot ] && create=(lttng create "$s" --snapshot --output "$d")
	if "${create[@]}" >>"$LOG" 2>&1 &&
		lttng enable-event -u -s "$s" bench_lttng:subsys_mark1 >>"$LOG" 2>&1 &&
		lttng start "$s" >>"$LOG" 2>&1; then
		"$B/bench_lttng_enabled" "${OPTS[@]}" --arg "$mode" 2>>"$LOG"
		# lttng stop reports the events its discard channel dropped.
		echo "I lttng_stop $mode: $(lttng stop "$s" 2>&1 | tr '\n' ' ' | cut -c1-300)"
		echo "I lttng_bytes $mode: $(du -sb "$d" 2>/dev/null | cut -f1) bytes written by lttng-consumerd"
	else
		echo "S t3s lttng_$mode not measured: creating the LTTng session failed (see $LOG)"
	fi
	lttng destroy "$s" >>"$LOG" 2>&1
	rm -rf "$d"
	lttng_daemon_end
}
run t3s lttng_discard lttng_stream_row discard
run t3s lttng_snapshot lttng_stream_row snapshot

if [ "$(id -u)" = 0 ]; then
	run t3 uprobe "$B/bench_enabled" "${OPTS[@]}" --only uprobe
else
	echo "S t3 uprobe_tracefs not measured: needs root (tracefs uprobe_events)" >>"$RESULTS"
	echo "S t3 uprobe_bpftrace not measured: needs root (bpftrace)" >>"$RESULTS"
fi

# ---------------------------------------------------------------- table 4
run t4 all $PY "$ROOT/bench/size/size.py" "$B/size_objects.txt" "$B/sites_objects.txt" "$B/size_objects_clang.txt"

# ---------------------------------------------------------------- table 5
for kind in jump immediate generic; do
	run t5 "$kind" "$B/bench_arming_$kind" "${OPTS[@]}" --arg "$kind"
done

# ---------------------------------------------------------------- table 6
mkdir -p "$OUT/trace"
run t6 all "$B/bench_throughput" "${OPTS[@]}" --arg "$OUT/trace"

# ---------------------------------------------------------------- table 7
if [ "$MODE" = quick ] && ! ls "$BUILD"/macro/in/memcached "$BUILD"/macro/out/memcached >/dev/null 2>&1; then
	# Fetching and building memcached twice takes about a minute: the smoke
	# run stays under 2 minutes by reusing the builds of an earlier `make bench`.
	echo "S t7 all not measured in quick mode: memcached is not built yet (make bench fetches and builds it once; later quick runs reuse it)" >>"$RESULTS"
elif [ -x "$ROOT/bench/macro/run.sh" ]; then
	run t7 all "$ROOT/bench/macro/run.sh" "$MODE" "$BUILD" "$REPS"
else
	echo "S t7 all not measured: bench/macro/run.sh missing" >>"$RESULTS"
fi

# ---------------------------------------------------------------- fork (issue 17)
run fork all "$ROOT/bench/fork/run.sh" "$BUILD" "$REPS" "$SCALE" "$OUT/fork"

# ---------------------------------------------------------------- reading a large trace (issue 15)
# Records a >= 1 GB trace (200 MB in quick mode) and times cat, babeltrace2's
# counter sink and mark stats/view/export on it; 3 runs each.
run reader all "$ROOT/bench/reader/run.sh" "$MODE" "$BUILD" 3

# ---------------------------------------------------------------- pieces of other modules
# bench/eventhandler (issue 6, seed 004): built by bench/CMakeLists.txt.
if [ -x "$B/eventhandler/bench_eventhandler" ]; then
	run eventhandler all "$B/eventhandler/bench_eventhandler" "${OPTS[@]}"
fi
# bench/usdt (seed 003): builds its own programs against this build's libmark.
if [ -x "$ROOT/bench/usdt/run.sh" ]; then
	run usdt all "$ROOT/bench/usdt/run.sh" "$BUILD" "$REPS"
fi

# ---------------------------------------------------------------- the measured code, for the page
ASM=$OUT/asm.txt
{
	for f in loop_empty_out loop_empty_jump loop_empty_immediate loop_empty_generic loop_empty_sdt; do
		objdump -d --disassemble="$f" "$B/bench_disabled" 2>/dev/null | awk -v f="<$f>:" '$2 == f, /^$/'
	done
} >"$ASM"

# ---------------------------------------------------------------- report
END=$(date +%s)
if [ "$MODE" = full ]; then
	PAGE=$ROOT/docs/benchmarks.md PLOTS=$ROOT/docs PREFIX=""
	CMD="make bench"
else
	PAGE=$OUT/benchmarks.md PLOTS=$OUT PREFIX=""
	CMD="make bench-quick"
fi
mkdir -p "$(dirname "$PAGE")"
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
# The compiler CMake used, by its real name ("cc" is gcc on Debian).
CCBIN=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
COMPILER=$("${CCBIN:-cc}" --version 2>/dev/null | head -1)
if "${CCBIN:-cc}" -v 2>&1 | grep -q '^gcc version'; then COMPILER="gcc ${COMPILER#* }"; fi
VIRT=$(grep -qw hypervisor /proc/cpuinfo && echo "virtual machine" || echo "bare metal")
$PY "$ROOT/bench/report.py" --results "$RESULTS" --page "$PAGE" --plots "$PLOTS" --plot-prefix "$PREFIX" \
	--asm "$ASM" \
	--meta "cpu=$CPU" --meta "ncpu=$(nproc)" --meta "virt=$VIRT" --meta "kernel=$(uname -sr)" \
	--meta "compiler=$COMPILER" \
	--meta "date=$(date -u '+%Y-%m-%d %H:%M UTC')" --meta "command=$CMD (./bench/run.sh $MODE)" \
	--meta "mode=$MODE" --meta "reps=$REPS" --meta "duration=$((END - START)) s" \
	--meta "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	--meta "raw=${RESULTS#"$ROOT"/}" ||
	{ echo "bench/run.sh: report.py failed" >&2; exit 1; }
echo
echo "bench/run.sh: $MODE run took $((END - START)) s; page: $PAGE; raw results: $RESULTS"

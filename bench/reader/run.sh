#!/bin/bash
# bench/reader/run.sh MODE BUILD [REPS] - reading a large trace (issue 15).
#
# Records a trace of at least MARK_BENCH_READER_MB MiB (default 1100 in
# full mode, 200 in quick mode) with the real tracer (gen_trace.c under
# `mark record --mode block`), then times on it, REPS times each (default 3):
#   cat            the stream files to /dev/null (the I/O limit)
#   bt2_counter    babeltrace2 -c sink.utils.counter (libbabeltrace2's floor)
#   stats          mark stats
#   view           mark view > /dev/null
#   view_filter    mark view -e rb_req_* > /dev/null
#   view_filter_expr mark view --filter 'i & 1 == 0' > /dev/null
#   export         mark export -o - > /dev/null (Chrome JSON)
#   export_perfetto mark export --format perfetto -o - > /dev/null
#   export_otlp    mark export --format otlp -o - > /dev/null (OTLP/JSON lines)
# then stats_bench.py: stats_pairs (stats --histogram), stats_by (--by path).
# and prints result lines for bench/report.py: events/s, MB/s, seconds and
# peak RSS of each (reader_bench.py measures them with wait4's rusage).
# Environment: MARK_BENCH_READER_MB, MARK_BENCH_READER_DIR (where the trace
# goes; default BUILD/reader-trace; removed at the end unless
# MARK_BENCH_READER_KEEP=1).  Not measured when its filesystem has less
# than 1.5 times the trace size free (df).
set -u
MODE=${1:?usage: run.sh quick|full BUILD [REPS]}
BUILD=${2:?usage: run.sh quick|full BUILD [REPS]}
BUILD=$(cd "$BUILD" && pwd)
REPS=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
case "$MODE" in
full) MB=${MARK_BENCH_READER_MB:-1100} ;;
*) MB=${MARK_BENCH_READER_MB:-200} ;;
esac
MARK=$BUILD/mark
[ -x "$MARK" ] || { echo "S reader all not measured: $MARK is not built"; exit 0; }
DIR=${MARK_BENCH_READER_DIR:-$BUILD/reader-trace}
GEN=$BUILD/reader_gen_trace
# The trace needs MB MiB, and a half more for slack (the tracer's buffers,
# the filesystem): say so rather than fill the disk.
mkdir -p "$(dirname "$DIR")"
FREE=$(df -Pk "$(dirname "$DIR")" | awk 'NR == 2 { print int($4 / 1024) }')
if [ -z "$FREE" ] || [ "$FREE" -lt $((MB * 3 / 2)) ]; then
	echo "S reader all not measured: ${FREE:-?} MiB free in $(dirname "$DIR"), the trace needs $((MB * 3 / 2)) (set MARK_BENCH_READER_DIR or MARK_BENCH_READER_MB)"
	exit 0
fi
cc -O2 -I"$ROOT/include" "$HERE/gen_trace.c" -o "$GEN" -L"$BUILD" -lmark -Wl,-rpath,"$BUILD" -lpthread ||
	{ echo "S reader all not measured: gen_trace.c does not build"; exit 0; }
# ~37 bytes per event on average, 4 events per round, 4 threads
ROUNDS=$((MB * 1024 * 1024 / 37 / 4 / 4 + 1))
rm -rf "$DIR"
"$MARK" record -q --mode block --buffer 4M -o "$DIR" -- "$GEN" "$ROUNDS" 4 ||
	{ echo "S reader all not measured: mark record failed"; exit 0; }
/usr/bin/python3 "$HERE/reader_bench.py" "$MARK" "$DIR" "$REPS"
status=$?
# mark stats with its begin/end pairing, --by and --histogram (stats_pairs, stats_by)
/usr/bin/python3 "$HERE/stats_bench.py" "$MARK" "$DIR" "$REPS" || status=1
[ "${MARK_BENCH_READER_KEEP:-0}" = 1 ] || rm -rf "$DIR"
exit $status

#!/bin/bash
# bench/reader/run.sh on a small trace (issue 15's harness, not its
# speed): it must record the trace itself, print every row it promises
# (wall and CPU events/s, MB/s, seconds, peak RSS for each reader, cat's
# MB/s), and delete the trace at the end.  No timing is asserted.
#     reader_smoke.sh SOURCE_DIR BUILD_DIR
set -u
SRC=${1:?usage: reader_smoke.sh SOURCE_DIR BUILD_DIR}
BUILD=${2:?usage: reader_smoke.sh SOURCE_DIR BUILD_DIR}
[ -x "$BUILD/mark" ] || { echo "SKIP: $BUILD/mark is not built"; exit 77; }
# run.sh builds its traced program with plain cc against the build's
# libmark, which a sanitizer build instruments (the runtime would have to
# come first): the benchmark is for release builds.
if [ -n "${MARK_TEST_SANITIZER:-}" ]; then
	echo "SKIP: bench/reader/run.sh does not run on a $MARK_TEST_SANITIZER-sanitizer build"
	exit 77
fi
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
out=$(MARK_BENCH_READER_MB=4 MARK_BENCH_READER_DIR="$TMP/trace" \
	bash "$SRC/bench/reader/run.sh" quick "$BUILD" 1 2>"$TMP/err")
echo "$out"
fail=0
want_rows="cat:MB_per_s cat:peak_rss"
for r in stats view view_filter export export_perfetto export_otlp; do
	want_rows="$want_rows $r:events_per_s $r:events_per_cpu_s $r:MB_per_s $r:seconds $r:peak_rss"
done
for r in stats_pairs stats_by; do   # stats_bench.py: the begin/end pairing
	want_rows="$want_rows $r:events_per_s $r:events_per_cpu_s $r:seconds $r:peak_rss"
done
if command -v babeltrace2 >/dev/null; then
	want_rows="$want_rows bt2_counter:events_per_s bt2_counter:events_per_cpu_s"
fi
for w in $want_rows; do
	row=${w%%:*} metric=${w#*:}
	if ! grep -Eq "^R reader $row $metric [^ ]+ [0-9.]+\$" <<<"$out"; then
		echo "FAIL: no 'R reader $row $metric' line with one value"
		fail=1
	fi
done
grep -q "^I reader_trace .*: [1-9][0-9]* events" <<<"$out" || { echo "FAIL: no I reader_trace line with the event count"; fail=1; }
grep -q "^S reader" <<<"$out" && { echo "FAIL: a row was not measured"; fail=1; }
[ -e "$TMP/trace" ] && { echo "FAIL: the trace $TMP/trace was not deleted"; fail=1; }
[ $fail = 0 ] || { echo "stderr:"; cat "$TMP/err"; exit 1; }
echo "PASS"

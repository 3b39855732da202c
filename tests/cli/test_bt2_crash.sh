#!/usr/bin/env bash
# Traces the native reader refuses go to libbabeltrace2 (cli/trace_reader.c),
# and libbabeltrace2 2.0 itself crashes on some one-line edits of a real
# trace's metadata: a clock without `freq` (SIGFPE, a division by zero) and
# an event class whose `fields` is misspelt (SIGABRT, a failed precondition).
# It used to take the mark process with it (found by an audit).  `mark view`,
# `mark stats` and `mark export` must instead exit 1 with an error naming the
# trace, and leave no half-written -o FILE behind.  A trace libbabeltrace2
# reads well must still read as before, through a pipe closed early too
# (`mark view | head`: SIGPIPE, as without the isolation, and no error).
#
# A crash in mark's own code while or after libbabeltrace2 reads (made by
# PRELOAD, tests/cli/crash_preload.c) is reported as mark's, not the
# library's (it was blamed on libbabeltrace2: found by a review).
#
#   test_bt2_crash.sh MARK RECORD_TARGET WORKDIR PRELOAD
#
# Exit 0: pass, 1: fail, 77: skipped (the reason is printed).
set -uo pipefail
MARK=$(realpath "$1") TARGET=$(realpath "$2") PRELOAD=$(realpath "$4")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../shell_lib.sh"
fresh_workdir "$3"

run rec timeout 60 "$MARK" record -q -o "$WORK/good" -- "$TARGET" exit 0
[ "$rc" = 0 ] || skip "cannot record a trace (mark record exited with $rc)"
meta=$(echo "$WORK"/good/pid-*/metadata)
[ -f "$meta" ] || fail "no pid-P/metadata in the recorded trace"

# damaged NAME SED_SCRIPT: a copy of the good trace, its metadata edited.
damaged() {
	cp -a "$WORK/good" "$WORK/$1"
	local m
	m=$(echo "$WORK/$1"/pid-*/metadata)
	sed -i "$2" "$m"
	cmp -s "$m" "$meta" && fail "the edit $2 changed nothing in $m"
	return 0
}
# Sanitizer builds: let the crash signals kill the reading child, as
# without a sanitizer (ASan would catch them and exit 1 itself).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:handle_sigill=0"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:handle_sigill=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:handle_sigill=0"
damaged nofreq 's/^\tfreq = .*;$//'
damaged fields '/name = "cli_once"/,/fields := struct/s/fields := struct/fie9ds := struct/'

# refused NAME DIR CMD...: `mark CMD... DIR` exits 1, by itself (not by a
# signal), with an error of mark's on stderr naming DIR.  (The misspelt
# `fields` makes libbabeltrace2 abort in most runs; in some it decodes the
# event as something else and stops on timestamps that go back, an error
# of its own followed by its reasons: either way, not a dead mark.)
refused() {
	local name=$1 dir=$2 err; shift 2
	run "$name" timeout 60 "$MARK" "$@" "$dir"
	[ "$rc" -lt 124 ] || fail "mark $* $dir died of a signal or hung (status $rc)"
	expect_rc 1 "mark $* $dir"
	err=$(grep -F -- "mark: " "$WORK/$name.err" | tail -n 1)
	[ -n "$err" ] || fail "mark $* $dir: no error of mark's on stderr"
	grep -q -F -- "$dir" <<<"$err" || fail "mark $* $dir: the error does not name the trace: $err"
}

for t in nofreq fields; do
	refused "view_$t" "$WORK/$t" view
	refused "stats_$t" "$WORK/$t" stats
	refused "chrome_$t" "$WORK/$t" export --format chrome -o -
	refused "perfetto_$t" "$WORK/$t" export --format perfetto -o "$WORK/$t.pftrace"
	refused "otlp_$t" "$WORK/$t" export --format otlp -o "$WORK/$t.otlp"
	refused "chrome_file_$t" "$WORK/$t" export --format chrome -o "$WORK/$t.json"
	for f in "$t.pftrace" "$t.otlp" "$t.json"; do
		[ ! -e "$WORK/$f" ] && [ ! -e "$WORK/$f.tmp" ] || fail "a failed export left $f or $f.tmp behind"
	done
done

# The good trace through libbabeltrace2: the same bytes as the native reader.
for cmd in view stats "export --format chrome -o -"; do
	# shellcheck disable=SC2086
	MARK_READER=native timeout 60 "$MARK" $cmd "$WORK/good" >"$WORK/native.out" 2>"$WORK/native.err" ||
		fail "mark $cmd (native) failed: $(cat "$WORK/native.err")"
	# shellcheck disable=SC2086
	MARK_READER=bt2 timeout 60 "$MARK" $cmd "$WORK/good" >"$WORK/bt2.out" 2>"$WORK/bt2.err" ||
		fail "mark $cmd (libbabeltrace2) failed: $(cat "$WORK/bt2.err")"
	cmp -s "$WORK/native.out" "$WORK/bt2.out" || fail "mark $cmd: libbabeltrace2's output differs from the native reader's"
	cmp -s "$WORK/native.err" "$WORK/bt2.err" || fail "mark $cmd: libbabeltrace2's stderr differs from the native reader's"
done

# mark's own code crashes: in view's event callback (strftime, the wall
# time of an event) and in stats after the reading (its fflush(stdout)).
# (ASan: our module is preloaded ahead of its runtime, which is fine here.)
crash_mark() {
	local name=$1 crash=$2 want=$3 err; shift 3
	run "$name" timeout 60 env LD_PRELOAD="$PRELOAD" MARK_TEST_CRASH_IN="$crash" MARK_READER=bt2 \
		ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0" "$MARK" "$@" "$WORK/good"
	expect_rc 1 "mark $* good (crashing in $crash)"
	err=$(grep -F -- "mark: " "$WORK/$name.err" | tail -n 1)
	echo "mark $* good, crashing in $crash: $err"
	grep -q -F -- "$want" <<<"$err" || fail "mark $* good, crashing in $crash: want \"$want\" in: $err"
	grep -q -F -- "$WORK/good" <<<"$err" || fail "mark $* good: the error does not name the trace: $err"
	if grep -q -F "libbabeltrace2 crashed" "$WORK/$name.err"; then
		fail "mark $* good: mark's own crash in $crash blamed on libbabeltrace2"
	fi
}
crash_mark view_crash strftime "mark crashed (SIGSEGV) in its own code, handling what libbabeltrace2 read" view
crash_mark stats_crash fflush_stdout "mark crashed (SIGSEGV) in its own code after libbabeltrace2 had read" stats

# A reader that stops early: mark ends by SIGPIPE as it always did (or exits
# 0 if SIGPIPE is ignored), silently: no crash reported for it.
MARK_READER=bt2 timeout 60 "$MARK" view "$WORK/good" 2>"$WORK/pipe.err" | head -n 1 >"$WORK/pipe.out"
st=("${PIPESTATUS[@]}")
echo "\$ MARK_READER=bt2 mark view good | head -n 1 -> ${st[*]}"
[ "${st[0]}" = 141 ] || [ "${st[0]}" = 0 ] || fail "mark view | head: status ${st[0]}, expected 141 (SIGPIPE) or 0"
[ ! -s "$WORK/pipe.err" ] || fail "mark view | head wrote to stderr: $(cat "$WORK/pipe.err")"
[ -s "$WORK/pipe.out" ] || fail "mark view | head printed nothing"

echo "PASS"
exit 0

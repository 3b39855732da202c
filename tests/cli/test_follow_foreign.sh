#!/usr/bin/env bash
# `mark view --follow DIR` on a trace whose `metadata` mark's native reader
# refuses (cli/trace_native.c, fl_add_trace): a foreign CTF trace, or a mark
# trace whose metadata was altered.  --follow reads only mark's own traces,
# so it must say so and exit 1 at once; it used to wait forever, silently
# (found by an audit).  `mark view DIR` reads such a trace (libbabeltrace2).
# A finished mark trace, and one next to a `.metadata.tmp` (a metadata being
# written) or holding a snapshot directory, must still print every event and
# exit 0.  A trace nested deeper than DIR/*/ is refused too (it used to make
# follow wait for ever).  So must one without its .mark-stats whose process
# is gone (it was taken for a process whose recording is starting).
#
#   test_follow_foreign.sh MARK RECORD_TARGET WORKDIR
#
# Exit 0: pass, 1: fail, 77: skipped (the reason is printed).
set -uo pipefail
MARK=$(realpath "$1") TARGET=$(realpath "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../shell_lib.sh"
fresh_workdir "$3"

command -v python3 >/dev/null || skip "no python3 to write the foreign CTF trace (tests/cli/make_ctf.py)"

# follow NAME DIR: `mark view --follow DIR`, bounded: the old code never
# ended, and a test must not hang.  Sets $rc and $secs.
follow() {
	local start=$SECONDS
	run "$1" timeout 20 "$MARK" view --follow "$2"
	secs=$((SECONDS - start))
	[ "$rc" != 124 ] || fail "view --follow $2 still waiting after 20 s (it must end by itself)"
}

# refused NAME DIR WHAT: follow must refuse DIR quickly, exit 1, name WHAT
# (the metadata it refused) and print no event.
refused() {
	follow "$1" "$2"
	expect_rc 1 "view --follow $2"
	[ "$secs" -le 10 ] || fail "view --follow $2 took $secs s to refuse the trace"
	expect_in "$1.err" "$3: not a trace mark wrote"
	expect_in "$1.err" 'only mark.s own traces'
	expect_in "$1.err" "use \`mark view $2\`"
	[ ! -s "$WORK/$1.out" ] || fail "view --follow $2 printed events before refusing the trace"
}

# 1. A foreign CTF trace in DIR itself, and one in DIR/pid-P/ (a process's place).
python3 "$HERE/make_ctf.py" "$WORK/foreign" || fail "make_ctf.py failed"
mkdir -p "$WORK/foreign-sub"
python3 "$HERE/make_ctf.py" "$WORK/foreign-sub/pid-4242" 4242 || fail "make_ctf.py failed"
run view_foreign timeout 60 "$MARK" view "$WORK/foreign"
[ "$rc" = 0 ] && [ -s "$WORK/view_foreign.out" ] ||
	echo "note: mark view cannot read the foreign trace either (exit $rc): checking --follow only"
refused follow_foreign "$WORK/foreign" "$WORK/foreign/metadata"
refused follow_foreign_sub "$WORK/foreign-sub" "$WORK/foreign-sub/pid-4242/metadata"

# 2. A mark trace, finished, as the tracer wrote it: everything, exit 0,
# the same events as `mark view` (follow adds each event's pid "name").
run rec timeout 60 "$MARK" record -q -o "$WORK/good" -- "$TARGET" exit 0
[ "$rc" = 0 ] || skip "cannot record a trace (mark record exited with $rc)"
run view_good timeout 60 "$MARK" view "$WORK/good"
expect_rc 0 "view good"
follow follow_good "$WORK/good"
expect_rc 0 "view --follow of a finished trace"
n=$(wc -l <"$WORK/view_good.out")
[ "$n" -gt 0 ] || fail "mark view printed no event of the recorded trace"
sed -E 's/ pid [0-9]+ "[^"]*"//' "$WORK/follow_good.out" | cmp -s - "$WORK/view_good.out" ||
	fail "view --follow did not print the $n events mark view prints"
expect_in follow_good.err "$n events shown, 0 lost, from 1 trace; the recording ended"

# 3. The same trace next to a process directory holding only `.metadata.tmp`
# (the tracer writes metadata there and renames it): not a trace yet, no error.
cp -a "$WORK/good" "$WORK/starting"
mkdir "$WORK/starting/pid-999999"
printf '/* CTF 1.8 */\ntrace {\n' >"$WORK/starting/pid-999999/.metadata.tmp"
follow follow_starting "$WORK/starting"
expect_rc 0 "view --follow next to a .metadata.tmp"
sed -E 's/ pid [0-9]+ "[^"]*"//' "$WORK/follow_starting.out" | cmp -s - "$WORK/view_good.out" ||
	fail "view --follow next to a .metadata.tmp did not print the $n events"

# 4. A mark trace whose metadata the native reader refuses (an ESC byte in
# procname, as the audit did): `mark view` still reads it, follow refuses.
cp -a "$WORK/good" "$WORK/esc"
meta=$(echo "$WORK"/esc/pid-*/metadata)
[ -f "$meta" ] || fail "no pid-P/metadata in the recorded trace"
sed -i 's/procname = "/procname = "\x1b[31m/' "$meta"
grep -q $'\x1b' "$meta" || fail "could not put an ESC byte into $meta"
run view_esc timeout 60 "$MARK" view "$WORK/esc"
[ "$rc" = 0 ] || echo "note: mark view cannot read the altered trace either (exit $rc)"
refused follow_esc "$WORK/esc" "$meta"

# 5. One refused trace among good ones: the output could not be complete, so
# the whole run is refused before any event is printed.
cp -a "$WORK/good" "$WORK/mixed"
cp -a "$(dirname "$meta")" "$WORK/mixed/pid-999999"
refused follow_mixed "$WORK/mixed" "$WORK/mixed/pid-999999/metadata"

# 6. A foreign trace nested two levels down, DIR/a/b/ (follow reads DIR and
# DIR/*/ only): refused at once, naming it; it used to wait for ever, silently.
# A triggered snapshot, DIR/snapshot-N/pid-P/, is mark's own copy, skipped
# as `mark view` skips it: follow prints the trace's events, once, exit 0.
mkdir -p "$WORK/nested/a"
python3 "$HERE/make_ctf.py" "$WORK/nested/a/b" || fail "make_ctf.py failed"
follow follow_nested "$WORK/nested"
expect_rc 1 "view --follow of a directory with a trace nested two levels down"
[ "$secs" -le 10 ] || fail "view --follow took $secs s to refuse the nested trace"
expect_in follow_nested.err "$WORK/nested/a/b/metadata: a trace nested below $WORK/nested/\*/"
expect_in follow_nested.err "use \`mark view $WORK/nested\`"
[ ! -s "$WORK/follow_nested.out" ] || fail "view --follow printed events of the nested trace"
cp -a "$WORK/good" "$WORK/snap"
mkdir "$WORK/snap/snapshot-1"
cp -a "$(dirname "$meta")" "$WORK/snap/snapshot-1/"
follow follow_snap "$WORK/snap"
expect_rc 0 "view --follow of a trace holding a snapshot directory"
sed -E 's/ pid [0-9]+ "[^"]*"//' "$WORK/follow_snap.out" | cmp -s - "$WORK/view_good.out" ||
	fail "view --follow of a trace holding a snapshot did not print the $n events once"

# 7. The finished trace without its statistics (.mark-stats: copied without
# dot files, or removed), its process gone: follow prints every event and
# exits 0.  It took such a process for one whose recording is starting and
# waited for ever.
cp -a "$WORK/good" "$WORK/nostats"
rm -f "$WORK"/nostats/pid-*/.mark-stats
pid=$(basename "$(dirname "$meta")")
pid=${pid#pid-}
! kill -0 "$pid" 2>/dev/null || skip "process $pid, recorded and exited, runs again (a reused pid)"
follow follow_nostats "$WORK/nostats"
expect_rc 0 "view --follow of a finished trace without .mark-stats"
sed -E 's/ pid [0-9]+ "[^"]*"//' "$WORK/follow_nostats.out" | cmp -s - "$WORK/view_good.out" ||
	fail "view --follow of a finished trace without .mark-stats did not print the $n events"
expect_in follow_nostats.err "$n events shown, 0 lost, from 1 trace; the recording ended"

echo "PASS"
exit 0

#!/usr/bin/env bash
# `-o ''` (cli/output.c, output_file_open): an empty output path is refused
# before anything is written, saying what to give instead.  It used to
# write the whole output to ./.tmp (the empty path plus ".tmp") and then
# fail to rename that to "".
#
#   test_output_empty.sh MARK RECORD_TARGET WORKDIR
#
# Exit 0: pass, 1: fail, 77: skipped (the reason is printed).
set -uo pipefail
MARK=$(realpath "$1") TARGET=$(realpath "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../shell_lib.sh"
fresh_workdir "$3"

run rec timeout 60 "$MARK" record -q -o "$WORK/t" -- "$TARGET" exit 0
[ "$rc" = 0 ] || skip "cannot record a trace to export (mark record exited with $rc)"

for format in chrome perfetto otlp; do
	mkdir -p "$WORK/cwd-$format"
	# The working directory is where the empty path put its ".tmp".
	(cd "$WORK/cwd-$format" && exec timeout 60 "$MARK" export --format "$format" -o '' "$WORK/t") \
		>"$WORK/$format.out" 2>"$WORK/$format.err"
	rc=$?
	echo "\$ mark export --format $format -o '' -> $rc"; sed 's/^/  | /' "$WORK/$format.out" "$WORK/$format.err"
	[ "$rc" != 0 ] || fail "export --format $format -o '' succeeded"
	[ "$rc" -lt 128 ] || fail "export --format $format -o '' died of a signal (status $rc)"
	expect_in "$format.err" 'empty'
	expect_in "$format.err" 'give -o'
	expect_not_in "$format.err" 'cannot rename'
	[ -z "$(ls -A "$WORK/cwd-$format")" ] || fail "export --format $format -o '' left $(ls -A "$WORK/cwd-$format") behind"
	[ ! -s "$WORK/$format.out" ] || fail "export --format $format -o '' wrote to standard output"
done

# mark dtrace -h -o '' (the same output_file_open) is refused the same way.
printf 'provider p {\n\tprobe q(int);\n};\n' >"$WORK/p.d"
mkdir -p "$WORK/cwd-dtrace"
(cd "$WORK/cwd-dtrace" && exec timeout 60 "$MARK" dtrace -s "$WORK/p.d" -h -o '') >"$WORK/dtrace.out" 2>"$WORK/dtrace.err"
rc=$?
echo "\$ mark dtrace -s p.d -h -o '' -> $rc"; sed 's/^/  | /' "$WORK/dtrace.out" "$WORK/dtrace.err"
[ "$rc" != 0 ] || fail "dtrace -h -o '' succeeded"
expect_in dtrace.err 'empty'
[ -z "$(ls -A "$WORK/cwd-dtrace")" ] || fail "dtrace -h -o '' left $(ls -A "$WORK/cwd-dtrace") behind"

# A real path still works (the check refuses only the empty one).
run good timeout 60 "$MARK" export -o "$WORK/out.json" "$WORK/t"
expect_rc 0 "export -o FILE"
[ -s "$WORK/out.json" ] || fail "export -o FILE wrote no $WORK/out.json"
echo "PASS"
exit 0

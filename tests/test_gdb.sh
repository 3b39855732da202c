#!/usr/bin/env bash
# Patching does not break gdb: a program whose threads execute sites while
# they are armed and disarmed 3,000 times runs to completion under gdb, and
# a gdb breakpoint still stops it (mark raises no SIGTRAP and installs no
# handler for it, so nothing can eat it or reach gdb).  Cross builds run it
# under qemu-user's gdb stub (gdb_lib.sh).
set -u
target=$1
. "$(dirname "$0")/gdb_lib.sh"
gdb_setup
out=$(gdb_run 'break gdb_checkpoint' $GDB_START 'print n' continue -- "$target")
rc=$?
echo "$out" | tail -n 15
if echo "$out" | grep -q "ptrace: Operation not permitted"; then echo "SKIP: ptrace is not permitted here"; exit 77; fi
fail=0
echo "$out" | grep -q "Breakpoint 1, gdb_checkpoint" || { echo "FAIL: the gdb breakpoint did not stop the program"; fail=1; }
echo "$out" | grep -q "gdb_target done" || { echo "FAIL: the program did not finish"; fail=1; }
echo "$out" | grep -q "exited normally" || { echo "FAIL: the program did not exit normally under gdb"; fail=1; }
echo "$out" | grep -qi "received signal SIG" && { echo "FAIL: a signal reached gdb"; fail=1; }
[ $rc -eq 0 ] || { echo "FAIL: gdb exited with $rc"; fail=1; }
exit $fail

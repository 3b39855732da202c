#!/usr/bin/env bash
# gdb lists every marker as a stap probe and stops at one with
# `break -probe-stap PROVIDER:NAME`, with the arguments readable as
# $_probe_argN.  gdb sets the semaphore of the probes it breaks on, so a
# generic site stops under gdb alone; jump/immediate sites stop once the
# marker is armed (mark_arm() here; MARK_ENABLE=... or `mark enable` too).
#
# Cross builds (make test-aarch64): the program runs under qemu-user's gdb
# stub (gdb_lib.sh) and gdb-multiarch reads the probes in the target's
# argument syntax ("-8@x1", "8@[sp, 96]").
set -u
bin=$1 kind=$2
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/../gdb_lib.sh"
gdb_setup

out=$($GDB -batch -nx -ex 'info probes' "$bin" 2>&1); echo "$out"
for p in "mark +usdt_hit" "mark +usdt_noargs" "usdtprov +prov_hit"; do
	echo "$out" | grep -Eq "^stap +$p " || fail "gdb 'info probes' does not list $p"
done

mode=arm
[ "$kind" = generic ] && mode=run
out=$(gdb_run 'break -probe-stap mark:usdt_hit' $GDB_START continue continue \
	'printf "argc=%d a0=%d a1=%ld a2=%s a4=%llu\n", $_probe_argc, $_probe_arg0, $_probe_arg1, (char *)$_probe_arg2, $_probe_arg4' \
	delete continue -- "$bin" $mode 5)
echo "$out" | tail -n 12
echo "$out" | grep -q "ptrace: Operation not permitted" && skip "ptrace is not permitted here"
n=$(echo "$out" | grep -c "hit Breakpoint 1")
[ "$n" = 3 ] || fail "gdb stopped $n times at mark:usdt_hit, expected 3"
echo "$out" | grep -q "argc=5 a0=2 a1=-6 a2=usdt-string a4=2000000014" || fail "gdb read wrong probe arguments"
echo "$out" | grep -q "done 5" || fail "the program did not finish under gdb"
echo "$out" | grep -q "exited normally" || fail "the program did not exit normally"
echo "ok: gdb ($kind)"

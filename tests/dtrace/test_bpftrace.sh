#!/usr/bin/env bash
# A probe from a .d file keeps the name systemtap's dtrace gives it, so an
# existing bpftrace script "usdt:BIN:basic:transaction__done" still works,
# and it reads the string argument (NULL arrives as "(null)").
set -u
bin=$1
. "$(dirname "$0")/../usdt/common.sh"
command -v bpftrace >/dev/null || skip "bpftrace is not installed (apt-get install bpftrace)"
need_root
need_tracefs
ulimit -l unlimited 2>/dev/null || ulimit -l 8192 2>/dev/null
list=$(bpftrace -l "usdt:$bin:basic:*" 2>&1); echo "$list"
echo "$list" | grep -q "usdt:$bin:basic:transaction__start$" || fail "bpftrace -l does not show basic:transaction__start"
# The program (generic sites) calls transaction-done(17, NULL) three times:
# disarmed, armed, disarmed again.  Attaching bpftrace sets the semaphore,
# which enables a generic site by itself, so bpftrace sees all three.
out=$(timeout 120 bpftrace -e 'usdt:'"$bin"':basic:transaction__done { @[arg0, str(arg1)] = count(); }' -c "$bin" 2>&1)
echo "$out"
echo "$out" | grep -q '^@\[17, (null)\]: 3$' || fail "bpftrace did not see transaction__done(17, \"(null)\") exactly 3 times"
echo "ok"

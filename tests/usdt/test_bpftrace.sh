#!/usr/bin/env bash
# bpftrace sees every marker as a USDT probe, with its arguments, and counts
# exact hits.
#   generic sites: attaching alone enables the site (the kernel increments the
#     semaphore, which is the site's flag) and detaching disables it again;
#   jump/immediate sites: the documented step is arming the marker:
#     MARK_ENABLE=GLOB in the environment, `mark enable PID GLOB`, or
#     mark_arm() in the program (all three tested); without it the NOP never
#     jumps and bpftrace counts 0.
set -u
bin=$1 kind=$2 mark=${3:-}
. "$(dirname "$0")/common.sh"
command -v bpftrace >/dev/null || skip "bpftrace is not installed (apt-get install bpftrace)"
need_root
need_tracefs
ulimit -l unlimited 2>/dev/null || ulimit -l 8192 2>/dev/null

list=$(bpftrace -l "usdt:$bin:*" 2>&1) || fail "bpftrace -l failed: $list"
echo "$list"
for p in mark:usdt_hit mark:usdt_noargs usdtprov:prov_hit; do
	echo "$list" | grep -q "usdt:$bin:$p\$" || fail "bpftrace -l does not list $p"
done

N=1000
prog='usdt:'"$bin"':mark:usdt_hit { @n = count(); @sum = sum(arg0); @min1 = min(arg1);
  if (str(arg2) == "usdt-string") { @str = count(); }
  if (arg4 == (uint64)arg0 * 1000000007) { @big = count(); } }
usdt:'"$bin"':usdtprov:prov_hit { @prov = sum(arg0); }'

run_bpftrace() {   # MODE -> prints the maps
	timeout 120 bpftrace -e "$prog" -c "$bin $1 $N" 2>&1
}
check_counts() {   # OUTPUT EXPECTED_N
	local out=$1 n=$2
	if [ "$n" = 0 ]; then
		echo "$out" | grep -q '^@n: [1-9]' && fail "bpftrace counted hits of a disarmed $kind site"
		return 0
	fi
	echo "$out" | grep -q "^@n: $n\$" || fail "expected @n: $n"
	echo "$out" | grep -q "^@sum: $((n * (n - 1) / 2))\$" || fail "arg0 values wrong"
	echo "$out" | grep -q "^@min1: $((-3 * (n - 1)))\$" || fail "arg1 (negative long) wrong"
	echo "$out" | grep -q "^@str: $n\$" || fail "arg2 (string) wrong"
	echo "$out" | grep -q "^@big: $n\$" || fail "arg4 (unsigned long long) wrong"
	echo "$out" | grep -q "^@prov: 42\$" || fail "provider usdtprov probe did not fire with 42"
}

if [ "$kind" = generic ]; then
	out=$(run_bpftrace run); echo "$out"
	check_counts "$out" $N
	# Attach to a running process, then detach: the semaphore goes 0 -> 1 -> 0.
	log=$(mktemp); trap 'rm -f "$log"' EXIT
	"$bin" wait-sem 50 >"$log" 2>&1 &
	pid=$!
	sleep 0.3
	out=$(timeout 60 bpftrace -p $pid -e 'usdt:'"$bin"':mark:usdt_hit { @n = count(); } interval:s:3 { exit(); }' 2>&1)
	wait $pid; rc=$?
	echo "$out"; cat "$log"
	[ $rc = 0 ] || fail "the target did not see attach and detach (exit $rc)"
	# One count per note sharing the semaphore: a compiler that duplicates the
	# site (inlining, cloning) gives several locations, each counted.
	grep -q "attached: semaphore = [1-9]" "$log" || fail "attaching did not raise the semaphore"
	grep -q "detached: semaphore = 0" "$log" || fail "detaching did not reset the semaphore"
	echo "$out" | grep -q "^@n: 50\$" || fail "expected 50 hits while attached"
else
	out=$(run_bpftrace run); echo "$out"
	check_counts "$out" 0
	out=$(run_bpftrace arm); echo "$out"
	check_counts "$out" $N
	echo "-- MARK_ENABLE=usdt_*,usdtprov:*"
	out=$(MARK_ENABLE='usdt_*,usdtprov:*' run_bpftrace run); echo "$out"
	check_counts "$out" $N
	if [ -n "$mark" ]; then
		echo "-- mark enable PID usdt_hit, bpftrace attached to the running process"
		log=$(mktemp); trap 'rm -f "$log"' EXIT
		"$bin" wait-armed 50 >"$log" 2>&1 &
		pid=$!
		timeout 60 bpftrace -p $pid -e 'BEGIN { printf("ready\n"); } usdt:'"$bin"':mark:usdt_hit { @n = count(); }
			interval:s:3 { exit(); }' >"$log.bt" 2>&1 &
		bpid=$!
		# BEGIN runs once every probe is attached.
		for _ in $(seq 200); do grep -q '^ready' "$log.bt" && break; sleep 0.1; done
		"$mark" enable $pid usdt_hit || { kill $pid; fail "mark enable $pid usdt_hit failed"; }
		wait $pid; rc=$?
		wait $bpid
		bt=$(cat "$log.bt"); rm -f "$log.bt"
		cat "$log"; echo "$bt"
		[ $rc = 0 ] || fail "the target never saw usdt_hit armed"
		echo "$bt" | grep -q "^@n: 50\$" || fail "expected 50 hits after mark enable"
	fi
fi
echo "ok: bpftrace ($kind)"

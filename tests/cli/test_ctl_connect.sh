#!/usr/bin/env bash
# How the control commands reach a process's agent (ctl_connect in
# cli/control.c), against sockets that are not good agents
# (tests/cli/fake_listener.py, at DIR/<its own pid>.sock):
#
#   test_ctl_connect.sh CASE MARK WORKDIR
#
#   full_queue  the listener never accepts and its queue of pending
#               connections is full (a stopped or wedged process): `mark
#               list/enable/snapshot/record --pid/ps` each give up after the
#               connect timeout (3 s) with a message saying the process is not
#               answering, instead of hanging in connect() (before the fix:
#               for ever; here cut at 20 s by timeout(1))
#   full_many   four such listeners: `mark ps` asks them at once and gives
#               up on all four within about one connect timeout (before:
#               one after the other, 4 x 3 s, so a user's wedged processes
#               held root's `mark ps` as long as they liked)
#   peer_uid    (root) the socket, its directory and the process are
#               right, but the listener's SO_PEERCRED uid is another user's:
#               refused after connecting, before anything is sent
#
# The sockets are private to the test (XDG_RUNTIME_DIR in WORKDIR).
# Exit 0: pass, 1: fail, 77: skipped (the reason is printed).
set -uo pipefail
case_name=$1 MARK=$(realpath "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../shell_lib.sh"
fresh_runtime_workdir "$3"
mkdir -m 0700 "$SOCKDIR" || fail "cannot create $SOCKDIR"

# start_fake MODE ARGS...: sets FPID once the fake listener is ready.
start_fake() {
	/usr/bin/python3 "$HERE/fake_listener.py" "$1" "$SOCKDIR" "${@:2}" >"$WORK/fake.out" 2>&1 &
	FPID=$!
	PIDS+=("$FPID")
	for _ in $(seq 600); do   # 30 s: a bound on a starved machine only
		grep -q "^ready" "$WORK/fake.out" && break
		kill -0 "$FPID" 2>/dev/null || fail "the fake listener failed: $(cat "$WORK/fake.out")"
		sleep 0.05
	done
	grep -q "^ready" "$WORK/fake.out" || fail "the fake listener did not start"
	[ -S "$SOCKDIR/$FPID.sock" ] || fail "no socket $SOCKDIR/$FPID.sock"
}
# timed NAME CMD...: run (shell_lib.sh) and set $ms to how long it took.
timed() {
	local t0 t1
	t0=$(date +%s%N)
	run "$@"
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	echo "  ($ms ms)"
}

case $case_name in
full_queue)
	start_fake full
	cat "$WORK/fake.out"
	for cmd in "list $FPID" "enable $FPID x" "snapshot $FPID -o $WORK/snap" "record --pid $FPID -o $WORK/rec -d 1 -q"; do
		name=${cmd%% *}
		# shellcheck disable=SC2086
		timed "$name" timeout 20 "$MARK" $cmd
		[ "$rc" != 124 ] || fail "mark $cmd hung in connect() on an agent socket whose queue is full"
		expect_rc 1 "mark $cmd on an agent that does not accept"
		expect_in "$name.err" "process $FPID (python3) is not answering"
		expect_in "$name.err" "is it stopped or busy?"
		expect_in "$name.err" "$SOCKDIR/$FPID.sock"
		[ "$ms" -ge 2500 ] || fail "mark $cmd gave up after $ms ms, before the 3 s connect timeout"
		[ "$ms" -lt 10000 ] || fail "mark $cmd took $ms ms to give up (the connect timeout is 3 s)"
	done
	# `mark ps` lists it (one non-blocking probe: alive), cannot ask it,
	# says why, and finishes.
	timed ps timeout 20 "$MARK" ps
	[ "$rc" != 124 ] || fail "mark ps hung on an agent socket whose queue is full"
	expect_rc 0 "mark ps"
	expect_in ps.err "process $FPID (python3) is not answering"
	[ -S "$SOCKDIR/$FPID.sock" ] || fail "mark ps removed the socket of a live listener"
	;;
full_many)
	fakes=()
	for _ in 1 2 3 4; do
		start_fake full
		fakes+=("$FPID")
	done
	timed ps timeout 60 "$MARK" ps
	[ "$rc" != 124 ] || fail "mark ps hung on agent sockets whose queues are full"
	expect_rc 0 "mark ps"
	for f in "${fakes[@]}"; do
		expect_in ps.err "process $f (python3) is not answering"
	done
	# One after the other: at least 4 x 3 s.  At once: one 3 s timeout,
	# plus the other agents on this machine and a loaded machine's delays.
	[ "$ms" -lt 8000 ] || fail "mark ps took $ms ms over four agents that do not accept (one after the other?)"
	;;
peer_uid)
	[ "$(id -u)" = 0 ] || skip "listening as another uid needs root"
	start_fake uid 65534 4242
	run list timeout 20 "$MARK" list "$FPID"
	expect_rc 1 "mark list through a socket answered by another uid"
	expect_in list.err "refusing $SOCKDIR/$FPID.sock: it is answered by uid 65534, not by uid 4242 of process $FPID"
	;;
*)
	fail "unknown case $case_name"
	;;
esac
echo "PASS: $case_name"
exit 0

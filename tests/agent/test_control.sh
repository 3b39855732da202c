#!/usr/bin/env bash
# The control commands against real running processes.
#
#   test_control.sh CASE MARK AGENT_TARGET WORKDIR
#
# Each case starts agent_target (tests/agent/agent_target.c) processes with
# XDG_RUNTIME_DIR pointing into WORKDIR, so their sockets are private to the
# test, and drives them with the `mark` command.  Exit 0: pass, 1: fail,
# 77: skipped (the reason is printed, starting with "SKIP:").
set -uo pipefail
case_name=$1 MARK=$2 TARGET=$3 WORK=$4
rm -rf "$WORK"
mkdir -p "$WORK/xdg"
chmod 0700 "$WORK/xdg"
export XDG_RUNTIME_DIR=$WORK/xdg
SOCKDIR=$XDG_RUNTIME_DIR/mark
cd "$WORK" || exit 1

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
# run NAME CMD...: run, keep stdout/stderr/status in $WORK/NAME.{out,err}, $rc
run() {
	local name=$1; shift
	"$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
	rc=$?
	echo "\$ ${*##*/} -> $rc"; sed 's/^/  | /' "$WORK/$name.out" "$WORK/$name.err"
}
expect_rc() { [ "$rc" = "$1" ] || fail "$2: exit status $rc, expected $1"; }
expect_in() { grep -q -- "$2" "$WORK/$1" || fail "$1 does not contain \"$2\""; }
expect_not_in() { ! grep -q -- "$2" "$WORK/$1" || fail "$1 contains \"$2\""; }

# start_target ARGS...: sets TPID, waits for its agent socket.
start_target() {
	"$TARGET" "$@" >"$WORK/target.out" 2>"$WORK/target.err" &
	TPID=$!
	PIDS+=("$TPID")
	wait_socket "$TPID"
}
wait_socket() {
	for _ in $(seq 100); do
		[ -S "$SOCKDIR/$1.sock" ] && return 0
		sleep 0.05
	done
	fail "no agent socket for pid $1 in $SOCKDIR"
}
# stop_target: SIGTERM and require a clean exit (the program stayed healthy).
stop_target() {
	kill -TERM "$TPID" 2>/dev/null
	wait "$TPID"
	local st=$?
	[ "$st" = 0 ] || fail "the target exited with status $st (unhealthy)"
	[ ! -e "$SOCKDIR/$TPID.sock" ] || fail "socket $SOCKDIR/$TPID.sock left after exit"
}
alive() { kill -0 "$1" 2>/dev/null; }
# A trace directory babeltrace2 reads completely; prints the event count.
trace_events() {
	command -v babeltrace2 >/dev/null || skip "babeltrace2 is not installed"
	babeltrace2 "$1" >"$WORK/bt.out" 2>"$WORK/bt.err" || { cat "$WORK/bt.err" >&2; fail "babeltrace2 cannot read $1"; }
	grep -c "$2" "$WORK/bt.out"
}
# Skip the recording cases when this libmark has no tracer.
need_tracer() {
	run probe_tracer "$MARK" record --pid "$TPID" -e agent_tick -o "$WORK/probe-trace" -d 0.2 -q
	if grep -q "has no tracer" "$WORK/probe_tracer.err"; then skip "this libmark was built without the tracer"; fi
	if grep -q "unknown option\|unexpected argument" "$WORK/probe_tracer.err"; then
		skip "\`mark record\` does not dispatch --pid to cli_record_pid yet"
	fi
}

case $case_name in
list_enable_disable)
	start_target
	run ps "$MARK" ps
	expect_rc 0 "mark ps"
	expect_in ps.out "^ *$TPID  *3 .*agent_target"
	run list "$MARK" list "$TPID"
	expect_rc 0 "mark list PID"
	expect_in list.out "NAME.*FORMAT.*KIND.*LOCATION.*ARMED.*PROBES.*HITS"
	expect_in list.out 'agent_tick  *"%u"  *[a-z]*  *.*agent_target.c:[0-9]*  *no  *0'
	expect_in list.out 'agent_net_rx  *"%u %s"'
	run enable "$MARK" enable "$TPID" 'agent_*'
	expect_rc 0 "mark enable"
	expect_in enable.out "agent_\*: 3 sites armed (3 markers matched) in process $TPID"
	run list2 "$MARK" list "$TPID" 'agent_n*'
	expect_in list2.out 'agent_net_rx .* yes '
	expect_not_in list2.out agent_tick
	run again "$MARK" enable "$TPID" agent_tick
	expect_in again.out "agent_tick: 0 sites armed (1 marker matched)"
	run disable "$MARK" disable "$TPID" agent_tick agent_other
	expect_rc 0 "mark disable"
	expect_in disable.out "agent_tick: 1 site disarmed"
	expect_in disable.out "agent_other: 1 site disarmed"
	run list3 "$MARK" list "$TPID"
	expect_in list3.out 'agent_tick .* no '
	expect_in list3.out 'agent_net_rx .* yes '
	run ps2 "$MARK" ps
	expect_in ps2.out "^ *$TPID  *3  *3  *1 "
	stop_target
	;;
errors)
	start_target
	run nomatch "$MARK" enable "$TPID" 'no_such_*'
	expect_rc 1 "enable with a glob matching nothing"
	expect_in nomatch.err "no marker matches \"no_such_\*\" in process $TPID"
	run nomatch_list "$MARK" list "$TPID" 'no_such_*'
	expect_rc 1 "list with a glob matching nothing"
	expect_in nomatch_list.err "no marker matches"
	run partly "$MARK" disable "$TPID" agent_tick nothing_here
	expect_rc 1 "disable with one glob matching nothing"
	expect_in partly.out "agent_tick: 0 sites disarmed"
	expect_in partly.err "no marker matches \"nothing_here\""
	# A PID that no longer exists.
	sleep 0 & dead=$!; wait $dead
	run unknown "$MARK" list "$dead"
	expect_rc 1 "list of a dead PID"
	expect_in unknown.err "no process with PID $dead"
	run notapid "$MARK" enable abc agent_tick
	expect_rc 2 "enable with a bad PID"
	expect_in notapid.err '"abc" is not a process ID'
	run usage "$MARK" enable "$TPID"
	expect_rc 2 "enable without a glob"
	# A process without mark.
	sleep 30 & nomark=$!
	PIDS+=("$nomark")
	for _ in $(seq 100); do [ "$(cat /proc/$nomark/comm)" = sleep ] && break; sleep 0.02; done
	run nomark "$MARK" list "$nomark"
	expect_rc 1 "list of a process without mark"
	expect_in nomark.err "process $nomark (sleep) has no mark agent"
	# A process that exits in the middle of a command: a fake agent that
	# reads the request and exits without answering.
	/usr/bin/python3 - "$SOCKDIR" >"$WORK/fake.out" 2>&1 <<'PY' &
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
path = os.path.join(d, "%d.sock" % os.getpid())
s.bind(path); os.chmod(path, 0o600); s.listen(1)
print("listening", flush=True)
c, _ = s.accept(); c.recv(4096)
os.unlink(path)
os._exit(0)
PY
	fake=$!
	for _ in $(seq 100); do [ -S "$SOCKDIR/$fake.sock" ] && break; sleep 0.05; done
	run midway "$MARK" list "$fake"
	expect_rc 1 "list of a process exiting mid-command"
	grep -q "exited during the command\|closed the connection without a reply" "$WORK/midway.err" ||
		fail "no clear message for a process exiting mid-command"
	wait "$fake"
	for cmd in ps list enable disable snapshot; do
		run help_$cmd "$MARK" $cmd --help
		expect_rc 0 "mark $cmd --help"
		expect_in help_$cmd.out "usage: mark"
	done
	run help_record "$MARK" record --pid 1 --help
	if grep -q "unknown option" "$WORK/help_record.err"; then
		echo "note: \`mark record\` does not dispatch --pid yet; its --help is not checked"
	else
		expect_rc 0 "mark record --pid --help"
		expect_in help_record.out "usage: mark record --pid PID"
	fi
	stop_target
	;;
record)
	start_target
	need_tracer
	run enable "$MARK" enable "$TPID" agent_other
	run rec "$MARK" record --pid "$TPID" -e agent_tick -e 'agent_net*' -o "$WORK/trace" --duration 1
	expect_rc 0 "mark record --pid"
	expect_in rec.err "trace written to $WORK/trace"
	n=$(trace_events "$WORK/trace" agent_tick)
	[ "$n" -gt 0 ] || fail "no agent_tick event in the trace"
	m=$(trace_events "$WORK/trace" agent_net_rx)
	[ "$m" -gt 0 ] || fail "no agent_net_rx event in the trace"
	! grep -q agent_other "$WORK/bt.out" || fail "agent_other was recorded without -e"
	echo "trace: $n agent_tick, $m agent_net_rx events"
	# What the recording armed is disarmed again; the rest is untouched.
	run list "$MARK" list "$TPID"
	expect_in list.out 'agent_tick .* no '
	expect_in list.out 'agent_net_rx .* no '
	expect_in list.out 'agent_other .* yes '
	run ps "$MARK" ps
	expect_in ps.out "^ *$TPID .* no  "
	# On a terminal: the live line of `mark record -- CMD`.
	if command -v script >/dev/null; then
		script -qec "'$MARK' record --pid $TPID -e agent_tick -o '$WORK/trace-tty' -d 1.2" /dev/null \
			>"$WORK/tty.out" 2>&1 </dev/null
		tr '\r' '\n' <"$WORK/tty.out" | grep -a "events (" | tail -n 2
		tr '\r' '\n' <"$WORK/tty.out" | grep -aq "mark: [1-9][0-9]* events ([0-9]*/s), [0-9]* lost" ||
			fail "no live line with a growing event count on a terminal"
	else
		echo "note: script(1) is missing; the live line on a terminal is not checked"
	fi
	run nomatch "$MARK" record --pid "$TPID" -e 'zzz*' -o "$WORK/t2" -d 1
	expect_rc 1 "record with a glob matching nothing"
	expect_in nomatch.err "no marker matches \"zzz\*\""
	stop_target
	;;
record_exit)
	start_target --exit-after 1500
	need_tracer
	run rec "$MARK" record --pid "$TPID" -e 'agent_*' -o "$WORK/trace" --duration 20
	expect_rc 0 "mark record --pid of a process that exits"
	expect_in rec.err "exited during the recording"
	n=$(trace_events "$WORK/trace" agent_tick)
	[ "$n" -gt 0 ] || fail "no events in the trace of the exited process"
	echo "trace of the exited process: $n agent_tick events"
	wait "$TPID" || fail "the target did not exit cleanly"
	;;
record_target_killed)
	# The process dies by SIGKILL mid-recording: its buffers are recovered
	# into a complete trace.
	start_target
	need_tracer
	"$MARK" record --pid "$TPID" -e 'agent_*' -o "$WORK/trace" --duration 30 -q >"$WORK/rec.out" 2>"$WORK/rec.err" &
	rec=$!
	PIDS+=("$rec")
	for _ in $(seq 100); do "$MARK" ps 2>/dev/null | grep -q "^ *$TPID .*yes (mark pid $rec)" && break; sleep 0.05; done
	sleep 0.5
	kill -KILL "$TPID"
	wait "$rec"; rc=$?
	cat "$WORK/rec.err"
	[ "$rc" = 0 ] || fail "mark record --pid exited with $rc when the process was killed"
	grep -q "completed the trace of process $TPID\|exited during the recording" "$WORK/rec.err" ||
		fail "mark record --pid did not report the process's death"
	n=$(trace_events "$WORK/trace" agent_tick)
	[ "$n" -gt 0 ] || fail "no events in the trace of the killed process"
	echo "trace of the killed process: $n agent_tick events"
	;;
record_kill_controller)
	start_target
	need_tracer
	"$MARK" record --pid "$TPID" -e 'agent_*' -o "$WORK/trace" -q >"$WORK/rec.out" 2>&1 &
	rec=$!
	PIDS+=("$rec")
	for _ in $(seq 100); do "$MARK" ps 2>/dev/null | grep -q "^ *$TPID .*yes (mark pid $rec)" && break; sleep 0.05; done
	run ps "$MARK" ps
	expect_in ps.out "^ *$TPID .*yes (mark pid $rec)"
	sleep 0.5
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	# The agent sees the connection close and ends the session.
	for _ in $(seq 100); do "$MARK" ps 2>/dev/null | grep -q "^ *$TPID .* no  " && break; sleep 0.05; done
	run ps2 "$MARK" ps
	expect_in ps2.out "^ *$TPID  *3  *3  *0  *no "
	run list "$MARK" list "$TPID"
	expect_not_in list.out ' yes '
	alive "$TPID" || fail "the target died"
	n=$(trace_events "$WORK/trace" agent_tick)
	[ "$n" -gt 0 ] || fail "the abandoned recording left no readable events"
	echo "abandoned recording: $n agent_tick events, trace readable"
	# The process can be recorded again.
	run again "$MARK" record --pid "$TPID" -e agent_tick -o "$WORK/trace2" -d 0.5 -q
	expect_rc 0 "a new recording after the killed controller"
	stop_target
	;;
second_controller)
	start_target
	need_tracer
	"$MARK" record --pid "$TPID" -e 'agent_*' -o "$WORK/trace" >"$WORK/rec.out" 2>&1 &
	rec=$!
	PIDS+=("$rec")
	for _ in $(seq 100); do "$MARK" ps 2>/dev/null | grep -q "^ *$TPID .*yes" && break; sleep 0.05; done
	run second "$MARK" record --pid "$TPID" -e agent_tick -o "$WORK/trace2" -d 1
	expect_rc 1 "a second controller"
	expect_in second.err "already being recorded by another controller"
	[ ! -e "$WORK/trace2" ] || fail "the refused recording left a directory"
	# While it records, `mark list` knows the hits of the recorded markers.
	for _ in $(seq 40); do
		"$MARK" list "$TPID" agent_tick 2>/dev/null | grep -q 'agent_tick .* [1-9][0-9]*$' && break
		sleep 0.05
	done
	run hits "$MARK" list "$TPID" agent_tick
	expect_in hits.out 'agent_tick .* [1-9][0-9]*$'
	kill -INT "$rec"
	wait "$rec"
	st=$?
	cat "$WORK/rec.out"
	[ "$st" = 0 ] || fail "the first controller exited with $st after SIGINT"
	n=$(trace_events "$WORK/trace" agent_tick)
	[ "$n" -gt 0 ] || fail "no events from the first controller"
	stop_target
	;;
fork)
	[ "${MARK_TEST_SANITIZER:-}" != thread ] ||
		skip "ThreadSanitizer aborts a forked child that starts a thread, so TSan builds start no agent in forked children"
	start_target --fork
	for _ in $(seq 100); do grep -q "^child" "$WORK/target.out" && break; sleep 0.05; done
	child=$(sed -n 's/^child //p' "$WORK/target.out")
	[ -n "$child" ] || fail "the target did not fork"
	PIDS+=("$child")
	wait_socket "$child"
	run ps "$MARK" ps
	expect_in ps.out "^ *$TPID .*agent_target"
	expect_in ps.out "^ *$child .*agent_target"
	run enable "$MARK" enable "$child" agent_tick
	expect_in enable.out "1 site armed"
	run lp "$MARK" list "$TPID" agent_tick
	expect_in lp.out 'agent_tick .* no '
	run lc "$MARK" list "$child" agent_tick
	expect_in lc.out 'agent_tick .* yes '
	stop_target
	for _ in $(seq 100); do [ -e "$SOCKDIR/$child.sock" ] || break; sleep 0.05; done
	[ ! -e "$SOCKDIR/$child.sock" ] || fail "the child's socket was left behind"
	;;
other_user)
	[ "$(id -u)" = 0 ] || skip "creating a second user needs root"
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
	user=marktest
	if ! id "$user" >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$user" 2>"$WORK/useradd.err" ||
			skip "cannot create the user $user: $(cat "$WORK/useradd.err")"
	fi
	asuser() { setpriv --reuid="$user" --regid="$user" --clear-groups "$@"; }
	asuser test -x "$MARK" || skip "$MARK is not executable by $user (its directory is private)"
	start_target
	run other asuser env XDG_RUNTIME_DIR=/nonexistent "$MARK" list "$TPID"
	expect_rc 1 "list as another user"
	expect_in other.err "permission denied"
	run other_enable asuser env XDG_RUNTIME_DIR=/nonexistent "$MARK" enable "$TPID" agent_tick
	expect_rc 1 "enable as another user"
	expect_in other_enable.err "permission denied"
	run other_ps asuser env XDG_RUNTIME_DIR=/nonexistent "$MARK" ps
	expect_rc 0 "ps as another user"
	expect_not_in other_ps.out "^ *$TPID "
	run list "$MARK" list "$TPID" agent_tick
	expect_in list.out 'agent_tick .* no '
	stop_target
	# The other way round: root controls a process of that user.  Its agent
	# uses /tmp/mark-UID; the trace directory is given to the user.
	chmod 0755 "$WORK"
	# exec chain (setpriv -> env -> target): $! is the target's pid.
	setpriv --reuid="$user" --regid="$user" --clear-groups env -u XDG_RUNTIME_DIR "$TARGET" \
		>"$WORK/target.out" 2>"$WORK/target.err" &
	TPID=$!
	PIDS+=("$TPID")
	uid=$(id -u "$user")
	for _ in $(seq 100); do [ -S "/tmp/mark-$uid/$TPID.sock" ] && break; sleep 0.05; done
	[ -S "/tmp/mark-$uid/$TPID.sock" ] || fail "no agent socket for the $user process in /tmp/mark-$uid"
	[ "$(stat -c '%U %a' "/tmp/mark-$uid")" = "$user 700" ] || fail "/tmp/mark-$uid is not $user's with mode 700"
	run root_enable "$MARK" enable "$TPID" agent_tick
	expect_rc 0 "root enabling markers of another user's process"
	expect_in root_enable.out "1 site armed"
	run root_rec "$MARK" record --pid "$TPID" -e agent_net_rx -o "$WORK/user-trace" -d 0.5 -q
	expect_rc 0 "root recording another user's process"
	[ "$(stat -c %U "$WORK/user-trace")" = "$user" ] || fail "the trace directory was not given to $user"
	n=$(trace_events "$WORK/user-trace" agent_net_rx)
	[ "$n" -gt 0 ] || fail "no events recorded from the $user process"
	echo "root recorded $n events of the $user process"
	kill -TERM "$TPID"
	wait "$TPID" || fail "the $user process did not exit cleanly"
	[ ! -e "/tmp/mark-$uid/$TPID.sock" ] || fail "socket left by the $user process"
	;;
snapshot)
	start_target
	need_tracer
	"$MARK" record --pid "$TPID" -e 'agent_*' --mode overwrite -b 64k -o "$WORK/trace" -q >"$WORK/rec.out" 2>&1 &
	rec=$!
	PIDS+=("$rec")
	for _ in $(seq 100); do "$MARK" ps 2>/dev/null | grep -q "^ *$TPID .*yes" && break; sleep 0.05; done
	sleep 0.5
	run snap "$MARK" snapshot "$TPID" -o "$WORK/snap"
	expect_rc 0 "mark snapshot"
	expect_in snap.out "snapshot of process $TPID"
	n=$(trace_events "$WORK/snap" agent_tick)
	[ "$n" -gt 0 ] || fail "the snapshot has no events"
	echo "snapshot: $n agent_tick events"
	kill -INT "$rec"
	wait "$rec" || fail "the recording did not end cleanly"
	# no session any more: the error says why, and says "snapshot:" once
	run nosession "$MARK" snapshot "$TPID" -o "$WORK/snap2"
	expect_rc 1 "mark snapshot without a session"
	expect_in nosession.err "no tracing session is running"
	[ "$(grep -o 'snapshot' "$WORK/nosession.err" | wc -l)" = 1 ] && [ "$(grep -o 'mark:' "$WORK/nosession.err" | wc -l)" = 1 ] ||
		fail "the snapshot error repeats itself: $(cat "$WORK/nosession.err")"
	run nopid "$MARK" snapshot "$TPID"
	expect_rc 2 "snapshot without -o"
	stop_target
	;;
bad_dir)
	# A socket directory that is not private: the agent refuses it and stays off.
	mkdir -p "$SOCKDIR"
	chmod 0755 "$SOCKDIR"
	"$TARGET" >"$WORK/target.out" 2>"$WORK/target.err" &
	TPID=$!
	PIDS+=("$TPID")
	for _ in $(seq 100); do grep -q "refusing to use" "$WORK/target.err" && break; sleep 0.02; done
	cat "$WORK/target.err"
	expect_in target.err "refusing to use $SOCKDIR: it must be a directory owned by uid $(id -u) with mode 0700"
	[ ! -e "$SOCKDIR/$TPID.sock" ] || fail "the agent used a directory with mode 0755"
	run list "$MARK" list "$TPID"
	expect_rc 1 "list of a process whose agent is off"
	expect_in list.err "has no mark agent"
	stop_target
	;;
short_lived)
	# Processes that exit at once, before or while their agent creates its
	# socket, leave nothing behind.
	for _ in $(seq 50); do "$TARGET" --exit-after 0 >/dev/null || fail "the target failed"; done
	left=$(ls -A "$SOCKDIR" 2>/dev/null | wc -l)
	[ "$left" = 0 ] || fail "$left socket file(s) left by short-lived processes: $(ls -A "$SOCKDIR")"
	# fork() + exec() at once: the child's agent never creates a socket.
	start_target --spawn-exec
	spawned=$(sed -n 's/^spawned //p' "$WORK/target.out")
	[ -n "$spawned" ] || fail "the target did not spawn"
	PIDS+=("$spawned")
	sleep 0.5
	[ "$(cat /proc/$spawned/comm)" = sleep ] || fail "the spawned child did not exec"
	[ ! -e "$SOCKDIR/$spawned.sock" ] || fail "a child that exec'd at once left a socket"
	stop_target
	;;
closed_fds)
	# The program closes every descriptor: the agent notices and stops.
	[ "${MARK_TEST_SANITIZER:-}" != thread ] ||
		skip "closing another thread's descriptors is itself a data race, which ThreadSanitizer reports"
	start_target --close-fds-after 300
	for _ in $(seq 100); do grep -q "agent stops" "$WORK/target.err" && break; sleep 0.02; done
	cat "$WORK/target.err"
	expect_in target.err "the program closed the agent's descriptors; the agent stops"
	[ ! -e "$SOCKDIR/$TPID.sock" ] || fail "the socket of the stopped agent is still there"
	alive "$TPID" || fail "the target died"
	stop_target
	;;
ps_stale)
	mkdir -p "$SOCKDIR"
	chmod 0700 "$SOCKDIR"
	# A socket of a dead process, and one of a live process that exec'd.
	sleep 0 & dead=$!; wait $dead
	/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCKDIR/$dead.sock"
	start_target --exec-sleep-after 300
	sleep 1
	[ "$(cat /proc/$TPID/comm)" = sleep ] || fail "the target did not exec"
	[ -S "$SOCKDIR/$TPID.sock" ] || fail "expected the exec'd process's socket to be left behind"
	run stale "$MARK" list "$TPID"
	expect_rc 1 "list of a process that exec'd"
	expect_in stale.err "has a stale mark socket but no agent listening"
	run ps "$MARK" ps
	expect_rc 0 "mark ps"
	# As root, ps also cleans other users' directories: at least our two.
	expect_in ps.err "removed [0-9]* stale sockets"
	[ ! -e "$SOCKDIR/$dead.sock" ] || fail "the dead process's socket is still there"
	[ ! -e "$SOCKDIR/$TPID.sock" ] || fail "the exec'd process's socket is still there"
	expect_not_in ps.out "^ *$TPID "
	kill "$TPID"
	;;
*)
	fail "unknown case $case_name"
	;;
esac
echo "ok: $case_name"

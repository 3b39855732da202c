#!/usr/bin/env bash
# `mark record --pid` and its trace directory (cli/cmd_record_pid.c):
#
#   test_record_pid_dirs.sh MARK AGENT_TARGET CLI_RECORD_TARGET WORKDIR
#
# 1. The directory's path is printed escaped: its name is chosen by whoever
#    owns the parent (root often records in a user's directory), and a raw
#    ESC or BEL in it would drive the terminal.  Checked in every message
#    that shows it: one process, several, --detach.
# 2. A directory that already holds a trace is refused, by the rule
#    `mark record -- CMD` applies (metadata, .mark-stats, stream-*, pid-*),
#    not only when it has a top-level metadata: a trace of `mark record --
#    CMD` has only DIR/pid-P/, and two recordings must not mix in it.
#
# The targets are agent_target processes whose sockets are private to the
# test (XDG_RUNTIME_DIR in WORKDIR, as tests/agent/test_control.sh does).
# Exit 0: pass, 1: fail, 77: skipped (the reason is printed).
set -uo pipefail
MARK=$(realpath "$1") TARGET=$(realpath "$2") RECORD_TARGET=$(realpath "$3")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../shell_lib.sh"
fresh_runtime_workdir "$4"

# start_target: sets TPID once its agent listens.
start_target() {
	"$TARGET" >"$WORK/target.$#.out" 2>&1 &
	TPID=$!
	PIDS+=("$TPID")
	for _ in $(seq 600); do   # 30 s: a bound on a starved machine only
		[ -S "$SOCKDIR/$TPID.sock" ] && return 0
		kill -0 "$TPID" 2>/dev/null || skip "agent_target exited at once: $(cat "$WORK/target.$#.out")"
		sleep 0.05
	done
	skip "no agent socket for pid $TPID in $SOCKDIR (the agent cannot listen here)"
}
# no_raw_control FILE WHAT: FILE holds no ESC and no BEL byte.
no_raw_control() {
	if LC_ALL=C grep -q $'[\x1b\x07]' "$WORK/$1"; then
		cat -v "$WORK/$1" >&2
		fail "$2 printed the directory's name raw: an ESC or BEL byte reached the terminal"
	fi
}

start_target
T1=$TPID
run probe timeout 60 "$MARK" record --pid "$T1" -o "$WORK/probe" -d 0.2 -q
grep -q "has no tracer" "$WORK/probe.err" && skip "this libmark was built without the tracer"
grep -q "unknown option\|unexpected argument" "$WORK/probe.err" && skip "\`mark record\` does not take --pid here"
grep -qi "permission denied\|operation not permitted" "$WORK/probe.err" &&
	skip "this machine denies controlling the target: $(head -1 "$WORK/probe.err")"
expect_rc 0 "mark record --pid into a new directory"

# ---- 1. the directory's name is escaped ----
evil=$WORK/$'dir\e]0;pwned\a\e[31mRED'
mkdir -p "$evil" || skip "cannot create a directory with control characters in its name"

# One process, -o relative to a working directory with the bytes in its path.
(cd "$evil" && exec timeout 60 "$MARK" record --pid "$T1" -d 0.5 -o out) >"$WORK/esc1.out" 2>"$WORK/esc1.err"
rc=$?
echo "\$ (in the hostile dir) mark record --pid $T1 -d 0.5 -o out -> $rc"; cat -v "$WORK/esc1.err" | sed 's/^/  | /'
expect_rc 0 "mark record --pid in a directory with control characters in its name"
no_raw_control esc1.err "mark record --pid (one process)"
expect_in esc1.err 'into .*dir\\x1b\]0;pwned\\x07'   # escaped as text.h does
expect_in esc1.err 'trace written to .*dir\\x1b'

# Several processes: the per-process lines and the "into DIR" line.
start_target second
T2=$TPID
run esc2 timeout 60 "$MARK" record --pid "$T1" --pid "$T2" -d 0.5 -o "$evil/out2"
expect_rc 0 "mark record --pid P1 --pid P2 into a directory with control characters in its name"
no_raw_control esc2.err "mark record --pid P1 --pid P2"
expect_in esc2.err 'trace written to .*dir\\x1b'

# --detach: "records into DIR, detached".
run esc3 timeout 60 "$MARK" record --pid "$T1" --detach -o "$evil/out3"
expect_rc 0 "mark record --pid --detach"
no_raw_control esc3.err "mark record --pid --detach"
expect_in esc3.err 'records into .*dir\\x1b'
run stop3 timeout 60 "$MARK" stop "$T1"
expect_rc 0 "mark stop after --detach"

# ---- 2. a directory holding a trace is refused ----
# A trace of `mark record -- CMD`: DIR/pid-P/ only, no top-level metadata.
run cmdtrace timeout 60 "$MARK" record -q -o "$WORK/cmdtrace" -- "$RECORD_TARGET" exit 0
expect_rc 0 "mark record -- CMD"
[ ! -e "$WORK/cmdtrace/metadata" ] || echo "note: this trace has a top-level metadata"
ls "$WORK/cmdtrace" >"$WORK/cmdtrace.ls"
expect_in cmdtrace.ls '^pid-'
before=$(find "$WORK/cmdtrace" | sort)
run reuse timeout 60 "$MARK" record --pid "$T1" -d 0.3 -o "$WORK/cmdtrace"
expect_rc 1 "mark record --pid into a directory holding the trace of mark record -- CMD"
expect_in reuse.err 'already holds a trace'
expect_in reuse.err 'choose another'
after=$(find "$WORK/cmdtrace" | sort)
[ "$before" = "$after" ] || fail "the refused recording changed $WORK/cmdtrace"

# The same for each kind of entry that makes a trace (empty stand-ins).
for entry in metadata .mark-stats stream-0 pid-1 pid-7/; do
	d=$WORK/holds-${entry//\//}
	mkdir -p "$d"
	case $entry in */) mkdir "$d/$entry" ;; *) : >"$d/$entry" ;; esac
	run "holds${entry//\//}" timeout 60 "$MARK" record --pid "$T1" -d 0.3 -q -o "$d"
	expect_rc 1 "mark record --pid into a directory holding $entry"
	expect_in "holds${entry//\//}.err" 'already holds a trace'
done

# And what is not a trace is still accepted: an empty directory, one with other files.
mkdir -p "$WORK/empty" "$WORK/other"
: >"$WORK/other/notes.txt"
: >"$WORK/other/metadata.bak"
run empty timeout 60 "$MARK" record --pid "$T1" -d 0.3 -q -o "$WORK/empty"
expect_rc 0 "mark record --pid into an existing empty directory"
run other timeout 60 "$MARK" record --pid "$T1" -d 0.3 -q -o "$WORK/other"
expect_rc 0 "mark record --pid into a directory with files that are not a trace"
# A second recording into what the first wrote is refused.
run again timeout 60 "$MARK" record --pid "$T1" -d 0.3 -q -o "$WORK/empty"
expect_rc 1 "mark record --pid into the directory of an earlier mark record --pid"
expect_in again.err 'already holds a trace'
echo "PASS"
exit 0

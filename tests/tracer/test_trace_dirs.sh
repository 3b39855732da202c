#!/usr/bin/env bash
# Trace directories under attack: what the in-process tracer, `mark record
# --pid` (as root) and `mark snapshot` create, and where they refuse to write.
#
#   test_trace_dirs.sh CASE MARK AGENT_TARGET TRACER_PROG WORKDIR
#
# Every case runs the real programs against a real planted directory or
# symbolic link and checks that the victim (a file, a directory, its owner
# and mode) is unchanged.  Exit 0: pass, 1: fail, 77: skipped (the reason
# is printed, starting with "SKIP:").
set -uo pipefail
case_name=$1 MARK=$2 TARGET=$3 PROG=$4 WORK=$5
rm -rf "$WORK"
mkdir -p "$WORK/xdg"
chmod 0700 "$WORK/xdg"
export XDG_RUNTIME_DIR=$WORK/xdg
unset MARK_TRACE MARK_ENABLE MARK_MODE MARK_BUFFER
cd "$WORK" || exit 1

PIDS=()
CLEAN=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	for f in "${CLEAN[@]}"; do rm -rf -- "$f"; done
}
trap cleanup EXIT

# fail, skip, run, expect_rc, expect_in, expect_not_in
. "$(dirname "${BASH_SOURCE[0]}")/../shell_lib.sh"
# A victim file: its content, owner and mode must survive.
victim() { printf 'precious %s\n' "${1##*/}" >"$1"; chmod 0644 "$1"; }
victim_ok() {
	[ -f "$1" ] && [ ! -L "$1" ] || fail "victim $1 was replaced or removed"
	[ "$(cat "$1")" = "precious ${1##*/}" ] || fail "victim $1 was written: $(head -c 200 "$1" | od -c | head -3)"
	[ "$(stat -c %a "$1")" = 644 ] || fail "victim $1 changed mode to $(stat -c %a "$1")"
}
need_root() { [ "$(id -u)" = 0 ] || skip "this case needs root ($1)"; }
need_nobody() {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
	id nobody >/dev/null 2>&1 || skip "there is no user nobody"
	chmod 0755 "$WORK"
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$TARGET" ||
		skip "$TARGET is not executable by nobody (a parent directory is private)"
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$WORK" ||
		skip "$WORK is not reachable by nobody (a parent directory is private)"
}
# One stderr line that says tracing is off, and no trace written.
expect_refused() {   # NAME DIR WORD
	local lines
	lines=$(grep -c . "$WORK/$1.err")
	[ "$lines" = 1 ] || fail "$1: expected one line on stderr, got $lines"
	expect_in "$1.err" "tracing is off"
	expect_in "$1.err" "$3"
	if ls -A "$2" 2>/dev/null | grep -q '^pid-'; then fail "$1: a trace was written into $2"; fi
}

case $case_name in
record_pid_root)
	# Defect 1: root records a process of `nobody`, who planted
	# ~/traces -> a root-owned directory.  Root must not give it away.
	need_root "recording another user's process"
	need_nobody
	mkdir "$WORK/rootdir"; chmod 0755 "$WORK/rootdir"
	mkdir "$WORK/rootexisting"; chmod 0755 "$WORK/rootexisting"
	mkdir "$WORK/home"; chown nobody "$WORK/home"
	setpriv --reuid=nobody --regid=nogroup --clear-groups ln -s "$WORK/rootdir" "$WORK/home/traces" ||
		fail "cannot plant the link as nobody"
	setpriv --reuid=nobody --regid=nogroup --clear-groups env -u XDG_RUNTIME_DIR "$TARGET" \
		>"$WORK/target.out" 2>"$WORK/target.err" &
	TPID=$!
	PIDS+=("$TPID")
	uid=$(id -u nobody)
	CLEAN+=("/tmp/mark-$uid/$TPID.sock")
	for _ in $(seq 600); do [ -S "/tmp/mark-$uid/$TPID.sock" ] && break; sleep 0.05; done
	[ -S "/tmp/mark-$uid/$TPID.sock" ] || fail "no agent socket for the nobody process"
	# refused NAME -o_DIR VICTIM_DIR MESSAGE: root's recording is refused
	# and the root-owned victim keeps its owner and mode.
	refused() {
		run "$1" "$MARK" record --pid "$TPID" -e agent_tick -o "$2" -d 0.3 -q
		[ "$(stat -c '%U %a' "$3")" = "root 755" ] ||
			fail "$1: the root-owned $3 was given away: now $(stat -c '%U %a' "$3")"
		expect_rc 1 "$1: recording into $2"
		expect_in "$1.err" "$4"
	}
	refused link "$WORK/home/traces" "$WORK/rootdir" "symbolic link"
	refused sub "$WORK/home/traces/sub" "$WORK/rootdir" "symbolic link"
	[ ! -e "$WORK/rootdir/sub" ] || fail "a directory was created through the planted link"
	# An existing root-owned directory is not given away either.
	refused existing "$WORK/rootexisting" "$WORK/rootexisting" "not created by this command"
	# What root may do: a new directory, created by this call and handed over.
	run new "$MARK" record --pid "$TPID" -e agent_tick -o "$WORK/new/trace" -d 0.5 -q
	expect_rc 0 "recording into a new directory"
	[ "$(stat -c '%U %a' "$WORK/new/trace")" = "nobody 700" ] ||
		fail "the new trace directory is $(stat -c '%U %a' "$WORK/new/trace"), expected nobody 700"
	[ "$(stat -c '%U %a' "$WORK/new")" = "root 755" ] || fail "the parent root created is $(stat -c '%U %a' "$WORK/new")"
	ls "$WORK/new/trace" | grep -q '^pid-' || fail "no trace was written"
	;;
tracer_owner)
	# Defect 4: a trace directory owned by another user.
	need_root "a directory owned by another user"
	mkdir "$WORK/theirs"; chown nobody "$WORK/theirs"; chmod 0755 "$WORK/theirs"
	run prog env MARK_TRACE="$WORK/theirs" "$PROG" types 10
	expect_rc 0 "the program must run on"
	expect_refused prog "$WORK/theirs" "owned by uid $(id -u nobody)"
	[ "$(stat -c '%U %a' "$WORK/theirs")" = "nobody 755" ] || fail "their directory was changed"
	;;
tracer_writable)
	# Defect 4: a group-writable trace directory, and the sticky /tmp itself.
	mkdir "$WORK/gw"; chmod 0775 "$WORK/gw"
	run gw env MARK_TRACE="$WORK/gw" "$PROG" types 10
	expect_rc 0 "the program must run on"
	expect_refused gw "$WORK/gw" "writable by"
	mkdir "$WORK/ow"; chmod 1777 "$WORK/ow"
	run ow env MARK_TRACE="$WORK/ow" "$PROG" types 10
	expect_rc 0 "the program must run on"
	expect_refused ow "$WORK/ow" "writable by"
	# A private directory below a sticky world-writable one is fine.
	run below env MARK_TRACE="$WORK/ow/mine" "$PROG" types 10
	expect_rc 0 "tracing below a sticky directory"
	[ ! -s "$WORK/below.err" ] || fail "tracing below a sticky directory was refused"
	ls "$WORK/ow/mine" | grep -q '^pid-' || fail "no trace below the sticky directory"
	;;
tracer_symlinks)
	# Defect 4: links planted in the trace directory, pointing at victims.
	mkdir "$WORK/victims"
	cd "$WORK/victims" && victim ring && victim stream && victim meta && victim meta_old && cd "$WORK"
	# plant_run NAME LINK=VICTIM...: start a traced program, plant the links
	# in its pid-P directory once the session is set up, then let it fire.
	plant_run() {
		local name=$1; shift
		mkdir -m 0700 "$WORK/$name"
		coproc P { MARK_TRACE="$WORK/$name" exec "$PROG" wait 100 2>"$WORK/$name.err"; }
		PIDS+=("$P_PID")
		local pid=$P_PID line
		read -r -t 10 line <&"${P[0]}" || fail "the program did not get ready"
		[ "$line" = ready ] || fail "the program said $line"
		local d="$WORK/$name/pid-$pid"
		[ -d "$d" ] || fail "no $d"
		for l in "$@"; do ln -s "$WORK/victims/${l#*=}" "$d/${l%%=*}"; done
		echo go >&"${P[1]}"
		wait "$pid"
		local st=$?
		cat "$WORK/$name.err"
		[ "$st" = 0 ] || fail "the program exited with $st"
	}
	# Names the tracer creates after start-up: the first thread's stream
	# file and the metadata's temporary file; then its buffer file.
	plant_run t stream-0=stream .metadata.tmp=meta metadata.tmp=meta_old
	plant_run t1 .mark-ring-0=ring
	for v in ring stream meta meta_old; do victim_ok "$WORK/victims/$v"; done
	# A pid-P link planted before the program starts: not followed.
	mkdir "$WORK/victimdir"
	cd "$WORK/victimdir" && victim metadata && victim stream-0 && victim .mark-stats && cd "$WORK"
	mkdir -m 0700 "$WORK/t2"
	MARK_TRACE="$WORK/t2" sh -c 'ln -s "$1" "$2/pid-$$" && exec "$3" types 10' sh \
		"$WORK/victimdir" "$WORK/t2" "$PROG" >"$WORK/pidlink.out" 2>"$WORK/pidlink.err"
	rc=$?
	cat "$WORK/pidlink.err"
	expect_rc 0 "the program must run on"
	for v in metadata stream-0 .mark-stats; do victim_ok "$WORK/victimdir/$v"; done
	[ "$(ls -A "$WORK/victimdir" | wc -l)" = 3 ] || fail "files were created in the victim directory: $(ls -A "$WORK/victimdir")"
	expect_in pidlink.err "tracing is off"
	;;
tracer_modes)
	# Defect 4: traces are readable by their owner only.
	run modes env MARK_TRACE="$WORK/new/t" "$PROG" types 10
	expect_rc 0 "traced run"
	p=$(ls -d "$WORK/new/t"/pid-* | head -1)
	[ -n "$p" ] || fail "no trace"
	for f in "$WORK/new" "$WORK/new/t" "$p"; do
		[ "$(stat -c %a "$f")" = 700 ] || fail "directory $f has mode $(stat -c %a "$f"), expected 700"
	done
	for f in "$p"/*  "$p"/.mark-stats; do
		[ "$(stat -c %a "$f")" = 600 ] || fail "file $f has mode $(stat -c %a "$f"), expected 600"
	done
	;;
snapshot_nonempty)
	# Issue 16 item 3: a snapshot never deletes what mark did not write.
	"$TARGET" >"$WORK/target.out" 2>"$WORK/target.err" &
	TPID=$!
	PIDS+=("$TPID")
	for _ in $(seq 600); do [ -S "$XDG_RUNTIME_DIR/mark/$TPID.sock" ] && break; sleep 0.05; done
	"$MARK" record --pid "$TPID" -e 'agent_*' --mode overwrite -b 64k -o "$WORK/trace" -q >"$WORK/rec.out" 2>&1 &
	rec=$!
	PIDS+=("$rec")
	for _ in $(seq 600); do "$MARK" ps 2>/dev/null | grep -q "^ *$TPID .*yes" && break; sleep 0.05; done
	grep -q "has no tracer" "$WORK/rec.out" && skip "this libmark was built without the tracer"
	sleep 0.3
	mkdir "$WORK/snap" "$WORK/victimdir"
	cd "$WORK/snap" && victim notes.txt && victim metadata && victim stream-7 && cd "$WORK"
	cd "$WORK/victimdir" && victim stream-0 && victim metadata && cd "$WORK"
	ln -s "$WORK/victimdir" "$WORK/snap/pid-1"
	mkdir "$WORK/snap/pid-2"
	cd "$WORK/snap/pid-2" && victim mine.txt && cd "$WORK"
	run refused "$MARK" snapshot "$TPID" -o "$WORK/snap"
	for v in notes.txt metadata stream-7 pid-2/mine.txt; do victim_ok "$WORK/snap/$v"; done
	expect_rc 1 "a snapshot into a non-empty directory"
	expect_in refused.err "not empty"
	expect_in refused.err "--force"
	run forced "$MARK" snapshot "$TPID" -o "$WORK/snap" --force
	expect_rc 0 "a snapshot with --force"
	victim_ok "$WORK/snap/notes.txt"
	victim_ok "$WORK/snap/pid-2/mine.txt"
	[ -L "$WORK/snap/pid-1" ] || fail "the pid-1 link was removed"
	for v in stream-0 metadata; do victim_ok "$WORK/victimdir/$v"; done
	[ "$(ls -A "$WORK/victimdir" | wc -l)" = 2 ] || fail "files were created in the victim directory"
	[ -s "$WORK/snap/metadata" ] && ! grep -q precious "$WORK/snap/metadata" || fail "no snapshot metadata"
	# An empty directory needs no --force.
	mkdir "$WORK/empty"
	run empty "$MARK" snapshot "$TPID" -o "$WORK/empty"
	expect_rc 0 "a snapshot into an empty directory"
	kill -INT "$rec"
	wait "$rec" || fail "the recording did not end cleanly"
	kill -TERM "$TPID"; wait "$TPID"
	;;
*)
	fail "unknown case $case_name"
	;;
esac
echo "PASS: $case_name"

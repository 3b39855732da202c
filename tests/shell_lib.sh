# Helpers shared by the shell test scripts (sourced; they set WORK first).
# Exit 0: pass, 1: fail, 77: skipped (the reason is printed, starting with
# "SKIP:").
fail() { echo "FAIL: $*" >&2; exit 1; }
# fresh_workdir DIR: WORK=DIR, emptied and made, and the current directory
fresh_workdir() {
	WORK=$1
	rm -rf "$WORK"
	mkdir -p "$WORK" || fail "cannot create $WORK"
	cd "$WORK" || fail "cannot enter $WORK"
}
skip() { echo "SKIP: $*"; exit 77; }
# fresh_runtime_workdir DIR: fresh_workdir DIR (WORK made absolute), and
# XDG_RUNTIME_DIR=DIR/xdg (0700), so that the agents started by the test
# put their sockets in SOCKDIR=DIR/xdg/mark, apart from other tests'.
# Every pid the test adds to PIDS is killed when the script exits.
fresh_runtime_workdir() {
	fresh_workdir "$1"
	WORK=$(pwd -P)
	mkdir -m 0700 "$WORK/xdg" || fail "cannot create $WORK/xdg"
	export XDG_RUNTIME_DIR=$WORK/xdg
	SOCKDIR=$XDG_RUNTIME_DIR/mark
	PIDS=()
	trap kill_test_pids EXIT
}
kill_test_pids() {
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
}
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

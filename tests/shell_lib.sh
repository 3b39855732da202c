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

# Shared by the gdb tests (test_gdb.sh, usdt/test_gdb.sh); sourced by bash.
#
#   gdb_setup            picks the debugger, or exits 77 saying what is missing
#   gdb_run CMD... -- PROGRAM ARGS...
#                        runs PROGRAM under gdb with each CMD as an -ex
#                        command and prints gdb's output, then the program's;
#                        the CMDs start the program with $GDB_START
#
# Natively: gdb --args, GDB_START=run.  Cross builds (make test-aarch64)
# set MARK_TEST_EMULATOR, e.g. "qemu-aarch64 -L /": host gdb cannot ptrace
# the emulated program, so it runs under qemu-user's gdb stub on a Unix
# socket in a directory of our own, stopped before its first instruction
# (GDB_START=continue), and gdb-multiarch attaches to it.

gdb_setup() {
	GDB=gdb
	GDB_START=run
	if [ -n "${MARK_TEST_EMULATOR:-}" ]; then
		GDB=gdb-multiarch
		GDB_START=continue
		GDB_TMP=$(mktemp -d) || { echo "FAIL: mktemp -d failed"; exit 1; }
		trap 'rm -rf "$GDB_TMP"' EXIT
	fi
	command -v "$GDB" >/dev/null || { echo "SKIP: $GDB is not installed (apt-get install $GDB)"; exit 77; }
	# LeakSanitizer cannot run under ptrace; the rest of ASan can.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}

gdb_run() {
	local cmds=() qemu i
	while [ "$1" != -- ]; do cmds+=("$1"); shift; done
	shift
	if [ -z "${MARK_TEST_EMULATOR:-}" ]; then
		timeout 120 gdb -batch -nx -ex 'set pagination off' "${cmds[@]/#/-ex=}" --args "$@" 2>&1
		return
	fi
	# shellcheck disable=SC2086
	timeout 120 $MARK_TEST_EMULATOR -g "$GDB_TMP/gdb.sock" "$@" >"$GDB_TMP/out" 2>&1 &
	qemu=$!
	for i in $(seq 100); do [ -S "$GDB_TMP/gdb.sock" ] && break; sleep 0.1; done
	[ -S "$GDB_TMP/gdb.sock" ] || { echo "FAIL: the emulator's gdb stub did not open $GDB_TMP/gdb.sock"; exit 1; }
	timeout 120 gdb-multiarch -batch -nx -ex 'set pagination off' -ex 'set sysroot /' -ex "file $1" \
		-ex "target remote $GDB_TMP/gdb.sock" "${cmds[@]/#/-ex=}" 2>&1
	local status=$?
	wait "$qemu"
	cat "$GDB_TMP/out"
	return $status   # gdb's, as natively
}

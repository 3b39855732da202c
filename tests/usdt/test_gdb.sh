#!/usr/bin/env bash
# gdb lists every marker as a stap probe and stops at one with
# `break -probe-stap PROVIDER:NAME`, with the arguments readable as
# $_probe_argN.  gdb sets the semaphore of the probes it breaks on, so a
# generic site stops under gdb alone; jump/immediate sites stop once the
# marker is armed (mark_arm() here; MARK_ENABLE=... or `mark enable` too).
#
# Cross builds (make test-aarch64) set MARK_TEST_EMULATOR, e.g.
# "qemu-aarch64 -L /": the program then runs under qemu-user's gdb stub,
# on a Unix socket of our own, and gdb-multiarch reads the probes in the
# target's argument syntax ("-8@x1", "8@[sp, 96]").
set -u
bin=$1 kind=$2
. "$(dirname "$0")/common.sh"
GDB=gdb
if [ -n "${MARK_TEST_EMULATOR:-}" ]; then
	GDB=gdb-multiarch
	command -v gdb-multiarch >/dev/null || skip "gdb-multiarch is not installed (apt-get install gdb-multiarch)"
	tmp=$(mktemp -d) || fail "mktemp -d failed"
	trap 'rm -rf "$tmp"' EXIT
fi
command -v $GDB >/dev/null || skip "gdb is not installed (apt-get install gdb)"
# LeakSanitizer cannot run under ptrace; the rest of ASan can.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# gdb on "$bin ARGS...", run to the end with the -ex commands given first.
gdb_run() {
	local cmds=() a
	while [ "$1" != -- ]; do cmds+=("$1"); shift; done
	shift
	if [ -z "${MARK_TEST_EMULATOR:-}" ]; then
		timeout 120 gdb -batch -nx -ex 'set pagination off' "${cmds[@]/#/-ex=}" --args "$bin" "$@" 2>&1
		return
	fi
	# The stub waits for gdb before the first instruction; the program's
	# output goes to a file, read after the end.
	# shellcheck disable=SC2086
	timeout 120 $MARK_TEST_EMULATOR -g "$tmp/gdb.sock" "$bin" "$@" >"$tmp/out" 2>&1 &
	local qemu=$! i
	for i in $(seq 100); do [ -S "$tmp/gdb.sock" ] && break; sleep 0.1; done
	[ -S "$tmp/gdb.sock" ] || fail "the emulator's gdb stub did not open $tmp/gdb.sock"
	timeout 120 gdb-multiarch -batch -nx -ex 'set pagination off' -ex 'set sysroot /' -ex "file $bin" \
		-ex "target remote $tmp/gdb.sock" "${cmds[@]/#/-ex=}" 2>&1
	wait $qemu
	cat "$tmp/out"
}

out=$($GDB -batch -nx -ex 'info probes' "$bin" 2>&1); echo "$out"
for p in "mark +usdt_hit" "mark +usdt_noargs" "usdtprov +prov_hit"; do
	echo "$out" | grep -Eq "^stap +$p " || fail "gdb 'info probes' does not list $p"
done

mode=arm
[ "$kind" = generic ] && mode=run
start=run
[ -n "${MARK_TEST_EMULATOR:-}" ] && start=continue   # the stub has started it, stopped
out=$(gdb_run 'break -probe-stap mark:usdt_hit' $start continue continue \
	'printf "argc=%d a0=%d a1=%ld a2=%s a4=%llu\n", $_probe_argc, $_probe_arg0, $_probe_arg1, (char *)$_probe_arg2, $_probe_arg4' \
	delete continue -- $mode 5)
echo "$out" | tail -n 12
echo "$out" | grep -q "ptrace: Operation not permitted" && skip "ptrace is not permitted here"
n=$(echo "$out" | grep -c "hit Breakpoint 1")
[ "$n" = 3 ] || fail "gdb stopped $n times at mark:usdt_hit, expected 3"
echo "$out" | grep -q "argc=5 a0=2 a1=-6 a2=usdt-string a4=2000000014" || fail "gdb read wrong probe arguments"
echo "$out" | grep -q "done 5" || fail "the program did not finish under gdb"
echo "$out" | grep -q "exited normally" || fail "the program did not exit normally"
echo "ok: gdb ($kind)"

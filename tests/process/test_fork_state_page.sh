#!/bin/bash
# tests/process/test_fork_state_page.sh LIBMARK - the variables that
# libmark's fork handlers write (issue 17, defect 4: fork cost) share one
# page.  At fork every private writable page becomes copy-on-write: each
# page the handlers then write costs a page fault and a 4 KiB copy, in the
# parent (after_fork_parent's unlocks) and again in every child.  Spread
# over libmark's .data/.bss (between half a megabyte of caches), they cost
# four or five faults per fork; grouped in the mark_fork_state section, one.
#
# The names are the handlers' own variables (src/core/registry.c,
# src/tracer/session.c, src/agent/agent.c): a new variable written by a fork
# handler belongs in MARK_FORK_STATE and in this list.
set -u
LIB=$1
VARS="registry_mutex control_mutex fd_lock listen_fd wake_fd listen_id wake_id socket_path
agent_pid thread_running stopping child_may_start session_conn session_owner_pid"
command -v nm >/dev/null || { echo "SKIP: nm (binutils) is not installed"; exit 77; }
syms=$(nm -S "$LIB") || { echo "FAIL: nm cannot read $LIB"; exit 1; }   # ADDR SIZE TYPE NAME
pages="" bad=0
for v in $VARS; do
	# The symbol itself, or the pieces clang splits a static struct or
	# array into (scalar replacement: listen_id.0, listen_id.1, ...).
	lines=$(awk -v v="$v" 'NF == 4 && $3 ~ /^[bBdD]$/ && ($4 == v || index($4, v ".") == 1 && substr($4, length(v) + 2) ~ /^[0-9]+$/)' <<<"$syms")
	[ -n "$lines" ] && { [ "$(wc -l <<<"$lines")" -eq 1 ] || ! grep -qE " $v\$" <<<"$lines"; } ||
		{ echo "FAIL: $LIB has no single local data symbol '$v' (renamed? update this test's list)"; bad=1; continue; }
	while read -r a size _ name; do
		addr=$((16#$a)) len=$((16#$size))
		first=$((addr / 4096)) last=$(((addr + len - 1) / 4096))
		printf '  %-18s 0x%x +%d page %d..%d\n' "$name" "$addr" "$len" "$first" "$last"
		pages="$pages $first $last"
	done <<<"$lines"
done
[ $bad -eq 0 ] || exit 1
n=$(tr ' ' '\n' <<<"$pages" | grep . | sort -u | wc -l)
if [ "$n" -ne 1 ]; then
	echo "FAIL: the fork handlers' variables span $n pages of $LIB (want 1: each page they write is a copy-on-write fault per fork)"
	exit 1
fi
echo "PASS: the fork handlers' variables share one page"

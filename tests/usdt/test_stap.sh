#!/usr/bin/env bash
# systemtap lists every marker as process("BIN").mark("NAME") with its
# arguments.  stap needs the running kernel's build tree even to list; where
# it is missing (containers, VMs with custom kernels) the test skips.
set -u
bin=$1
. "$(dirname "$0")/common.sh"
command -v stap >/dev/null || skip "systemtap is not installed (apt-get install systemtap)"
[ -e "/lib/modules/$(uname -r)/build/.config" ] ||
	skip "systemtap needs the kernel build tree /lib/modules/$(uname -r)/build (apt-get install linux-headers-$(uname -r))"
out=$(timeout 240 stap -L 'process("'"$bin"'").mark("*")' 2>&1); echo "$out"
echo "$out" | grep 'mark("usdt_hit")' | grep -q '\$arg5' ||
	fail "stap -L does not list usdt_hit with 5 arguments"
echo "$out" | grep -q 'mark("prov_hit")' || fail "stap -L does not list prov_hit"
echo "ok: systemtap"

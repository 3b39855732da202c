#!/usr/bin/env bash
# The installed mark-dtrace, as an autoconf project uses it: generate the
# header and the -G object with PREFIX/bin/mark-dtrace, compile with no -I and
# link with no -lmark (the header names PREFIX/include, the object loads
# PREFIX/lib/libmark.so.0), then arm and record with MARK_ENABLE/MARK_TRACE.
set -u
build=$1 src=$(cd "$(dirname "$0")" && pwd)
. "$src/../usdt/common.sh"
[ -z "${MARK_TEST_SANITIZER:-}" ] ||
	skip "not under $MARK_TEST_SANITIZER: an uninstrumented program cannot dlopen a sanitizer build of libmark"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "cmake --install failed"; }
dt=$work/prefix/bin/mark-dtrace
[ -x "$dt" ] || fail "mark-dtrace is not installed in PREFIX/bin"
cd "$work"
cp "$src/basic.d" probes.d
"$dt" -s probes.d -h || fail "mark-dtrace -h failed"          # default output: probes.h
"$dt" -s probes.d -G || fail "mark-dtrace -G failed"          # default output: probes.o
[ -f probes.h ] && [ -f probes.o ] || fail "default output names are not probes.h / probes.o"
"$dt" -s probes.d -G -o again.o && cmp -s probes.o again.o || fail "-G is not reproducible: two runs differ"
grep -q "^#include \"$work/prefix/include/mark/mark.h\"" probes.h || fail "the header does not include the installed mark.h"
cat >app.c <<'C'
#include "probes.h"
#include <stdio.h>
int main(void)
{
	for (int i = 0; i < 3; i++) {
		if (BASIC_TRANSACTION_START_ENABLED())
			BASIC_TRANSACTION_START(i);
		BASIC_TRANSACTION_DONE(i, i == 1 ? NULL : "ok");
	}
	puts("app done");
	return 0;
}
C
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -pedantic -O2 app.c probes.o -o app || fail "compiling or linking the app failed"
ldd ./app | grep -q libmark && fail "the app links libmark; the -G object should load it"
./app | grep -q "app done" || fail "the app does not run without arming"
MARK_ENABLE='basic:*' MARK_TRACE="$work/trace" ./app >/dev/null || fail "the app failed under MARK_TRACE"
view=$("$work/prefix/bin/mark" view "$work/trace" 2>&1); echo "$view"
[ "$(echo "$view" | grep -c 'basic:transaction-start')" = 3 ] || fail "expected 3 transaction-start events"
echo "$view" | grep -q 'basic:transaction-done: id=1 status="(null)"' || fail "the NULL string was not recorded as (null)"
echo "ok: installed mark-dtrace"

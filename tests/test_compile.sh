#!/usr/bin/env bash
# Compile-time behaviour of <mark/mark.h>, with the real compilers:
#  - a format that does not match the arguments fails a -Werror build (C and C++),
#    while the matching snippet (the positive control) builds;
#  - -DMARK_DISABLE compiles every marker out: no descriptor, no site entry,
#    no call into libmark, and the format is still checked.
set -u
include=$1
work=$(mktemp -d /tmp/mark-compile.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
compilers="gcc g++"
command -v clang >/dev/null && compilers="$compilers clang clang++"

snippet() { # $1 = argument list for MARK(compile_probe, "%d %s", ...)
	cat <<C
#include <mark/mark.h>
void f(int n, const char *s);
void f(int n, const char *s) { MARK(compile_probe, "%d %s", $1); (void)n; (void)s; }
C
}
for cc in $compilers; do
	lang=c; case $cc in *++) lang=c++ ;; esac
	snippet "n, s" >"$work/good.$lang"
	snippet "s, n" >"$work/bad.$lang"
	if ! $cc -x $lang -Wall -Wextra -Werror -I"$include" -c "$work/good.$lang" -o "$work/good.o" 2>"$work/good.err"; then
		echo "FAIL: $cc rejects a matching format:"; cat "$work/good.err"; fail=1
	fi
	if $cc -x $lang -Wall -Wextra -Werror -I"$include" -c "$work/bad.$lang" -o "$work/bad.o" 2>"$work/bad.err"; then
		echo "FAIL: $cc accepts \"%d %s\" with (const char *, int)"; fail=1
	elif ! grep -q "format" "$work/bad.err"; then
		echo "FAIL: $cc's diagnostic does not mention the format:"; cat "$work/bad.err"; fail=1
	fi
	# MARK_DISABLE: nothing left in the object, format still checked.
	$cc -x $lang -DMARK_DISABLE -Wall -Wextra -Werror -O2 -I"$include" -c "$work/good.$lang" -o "$work/off.o" ||
		{ echo "FAIL: $cc -DMARK_DISABLE"; fail=1; continue; }
	if readelf -SW "$work/off.o" | grep -q "__mark_\|stapsdt"; then
		echo "FAIL: $cc -DMARK_DISABLE left marker sections:"; readelf -SW "$work/off.o" | grep "__mark_\|stapsdt"; fail=1
	fi
	if nm "$work/off.o" | grep -q "mark__"; then
		echo "FAIL: $cc -DMARK_DISABLE still references libmark:"; nm "$work/off.o" | grep "mark__"; fail=1
	fi
	if $cc -x $lang -DMARK_DISABLE -Wall -Wextra -Werror -I"$include" -c "$work/bad.$lang" -o "$work/bad.o" 2>/dev/null; then
		echo "FAIL: $cc -DMARK_DISABLE no longer checks the format"; fail=1
	fi
	echo "$cc: ok"
done
[ $fail -eq 0 ] && echo "ok"
exit $fail

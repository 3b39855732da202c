#!/usr/bin/env bash
# Compile-time behaviour of <mark/mark.h>, with the real compilers:
#  - a format that does not match the arguments fails a -Werror build (C and C++),
#    while the matching snippet (the positive control) builds;
#  - without any warning flag, a mismatched format, a wrong argument count, %n,
#    long double or an unknown conversion fails the build (gcc and clang, C and C++);
#  - MARK() adds no warning under -pedantic and the flags real projects use;
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

# ---- a mismatched format fails every build: no -W flag, no -Werror, -O0 and -O2 ----
bad_marks=(
	'MARK(bad, "%d", 1.5)'
	'MARK(bad, "%d %d", n)'
	'MARK(bad, "%d", n, n)'
	'MARK(bad, "%n", &n)'
	'MARK(bad, "%hn %d", (short *)0, n)'
	'MARK(bad, "%Lf", (long double)n)'
	'MARK(bad, "%f", (long double)n)'
	'MARK(bad, "%y", n)'
)
for cc in $compilers; do
	lang=c; case $cc in *++) lang=c++ ;; esac
	for kind in jump immediate generic; do
		for opt in -O0 -O2; do
			for m in "${bad_marks[@]}"; do
				printf '#include <mark/mark.h>\nvoid f(int n);\nvoid f(int n) { %s; (void)n; }\n' "$m" >"$work/m.$lang"
				if $cc -x $lang $opt -DMARK_SITE=$kind -I"$include" -c "$work/m.$lang" -o "$work/m.o" 2>"$work/m.err"; then
					echo "FAIL: $cc $opt MARK_SITE=$kind builds $m (no warning flags)"; fail=1
				fi
			done
		done
	done
	echo "$cc: mismatches refused"
done

# ---- warning-free under the flags real projects use, and under -pedantic ----
flags="-Wall -Wextra -Wshadow -Wcast-qual -Wpointer-arith -Wundef -Wconversion -Werror"
cflags="-Wdeclaration-after-statement -Wmissing-prototypes -Wstrict-prototypes"
cat >"$work/clean.src" <<'C'
#include <mark/mark.h>
struct req { int len; const char *path; };
void f(int n, const char *s, struct req *r, double d);
void f(int n, const char *s, struct req *r, double d)
{
	int a = n;
	int b;
	const char *c = s;
	MARK(empty, "");
	MARK(one, "%d", a);
	b = a + 1;
	MARK(many, "%d %s %p %f %u %ld %lu %c", b, s, (void *)r, d, (unsigned)n, (long)n, (unsigned long)sizeof(*r), 'x');
	MARK(member, "%d %s", r->len, r->path);
	if (MARK_ENABLED(empty))
		b++;
	MARK(after, "%s %d", c, b);
}
C
for cc in $compilers; do
	case $cc in
	*++) lang=c++; stds="c++98 c++11 c++17 c++20 gnu++11"; extra="" ;;
	*) lang=c; stds="c89 c99 c11 c17 gnu89 gnu11"; extra=$cflags ;;
	esac
	for std in $stds; do
		for kind in jump immediate generic; do
			for opt in -O0 -O2; do
				case "$cc $kind" in clang++\ jump) [ "$(clang -dumpversion | cut -d. -f1)" -lt 17 ] && continue ;; esac
				# gcc's C++98 fallback announces itself with a #pragma message (a note)
				if ! $cc -x $lang -std=$std -pedantic $flags $extra $opt -DMARK_SITE=$kind -I"$include" \
					-c "$work/clean.src" -o "$work/clean.o" 2>"$work/clean.err"; then
					echo "FAIL: $cc -std=$std -pedantic $opt MARK_SITE=$kind warns:"; head -20 "$work/clean.err"
					fail=1
				fi
			done
		done
	done
	echo "$cc: pedantic and warning-free"
done

# ---- C89 has the markers; C++98 compiles them out, still checking the format ----
printf '#include <mark/mark.h>\nvoid f(int n);\nvoid f(int n) { MARK(probe, "%%d", n); }\n' >"$work/old.c"
gcc -std=c89 -pedantic -Werror -I"$include" -c "$work/old.c" -o "$work/old.o" && nm "$work/old.o" | grep -q mark__fire ||
	{ echo "FAIL: gcc -std=c89: no marker"; fail=1; }
g++ -x c++ -std=c++98 -I"$include" -c "$work/old.c" -o "$work/old.o" 2>"$work/old.err" || { cat "$work/old.err"; fail=1; }
grep -q "C++98.*compiled out.*c++11" "$work/old.err" || { echo "FAIL: g++ -std=c++98 does not say that markers are compiled out"; fail=1; }
printf '#include <mark/mark.h>\nvoid f(int n);\nvoid f(int n) { MARK(probe, "%%s", n); }\n' >"$work/old.c"
for cc in g++ clang++; do
	command -v $cc >/dev/null || continue
	$cc -x c++ -std=c++98 -I"$include" -c "$work/old.c" -o "$work/old.o" 2>/dev/null &&
		{ echo "FAIL: $cc -std=c++98 accepts a mismatched format"; fail=1; }
done

# ---- -DMARK_SITE=bogus names the valid kinds ----
printf '#include <mark/mark.h>\n' >"$work/bogus.c"
if gcc -DMARK_SITE=bogus -I"$include" -c "$work/bogus.c" -o "$work/bogus.o" 2>"$work/bogus.err"; then
	echo "FAIL: -DMARK_SITE=bogus builds"; fail=1
elif ! grep -q "bogus" "$work/bogus.err" || ! grep -q "jump" "$work/bogus.err" || ! grep -q "generic" "$work/bogus.err"; then
	echo "FAIL: -DMARK_SITE=bogus does not name the valid kinds:"; cat "$work/bogus.err"; fail=1
fi

[ $fail -eq 0 ] && echo "ok"
exit $fail

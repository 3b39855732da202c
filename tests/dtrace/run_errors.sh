#!/usr/bin/env bash
# Each tests/dtrace/bad/*.d starts with "// expect: MESSAGE": `mark dtrace`
# must fail on it, print exactly that message (file, line, what was
# expected) and write no output file.
set -u
mark=$1
dir=$(cd "$(dirname "$0")/bad" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail=0
for d in "$dir"/*.d; do
	name=$(basename "$d")
	want=$(sed -n '1s|^// expect: ||p' "$d")
	[ -n "$want" ] || { echo "FAIL: $name has no '// expect:' line"; fail=1; continue; }
	before=$fail
	for mode in -h -G; do
		got=$(cd "$dir" && "$mark" dtrace -s "$name" $mode -o "$work/out" 2>&1); rc=$?
		if [ $rc = 0 ]; then echo "FAIL: $name ($mode): accepted"; fail=1; continue; fi
		if [ "$got" != "$want" ]; then
			printf 'FAIL: %s (%s)\n  expected: %s\n  got:      %s\n' "$name" "$mode" "$want" "$got"; fail=1
		fi
		[ -e "$work/out" ] && { echo "FAIL: $name ($mode): wrote an output file"; rm -f "$work/out"; fail=1; }
	done
	[ $fail = $before ] && echo "ok: $name: $want"
done
# The command line itself.
expect_usage() {   # EXPECTED-SUBSTRING ARGS...
	local want=$1; shift
	local got; got=$("$mark" dtrace "$@" 2>&1) && { echo "FAIL: mark dtrace $* succeeded"; fail=1; return; }
	echo "$got" | grep -qF -- "$want" || { printf 'FAIL: mark dtrace %s\n  expected: %s\n  got: %s\n' "$*" "$want" "$got"; fail=1; }
}
expect_usage "no provider file: give -s FILE.d" -h
expect_usage "nothing to do: give -h (header) or -G (object)" -s "$dir/../basic.d"
expect_usage "cannot open /nonexistent.d" -h -s /nonexistent.d
expect_usage "unknown option --bogus" --bogus
expect_usage "option -o needs an argument" -h -s x.d -o
expect_usage "-h and -G exclude each other" -h -G -s x.d
# With -C the line numbers are those of the original file (cpp's linemarkers).
cat >"$work/cpp_err.d" <<'D'
#define T int
/* two
   lines */
provider p {
	probe ok(T a);
	probe bad(T a T b);
};
D
got=$(cd "$work" && "$mark" dtrace -C -s cpp_err.d -h -o out.h 2>&1)
want='cpp_err.d:6: error: expected "," or ")" after the parameter name, found "int"'
[ "$got" = "$want" ] || { printf 'FAIL: -C line numbers\n  expected: %s\n  got:      %s\n' "$want" "$got"; fail=1; }
# Without -C, systemtap's dtrace skips every line that starts with '#',
# directives included: mark does the same (one note says so) rather than
# refuse a file systemtap builds.
printf '#include "nothere.h"\n#define FOO 1\nprovider p { probe x(int a); };\n' >"$work/inc.d"
got=$(cd "$work" && "$mark" dtrace -s inc.d -h -o inc.h 2>&1); rc=$?
want='inc.d:1: note: without -C, preprocessor lines are skipped, as systemtap'"'"'s dtrace skips them; run with -C to apply them'
[ $rc = 0 ] && [ "$got" = "$want" ] && grep -q 'define P_X(' "$work/inc.h" ||
	{ printf 'FAIL: #include without -C\n  expected: rc 0, %s\n  got:      rc %s, %s\n' "$want" "$rc" "$got"; fail=1; }
"$mark" dtrace --help | grep -q "usage: mark dtrace" || { echo "FAIL: --help"; fail=1; }
# --help gives DTRACE as docs/usdt.md does: an absolute path (configure's
# AC_PATH_PROG searches PATH for "dtrace" when given a bare name).
help=$("$mark" dtrace --help)
echo "$help" | grep -qF 'DTRACE="$(command -v mark-dtrace)"' && grep -qF 'DTRACE="$(command -v mark-dtrace)"' "$(dirname "$0")/../../docs/usdt.md" ||
	{ echo "FAIL: --help and docs/usdt.md do not both give DTRACE=\"\$(command -v mark-dtrace)\""; fail=1; }
echo "$help" | grep -q 'DTRACE=mark-dtrace' && { echo "FAIL: --help still says DTRACE=mark-dtrace (a bare name)"; fail=1; }
# -h -o: written whole through OUT.tmp and renamed; a device, FIFO or link
# at OUT is refused and left as it was (a failed write used to unlink OUT,
# whatever it was: /dev/full as root), and a full disk leaves OUT as it was.
basic=$(cd "$(dirname "$0")" && pwd)/basic.d
mkfifo "$work/fifo"
ln -s "$work/victim.h" "$work/link.h"
echo "keep" >"$work/victim.h"
for out in "$work/fifo" "$work/link.h"; do
	got=$("$mark" dtrace -s "$basic" -h -o "$out" 2>&1) && { echo "FAIL: -h -o $out accepted"; fail=1; }
	echo "$got" | grep -q "not a regular file" || { printf 'FAIL: -h -o %s
  got: %s
' "$out" "$got"; fail=1; }
done
[ -p "$work/fifo" ] && [ -L "$work/link.h" ] && [ "$(cat "$work/victim.h")" = keep ] ||
	{ echo "FAIL: -h -o changed the FIFO, the link or its target"; fail=1; }
echo "old header" >"$work/kept.h"
"$mark" dtrace -s "$basic" -h -o "$work/kept.h" >/dev/null 2>&1 && grep -q "define" "$work/kept.h" &&
	[ ! -e "$work/kept.h.tmp" ] || { echo "FAIL: -h -o over a regular file"; fail=1; }
if mknod "$work/full" c 1 7 2>/dev/null; then
	got=$("$mark" dtrace -s "$basic" -h -o "$work/full" 2>&1) && { echo "FAIL: -h -o a device accepted"; fail=1; }
	[ -c "$work/full" ] || { echo "FAIL: -h -o removed or replaced a character device: $got"; fail=1; }
else
	echo "SKIP part: mknod is not allowed here: the device case did not run"
fi
# Bounded work: a file of 80000 probes made the duplicate checks take 27 s
# (quadratic; found by a review).  At most 10000 probes per file: one more
# is refused with the reason, at once; 10000 are taken.
awk 'BEGIN { print "provider big {"; for (i = 0; i < 10001; i++) printf "probe p%d(int a);\n", i; print "};" }' \
	>"$work/big.d"
got=$(cd "$work" && timeout 60 "$mark" dtrace -s big.d -h -o big.h 2>&1); rc=$?
case "$got" in
*"more than 10000 probes in one file"*) [ "$rc" = 1 ] || { echo "FAIL: 10001 probes: exit $rc"; fail=1; } ;;
*) echo "FAIL: 10001 probes not refused (exit $rc): $(printf '%s' "$got" | head -c 300)"; fail=1 ;;
esac
head -n 10001 "$work/big.d" >"$work/big10k.d"
echo "};" >>"$work/big10k.d"
(cd "$work" && timeout 60 "$mark" dtrace -s big10k.d -h -o big10k.h) ||
	{ echo "FAIL: a file of 10000 probes was refused"; fail=1; }
# The provider file's path goes into comments of the generated C: a
# directory name holding "*/" and a newline closed the comment and put its
# own code into every object built against the header and into the -G
# object (found by a review).  It must stay text.
evil=$work/$(printf 'x*/\nint injected_by_path = 42;\n/*')
mkdir -p "$evil" && cp "$basic" "$evil/p.d"
if "$mark" dtrace -s "$evil/p.d" -h -o "$work/inj.h" >/dev/null 2>&1 &&
	printf '#include "inj.h"\nint main(void) { return 0; }\n' >"$work/use.c" &&
	${CC:-cc} -I"$(dirname "$0")/../../include" -c "$work/use.c" -o "$work/use.o" 2>"$work/cc.err"; then
	nm "$work/use.o" | grep -q injected_by_path && { echo "FAIL: the -s path put code into the -h header"; fail=1; }
else
	echo "FAIL: -h with a hostile path: $(cat "$work/cc.err" 2>/dev/null)"; fail=1
fi
if "$mark" dtrace -s "$evil/p.d" -G -o "$work/inj.o" >/dev/null 2>"$work/g.err"; then
	nm "$work/inj.o" | grep -q injected_by_path && { echo "FAIL: the -s path put code into the -G object"; fail=1; }
else
	echo "FAIL: -G with a hostile path: $(cat "$work/g.err")"; fail=1
fi
# Bytes of a .d file in messages are escaped: a linemarker's file name and
# a token quoted in an error must not reach the terminal as ESC or BEL.
printf '# 1 "a\033]0;pwned\007.d"\nprovider p { probe x(int a \033[2J b); };\n' >"$work/esc.d"
got=$(cd "$work" && "$mark" dtrace -s esc.d -h -o esc.h 2>&1)
if printf '%s' "$got" | LC_ALL=C grep -q "$(printf '[\033\007]')"; then
	echo "FAIL: mark dtrace printed raw control bytes from the .d file: $(printf '%s' "$got" | cat -v)"; fail=1
fi
exit $fail

#!/usr/bin/env bash
# mark-dtrace against systemtap's dtrace on real projects' provider files
# (tests/dtrace/corpus/, see its README).  For every file systemtap accepts:
#   - mark-dtrace accepts it too, with -h and with -G;
#   - both headers define the same macros (PROVIDER_PROBE and _ENABLED);
#   - a program calling every probe gets the same .note.stapsdt probes
#     (provider, name, argument count) from both headers;
#   - the mark header adds no warning under the flags real projects use, in
#     C (gcc and clang, C89 to C17) and C++ (C++98 to C++20), -pedantic included;
#   - the header survives the project's own post-processing (PostgreSQL's
#     sed script, Erlang's lower-casing of the #define lines, memcached's
#     char * -> const char *).
# Usage: corpus_check.sh [--skip-language-modes BUILD] MARK_DTRACE DIR_OF_CORPUS
# --skip-language-modes leaves out the warning matrix (the host's compilers
# on the header in every language mode: the same in every build, so the
# default build runs it), naming BUILD (e.g. "the MARK_SANITIZE=address
# build") in its note; everything that runs this build's mark stays.
set -u
language_modes=1
if [ "${1:-}" = --skip-language-modes ]; then
	language_modes=0
	skipped_for=$2
	shift 2
fi
mark_dtrace=$1
corpus=$(cd "$2" && pwd)
stap=/usr/bin/dtrace
[ -x "$stap" ] || { echo "SKIP: systemtap's dtrace ($stap, Debian systemtap-sdt-dev) is not installed"; exit 77; }
printf "#include <sys/sdt.h>\n" | gcc -E -x c - >/dev/null 2>&1 || { echo "SKIP: <sys/sdt.h> is not installed (Debian systemtap-sdt-dev)"; exit 77; }
work=$(mktemp -d /tmp/mark-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
compared=0
compilers="gcc g++"
command -v clang >/dev/null && compilers="$compilers clang clang++"
[ $language_modes = 1 ] ||
	echo "note: the language-mode warning matrix is left out (this host's $compilers in every -std on the generated headers: the same in every build; the default build runs it; this is $skipped_for)"
warn="-Wall -Wextra -Wshadow -Wcast-qual -Wpointer-arith -Wundef -Wconversion -pedantic -Werror"
cwarn="-Wdeclaration-after-statement -Wmissing-prototypes -Wstrict-prototypes"

# The .d options a project's build uses: -C (with -I) when the file has
# preprocessor directives.
dopts() {
	if grep -qE '^[[:space:]]*#[[:space:]]*(include|define|if|ifdef|ifndef)\b' "$1"; then
		echo "-C -I$corpus/inc"
	fi
}

# A C file that calls every probe macro of header $1 (names from $2) with zeros.
caller() {
	local hdr=$1 names=$2
	echo "#include \"$hdr\""
	echo "void mark_corpus_user(void);"
	echo "void mark_corpus_user(void)"
	echo "{"
	while read -r m n; do
		args=""
		for ((i = 0; i < n; i++)); do [ $i -gt 0 ] && args="$args, "; args="${args}0"; done
		echo "	if (${m}_ENABLED())"
		echo "		$m($args);"
	done <"$names"
	echo "}"
}

# provider:name:argc of each .note.stapsdt note of an object, sorted.
notes() {
	readelf -nW "$1" | awk '
		/Provider:/ { p = $NF }
		/Name:/ { n = $2 }
		/Arguments:/ { c = NF - 1; print p ":" n ":" c }' | sort -u
}

for d in "$corpus"/*.d; do
	name=$(basename "$d" .d)
	opts=$(dopts "$d")
	# shellcheck disable=SC2086
	if ! (cd "$work" && "$stap" $opts -s "$d" -h -o "$work/$name.stap.h") >"$work/stap.err" 2>&1; then
		echo "note: $name: systemtap's dtrace refuses it; not compared ($(head -1 "$work/stap.err"))"
		continue
	fi
	# shellcheck disable=SC2086
	if ! "$mark_dtrace" $opts -s "$d" -h -o "$work/$name.h" 2>"$work/mark.err"; then
		echo "FAIL: $name: mark-dtrace -h refuses what systemtap accepts:"; cat "$work/mark.err"; fail=1; continue
	fi
	# shellcheck disable=SC2086
	if ! "$mark_dtrace" $opts -s "$d" -G -o "$work/$name.o" 2>"$work/mark.err"; then
		echo "FAIL: $name: mark-dtrace -G failed:"; cat "$work/mark.err"; fail=1; continue
	fi
	# Macro names (and arity, from the "#define X(arg1, arg2)" lines).
	for h in stap.h h; do
		sed -nE 's/^#define ([A-Za-z0-9_]+)\(([^)]*)\).*/\1 \2/p' "$work/$name.$h" |
			awk '{ n = ($2 == "") ? 0 : split(substr($0, index($0, " ") + 1), a, ","); print $1, n }' |
			sort -u >"$work/$name.$h.macros"
	done
	if ! cmp -s "$work/$name.stap.h.macros" "$work/$name.h.macros"; then
		echo "FAIL: $name: the macros differ (< systemtap, > mark):"
		diff "$work/$name.stap.h.macros" "$work/$name.h.macros" | head -10; fail=1; continue
	fi
	grep -v '_ENABLED ' "$work/$name.h.macros" >"$work/$name.probes"
	# Notes: the same probes with the same argument counts.
	caller "$work/$name.stap.h" "$work/$name.probes" >"$work/$name.stap.c"
	caller "$work/$name.h" "$work/$name.probes" >"$work/$name.c"
	gcc -O2 -c "$work/$name.stap.c" -o "$work/$name.stap.user.o" 2>"$work/cc.err" ||
		{ echo "FAIL: $name: the systemtap header does not compile here:"; head -5 "$work/cc.err"; fail=1; continue; }
	gcc -O2 -c "$work/$name.c" -o "$work/$name.user.o" 2>"$work/cc.err" ||
		{ echo "FAIL: $name: the mark header does not compile:"; head -5 "$work/cc.err"; fail=1; continue; }
	notes "$work/$name.stap.user.o" >"$work/$name.stap.notes"
	notes "$work/$name.user.o" >"$work/$name.notes"
	if [ ! -s "$work/$name.notes" ] && [ -s "$work/$name.probes" ]; then
		echo "FAIL: $name: no .note.stapsdt probes in the program"; fail=1; continue
	fi
	if ! cmp -s "$work/$name.stap.notes" "$work/$name.notes"; then
		echo "FAIL: $name: the .note.stapsdt probes differ (< systemtap, > mark):"
		diff "$work/$name.stap.notes" "$work/$name.notes" | head -10; fail=1; continue
	fi
	# No warning under real projects' flags, every language mode.
	bad=0
	matrix_compilers=$compilers
	[ $language_modes = 1 ] || matrix_compilers=""
	for cc in $matrix_compilers; do
		case $cc in
		*++) lang=c++; stds="c++98 c++11 c++17 c++20"; extra="" ;;
		*) lang=c; stds="c89 c99 c11 c17 gnu11"; extra=$cwarn ;;
		esac
		for std in $stds; do
			# -O0 is the other code path of jump sites; once per language is enough
			opts=-O2
			case $std in c11 | c++17) opts="-O0 -O2" ;; esac
			for opt in $opts; do
				# shellcheck disable=SC2086
				if ! $cc -x $lang -std=$std $warn $extra $opt -c "$work/$name.c" -o "$work/w.o" 2>"$work/cc.err"; then
					echo "FAIL: $name: $cc -std=$std $opt warns on the mark header:"; head -8 "$work/cc.err"
					bad=1; break 2
				fi
			done
		done
	done
	[ $bad = 0 ] || { fail=1; continue; }
	compared=$((compared + 1))
	no_warning=", no warning"
	[ $language_modes = 1 ] || no_warning=""
	echo "ok: $name ($(wc -l <"$work/$name.probes") probes, same macros and notes as systemtap$no_warning)"
done

# ---- the projects' post-processing of the generated header ----
# PostgreSQL (src/backend/utils/postprocess_dtrace.sed): TRACE_ prefix, char * -> const char *.
pg_sed='s/POSTGRESQL_/TRACE_POSTGRESQL_/g
s/( *char \*/(const char */g
s/, *char \*/, const char */g'
"$mark_dtrace" -C -s "$corpus/postgresql.d" -h -o "$work/pg.tmp" &&
	sed -e "$pg_sed" "$work/pg.tmp" >"$work/pg.h"
cat >"$work/pg.c" <<'C'
#include "pg.h"
void pg_user(const char *q, unsigned int xid);
void pg_user(const char *q, unsigned int xid)
{
	TRACE_POSTGRESQL_TRANSACTION_START(xid);
	if (TRACE_POSTGRESQL_QUERY_START_ENABLED())
		TRACE_POSTGRESQL_QUERY_START(q);
	TRACE_POSTGRESQL_SORT_DONE(1, 2L);
}
C
gcc -std=gnu99 -Wall -Wextra -Wdeclaration-after-statement -Wmissing-prototypes -Werror -c "$work/pg.c" -o "$work/pg.o" 2>"$work/cc.err" ||
	{ echo "FAIL: PostgreSQL's postprocess_dtrace.sed breaks the header:"; head -10 "$work/cc.err"; fail=1; }

# Erlang (erts/emulator/Makefile.in): every "#define ERLANG_X(...)" line is
# lower-cased; the code then calls erlang_x() and erlang_x_enabled().
"$mark_dtrace" -C -s "$corpus/erlang.d" -h -o "$work/erl.tmp" &&
	sed -e '/^#define[ 	]*ERLANG_[A-Z0-9_]*(.*)/y/ABCDEFGHIJKLMNOPQRSTUVWXYZ/abcdefghijklmnopqrstuvwxyz/' \
		"$work/erl.tmp" >"$work/erl.h"
cat >"$work/erl.c" <<'C'
#include "erl.h"
#define DTRACE_ENABLED(name) erlang_##name##_enabled()
void erl_user(char *p, char *mfa);
void erl_user(char *p, char *mfa)
{
	if (DTRACE_ENABLED(process_spawn))
		erlang_process_spawn(p, mfa);
	if (erlang_copy_struct_enabled())
		erlang_copy_struct(42u);
}
C
gcc -Wall -Wextra -Werror -c "$work/erl.c" -o "$work/erl.o" 2>"$work/cc.err" ||
	{ echo "FAIL: Erlang's lower-casing sed breaks the header:"; grep -c error "$work/cc.err"; head -6 "$work/cc.err"; fail=1; }

# memcached (Makefile.am): sed -e 's,void \*,const void \*,g' -e 's,char \*,const char \*,g'
"$mark_dtrace" -s "$corpus/memcached.d" -h -o "$work/mc.tmp" &&
	sed -e 's,void \*,const void \*,g' -e 's,char \*,const char \*,g' "$work/mc.tmp" >"$work/mc.h"
printf '#include "mc.h"\nvoid mc_user(const char *k);\nvoid mc_user(const char *k) { MEMCACHED_COMMAND_GET(1, k, 3, 4, 5); }\n' >"$work/mc.c"
gcc -Wall -Wextra -Werror -c "$work/mc.c" -o "$work/mc.o" 2>"$work/cc.err" ||
	{ echo "FAIL: memcached's sed breaks the header:"; head -6 "$work/cc.err"; fail=1; }

# systemtap accepts every file of the corpus: each must have been compared.
total=$(ls "$corpus"/*.d | wc -l)
[ "$compared" = "$total" ] || { echo "FAIL: only $compared of $total provider files were compared"; fail=1; }
[ $fail = 0 ] && echo "ok: corpus ($compared provider files$([ $language_modes = 1 ] || echo "; language modes left out"))"
exit $fail

#!/usr/bin/env bash
# Fuzz the --filter expression parser and evaluator (src/filter/filter.c)
# with afl++ (tests/fuzz/fuzz_filter.c).
#
#   tests/fuzz/run_filter.sh SECONDS [WORKDIR]
#
# Builds the harness with afl-clang-fast (ASan + UBSan, persistent mode),
# seeds a corpus with valid and invalid expressions, and runs afl-fuzz for
# SECONDS.  WORKDIR defaults to build-fuzz-filter/ at the top of the
# repository (or $MARK_FUZZ_DIR).  Exit status: 0 when no crash was found,
# 1 on a crash (the reproducer's path is printed), 77 when afl++ (Debian:
# afl++) is not installed.
set -euo pipefail
secs=${1:?usage: run_filter.sh SECONDS [WORKDIR]}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/afl_lib.sh"
work=${2:-${MARK_FUZZ_DIR:-$repo/build-fuzz-filter}}
mkdir -p "$work"

afl_require

bin=$work/fuzz_filter
if afl_stale "$bin" "$repo/src/filter" "$here/fuzz_filter.c" "$0"; then
	afl_build "$bin" "filter language" "$work" -g -O1 -I"$repo/src" \
		"$repo/src/filter/filter.c" "$here/fuzz_filter.c"
fi
seeds=$work/seeds
if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
	mkdir -p "$seeds"
	i=0
	for e in 'status == 500' 'path == "/api/*" && !(x < -3.5e2)' 'flags & 0x4 == 4 || a != b' \
		'((a >= 1) && (b <= 2)) || c > 3' 'name != "a\*b*"' 'a = 1' '(a' '"x"' 'a == 1 == 2'; do
		printf '%s\0\003abcdefgh\001\377\377\377\377\377\377\377\377' "$e" >"$seeds/seed$i"
		i=$((i + 1))
	done
fi

afl_run "$bin" "$seeds" "$work" "$secs" "the filter language"

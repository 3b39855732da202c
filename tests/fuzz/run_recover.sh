#!/usr/bin/env bash
# Fuzz crash recovery (src/tracer/recover.c) and the CLI's .mark-stats
# reader (cli/liveline.c) with afl++ (tests/fuzz/fuzz_recover.c).
#
#   tests/fuzz/run_recover.sh SECONDS [WORKDIR]
#
# Builds the harness and all of libmark with afl-clang-fast (ASan + UBSan,
# afl's persistent-mode driver), seeds a corpus with real traces of
# processes killed by SIGKILL (written by the real tracer, see
# gen_recover_seeds), and runs afl-fuzz for SECONDS.  (The harness is a
# libFuzzer-style target too: clang -fsanitize=fuzzer builds it as well.)
# The corpus, afl's findings and any crash stay
# in WORKDIR (default: build-fuzz-recover/ at the top of the repository, or
# $MARK_FUZZ_DIR).  The harness is rebuilt only when a source is newer.
# Exit status: 0 when no crash was found, 1 on a crash (the reproducer's
# path is printed), 77 when afl++ (Debian: afl++) is not installed.
set -euo pipefail
secs=${1:?usage: run_recover.sh SECONDS [WORKDIR]}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/afl_lib.sh"
work=${2:-${MARK_FUZZ_DIR:-$repo/build-fuzz-recover}}
mkdir -p "$work"

if ! pkg-config --exists liburcu-bp; then
	echo "SKIP: liburcu-bp is missing (Debian: liburcu-dev)"
	exit 77
fi
afl_require

# All of libmark, as CMakeLists.txt builds it (every src/ directory but
# arch/, plus this machine's arch/), and the CLI's .mark-stats reader with
# the CLI files it calls (cli/text.c: its escaping, where it exists).
libmark_sources "$repo"
for f in liveline.c text.c; do
	[ -f "$repo/cli/$f" ] && srcs+=("$repo/cli/$f")
done
flags=(-g -O1 -I"$repo/include" -I"$repo/src" -I"$repo/cli" -DMARK_BUILDING_LIBRARY=1 -DMARK_HAVE_AGENT=1
	$(pkg-config --cflags liburcu-bp))
libs=($(pkg-config --libs liburcu-bp) -lpthread -ldl)

# Rebuild only if a source or this script is newer than the harness.
stale() { afl_stale "$1" "$repo/src" "$repo/cli" "$here/fuzz_recover.c" "$0"; }
bin=$work/fuzz_recover
if stale "$bin"; then
	afl_build "$bin" recovery "$work" "${flags[@]}" "${srcs[@]}" "$here/fuzz_recover.c" "${libs[@]}"
fi
gen=$work/gen_recover_seeds
if stale "$gen"; then
	cc "${flags[@]}" -DMARK_FUZZ_GEN_SEEDS "${srcs[@]}" "$here/fuzz_recover.c" -o "$gen" "${libs[@]}"
fi
seeds=$work/seeds
if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
	"$gen" "$seeds"
fi

afl_run "$bin" "$seeds" "$work" "$secs" "crash recovery"

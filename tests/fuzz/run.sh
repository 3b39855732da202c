#!/usr/bin/env bash
# Fuzz the agent's message parser (src/agent/protocol.c) with libFuzzer.
#
#   tests/fuzz/run.sh SECONDS [WORKDIR]
#
# Builds tests/fuzz/fuzz_protocol.c with clang -fsanitize=fuzzer,address,
# undefined, seeds a corpus with valid messages, and runs for SECONDS.  The
# corpus and any crash reproducer stay in WORKDIR (default: build-fuzz/ at
# the top of the repository, or $MARK_FUZZ_DIR).  Exit status: 0 when no
# crash was found, 1 on a crash (the reproducer's path is printed), 77 when
# clang or its libFuzzer runtime (Debian: clang, libclang-rt-14-dev) is
# missing.
set -euo pipefail
secs=${1:?usage: run.sh SECONDS [WORKDIR]}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${2:-${MARK_FUZZ_DIR:-$repo/build-fuzz}}
cc=${MARK_FUZZ_CC:-clang}

if ! command -v "$cc" >/dev/null 2>&1; then
	echo "SKIP: $cc not found (install the Debian packages clang and libclang-rt-14-dev)"
	exit 77
fi
mkdir -p "$work/corpus" "$work/crashes"
if ! "$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$repo/src" "$here/fuzz_protocol.c" "$repo/src/agent/protocol.c" \
	-o "$work/fuzz_protocol" 2>"$work/build.log"; then
	if grep -q "libclang_rt.fuzzer\|cannot find.*fuzzer" "$work/build.log"; then
		echo "SKIP: clang's libFuzzer runtime is missing (install libclang-rt-14-dev)"
		exit 77
	fi
	cat "$work/build.log" >&2
	exit 1
fi
"$cc" -O1 -DMARK_FUZZ_GEN_SEEDS -I"$repo/src" "$here/fuzz_protocol.c" "$repo/src/agent/protocol.c" \
	-o "$work/gen_seeds"
"$work/gen_seeds" "$work/corpus"

echo "fuzzing the control protocol parser for ${secs}s (corpus: $work/corpus)"
status=0
"$work/fuzz_protocol" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=1024 \
	-dict="$here/protocol.dict" -artifact_prefix="$work/crashes/" -print_final_stats=1 \
	"$work/corpus" >"$work/fuzz.log" 2>&1 || status=$?
grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$work/fuzz.log" || true
if [ "$status" -ne 0 ]; then
	tail -n 40 "$work/fuzz.log" >&2
	echo "FAIL: the fuzzer found a problem; reproducer(s) in $work/crashes/:" >&2
	ls "$work/crashes" >&2
	exit 1
fi
echo "ok: no crash in ${secs}s"

#!/usr/bin/env bash
# Fuzz the native trace reader (cli/trace_native.c) with afl++
# (tests/fuzz/fuzz_reader.c).
#
#   tests/fuzz/run_reader.sh SECONDS [WORKDIR]
#
# Builds the harness with afl-clang-fast (ASan + UBSan, afl's
# persistent-mode driver; it is a libFuzzer-style target, so clang
# -fsanitize=fuzzer builds it as well), seeds a corpus with real traces
# written by the real tracer (tests/tracer/tracer_prog.c linked with all of
# libmark: every argument type, strings, a lossy discard-mode trace), and
# runs afl-fuzz for SECONDS.  The corpus, afl's findings and any crash stay
# in WORKDIR (default: build-fuzz-reader/ at the top of the repository, or
# $MARK_FUZZ_DIR).  The harness is rebuilt only when a source is newer.
# Exit status: 0 when no crash was found, 1 on a crash (the reproducer's
# path is printed), 77 when afl++ (Debian: afl++) or a dependency is missing.
set -euo pipefail
secs=${1:?usage: run_reader.sh SECONDS [WORKDIR]}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/afl_lib.sh"
work=${2:-${MARK_FUZZ_DIR:-$repo/build-fuzz-reader}}
mkdir -p "$work"

for pc in liburcu-bp babeltrace2; do
	if ! pkg-config --exists $pc; then
		echo "SKIP: $pc is missing (Debian: liburcu-dev, libbabeltrace2-dev)"
		exit 77
	fi
done
afl_require

# The reader and what it calls: the escaping (text.c, src/util/printable.c), the UUID text
# (src/util/uuid_text.c), the value text (trace_value.c, which also holds the
# babeltrace2 path: linked, not run) and the --filter evaluator (src/filter/filter.c).
reader=("$repo/cli/trace_native.c" "$repo/cli/text.c" "$repo/cli/trace_value.c" "$repo/src/util/printable.c"
	"$repo/src/util/uuid_text.c" "$repo/src/filter/filter.c")
flags=(-g -O1 -I"$repo/include" -I"$repo/src" -I"$repo/cli" $(pkg-config --cflags babeltrace2))
libs=($(pkg-config --libs babeltrace2) -lm)

stale() { afl_stale "$1" "$repo/cli" "$repo/src/util" "$here/fuzz_reader.c" "$0"; }
bin=$work/fuzz_reader
if stale "$bin"; then
	afl_build "$bin" reader "$work" "${flags[@]}" "${reader[@]}" "$here/fuzz_reader.c" "${libs[@]}"
fi

# Seeds: traces of tracer_prog (built here with all of libmark, as
# run_recover.sh builds it), packed in the harness's input format.
seeds=$work/seeds
if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds" 2>/dev/null)" ]; then
	libmark_sources "$repo"
	prog=$work/tracer_prog
	cc -O1 -I"$repo/include" -I"$repo/src" -DMARK_BUILDING_LIBRARY=1 -DMARK_HAVE_AGENT=1 \
		$(pkg-config --cflags liburcu-bp) "${srcs[@]}" "$repo/tests/tracer/tracer_prog.c" -o "$prog" \
		$(pkg-config --libs liburcu-bp) -lpthread -ldl
	rm -rf "$work/traces"
	mkdir -p "$work/traces" "$seeds"
	MARK_TRACE=$work/traces/types "$prog" types 20 >/dev/null
	MARK_TRACE=$work/traces/values "$prog" values 10 >/dev/null
	MARK_TRACE=$work/traces/strings "$prog" strings 30 2 >/dev/null
	MARK_TRACE=$work/traces/lossy MARK_MODE=discard MARK_BUFFER=4k "$prog" threads 400 2 >/dev/null
	/usr/bin/python3 - "$work/traces" "$seeds" <<'PY'
import os, struct, sys
src, out = sys.argv[1], sys.argv[2]
n = 0
for root, dirs, files in os.walk(src):
    if "metadata" not in files:
        continue
    def read(name, limit):
        p = os.path.join(root, name)
        return open(p, "rb").read()[:limit] if os.path.exists(p) else b""
    meta = read("metadata", 1 << 20)
    s0, s1 = read("stream-0", 16384), read("stream-1", 16384)
    with open(os.path.join(out, "seed-%d" % n), "wb") as f:
        f.write(struct.pack("<I", len(meta)) + meta + struct.pack("<I", len(s0)) + s0 + s1)
    n += 1
print("%d seeds" % n)
PY
fi

afl_run "$bin" "$seeds" "$work" "$secs" "the native trace reader"

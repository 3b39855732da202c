# Shared by the afl++ fuzz scripts (run_recover.sh, run_reader.sh,
# run_filter.sh); sourced.

# afl_require: exit 77 (ctest's skip) with the reason when afl++ is missing.
afl_require() {
	if ! command -v afl-clang-fast >/dev/null 2>&1 || ! command -v afl-fuzz >/dev/null 2>&1; then
		echo "SKIP: afl++ (afl-clang-fast, afl-fuzz) is not installed (Debian: afl++)"
		exit 77
	fi
}

# libmark_sources REPO: every libmark source, as CMakeLists.txt builds the
# library (every src/ directory but arch/, plus this machine's arch/), into
# the array `srcs`.
libmark_sources() {
	srcs=()
	local d
	for d in "$1"/src/*/; do
		case "$d" in */arch/) continue ;; esac
		srcs+=("$d"*.c)
	done
	# As CMakeLists.txt: the architecture's protocol and the shared driver.
	case "$(uname -m)" in
	x86_64) srcs+=("$1"/src/arch/x86_64/*.c "$1"/src/arch/common/*.c) ;;
	aarch64) srcs+=("$1"/src/arch/aarch64/*.c "$1"/src/arch/common/*.c) ;;
	*) srcs+=("$1"/src/arch/generic/*.c) ;;
	esac
}

# afl_stale BIN PATH...: true when BIN is missing or a PATH (file, or any
# file below a directory) is newer: the harness needs building again.
afl_stale() {
	local bin=$1
	shift
	[ ! -x "$bin" ] && return 0
	[ -n "$(find "$@" -newer "$bin" -print -quit)" ]
}

# afl_build BIN WHAT WORK CC-ARGS...: compile the harness BIN with
# afl-clang-fast, ASan and UBSan, in afl++'s persistent (libFuzzer-style)
# mode; on failure print the compiler's log and exit 1.
afl_build() {
	local bin=$1 what=$2 work=$3
	shift 3
	echo "building the $what fuzz target with afl-clang-fast"
	if ! env AFL_USE_ASAN=1 AFL_USE_UBSAN=1 AFL_QUIET=1 afl-clang-fast -fsanitize=fuzzer "$@" \
		-o "$bin.tmp" 2>"$work/build.log"; then
		cat "$work/build.log" >&2
		exit 1
	fi
	mv "$bin.tmp" "$bin"
}

# afl_run BIN SEEDS WORK SECS WHAT: fuzz BIN for SECS seconds from the
# corpus SEEDS, afl's output in WORK/afl, and exit: 0 without a crash, 1 on
# a crash (the reproducers are printed) or when afl-fuzz did not run.
afl_run() {
	local bin=$1 seeds=$2 work=$3 secs=$4 what=$5
	echo "fuzzing $what with afl++ for ${secs}s (seeds: $seeds)"
	local status=0 out=$work/afl
	export MARK_FUZZ_SCRATCH=$work/scratch
	trap 'rm -rf "$MARK_FUZZ_SCRATCH"' EXIT
	# A bounded, quiet, unattended run on a shared machine: no CPU binding, no
	# UI, no core_pattern or CPU governor requirement, stop after SECONDS.
	# -m none: ASan reserves terabytes of virtual memory.
	env AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
		AFL_BENCH_UNTIL_CRASH=1 AFL_NO_STARTUP_CALIBRATION=1 \
		afl-fuzz -i "$seeds" -o "$out" -m none -t 5000 -V "$secs" -- "$bin" >"$work/fuzz.log" 2>&1 || status=$?
	local stats=$out/default/fuzzer_stats
	if [ -f "$stats" ]; then
		grep -E "^(execs_done|execs_per_sec|corpus_count|saved_crashes|saved_hangs) " "$stats" || true
	fi
	local crashes
	crashes=$(find "$out/default/crashes" -type f -name 'id:*' 2>/dev/null | head -5)
	if [ -n "$crashes" ]; then
		echo "FAIL: afl++ found a crash; reproduce with: $bin FILE" >&2
		echo "$crashes" >&2
		exit 1
	fi
	if [ "$status" -ne 0 ] || [ ! -f "$stats" ]; then
		tail -n 30 "$work/fuzz.log" >&2
		echo "FAIL: afl-fuzz did not run (status $status)" >&2
		exit 1
	fi
	echo "ok: no crash in ${secs}s"
	exit 0
}

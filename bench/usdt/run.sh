#!/usr/bin/env bash
# bench/usdt/run.sh BUILD_DIR [REPS] - seed 003's experiment and the cost of
# one hit, against a mark build tree (libmark.so and include/ of this source).
#
#   1. per-iteration cost of the loop, every probe disabled, at -O0 and -O2:
#      no probe / sys/sdt.h + semaphore check / plain sys/sdt.h / mark jump
#      site / MARK_ENABLED() + site / mark generic site; ratios to "no probe"
#   2. one enabled hit: bpftrace attached to the USDT probe vs mark's tracer
#      (MARK_TRACE, overwrite mode); ratio bpftrace / mark
#
# Prints bench/common/bench.h R/S/I lines (for bench/report.py) and a table.
# Part 2 needs root and bpftrace; without them its rows are S (skipped) lines.
set -u
build=$(cd "${1:?usage: run.sh BUILD_DIR [REPS]}" && pwd)
reps=${2:-7}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d /tmp/bench-usdt.XXXXXX)
trap 'rm -rf "$out"' EXIT
CC=${CC:-cc}
inc="-I$root/include -I$here/../common"
lib="-L$build -lmark -Wl,-rpath,$build"

# ---- part 1 -----------------------------------------------------------------
objs=
for o in O0 O2; do
	for v in none sdt_sem sdt jump enabled generic; do
		site=jump
		[ $v = generic ] && site=generic
		$CC -std=gnu11 -$o -g $inc -DUSDT_VARIANT=$v -DUSDT_OPT=$o -DMARK_SITE=$site \
			-c "$here/loops.c" -o "$out/loop_${v}_$o.o" || exit 1
		objs="$objs $out/loop_${v}_$o.o"
	done
done
$CC -std=gnu11 -O2 $inc "$here/main.c" "$here/../common/bench.c" $objs -o "$out/bench_usdt" $lib -lm || exit 1
"$out/bench_usdt" --reps "$reps" | tee "$out/part1.txt"

# ---- part 2 -----------------------------------------------------------------
$CC -std=gnu11 -O2 $inc -DMARK_SITE=jump "$here/hit.c" -o "$out/hit_jump" $lib || exit 1
$CC -std=gnu11 -O2 $inc -DMARK_SITE=generic "$here/hit.c" -o "$out/hit_generic" $lib || exit 1
$CC -std=gnu11 -O2 $inc -DHIT_SDT "$here/hit.c" -o "$out/hit_sdt" || exit 1

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# per-iteration ns over REPS runs: CMD...
runs() { for _ in $(seq "$reps"); do "$@" | awk '/^ns_per_iter/ { print $2 }'; done; }
N_MARK=10000000
N_BPF=1000000
rvals() { tr '\n' ' '; }

base_jump=$(runs "$out/hit_jump" $N_MARK | tee "$out/bj" | median)
echo "R usdt_hit jump_disabled ns_per_iter ns $(rvals <"$out/bj")"
mark_vals=$(for _ in $(seq "$reps"); do rm -rf "$out/trace"
	MARK_TRACE="$out/trace" MARK_ENABLE=loop0 MARK_MODE=overwrite "$out/hit_jump" $N_MARK | awk '/^ns_per_iter/ { print $2 }'; done)
if [ -n "$mark_vals" ]; then
	echo "$mark_vals" >"$out/mt"
	echo "R usdt_hit mark_tracer ns_per_iter ns $(rvals <"$out/mt")"
	mark_hit=$(awk -v b="$base_jump" '{ print $1 - b }' "$out/mt" | median)
else
	echo "S usdt_hit mark_tracer the program printed nothing under MARK_TRACE (tracer missing?)"
fi

bpf_hit=
if [ "$(id -u)" != 0 ]; then
	echo "S usdt_hit bpftrace needs root"
elif ! command -v bpftrace >/dev/null; then
	echo "S usdt_hit bpftrace bpftrace is not installed"
else
	[ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	ulimit -l unlimited 2>/dev/null
	for kind in generic sdt; do
		base=$(runs "$out/hit_$kind" $N_BPF | tee "$out/b0" | median)
		for _ in $(seq "$reps"); do
			bpftrace -e "usdt:$out/hit_$kind:mark:loop0 { @n = count(); }" -c "$out/hit_$kind $N_BPF" 2>/dev/null
		done >"$out/bt.txt"
		grep -q "^@n: $((N_BPF + N_BPF / 10))\$" "$out/bt.txt" ||
			{ echo "S usdt_hit bpftrace_$kind bpftrace did not count every hit ($(grep '^@n' "$out/bt.txt" | head -1))"; continue; }
		awk '/^ns_per_iter/ { print $2 }' "$out/bt.txt" >"$out/b1"
		echo "R usdt_hit ${kind}_disabled ns_per_iter ns $(rvals <"$out/b0")"
		echo "R usdt_hit bpftrace_$kind ns_per_iter ns $(rvals <"$out/b1")"
		h=$(awk -v b="$base" '{ print $1 - b }' "$out/b1" | median)
		eval "bpf_hit_$kind=$h"
		[ $kind = generic ] && bpf_hit=$h
	done
fi

# ---- table --------------------------------------------------------------------
echo
python3 - "$out/part1.txt" "${mark_hit:-}" "${bpf_hit:-}" "${bpf_hit_sdt:-}" <<'PY'
import statistics, sys
rows = {}
unit = "?"
for line in open(sys.argv[1]):
    p = line.split()
    if p and p[0] == "R":
        rows[p[2]] = statistics.median(float(x) for x in p[5:])
        unit = p[4]
labels = [("none", "no probe"), ("sdt_sem", "sys/sdt.h + semaphore check"), ("sdt", "plain sys/sdt.h probe"),
          ("jump", "mark jump site"), ("enabled", "MARK_ENABLED() + site"), ("generic", "mark generic site")]
print("Seed 003's loop, probes disabled (median %s per iteration; ratio to no probe)" % unit)
print("%-30s %12s %8s %12s %8s" % ("", "-O0", "ratio", "-O2", "ratio"))
for k, label in labels:
    a, b = rows.get(k + "_O0"), rows.get(k + "_O2")
    print("%-30s %12.3f %7.3fx %12.3f %7.3fx" % (label, a, a / rows["none_O0"], b, b / rows["none_O2"]))
mark_hit, bpf_hit, bpf_sdt = (float(x) if x else None for x in sys.argv[2:5])
print()
print("One enabled hit (median ns, disabled loop subtracted)")
if mark_hit is not None:
    print("  mark tracer (MARK_TRACE, overwrite)      %10.1f ns" % mark_hit)
if bpf_hit is not None:
    print("  bpftrace on the mark generic site        %10.1f ns" % bpf_hit)
if bpf_sdt is not None:
    print("  bpftrace on a plain sys/sdt.h probe      %10.1f ns" % bpf_sdt)
if mark_hit and bpf_hit:
    print("  ratio bpftrace / mark tracer             %10.1fx" % (bpf_hit / mark_hit))
    print("I usdt_hit_ratio_bpftrace_over_mark %.2f" % (bpf_hit / mark_hit))
PY

#!/usr/bin/python3
"""Tests of the benchmark tooling (bench/): the pieces that turn numbers into
docs/benchmarks.md must compute what they claim.  No timing is asserted here
(speed goals live in `make bench`).

1. bench/size/size.py on real objects: bench/size/site.c compiled per
   variant with $CC, and 120 generated sites (bench/arming/gen_sites.py):
   compiled-out adds 0 bytes, every marker kind adds bytes to the straight-line
   path and has an out-of-line block, the census counts every generated site,
   and no jump site straddles a 64-byte line.
2. bench/report.py on a synthetic results file with known values: medians and
   ranges, skip reasons, goals met and not met (with the limits paragraph),
   unknown tables rendered generically, and the SVG plots written.

usage: test_bench_tools.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])
CC = os.environ.get("CC", "cc")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def test_size(tmp):
    inc = ["-I" + os.path.join(SRC, "include"), "-I" + os.path.join(SRC, "bench", "common")]
    lines = []
    for v in ("none", "out", "generic", "immediate", "jump"):
        defs = ["-DBENCH_SIZE_NONE=1"] if v == "none" else ["-DBENCH_VARIANT=" + v]
        if v == "out":
            defs.append("-DMARK_DISABLE")
        elif v != "none":
            defs.append("-DMARK_SITE=" + v)
        obj = os.path.join(tmp, f"size_{v}.o")
        run([CC, "-std=gnu11", "-O2", *defs, *inc, "-c", os.path.join(SRC, "bench/size/site.c"), "-o", obj])
        lines.append(f"{v}={obj}")
    with open(os.path.join(tmp, "size.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    gen = os.path.join(tmp, "gen")
    run(["/usr/bin/python3", os.path.join(SRC, "bench/arming/gen_sites.py"), gen, "1", "2", "60"])
    sobj = os.path.join(tmp, "sites_0.o")
    run([CC, "-std=gnu11", "-O2", "-DMARK_SITE=jump", *inc, "-I" + gen, "-c", os.path.join(gen, "sites_0.c"), "-o", sobj])
    with open(os.path.join(tmp, "sites.txt"), "w") as f:
        f.write(f"jump={sobj}\n")
    out = run(["/usr/bin/python3", os.path.join(SRC, "bench/size/size.py"), os.path.join(tmp, "size.txt"),
               os.path.join(tmp, "sites.txt")])
    vals = {}
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "R":
            vals[(f[1], f[2], f[3])] = float(f[5])
    check(vals.get(("t4", "out", "straight")) == 0 and vals.get(("t4", "out", "ool")) == 0,
          "compiled-out site adds no bytes")
    for k in ("generic", "immediate", "jump"):
        check(vals.get(("t4", k, "straight"), 0) >= 5, f"{k}: straight-line bytes >= 5")
        check(vals.get(("t4", k, "ool"), 0) > 10, f"{k}: an out-of-line block is found")
        check(("t4", k, "straight_work") in vals, f"{k}: my_work() measured")
    check(vals.get(("t4pad", "jump", "sites")) == 120, "census counts all 120 generated sites")
    check(vals.get(("t4pad", "jump", "straddling")) == 0, "no jump site straddles a line")
    check(vals.get(("t4pad", "jump", "max_pad"), 99) <= 4, "padding never exceeds 4 bytes")


SYNTH = """I clock rdtsc (invariant TSC, CPUID 0x80000007 EDX bit 8)
I tsc_ghz 2.5
R t1 out empty cycles 1.0 1.1 0.9 1.0 1.2
R t1 jump empty cycles 1.0 1.0 1.05 0.95 1.0
R t1 out memcpy cycles 100 101 99 100 100
R t1 jump memcpy cycles 130 131 129 130 132
S t1 sdt not measured: dtrace missing
R t3 rdtsc event cycles 20 20 20 21 19
R t3 disarmed event cycles 1 1 1 1 1
R t3 fast event cycles 15 15 15 15 15
R t3 tracer event cycles 50 50 51 49 50
R t3 lttng event cycles 300 300 300 300 300
S t3 uprobe_tracefs needs root
R t4 jump straight bytes 5
R t4 jump ool bytes 40
R t5 jump_s10000 arm ms 2 2 3 2 2
R t5 jump_s10000 disarm ms 1 1 1 1 1
R newtable rowa cola widgets 7 8 9 10 11
I table_title newtable 42. A table nobody told report.py about
"""


def test_report(tmp):
    res = os.path.join(tmp, "results.txt")
    with open(res, "w") as f:
        f.write(SYNTH)
    page = os.path.join(tmp, "page.md")
    out = run(["/usr/bin/python3", os.path.join(SRC, "bench/report.py"), "--results", res, "--page", page,
               "--plots", tmp, "--meta", "reps=5", "--meta", "compiler=gcc 12"])
    text = open(page).read()
    check(out.strip() and "![" not in out, "tables printed without image links")
    check("1.00 [0.900–1.20]" in text, "median [min–max] of the compiled-out empty loop")
    check("not measured: dtrace missing" in text, "skip reason of a row is shown")
    check(re.search(r"table 1 memcpy loop \| .* \| \*\*NO\*\*", text) is not None,
          "jump 30 cycles above compiled-out is not within noise")
    check(re.search(r"table 1 empty loop \| .* \| \*\*yes\*\*", text) is not None,
          "overlapping ranges are within noise")
    check("2.50×" in text and "What limits it" in text, "tracer 2.5x rdtsc: goal not met, limits explained")
    check(re.search(r"LTTng-UST \| LTTng 300 / mark 50.0 = 6.0× \| \*\*yes\*\*", text) is not None,
          "6x cheaper than LTTng meets the 5x goal")
    check("needs root" in text, "uprobe skip reason shown")
    check("42. A table nobody told report.py about" in text and "9.00 [7.00–11.0] widgets" in text,
          "unknown tables are rendered generically")
    for name in ("bench-disabled.svg", "bench-enabled.svg", "bench-arming.svg"):
        check(os.path.getsize(os.path.join(tmp, name)) > 1000, f"plot {name} written")


def main():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("SKIP: python3-matplotlib is not installed (apt-get install python3-matplotlib)")
        return 77
    if subprocess.run(["which", "objdump"], capture_output=True).returncode != 0:
        print("SKIP: objdump (binutils) is not installed")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        test_size(tmp)
        test_report(tmp)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("bench tooling: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

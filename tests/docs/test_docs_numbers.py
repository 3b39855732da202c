#!/usr/bin/python3
"""The costs the README and docs/tracer.md give are the ones `make bench`
measured (docs/benchmarks.md, which it writes), not older figures.

    test_docs_numbers.py SOURCE_DIR

Every "N cycles", "N M events/s" and "N×"/"Nx" (ratio) figure in README.md
and docs/tracer.md must appear in docs/benchmarks.md: cycles and ratios as
written there, events/s as the table's median in millions, rounded.
Exit 0 = pass, 1 = fail.
"""
import os
import re
import sys

src = sys.argv[1]
bench = open(os.path.join(src, "docs", "benchmarks.md"), encoding="utf-8").read()
# numbers as benchmarks.md writes them ("42.1", "1.94", "55,261,500")
bench_numbers = set(re.findall(r"\d+(?:\.\d+)?", bench.replace(",", "")))
# table 6 medians, in M events/s, rounded
rates = {str(round(int(v.replace(",", "")) / 1e6)) for v in
         re.findall(r"^\| \d producer threads? \| ([\d,]+) ", bench, re.M)}
if not rates:
    print("FAIL: docs/benchmarks.md has no table 6 (tracer throughput) medians")
    sys.exit(1)

failures = []
for name in ("README.md", os.path.join("docs", "tracer.md")):
    text = open(os.path.join(src, name), encoding="utf-8").read()
    flat = re.sub(r"\s+", " ", text)
    for m in re.finditer(r"(\d+(?:\.\d+)?)(?:[–-](\d+(?:\.\d+)?))? cycles", flat):
        for n in filter(None, m.groups()):
            if n not in bench_numbers:
                failures.append("%s: \"%s\" is not a figure of docs/benchmarks.md" % (name, m.group(0)))
    for m in re.finditer(r"(\d+(?:\.\d+)?) ?M (?:events/s|from)", flat):
        if m.group(1) not in rates:
            failures.append("%s: \"%s\" is not a median of benchmarks.md table 6 (%s M events/s)"
                            % (name, m.group(0), ", ".join(sorted(rates))))
    for m in re.finditer(r"(\d+\.\d+)(?:[–-](\d+\.\d+))?[×x]\b", flat):
        for n in filter(None, m.groups()):
            if n not in bench_numbers:
                failures.append("%s: ratio \"%s\" is not a figure of docs/benchmarks.md" % (name, m.group(0)))
for f in failures:
    print("FAIL:", f)
if failures:
    print("Take the figure from docs/benchmarks.md (written by `make bench`) or name the command that gives it.")
    sys.exit(1)
print("ok")

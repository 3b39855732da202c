#!/usr/bin/python3
"""Time `mark stats` with its begin/end pairing (issue 13 section 5, issue 15)
on the reader benchmark's trace; a separate script so that reader_bench.py
(owned by the reader benchmark) stays as it is.

    stats_bench.py MARK TRACE_DIR REPS

The trace of bench/reader/run.sh (gen_trace.c) pairs rb_req_begin/rb_req_end
on every thread, so every row below pairs 1 event in 4.  Rows (bench/report.py
lines, medians in the I lines):
    stats_pairs       mark stats --histogram TRACE
    stats_by          mark stats --by path --histogram TRACE (4 rows per pair)
    bt2_counter_s     babeltrace2 -c sink.utils.counter TRACE (the ratio's base)
run.sh runs it on its trace after reader_bench.py.
"""
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reader_bench import timed  # noqa: E402  (wait4: seconds and peak RSS)


def main():
    mark, trace, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    st = subprocess.run([mark, "stats", trace], capture_output=True, text=True)
    m = re.search(r": (\d+) events, (\d+) lost", st.stdout)
    pairs = re.search(r"^rb_req\s+(\d+)", st.stdout, re.M)
    if st.returncode != 0 or not m or not pairs:
        print("S reader stats_pairs not measured: mark stats failed or found no rb_req pair: %s"
              % (st.stderr or st.stdout)[-200:].replace("\n", " "))
        return 0
    events = int(m.group(1))
    print("I reader_pairs %d events, %s rb_req pairs" % (events, pairs.group(1)))
    rows = [("stats_pairs", [mark, "stats", "--histogram", trace]),
            ("stats_by", [mark, "stats", "--by", "path", "--histogram", trace]),
            ("bt2_counter_s", ["babeltrace2", "-c", "sink.utils.counter", trace])]
    med = {}
    for name, args in rows:
        if name.startswith("bt2") and subprocess.run(["which", "babeltrace2"], capture_output=True).returncode:
            print("S reader %s not measured: babeltrace2 is not installed" % name)
            continue
        secs, rss, cpus = [], [], []
        for _ in range(reps):
            dt, peak, rc, cpu = timed(args)
            if rc != 0:
                break
            secs.append(dt)
            rss.append(peak)
            cpus.append(cpu)
        if len(secs) < reps:
            print("S reader %s not measured: %s failed" % (name, args[0]))
            continue
        print("R reader %s events_per_s Mev/s %s" % (name, " ".join("%.3f" % (events / s / 1e6) for s in secs)))
        print("R reader %s seconds s %s" % (name, " ".join("%.3f" % s for s in secs)))
        print("R reader %s events_per_cpu_s Mev/s %s" % (name, " ".join("%.3f" % (events / c / 1e6) for c in cpus if c > 0)))
        print("R reader %s peak_rss MiB %s" % (name, " ".join("%.1f" % r for r in rss)))
        med[name] = statistics.median(secs)
    for name in ("stats_pairs", "stats_by"):
        if name not in med:
            continue
        rate = events / med[name] / 1e6
        print("I reader_goal %s %.1f M events/s (goal >= 20 M): %s" % (name, rate, "met" if rate >= 20 else "NOT met"))
        if "bt2_counter_s" in med:
            ratio = med["bt2_counter_s"] / med[name]
            print("I reader_ratio %s is %.1fx babeltrace2 -c sink.utils.counter (goal >= 10x): %s"
                  % (name, ratio, "met" if ratio >= 10 else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Time the trace readers on one trace (bench/reader/run.sh).

    reader_bench.py MARK TRACE_DIR REPS

Each command runs REPS times with stdout to /dev/null, the repetitions
interleaved across the commands (each command once, then again); its wall time and
peak RSS come from os.wait4()'s rusage (ru_maxrss, KiB on Linux), so no
/usr/bin/time is needed.  Prints bench/report.py lines:
    R reader ROW events_per_s  Mev/s  v...
    R reader ROW MB_per_s      MB/s   v...
    R reader ROW seconds       s      v...
    R reader ROW peak_rss      MiB    v...
    R reader ROW events_per_cpu_s Mev/s v...   (per second of its CPU time)
and I lines with the trace's size, the event count and the ratios the
issue asks for (medians).
"""
import os
import re
import statistics
import subprocess
import sys
import time


def timed(args, env=None):
    """(seconds, peak RSS in MiB, exit status) of one run, stdout to /dev/null."""
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        p = subprocess.Popen(args, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print("reader_bench: %s failed (%d): %s" % (" ".join(args), p.returncode, err[-300:]), file=sys.stderr)
    return dt, ru.ru_maxrss / 1024.0, p.returncode, ru.ru_utime + ru.ru_stime


def main():
    mark, trace, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    streams = []
    for root, dirs, files in os.walk(trace):
        streams += [os.path.join(root, f) for f in files if f.startswith("stream-")]
    nbytes = sum(os.path.getsize(f) for f in streams)
    st = subprocess.run([mark, "stats", trace], capture_output=True, text=True)
    m = re.search(r": (\d+) events, (\d+) lost", st.stdout)
    if st.returncode != 0 or not m:
        print("S reader all not measured: mark stats failed: %s" % st.stderr[-200:].replace("\n", " "))
        return 0
    events = int(m.group(1))
    mb = nbytes / 1e6
    print("I reader_trace %s: %d events, %.1f MB in %d stream files" % (trace, events, mb, len(streams)))

    env_native = dict(os.environ)
    env_native.pop("MARK_READER", None)
    env_native.pop("MARK_READER_THREADS", None)
    # the reader on the calling thread alone: what one core does
    env_one = dict(env_native, MARK_READER_THREADS="1")
    # two threads, the reading one never writing the arguments' text ahead
    # (the default writes it while the command's thread is behind)
    env_no_ahead = dict(env_native, MARK_READER_TEXT_AHEAD="never")
    rows = [
        ("cat", ["cat"] + streams, None),
        ("bt2_counter", ["babeltrace2", "-c", "sink.utils.counter", trace], None),
        ("stats", [mark, "stats", trace], env_native),
        ("stats_one_thread", [mark, "stats", trace], env_one),
        ("view", [mark, "view", trace], env_native),
        ("view_one_thread", [mark, "view", trace], env_one),
        ("view_no_text_ahead", [mark, "view", trace], env_no_ahead),
        ("view_filter", [mark, "view", "-e", "rb_req_*", trace], env_native),
        # a field filter (issue 13's language), printing half of the events that have `i`
        ("view_filter_expr", [mark, "view", "--filter", "i & 1 == 0", trace], env_native),
        ("export", [mark, "export", "-o", "-", trace], env_native),
        ("export_no_text_ahead", [mark, "export", "-o", "-", trace], env_no_ahead),
        ("export_perfetto", [mark, "export", "--format", "perfetto", "-o", "-", trace], env_native),
        ("export_otlp", [mark, "export", "--format", "otlp", "-o", "-", trace], env_native),
    ]
    med, cpu_med = {}, {}
    if subprocess.run(["which", "babeltrace2"], capture_output=True).returncode:
        print("S reader bt2_counter not measured: babeltrace2 is not installed")
        rows = [r for r in rows if r[0] != "bt2_counter"]
    # Repetitions interleaved (every row once, then again): this shared
    # machine's slow spells last tens of seconds, and a row measured in one
    # block could fall in one whole; interleaved, every row's median samples
    # the same spells, so the ratios between rows hold.
    samples = {name: [] for name, _, _ in rows}
    failed = set()
    for _ in range(reps):
        for name, args, env in rows:
            if name in failed:
                continue
            dt, peak, rc, cpu = timed(args, env)
            if rc != 0:
                failed.add(name)
                continue
            samples[name].append((dt, peak, max(cpu, 1e-6)))
    for name, args, _ in rows:
        if name in failed:
            print("S reader %s not measured: %s failed" % (name, args[0]))
            continue
        secs = [x[0] for x in samples[name]]
        rss = [x[1] for x in samples[name]]
        cpus = [x[2] for x in samples[name]]
        ev = " ".join("%.3f" % (events / s / 1e6) for s in secs)
        if name != "cat":
            print("R reader %s events_per_s Mev/s %s" % (name, ev))
            # per second of the command's own CPU time (user + system, all its
            # threads): what it costs, whatever else the machine runs; on a
            # loaded machine the wall-clock rate above is lower
            print("R reader %s events_per_cpu_s Mev/s %s"
                  % (name, " ".join("%.3f" % (events / c / 1e6) for c in cpus)))
        print("R reader %s MB_per_s MB/s %s" % (name, " ".join("%.1f" % (mb / s) for s in secs)))
        print("R reader %s seconds s %s" % (name, " ".join("%.3f" % s for s in secs)))
        print("R reader %s peak_rss MiB %s" % (name, " ".join("%.1f" % r for r in rss)))
        med[name] = statistics.median(secs)
        cpu_med[name] = statistics.median(cpus)
    if "bt2_counter" in med and "stats" in med:
        print("I reader_ratio stats is %.1fx babeltrace2 -c sink.utils.counter (goal >= 10x)"
              % (med["bt2_counter"] / med["stats"]))
    for name in ("stats", "view"):
        if name in med and name + "_one_thread" in med:
            print("I reader_threads %s: two reader threads (the default here) take %.2fx the time of one "
                  "(median wall time; %.2fx the CPU time)"
                  % (name, med[name] / med[name + "_one_thread"], cpu_med[name] / cpu_med[name + "_one_thread"]))
    for name in ("view", "export"):
        if name in med and name + "_no_text_ahead" in med:
            print("I reader_text_ahead %s: with the arguments' text written ahead by the reading thread (the "
                  "default) it takes %.2fx the time it takes without (MARK_READER_TEXT_AHEAD=never; median "
                  "wall time; %.2fx the CPU time)"
                  % (name, med[name] / med[name + "_no_text_ahead"], cpu_med[name] / cpu_med[name + "_no_text_ahead"]))
    for name, goal in (("stats", 20), ("stats_one_thread", 20), ("view", 10), ("view_filter", 10), ("view_filter_expr", 10), ("export", 5),
                       ("export_perfetto", 5),
                       ("export_otlp", 5)):
        if name in med:
            rate = events / med[name] / 1e6
            crate = events / cpu_med[name] / 1e6
            print("I reader_goal %s %.1f M events/s (goal >= %d M): %s; %.1f M per CPU-second"
                  % (name, rate, goal, "met" if rate >= goal else "NOT met", crate))
    if "cat" in med:
        for name in ("stats", "view", "export", "export_perfetto", "export_otlp"):
            if name in med:
                print("I reader_vs_cat %s reads at %.0f%% of cat's MB/s" % (name, 100 * med["cat"] / med[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

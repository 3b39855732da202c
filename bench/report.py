#!/usr/bin/python3
"""bench/report.py - turn the result lines of a bench/run.sh run into the
tables (printed) and the page docs/benchmarks.md with its plots.

Input: result lines (bench/common/bench.h's format) from every program:
  R <table> <row> <column> <unit> <v1> ... <vn>    one value per repetition
  S <table> <row> <reason...>                       row not measured, and why
  I <key> <value...>                                information
plus run metadata (--meta key=value).  Tables this script does not know
(pieces dropped into bench/<area>/ by other modules) are rendered
generically; their titles come from "I table_title <table> <title...>" and
notes from "I table_note <table> <text...>".

usage: report.py --results FILE --page OUT.md --plots DIR --plot-prefix REL [--meta k=v ...]
"""
import argparse
import os
import statistics
import sys

# ---------------------------------------------------------------- parsing


class Results:
    def __init__(self):
        self.r = {}        # (table, row, col) -> (unit, [values])
        self.order = {}    # table -> [rows in first-seen order]
        self.skips = {}    # (table, row) -> reason
        self.info = []     # (key, value)

    def load(self, path):
        for line in open(path, errors="replace"):
            f = line.rstrip("\n").split(" ")
            if len(f) >= 6 and f[0] == "R":
                try:
                    vals = [float(x) for x in f[5:] if x]
                except ValueError:
                    continue
                self.r[(f[1], f[2], f[3])] = (f[4], vals)
                self.order.setdefault(f[1], [])
                if f[2] not in self.order[f[1]]:
                    self.order[f[1]].append(f[2])
            elif len(f) >= 3 and f[0] == "S":
                self.skips[(f[1], f[2])] = " ".join(f[3:])
                self.order.setdefault(f[1], [])
                if f[2] not in self.order[f[1]]:
                    self.order[f[1]].append(f[2])
            elif len(f) >= 2 and f[0] == "I":
                self.info.append((f[1], " ".join(f[2:])))

    def get(self, table, row, col):
        v = self.r.get((table, row, col))
        return v[1] if v else None

    def unit(self, table, row, col):
        v = self.r.get((table, row, col))
        return v[0] if v else ""

    def med(self, table, row, col):
        v = self.get(table, row, col)
        return statistics.median(v) if v else None

    def infos(self, key):
        return [v for k, v in self.info if k == key]

    def cols(self, table, row):
        return [c for (t, r, c) in self.r if t == table and r == row]


def fmt_num(x, digits=None):
    if x is None:
        return "n/a"
    a = abs(x)
    if digits is not None:
        return f"{x:.{digits}f}"
    if a >= 1e6:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def cell(vals, digits=None):
    """median [min–max]"""
    if not vals:
        return "not measured"
    if len(vals) == 1:
        return fmt_num(vals[0], digits)
    return f"{fmt_num(statistics.median(vals), digits)} [{fmt_num(min(vals), digits)}–{fmt_num(max(vals), digits)}]"


def nm(reason):
    """A skip reason, said once: 'not measured: ...'."""
    return reason if reason.startswith("not measured") else "not measured: " + reason


def overlap(a, b):
    """'Within noise': the min–max ranges of the two sample sets overlap, or
    their medians differ by less than 1 % (ranges of a few parts per
    million can miss each other while being equal for any purpose)."""
    if not a or not b:
        return False
    if min(a) <= max(b) and min(b) <= max(a):
        return True
    ma, mb = statistics.median(a), statistics.median(b)
    return abs(ma - mb) <= 0.01 * abs(mb)


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------- the page


class Page:
    def __init__(self, res, meta, plots_dir, plot_prefix):
        self.res, self.meta = res, meta
        self.plots_dir, self.plot_prefix = plots_dir, plot_prefix
        self.parts = []
        self.goals = []   # (goal, measured, met: True/False/None)
        self.plots = []

    def add(self, text):
        self.parts.append(text)

    def stamp(self, program, stats=True):
        m = self.meta
        reps = m.get("reps", "?")
        st = f" · median [min–max] over {reps} repetitions" if stats else " · exact byte counts (deterministic)"
        return (f"*{m.get('cpu', '?')}, {m.get('ncpu', '?')} CPUs · {m.get('compiler', '?')} -O2 · "
                f"{m.get('date', '?')} · reproduce: `{m.get('command', './bench/run.sh full')}` "
                f"(program: `{program}`){st}*\n")

    def plot(self, name, draw):
        """draw(plt) makes the figure; saved as SVG, linked from the page."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except Exception as e:   # noqa: BLE001 - any import problem means no plots
            self.add(f"*(plot {name} not drawn: matplotlib unavailable: {e})*")
            return
        plt.rcParams.update({"font.size": 9, "svg.hashsalt": "mark-bench"})
        fig = plt.figure(figsize=(7, 3.6))
        try:
            draw(plt, fig)
            fig.tight_layout()
            # BENCH_PLOT_FORMAT=png draws PNGs instead (for viewers without SVG).
            fmt = os.environ.get("BENCH_PLOT_FORMAT", "svg")
            if fmt != "svg":
                name = name.rsplit(".", 1)[0] + "." + fmt
            path = os.path.join(self.plots_dir, name)
            fig.savefig(path, metadata={"Date": None})
            self.add(f"![{name}]({self.plot_prefix}{name})")
            self.plots.append(path)
        except Exception as e:   # noqa: BLE001 - a plot must not lose the tables
            self.add(f"*(plot {name} failed: {e})*")
        finally:
            plt.close(fig)


T1_ROWS = [
    ("out", "compiled out (`-DMARK_DISABLE`)"),
    ("generic", "mark **generic** (flag load, test, branch)"),
    ("immediate", "mark **immediate** (`movb $0,%al`, test, branch)"),
    ("jump", "mark **jump** (5-byte NOP)"),
    ("sdt", "`sys/sdt.h` probe + semaphore test"),
    ("lttng", "LTTng-UST tracepoint, not enabled"),
    ("nop5", "5 one-byte NOPs (`90`×5)"),
    ("nop2", "2 NOPs (`66 66 90 66 90`)"),
    ("nopl", "1 NOP with ModRM (`0f 1f 44 00 00`)"),
]


# The seeds' figures, for the reader's side-by-side (cycles, Pentium 4 3 GHz, kernel markers).
SEED_T1 = {"out": "1.50 / 1298.16", "generic": "2.67 / 1300.28", "immediate": "4.00 / 1298.23",
           "nop5": "3.00 / 1298.39", "nop2": "2.00 / 1298.13", "nopl": "3.00 / 1298.56"}
SEED_T2 = {"out": "100.47 / 100.27", "generic": "100.71 / 105.84", "immediate": "100.22 / 100.16"}
SEED_T3 = {"va_empty": "52.11", "va_read": "55.74", "va_parse": "96.22", "uprobe_tracefs": "4233.97 (kprobe)"}


def table1(p):
    res = p.res
    p.add("## 1. Disabled sites (seeds 000/001)\n")
    p.add("Cycles per loop iteration for an empty loop and a loop copying 4096 bytes, each iteration "
          "passing one `MARK(subsys_mark1, \"%d %p\", 1, NULL)` site (or its counterpart) that is not "
          "enabled.  Every variant is its own translation unit built from `bench/disabled/loops.c`; "
          "`asm volatile` barriers keep the loop bodies exactly the site plus the seeds' work.  "
          "Δ is the per-site cost: the row's median minus compiled-out's.  The LTTng row runs in its own "
          "process (liblttng-ust starts threads) and is compared with that process's compiled-out loop.\n")
    p.add(p.stamp("build-bench/bench/bench_disabled, bench_disabled_lttng"))
    rows = []
    for key, label in T1_ROWS:
        if (("t1", key) in res.skips) or not res.get("t1", key, "empty"):
            if key == "lttng" and res.get("t1", "lttngproc_lttng", "empty"):
                pass
            else:
                reason = res.skips.get(("t1", key), "not measured (program missing)")
                rows.append([label, reason, "", "", "", SEED_T1.get(key, "")])
                continue
        base = "out"
        rk = key
        if key == "lttng":
            base, rk = "lttngproc_out", "lttngproc_lttng"
        e, c = res.get("t1", rk, "empty"), res.get("t1", rk, "memcpy")
        be, bc = res.med("t1", base, "empty"), res.med("t1", base, "memcpy")
        de = statistics.median(e) - be if e and be is not None else None
        dc = statistics.median(c) - bc if c and bc is not None else None
        rows.append([label, cell(e), "—" if key == "out" else fmt_num(de, 2),
                     cell(c), "—" if key == "out" else fmt_num(dc, 2), SEED_T1.get(key, "")])
    p.add(md_table(["site", "empty loop", "Δ empty", "memcpy 4096 loop", "Δ memcpy",
                    "seeds (P4 3 GHz, 2006): empty / memcpy"], rows))
    p.add("")
    if res.get("t1", "lttngproc_out", "empty"):
        p.add(f"LTTng process baseline (compiled out, same loops): empty "
              f"{cell(res.get('t1', 'lttngproc_out', 'empty'))}, memcpy {cell(res.get('t1', 'lttngproc_out', 'memcpy'))}.\n")
    j, o = res.get("t1", "jump", "memcpy"), res.get("t1", "out", "memcpy")
    je, oe = res.get("t1", "jump", "empty"), res.get("t1", "out", "empty")
    if j and o:
        ok = overlap(j, o)
        p.goals.append(("Disarmed jump within noise of compiled-out, table 1 memcpy loop",
                        f"jump {cell(j)} vs out {cell(o)} cycles", ok))
    if je and oe:
        ok = overlap(je, oe)
        p.goals.append(("Disarmed jump within noise of compiled-out, table 1 empty loop",
                        f"jump {cell(je)} vs out {cell(oe)} cycles", ok))

    def draw(plt, fig):
        ax = fig.add_subplot(111)
        keys = [(k, l) for k, l in T1_ROWS if k != "out" and
                (res.get("t1", k, "empty") or res.get("t1", "lttngproc_" + k, "empty"))]
        names = [k for k, _ in keys]
        xs = range(len(names))
        for off, col, color in ((-0.2, "empty", "#4c72b0"), (0.2, "memcpy", "#dd8452")):
            meds, lo, hi = [], [], []
            for k in names:
                rk, base = (("lttngproc_lttng", "lttngproc_out") if k == "lttng" else (k, "out"))
                v = res.get("t1", rk, col)
                b = res.med("t1", base, col)
                m = statistics.median(v) - b
                meds.append(m)
                lo.append(m - (min(v) - b))
                hi.append((max(v) - b) - m)
            ax.bar([x + off for x in xs], meds, 0.4, yerr=[lo, hi], capsize=2, color=color,
                   label=f"{col} loop")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names)
        ax.set_ylabel(f"Δ {res.unit('t1', 'out', 'empty')} per site vs compiled out")
        ax.set_title("Disabled site cost (median, min–max bars)")
        lim = max(1.0, max(abs(x) for x in ax.get_ylim()))
        ax.set_ylim(-min(lim, 5), min(lim, 10))
        ax.legend()
    p.plot("bench-disabled.svg", draw)
    p.add("")


def table2(p):
    res = p.res
    p.add("## 2. Disabled sites under memory pressure (seed 002)\n")
    p.add("A handler with 4 markers between two timestamp reads (`lfence; rdtsc` … `rdtscp; lfence`), "
          "one build per kind (`bench/pressure/handler.c`).  *Idle*: called back to back.  *Pressure*: "
          "each call follows a 1 MB buffer write, so the generic flags (one descriptor line each) and the "
          "handler are cache-cold.  Cycles per handler call (the timestamp pair itself included).\n")
    p.add(p.stamp("build-bench/bench/bench_pressure"))
    rows = []
    labels = dict(T1_ROWS)
    labels["nopl"] = "control: 4 bare NOPs `0f 1f 44 00 00`, no marker"
    for k in ("out", "generic", "immediate", "jump", "nopl"):
        if k == "nopl" and not res.get("t2", k, "idle"):
            continue
        if ("t2", k) in res.skips:
            rows.append([labels[k], res.skips[("t2", k)], "", "", "", ""])
            continue
        i, pr = res.get("t2", k, "idle"), res.get("t2", k, "pressure")
        bi, bp = res.med("t2", "out", "idle"), res.med("t2", "out", "pressure")
        rows.append([labels[k], cell(i), "—" if k == "out" else fmt_num(statistics.median(i) - bi if i else None, 1),
                     cell(pr), "—" if k == "out" else fmt_num(statistics.median(pr) - bp if pr else None, 1),
                     SEED_T2.get(k, "")])
    p.add(md_table(["4 markers, kind", "idle", "Δ idle", "memory pressure", "Δ pressure",
                    "seed 002 (P4, per IRQ): idle / pressure"], rows))
    p.add("")
    j, o = res.get("t2", "jump", "pressure"), res.get("t2", "out", "pressure")
    if j and o:
        p.goals.append(("Disarmed jump within noise of compiled-out, table 2 (memory pressure)",
                        f"jump {cell(j)} vs out {cell(o)} cycles/call", overlap(j, o)))

    def draw(plt, fig):
        ax = fig.add_subplot(111)
        ks = [k for k in ("out", "generic", "immediate", "jump", "nopl") if res.get("t2", k, "idle")]
        xs = range(len(ks))
        for off, col, color in ((-0.2, "idle", "#4c72b0"), (0.2, "pressure", "#c44e52")):
            meds = [res.med("t2", k, col) for k in ks]
            err = [[m - min(res.get("t2", k, col)) for m, k in zip(meds, ks)],
                   [max(res.get("t2", k, col)) - m for m, k in zip(meds, ks)]]
            ax.bar([x + off for x in xs], meds, 0.4, yerr=err, capsize=2, color=color, label=col)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(ks)
        ax.set_ylabel(f"{res.unit('t2', 'out', 'idle')} per handler call")
        ax.set_title("Handler with 4 disabled markers: idle vs 1 MB write before each call")
        ax.legend()
    p.plot("bench-pressure.svg", draw)
    p.add("")


T3_ROWS = [
    ("rdtsc", "bare timestamp read (`rdtsc`)"),
    ("clock_gettime", "`clock_gettime(CLOCK_MONOTONIC)` (vDSO)"),
    ("disarmed", "mark jump site, disarmed (loop + call)"),
    ("armed_noprobe", "armed, no probe connected"),
    ("va_empty", "armed, empty varargs probe"),
    ("va_read", "armed, varargs probe reading its 2 args"),
    ("va_parse", "armed, varargs probe parsing the format string"),
    ("fast", "armed, mark fast probe (compile-time layout)"),
    ("tracer", "**mark tracer: event recorded in the ring buffer**"),
    ("lttng", "LTTng-UST tracepoint, session recording (snapshot ring buffer)"),
    ("uprobe_tracefs", "uprobe on the site (tracefs `uprobe_events`, ftrace buffer)"),
    ("uprobe_bpftrace", "uprobe via bpftrace (`uprobe:…:site_once {}`)"),
]


def table3(p):
    res = p.res
    p.add("## 3. Enabled markers (seed 001)\n")
    p.add("Cycles per loop iteration calling `site_once(1, NULL)`, a function holding "
          "`MARK(subsys_mark1, \"%d %p\", value, ptr)` (jump kind), for each consumer.  The tracer records "
          "into its overwrite-mode ring buffer and LTTng into a snapshot-mode (overwrite) session, so both "
          "measure the producer's cost of one recorded event.  *ratio* = row ÷ bare `rdtsc`; "
          "*event* = row − disarmed loop (the cost the event adds).\n")
    p.add(p.stamp("build-bench/bench/bench_enabled, bench_lttng_enabled"))
    ts = res.med("t3", "rdtsc", "event")
    dis = res.med("t3", "disarmed", "event")
    rows = []
    for k, label in T3_ROWS:
        v = res.get("t3", k, "event")
        if not v:
            rows.append([label, res.skips.get(("t3", k), "not measured (program missing)"), "", "", SEED_T3.get(k, "")])
            continue
        m = statistics.median(v)
        rows.append([label, cell(v), fmt_num(m - dis) if dis is not None and k not in ("rdtsc", "clock_gettime", "disarmed") else "—",
                     f"{m / ts:.2f}×" if ts else "n/a", SEED_T3.get(k, "")])
    p.add(md_table(["consumer", f"{res.unit('t3', 'rdtsc', 'event') or 'cycles'}/loop", "event", "ratio to rdtsc",
                    "seed 001 (P4)"], rows))
    p.add("")
    for key, text in res.infos("uprobe_profile")[:1] and [("uprobe_profile", res.infos("uprobe_profile")[0])] or []:
        p.add(f"uprobe hits counted by the kernel (`uprobe_profile`): `{text.strip()}`\n")
    for text in res.infos("lttng_snapshot"):
        p.add(f"LTTng snapshot check: {text}\n")
    for text in res.infos("tracer_stats"):
        p.add(f"Tracer statistics: {text}\n")
    def goal_vs_rdtsc(row, goal, factor):
        """A goal row: table 3 row `row` at most `factor` x rdtsc."""
        v = res.med("t3", row, "event")
        if not ts:
            return v
        if v is not None:
            p.goals.append((goal, f"{fmt_num(v)} vs rdtsc {fmt_num(ts)} cycles = {v / ts:.2f}×", v <= factor * ts))
        else:
            p.goals.append((goal, res.skips.get(("t3", row), f"not measured: {row} row missing"), None))
        return v
    tr = goal_vs_rdtsc("tracer", "One recorded \"%d %p\" event ≤ 2× a bare timestamp read", 2)
    # --filter (issue 13): a rejected event against rdtsc, an accepted one against `tracer`
    goal_vs_rdtsc("tracer_filter_reject", "Event rejected by a one-comparison --filter ≤ 1.5× a bare timestamp read", 1.5)
    fa = res.med("t3", "tracer_filter_accept", "event")
    if fa is not None and tr is not None:
        p.add(f"An event accepted by a one-comparison --filter: {fmt_num(fa)} cycles, "
              f"{fmt_num(fa - tr)} more than unfiltered.\n")
    lt = res.med("t3", "lttng", "event")
    if tr is not None and lt is not None:
        p.goals.append(("Recorded event ≥ 5× cheaper than LTTng-UST", f"LTTng {fmt_num(lt)} / mark {fmt_num(tr)} = {lt / tr:.1f}×",
                        lt >= 5 * tr))
    elif tr is None or lt is None:
        p.goals.append(("Recorded event ≥ 5× cheaper than LTTng-UST",
                        nm("tracer row missing" if tr is None else
                           res.skips.get(("t3", "lttng"), "LTTng row missing")), None))
    for k in ("uprobe_tracefs", "uprobe_bpftrace"):
        u = res.med("t3", k, "event")
        if tr is not None and u is not None:
            p.goals.append((f"Recorded event ≥ 25× cheaper than a uprobe hit ({k.split('_')[1]})",
                            f"uprobe {fmt_num(u)} / mark {fmt_num(tr)} = {u / tr:.1f}×", u >= 25 * tr))
        else:
            p.goals.append((f"Recorded event ≥ 25× cheaper than a uprobe hit ({k.split('_')[1]})",
                            nm("tracer row missing" if tr is None else res.skips.get(("t3", k), "row missing")), None))

    def draw(plt, fig):
        ax = fig.add_subplot(111)
        ks = [(k, l) for k, l in T3_ROWS if res.get("t3", k, "event")]
        meds = [res.med("t3", k, "event") for k, _ in ks]
        colors = ["#55a868" if k in ("tracer", "fast") else "#8172b2" if k in ("lttng", "uprobe_tracefs", "uprobe_bpftrace")
                  else "#4c72b0" for k, _ in ks]
        ax.barh(range(len(ks)), meds, color=colors)
        ax.set_yticks(range(len(ks)))
        ax.set_yticklabels([k for k, _ in ks])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel(f"{res.unit('t3', 'rdtsc', 'event') or 'cycles'} per loop (log)")
        if ts:
            ax.axvline(ts, color="grey", linestyle=":", linewidth=1)
            ax.axvline(2 * ts, color="red", linestyle="--", linewidth=1, label="2× rdtsc (goal for the tracer)")
            ax.legend(loc="upper right")
        ax.set_title("Enabled marker: cost per event by consumer")
    p.plot("bench-enabled.svg", draw)

    sweep_rows = [r for r in ("disarmed", "fast", "tracer") if res.cols("t3sweep", r)]
    if sweep_rows:
        p.add("\n**Cost against argument count** (`MARK(sweep_aN, \"%d …\", a, …)` with N int arguments, "
              "fast probe reading every slot, and the tracer):\n")
        counts = [0, 1, 2, 4, 8, 12]
        rows = []
        for r in sweep_rows:
            rows.append([r] + [fmt_num(res.med("t3sweep", r, f"a{n}")) for n in counts])
        if ("t3sweep", "tracer") in res.skips:
            rows.append(["tracer", res.skips[("t3sweep", "tracer")]] + [""] * (len(counts) - 1))
        p.add(md_table(["consumer"] + [f"{n} args" for n in counts], rows))
        p.add("")

        def draw2(plt, fig):
            ax = fig.add_subplot(111)
            for r, c in (("disarmed", "#4c72b0"), ("fast", "#55a868"), ("tracer", "#c44e52")):
                pts = [(n, res.med("t3sweep", r, f"a{n}")) for n in counts if res.get("t3sweep", r, f"a{n}")]
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", color=c, label=r)
            if ts:
                ax.axhline(ts, color="grey", linestyle=":", linewidth=1, label="rdtsc")
            ax.set_xlabel("arguments")
            ax.set_ylabel(f"{res.unit('t3', 'rdtsc', 'event') or 'cycles'} per event")
            ax.set_title("Event cost against argument count")
            ax.set_ylim(bottom=0)
            ax.legend()
        p.plot("bench-args.svg", draw2)
    p.add("")


# Table 3b (issue 14): bench_streaming's rows and LTTng-UST's in the same modes.
T3S_ROWS = [
    # key, label, mode, buffer, consumer
    ("rdtsc", "bare timestamp read (`rdtsc`)", "—", "—", "—"),
    ("discard_disk", "**streaming**: `MARK_TRACE=dir` / `mark record`", "discard", "2 MB (default)",
     "yes, writing the stream file to disk"),
    ("overwrite_cache", "**flight recorder**, ring in cache", "overwrite", "256 KB", "idle (overwrite)"),
    ("overwrite_64m", "flight recorder, large ring", "overwrite", "64 MB", "idle (overwrite)"),
    ("discard_2t", "streaming, 2 producer threads (per thread)", "discard", "2 MB each", "yes, to disk"),
    ("first_event", "a fresh thread's first event (ring claim or creation)", "discard", "2 MB", "yes, to disk"),
    ("first_1000", "a fresh thread's first 1000 events, mean", "discard", "2 MB", "yes, to disk"),
    ("rdtsc_drop", "bare `rdtsc` (beside the next row)", "—", "—", "—"),
    ("dropped", "one event a full ring drops (consumer stalled)", "discard", "64 KB", "stalled"),
    ("lttng_discard", "LTTng-UST, default discard channel, lttng-consumerd to disk", "discard",
     "LTTng default", "yes (lttng-consumerd)"),
    ("lttng_snapshot", "LTTng-UST, snapshot session", "overwrite", "LTTng default", "idle (snapshot)"),
]
# The same cases without glibc's rseq registration (bench_streaming --only norseq).
T3S_ROWS += [(k + "_norseq", "no rseq: " + label.replace("**", ""), mode, buf, cons)
             for k, label, mode, buf, cons in T3S_ROWS[:5]]


def stream_stats(res):
    """row -> list of dicts of the per-session counters bench_streaming prints."""
    out = {}
    for text in res.infos("stream_stats"):
        f = text.split()
        if not f:
            continue
        d = {}
        for kv in f[1:]:
            k, _, v = kv.partition("=")
            try:
                d[k] = int(v)
            except ValueError:
                pass
        out.setdefault(f[0], []).append(d)
    return out


def table3b(p):
    res = p.res
    if not any(k[0] == "t3s" for k in res.r) and not any(k[0] == "t3s" for k in res.skips):
        return
    p.add("## 3b. The recordings users run (issue 14)\n")
    p.add("Cycles per loop of `site_once(1, NULL)` (the `\"%d %p\"` marker of table 3) while a whole session "
          "runs: discard mode with the consumer writing the stream file to the build tree's disk (what "
          "`MARK_TRACE=dir` and `mark record` do), overwrite mode with a ring in cache and a 64 MB one, two "
          "producers, a fresh thread, and the same rows with glibc's rseq registration off "
          "(`GLIBC_TUNABLES=glibc.pthread.rseq=0`).  Each sample is one timed session (≥ 5 s in `make bench`; "
          "no best-of-sub-runs), the rows interleaved per repetition; the producer is pinned, the consumer is "
          "where the scheduler puts it.  LTTng-UST runs the same loop in its matching modes.  *ratio* = "
          "median ÷ median of the bare `rdtsc` row of the same program; discard-mode rows also count the "
          "events the full buffer discarded (they cost less than recorded ones).\n")
    p.add(p.stamp("build-bench/bench/bench_streaming, bench_lttng_enabled --arg MODE"))
    ss = stream_stats(res)
    ts = res.med("t3s", "rdtsc", "event")
    tsn = res.med("t3s", "rdtsc_norseq", "event")
    rows = []
    for k, label, mode, buf, cons in T3S_ROWS:
        v = res.get("t3s", k, "event")
        if not v:
            rows.append([label, mode, buf, cons, res.skips.get(("t3s", k), "not measured"), "", ""])
            continue
        base = (tsn if k.endswith("_norseq") else res.med("t3s", "rdtsc_drop", "event")
                if k in ("dropped", "rdtsc_drop") else ts)
        m = statistics.median(v)
        lost = ""
        st = ss.get(k)
        if st:
            calls = sum(d.get("calls", 0) for d in st)
            lo = sum(d.get("lost", 0) for d in st)
            flt = statistics.median(d.get("minflt", 0) + d.get("majflt", 0) for d in st)
            if mode == "discard" and calls:
                lost = f"{100.0 * lo / calls:.0f} % discarded; "
            lost += f"{flt:.0f} page faults/session"
        rows.append([label, mode, buf, cons, cell(v), f"{m / base:.2f}×" if base else "n/a", lost])
    p.add(md_table(["case", "mode", "buffer", "consumer", f"{res.unit('t3s', 'rdtsc', 'event') or 'cycles'}/event",
                    "ratio to rdtsc", "lost, faults"], rows))
    p.add("")
    for text in res.infos("rseq"):
        p.add(f"No-rseq rows: {text}.\n")
    for text in res.infos("lttng_stop"):
        p.add(f"LTTng `lttng stop`: {text}\n")
    for text in res.infos("lttng_bytes"):
        p.add(f"LTTng: {text}\n")

    def goal(name, row, limit, base_row="rdtsc"):
        v, b = res.med("t3s", row, "event"), res.med("t3s", base_row, "event")
        if v is None or b is None:
            p.goals.append((name, nm(res.skips.get(("t3s", row), "row missing")), None))
        else:
            p.goals.append((name, f"{fmt_num(v)} vs rdtsc {fmt_num(b)} cycles = {v / b:.2f}×", v <= limit * b))
    goal("(issue 14) Streaming (discard, consumer to disk, 2 MB) event ≤ 1.5× rdtsc", "discard_disk", 1.5)
    goal("(issue 14) Flight recorder, ring in cache ≤ 1.5× rdtsc", "overwrite_cache", 1.5)
    goal("(issue 14) Flight recorder, 64 MB ring ≤ 1.5× rdtsc", "overwrite_64m", 1.5)
    goal("(issue 14) No-rseq fallback, flight recorder in cache ≤ 1.5× rdtsc", "overwrite_cache_norseq", 1.5,
         "rdtsc_norseq")
    for lk, mk, what in (("lttng_discard", "discard_disk", "streaming to disk"),
                         ("lttng_snapshot", "overwrite_cache", "snapshot / flight recorder")):
        lv, mv = res.med("t3s", lk, "event"), res.med("t3s", mk, "event")
        name = f"(issue 14) ≥ 8× cheaper than LTTng-UST, {what}"
        if lv is None or mv is None:
            p.goals.append((name, nm(res.skips.get(("t3s", lk), "LTTng row missing")), None))
        else:
            p.goals.append((name, f"LTTng {fmt_num(lv)} / mark {fmt_num(mv)} = {lv / mv:.1f}×", lv >= 8 * mv))


def table6b(p):
    res = p.res
    rows = []
    for fs, label in (("disk", "disk (build tree's file system)"), ("tmpfs", "tmpfs (/dev/shm)")):
        k = "block_" + fs
        ev = res.get("t6s", k, "events")
        if not ev:
            rows.append([label, res.skips.get(("t6s", k), "not measured"), "", "", "", "", ""])
            continue
        mb, mbs, dd, ca = (res.get("t6s", k, c) for c in ("mbs", "mbs_synced", "dd", "cached"))
        ratio = statistics.median(mbs) / statistics.median(dd) if dd and statistics.median(dd) else None
        rows.append([label, cell(ev), cell(mb), cell(mbs), cell(dd), f"{ratio:.2f}" if ratio else "n/a",
                     cell(ca, 2)])
    if not any(r[1] != "not measured" for r in rows) and not res.get("t6s", "block_disk", "events"):
        return
    p.add("### 6b. Block mode sustained, beside `dd` (issue 14)\n")
    secs = res.infos("block_secs")
    p.add("Block mode (zero loss), one producer, one session of " + (secs[0].split(" ", 1)[1] if secs else "≥ 10 s") +
          " per sample.  *MB/s* counts the bytes the consumer wrote over the session (start to the end of "
          "`mark_tracer_stop()`); *synced* adds a `syncfs()` after the stop, so it is what the device took; "
          "`dd` writes the same number of bytes to the same file system with `conv=fdatasync` right after "
          "each session.  *in page cache* is Dirty + Writeback of /proc/meminfo at the session's end as a "
          "share of the bytes written (the part the page cache, not the disk, absorbed).\n")
    p.add(md_table(["file system", "events/s", "MB/s (session)", "MB/s (synced)", "dd MB/s", "synced ÷ dd",
                    "in page cache (%)"], rows))
    p.add("")
    d, t = res.med("t6s", "block_disk", "mbs_synced"), res.med("t6s", "block_tmpfs", "mbs")
    dd = res.med("t6s", "block_disk", "dd")
    if d and t and dd:
        bind = ("the disk (tmpfs streams faster than the disk takes the bytes)" if t > 1.2 * d
                else "the CPU (the disk keeps up: tmpfs is no faster)")
        p.add(f"What binds on this machine: {bind}.\n")
        p.goals.append(("(issue 14) Block mode to disk, sustained, ≥ 0.9 of dd's MB/s",
                        f"{fmt_num(d)} vs dd {fmt_num(dd)} MB/s = {d / dd:.2f}", d >= 0.9 * dd))


# Measured by hand from the cross compiler's object code (instruction counts
# do not drift); see docs/markers.md for the protocol.
AARCH64_SIZES = ('**aarch64** (issue 12; cross-compiled with Debian\'s aarch64-linux-gnu-gcc 12.2 -O2 -fPIC, read with `aarch64-linux-gnu-objdump -d` from a function `int work(int x, void *p) { MARK(sz_ev, "%d %p", x, p); return x + 1; }`, exact): a disarmed **jump** site is one `nop`, **4 bytes** in the straight line (armed: one `b` to the out-of-line block; no padding: every instruction is 4-byte aligned and cannot straddle a line); an **immediate** site is `mov w0,#0; b .+8; mov w0,#1` plus the compiler\'s `cbnz`, **16 bytes** (arming turns the `b` into a `nop`: aarch64 may only patch NOP and B under running threads, docs/markers.md); a **generic** site is `adrp; add; add; ldrh; tst; b.ne`, **24 bytes**.  In this function the site also costs a stack frame on the straight line (`stp`/`str x19`), which the out-of-line block needs for its argument slots.  No aarch64 hardware is available here: the aarch64 suite runs under qemu-user (`make test-aarch64`), where **timings mean nothing**, so no table on this page has aarch64 timings; the sizes are exact.\n')


def table4(p):
    res = p.res
    p.add("## 4. Code size per site\n")
    p.add("Bytes one site adds to a function, read from the object code (`bench/size/size.py`: objdump of "
          "the function with and without the site, subtracted), in the seeds' `my_open()` and in `my_work()` "
          "(below the table).  "
          "Straight-line = from the entry to the end of the first `ret`; out of line = the rest of the "
          "function after alignment NOPs, plus its `.cold` part.  The seeds: immediate 6 / 32, generic 11 / 32 "
          "(i386, 2006).\n")
    p.add(p.stamp("bench/size/size.py over build-bench/bench/CMakeFiles/bench_size_*.dir", stats=False))
    rows = []
    labels = dict(T1_ROWS)
    clang = res.infos("size_compiler2")
    cc = p.meta.get("compiler", "cc").split(" (")[0].split(" ")[0]
    combos = [("", cc, "my_open"), ("_work", cc, "my_work")]
    if clang:
        combos += [("_clang", "clang", "my_open"), ("_work_clang", "clang", "my_work")]
    for k in ("out", "generic", "immediate", "jump", "sdt", "lttng"):
        if res.get("t4", k, "straight") is None:
            continue
        row = [labels[k]]
        for tag, _, _ in combos:
            s_, o_ = res.get("t4", k, "straight" + tag), res.get("t4", k, "ool" + tag)
            row.append(f"{s_[0]:.0f} / {o_[0]:.0f}" if s_ and o_ else "")
        rows.append(row)
    if not rows:
        p.add(res.skips.get(("t4", "all"), "not measured: size.py produced nothing"))
    else:
        p.add(md_table(["site"] + [f"{c} `{f}()`: straight / out of line" for _, c, f in combos], rows))
        p.add("\n`my_open()` is the seeds' function (`return -EPERM;` and the site: no frame); `my_work()` "
              "calls a function twice (a frame and live registers of its own).  In `my_open()` the "
              "out-of-line block needs a stack frame for its argument slots: GCC shrink-wraps it into the "
              "cold path, clang sets it up on the straight-line path too (`sub/add $N,%rsp`).  In "
              "`my_work()` the site changes register allocation and frame size around it, which can add a "
              "few bytes beside the NOP." + (f"  Second compiler: {clang[0]}." if clang else ""))
    p.add("")
    s = res.get("t4", "jump", "straight")
    if s is not None:
        w = res.get("t4", "jump", "straight_work")
        extra = f"; {w[0]:.0f} in my_work()" if w else ""
        p.goals.append(("Disarmed jump adds exactly 5 bytes to the straight-line path",
                        f"{s[0]:.0f} bytes in the seeds' my_open() ({p.meta.get('compiler', 'cc').split(' (')[0].split(' ')[0]}){extra}",
                        s[0] == 5))
    n = res.get("t4pad", "jump", "sites")
    if n:
        padded = res.get("t4pad", "jump", "padded")[0]
        pb = res.get("t4pad", "jump", "pad_bytes")[0]
        mx = res.get("t4pad", "jump", "max_pad")[0]
        st = res.get("t4pad", "jump", "straddling")[0]
        odd = res.get("t4pad", "jump", "odd")
        ev = res.get("t4pad", "jump", "even_pads")
        even_text = ""
        if odd is not None and ev is not None:
            even_text = (f"  {ev[0]:.0f} sites ({100 * ev[0] / n[0]:.1f} %) got a 1-byte `.p2align 1` NOP in "
                         f"front (jump sites start at even addresses, docs/markers.md); sites at an odd "
                         f"address: {odd[0]:.0f} (must be 0).")
        p.add(f"**Cache-line padding census** over the {n[0]:.0f} generated jump sites of table 5: "
              f"{padded:.0f} sites ({100 * padded / n[0]:.1f} %) got a `.p2align 6,,4` pad in front "
              f"(max {mx:.0f} bytes, {pb / n[0]:.2f} bytes per site on average), so the straight-line cost "
              f"is 5 bytes, or 5 + 1 at an odd address, or 5 + ≤4 when the NOP would cross a 64-byte line.  "
              f"Sites straddling a line: {st:.0f} "
              f"(must be 0: issue 2 requires that a 5-byte site never straddles a cache line).{even_text}\n")
        p.goals.append(("No jump site straddles a 64-byte line", f"{st:.0f} of {n[0]:.0f}", st == 0))
        if odd is not None:
            p.goals.append(("No jump site starts at an odd address", f"{odd[0]:.0f} of {n[0]:.0f}",
                            odd[0] == 0))
    p.add(AARCH64_SIZES)


def table5(p):
    res = p.res
    p.add("## 5. Arming cost\n")
    p.add("Wall-clock time (CLOCK_MONOTONIC) of one `mark_arm(glob)` and one `mark_disarm(glob)` for globs "
          "matching 1, 100 and 10,000 distinct sites (generated by `bench/arming/gen_sites.py`), while 2 "
          "threads run through all 10,000 sites in a loop; a fast probe on `arm_*` counts the armed hits.  "
          "One program per kind.\n")
    p.add(p.stamp("build-bench/bench/bench_arming_{jump,immediate,generic}"))
    rows = []
    for kind in ("jump", "immediate", "generic"):
        for n, key in ((1, "s1"), (100, "s100"), (10000, "s10000")):
            a, d = res.get("t5", f"{kind}_{key}", "arm"), res.get("t5", f"{kind}_{key}", "disarm")
            if a is None:
                if ("t5", kind) in res.skips and n == 1:
                    rows.append([kind, "", res.skips[("t5", kind)], ""])
                continue
            rows.append([kind, f"{n:,}", cell(a, 3), cell(d, 3)])
    p.add(md_table(["kind", "sites", "arm (ms)", "disarm (ms)"], rows))
    p.add("")
    for text in res.infos("arming_busy"):
        p.add(f"- busy threads: {text}")
    p.add("")
    a = res.get("t5", "jump_s10000", "arm")
    if a:
        p.goals.append(("Arming 10,000 sites < 50 ms (jump)", f"{cell(a, 2)} ms", statistics.median(a) < 50))

    def draw(plt, fig):
        ax = fig.add_subplot(111)
        for kind, c in (("jump", "#4c72b0"), ("immediate", "#dd8452"), ("generic", "#55a868")):
            pts = [(n, res.med("t5", f"{kind}_{key}", "arm")) for n, key in ((1, "s1"), (100, "s100"), (10000, "s10000"))
                   if res.get("t5", f"{kind}_{key}", "arm")]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", color=c, label=f"{kind} arm")
        ax.axhline(50, color="red", linestyle="--", linewidth=1, label="50 ms goal")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sites matched by the glob")
        ax.set_ylabel("ms per mark_arm()")
        ax.set_title("Arming cost with 2 threads executing the sites")
        ax.legend()
    p.plot("bench-arming.svg", draw)
    p.add("")


def table6(p):
    res = p.res
    p.add("## 6. Tracer throughput\n")
    p.add("Events per second with zero loss: block mode (a full buffer makes the producer wait), the "
          "trace written to disk, `MARK(bench_throughput, \"%d %p\", …)` in a tight loop on 1 and 2 producer "
          "threads; one sample is a whole session from start to the end of `mark_tracer_stop()` (flush "
          "included); a sample with any lost or missing event fails the run.\n")
    p.add(p.stamp("build-bench/bench/bench_throughput"))
    rows = []
    for k, label in (("t1", "1 producer thread"), ("t2", "2 producer threads")):
        v = res.get("t6", k, "rate")
        rows.append([label, cell(v) if v else res.skips.get(("t6", k), "not measured")])
    p.add(md_table(["producers", "events/s"], rows))
    p.add("")
    for text in res.infos("throughput_bytes"):
        p.add(f"- {text}")
    p.add("")


def table7(p):
    res = p.res
    p.add("## 7. Macro-benchmark (seed 001's kernel build and ping flood)\n")
    titles = res.infos("t7_title")
    for t in res.infos("t7_method"):
        p.add(t + "\n")
    p.add(p.stamp("bench/macro/run.sh"))
    rows = []
    unit = None
    base = res.get("t7", "out", "rate")
    for k, label in (("out", "compiled out (`-DMARK_DISABLE`)"), ("disarmed", "compiled in, disarmed"),
                     ("armed", "all armed and recording (mark tracer)"), ("armed_probe", "all armed, fast probe counting")):
        v = res.get("t7", k, "rate")
        if v is None:
            if ("t7", k) in res.skips:
                rows.append([label, res.skips[("t7", k)], ""])
            continue
        unit = res.unit("t7", k, "rate")
        d = (statistics.median(v) / statistics.median(base) - 1) * 100 if base and k != "out" else None
        rows.append([label, cell(v), "—" if d is None else f"{d:+.2f} %"])
    if not rows:
        p.add(res.skips.get(("t7", "all"), "not measured: the macro-benchmark did not run"))
    else:
        p.add(md_table(["build", unit or "rate", "vs compiled out"], rows))
        o, d = res.get("t7", "out", "rate"), res.get("t7", "disarmed", "rate")
        if o and d:
            spread = (max(o) - min(o)) / statistics.median(o) * 100
            p.add(f"\nNoise: compiled-out runs spread {spread:.2f} % (max−min over median).")
            p.goals.append(("Disarmed jump within noise of compiled-out, table 7 (macro)",
                            f"disarmed {cell(d)} vs out {cell(o)} {unit}", overlap(o, d)))
    for t in res.infos("t7_note"):
        p.add(f"\n{t}")
    p.add("")
    del titles


# Tables of the pieces other modules drop into bench/<area>/: title, what the
# rows are, the program.  Their own README has the details.
EXTRA = {
    "eventhandler": ("8. Event handlers: cycles per `EVENTHANDLER_INVOKE()` (issue 6, seed 004)",
                     "Rows: `none` = empty loop, `array` = a hand-written array of function pointers, "
                     "`eh_KIND` = `EVENTHANDLER_INVOKE(bench_ev, i)` with sites of that kind; columns: 0, 1 "
                     "and 8 handlers registered.  Goal: with 0 handlers `eh_jump` is indistinguishable from "
                     "`none`.  Details: [bench/eventhandler/README.md](../bench/eventhandler/README.md).",
                     "build-bench/bench/eventhandler/bench_eventhandler"),
    "eventhandler_size": ("8b. Bytes `src/eventhandler` adds to libmark (seed 004's size)",
                          "`size(1)` of libmark.so with and without src/eventhandler/*.c, same flags; "
                          "`added text_data` is the seed's measure.",
                          "build-bench/bench/eventhandler/bench_eventhandler"),
    "usdt": ("9. Seed 003's USDT loop, every probe disabled, at -O0 and -O2",
             "Cycles per iteration of seed 003's loop: `none` (no probe), `sdt_sem` (sys/sdt.h + semaphore "
             "test, as dtrace -h/-G make it), `sdt` (plain sys/sdt.h), `jump`, `enabled` "
             "(`MARK_ENABLED()` + site), `generic`.  Details: [bench/usdt/README.md](../bench/usdt/README.md).",
             "bench/usdt/run.sh"),
    "reader": ("10. Reading a large trace: mark stats/view/export against babeltrace2 and cat",
               "A trace of >= 1 GB (quick mode: 200 MB) recorded by the real tracer from "
               "bench/reader/gen_trace.c (4 threads; a begin/end pair with a string, a counter, a double "
               "per round).  `cat` reads the stream files (the I/O limit), `bt2_counter` is "
               "`babeltrace2 -c sink.utils.counter`, `stats`/`view`/`view_filter` (`-e rb_req_*`)/`export` "
               "(`-o -`, Chrome JSON)/`export_perfetto` (`--format perfetto -o -`)/`export_otlp` (`--format otlp -o -`) are mark's commands with the native reader, output to /dev/null; "
               "with two CPUs or more it reads and merges on a thread of its own while the command works "
               "(the default); `*_one_thread` rows are the same with `MARK_READER_THREADS=1`, one core's rate; "
               "`*_no_text_ahead` rows are two threads without the reading thread writing the arguments' text "
               "ahead while the command's thread is behind (`MARK_READER_TEXT_AHEAD=never`).  Peak RSS and "
               "`events_per_cpu_s` (events per second of the command's own user + system time, "
               "which the load of a shared machine does not lower) from wait4's rusage.",
               "bench/reader/run.sh"),
    "usdt_hit": ("9b. One enabled USDT hit: mark tracer vs bpftrace (ns per iteration)",
                 "`mark_tracer` = MARK_TRACE overwrite mode on a jump site; `bpftrace_generic` = bpftrace "
                 "`usdt:` probe enabling a generic site through its semaphore, `{ @n = count(); }`; "
                 "`bpftrace_sdt` = the same on a plain sys/sdt.h probe; `*_disabled` = the loops with "
                 "nothing attached.",
                 "bench/usdt/run.sh"),
}


def extra_tables(p, known):
    res = p.res
    order = [t for t in EXTRA if t in res.order] + [t for t in res.order if t not in EXTRA]
    for table in order:
        rows = res.order[table]
        if table in known:
            continue
        title, note, prog = EXTRA.get(table, (table, "", "?"))
        title = next((v.split(" ", 1)[1] for v in res.infos("table_title") if v.split(" ", 1)[0] == table), title)
        p.add(f"## {title}\n")
        if note:
            p.add(note + "\n")
        for v in res.infos("table_note"):
            if v.split(" ", 1)[0] == table:
                p.add(v.split(" ", 1)[1] + "\n")
        prog = next((v.split(" ", 1)[1] for v in res.infos("table_program") if v.split(" ", 1)[0] == table), prog)
        p.add(p.stamp(prog))
        cols = []
        for r in rows:
            for c in res.cols(table, r):
                if c not in cols:
                    cols.append(c)
        out = []
        for r in rows:
            if (table, r) in res.skips:
                out.append([r, res.skips[(table, r)]] + [""] * (len(cols) - 1))
                continue
            out.append([r] + [cell(res.get(table, r, c)) + f" {res.unit(table, r, c)}" if res.get(table, r, c) else "" for c in cols])
        p.add(md_table(["row"] + cols, out))
        p.add("")
        longer = [t for t in res.order if t != table and t.startswith(table + "_")]
        for k, v in res.info:
            if (k.startswith(table + "_") and k not in ("table_title", "table_note", "table_program")
                    and not any(k.startswith(t + "_") or k == t for t in longer)):
                p.add(f"- `{k}`: {v}")
        p.add("")


def limits(p):
    """For every goal not met: the measured number and what limits it."""
    res = p.res
    out = []
    failed = [g for g, _, ok in p.goals if ok is False]
    ts = res.med("t3", "rdtsc", "event")
    tr = res.med("t3", "tracer", "event")
    dis = res.med("t3", "disarmed", "event")
    fast = res.med("t3", "fast", "event")
    floor = ts + fast - dis if None not in (ts, fast, dis) else None
    for g in failed:
        if g.startswith("One recorded"):
            t = (f"- **{g}: not met.** The recorded event costs {fmt_num(tr)} cycles per loop, "
                 f"{tr / ts:.2f}× the bare `rdtsc` ({fmt_num(ts)} cycles on this machine).")
            if floor is not None:
                t += (f"  What limits it: every event reads the timestamp once ({fmt_num(ts)} cycles), and "
                      f"reaching a probe through an armed site costs {fmt_num(fast - dis)} cycles "
                      f"(row *fast* − row *disarmed*: the jump, the argument slots, `mark__fire()`'s RCU read "
                      f"section and the indirect call), so even a ring buffer that cost nothing would leave "
                      f"{fmt_num(floor)} cycles = {floor / ts:.2f}× rdtsc; the ring buffer's reserve, copy and "
                      f"commit add the remaining {fmt_num(tr - floor)} cycles.")
            out.append(t)
        elif g.startswith("Recorded event ≥ 5×"):
            lt = res.med("t3", "lttng", "event")
            out.append(f"- **{g}: not met.** LTTng-UST's recorded tracepoint costs {fmt_num(lt)} cycles here, "
                       f"{lt / tr:.1f}× mark's {fmt_num(tr)}; 5× would need mark ≤ {fmt_num(lt / 5)} cycles"
                       + (f", below the {fmt_num(floor)}-cycle floor of timestamp + probe dispatch explained above."
                          if floor is not None and lt / 5 < floor else
                          "; the gap is in the tracer's ring-buffer path (tracer row − fast row = "
                          f"{fmt_num(tr - fast) if fast else 'n/a'} cycles)."))
        elif g.startswith("Recorded event ≥ 25×"):
            k = "uprobe_tracefs" if "tracefs" in g else "uprobe_bpftrace"
            u = res.med("t3", k, "event")
            out.append(f"- **{g}: not met.** A uprobe hit costs {fmt_num(u)} cycles on this kernel "
                       f"({p.meta.get('kernel', '?')}), {u / tr:.1f}× mark's {fmt_num(tr)}; the seeds' kprobe was "
                       f"4178 cycles on a 2006 Pentium 4.  25× would need mark ≤ {fmt_num(u / 25)} cycles"
                       + (f", below the {fmt_num(floor)}-cycle floor (one timestamp + probe dispatch)."
                          if floor is not None and u / 25 < floor else "."))
        elif g.startswith("Disarmed jump within noise") and "table 2" in g:
            j, o, c = (res.med("t2", k, "pressure") for k in ("jump", "out", "nopl"))
            t = (f"- **{g}: not met in this run.** Under memory pressure the handler with 4 disarmed jump sites "
                 f"costs {fmt_num(j)} cycles per call against {fmt_num(o)} compiled out (+{fmt_num(j - o)}).")
            if c is not None:
                t += (f"  The control row, the same four 5-byte NOPs without markers, costs {fmt_num(c)}: the NOPs "
                      "themselves are free even when cold.  What differs is the code the compiler generates "
                      "around the sites: for the out-of-line blocks' argument slots and calls, GCC sets up a stack "
                      "frame in the handler's prologue (`push %rbx; sub $0x20,%rsp`, executed on every call, "
                      "after the 1 MB write has evicted the stack lines) and keeps the first timestamp in a "
                      "callee-saved register (see `objdump -d` of handler_jump vs handler_out in "
                      "build-bench/bench/CMakeFiles/bench_handler_*.dir).  Moving that frame set-up into the cold "
                      "path (shrink-wrapping) is the compiler's choice, not the site's.")
            out.append(t)
        elif g.startswith("Disarmed jump within noise"):
            out.append(f"- **{g}: not met in this run** (the min–max ranges of the repetitions do not overlap). "
                       "Compare the 5-byte NOP rows of table 1 (same bytes, no marker): a difference of that "
                       "size is code placement (alignment of the loop and of the memcpy call), not the NOP.")
        elif g.startswith("Arming"):
            out.append(f"- **{g}: not met.** See table 5; arming time is the int3/membarrier protocol's three "
                       "core syncs plus one mprotect pair per code page touched.")
        else:
            out.append(f"- **{g}: not met.** See the table below.")
    if not out:
        return ""
    return "### Goals not met, and what limits them\n\n" + "\n".join(out) + "\n"


def goals(p):
    rows = []
    for g, m, ok in p.goals:
        rows.append([g, m, "**yes**" if ok is True else "**NO**" if ok is False else "not measured"])
    return md_table(["goal (issue 7, and issue 14 where marked)", "measured in this run", "met"], rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--page", required=True)
    ap.add_argument("--plots", required=True)
    ap.add_argument("--plot-prefix", default="")
    ap.add_argument("--asm", default=None, help="objdump of the measured loops, shown in an appendix")
    ap.add_argument("--meta", action="append", default=[])
    a = ap.parse_args()
    meta = dict(m.split("=", 1) for m in a.meta)
    res = Results()
    res.load(a.results)
    os.makedirs(a.plots, exist_ok=True)
    p = Page(res, meta, a.plots, a.plot_prefix)
    table1(p)
    table2(p)
    table3(p)
    table3b(p)
    table4(p)
    table5(p)
    table6(p)
    table6b(p)
    table7(p)
    extra_tables(p, {"t1", "t2", "t3", "t3s", "t3sweep", "t4", "t4pad", "t5", "t6", "t6s", "t7"})

    tsc = res.infos("tsc_ghz")
    clock = res.infos("clock")
    head = [
        "# mark benchmarks",
        "",
        f"Generated by `{meta.get('command', './bench/run.sh full')}` on {meta.get('date', '?')} "
        f"(mode {meta.get('mode', '?')}, {meta.get('duration', '?')}).  Do not edit by hand: rerun it.",
        "",
        md_table(["machine", ""], [
            ["CPU", f"{meta.get('cpu', '?')} ({meta.get('ncpu', '?')} CPUs, {meta.get('virt', '')})"],
            ["kernel", meta.get("kernel", "?")],
            ["compiler", f"{meta.get('compiler', '?')}, everything at -O2"],
            ["clock", (clock[0] if clock else "?") + (f", {float(tsc[0]):.3f} GHz calibrated against CLOCK_MONOTONIC" if tsc else "")],
            ["statistics", f"median [min–max] over {meta.get('reps', '?')} repetitions (≥ 5)"],
            ["source", f"commit {meta.get('commit', '?')}"],
        ]),
        "",
        "\"Cycles\" are TSC cycles (reference cycles at the rate above): on this machine the core may run "
        "faster than the TSC, so a 1-cycle instruction can show as less than one TSC cycle.",
        "",
        "## Goals\n",
        goals(p),
        "",
        "*Within noise* means the [min–max] ranges of the repetitions overlap, or the medians differ by "
        "less than 1 %.",
        "",
    ]
    head.append(limits(p))
    notes = res.infos("note")
    if notes:
        head.append("**Notes from the run:**\n")
        head.extend(f"- {n}" for n in notes)
        head.append("")
    if a.asm and os.path.exists(a.asm) and os.path.getsize(a.asm) > 0:
        p.add("## Appendix: the measured code\n")
        p.add("The empty loops of table 1 as compiled (objdump of `bench_disabled`), to show that each loop "
              "body is the site and nothing else: the jump kind's NOP with its out-of-line block after the "
              "`ret`, the immediate kind's `mov $0x0,%al; test; jne`, the generic kind's flag load, the "
              "`sys/sdt.h` semaphore test.\n")
        p.add("```\n" + open(a.asm).read().strip() + "\n```\n")
    tail = [
        "## Reproduce",
        "",
        "```sh",
        "make bench          # installs the Debian packages (DEB_BENCH), builds at -O2, runs everything (< 15 min)",
        "make bench-quick    # smoke run (< 2 min); its page goes to build-bench/results-quick/",
        "./bench/run.sh full # the same without the package check",
        "```",
        "",
        "Raw result lines of this run (one value per repetition) are in "
        f"`{meta.get('raw', 'build-bench/results-full/results.txt')}`; the format is described in "
        "`bench/common/bench.h`.  The uprobe, bpftrace and LTTng rows need root (tracefs, BPF, the "
        "session daemon); without it they say why they were skipped.",
        "",
    ]
    page = "\n".join(head + p.parts + tail) + "\n"
    with open(a.page, "w") as fh:
        fh.write(page)
    # The terminal gets the same tables, without the image links.
    sys.stdout.write("\n".join(line for line in page.splitlines() if not line.startswith("![")) + "\n")


if __name__ == "__main__":
    main()

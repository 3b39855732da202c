#!/usr/bin/python3
"""Begin/end pairs (cli/pairs.c) in `mark stats` and `mark export`, and the
bounded memory of `mark stats` (cli/histo.c).

    test_pairs.py CASE MARK_BINARY PAIRS_TARGET WORKDIR

Real traces: tests/cli/pairs_target.c recorded by `mark record` (read by
mark's native reader), and hand-made CTF traces of exactly known times
(make_ctf.py's layout, read through libbabeltrace2) for exact durations and
lost events.  Every expected number is computed here independently: from
the program's known structure, or by pairing `mark view -r`'s events in
Python.  Exit 0 = pass, 1 = fail, 77 = skip (reason after "SKIP:").
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_ctf  # noqa: E402
from test_cli import check, fresh, main, need_babeltrace2, run  # noqa: E402

ROUNDS = 100          # per thread; pairs_target.c has 2 threads


def record(mark, target, workdir, name, rounds):
    trace = fresh(workdir, name)
    r = run([mark, "record", "-q", "--mode", "block", "-o", trace, "--", target, str(rounds)], timeout=600)
    check(r.returncode == 0, "record %s: exit %d: %s" % (name, r.returncode, r.stderr[-400:]))
    return trace


def pair_table(out):
    """{pair title: {column: value}} of the pairs table of `mark stats`."""
    lines = out.splitlines()
    rows = {}
    for i, l in enumerate(lines):
        if l.startswith("pair ") and "no_begin" in l:
            cols = l.split()
            for row in lines[i + 1:]:
                if not row.strip():
                    break
                parts = row.split()
                # the title may hold spaces (a quoted --by string): the columns are the last ones
                vals = parts[-(len(cols) - 1):]
                title = " ".join(parts[:len(parts) - len(vals)])
                rows[title] = dict(zip(cols[1:], vals))
            break
    return rows


def short(rows, name):
    """The row of pair `name`, with or without the tracer's "provider:" prefix."""
    for k in rows:
        if k == name or k.split(":", 1)[-1] == name:
            return rows[k]
    return None


def ns_of(text):
    """Nanoseconds of a duration cell: 12ns, 1.234us, 5.000ms, 2.000000000s."""
    m = re.fullmatch(r"([0-9.]+)(ns|us|ms|s)", text)
    if not m:
        return None
    scale = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}[m.group(2)]
    return round(float(m.group(1)) * scale)


CONVENTIONS = [("__start", "__done"), ("-start", "-done"), ("-start", "-end"), ("_begin", "_end"),
               ("_entry", "_exit"), ("_start", "_stop")]


def python_pairs(events, names, explicit=()):
    """The pairing pairs.h describes, written again: {pair: [durations]},
    {pair: no_end}, {pair: no_begin}.  events: (ns, thread, name)."""
    role = {}
    for b, e in explicit:
        for n in names:
            if n == b or n.split(":", 1)[-1] == b:
                role[n] = ("B", b + ".." + e)
            if n == e or n.split(":", 1)[-1] == e:
                role[n] = ("E", b + ".." + e)
    for n in names:
        if n in role:
            continue
        for bs, es in CONVENTIONS:
            if n.endswith(bs) and len(n) > len(bs) and n[:-len(bs)] + es in names:
                role[n] = ("B", n[:-len(bs)])
                break
            if n.endswith(es) and len(n) > len(es) and n[:-len(es)] + bs in names:
                role[n] = ("E", n[:-len(es)])
                break
    stacks, durs, no_end, no_begin = {}, {}, {}, {}
    for ns, th, name in events:
        r = role.get(name)
        if not r:
            continue
        st = stacks.setdefault(th, [])
        if r[0] == "B":
            st.append((r[1], ns))
            continue
        k = len(st)
        while k > 0 and st[k - 1][0] != r[1]:
            k -= 1
        if k == 0:
            no_begin[r[1]] = no_begin.get(r[1], 0) + 1
            continue
        while len(st) > k:
            p, _ = st.pop()
            no_end[p] = no_end.get(p, 0) + 1
        p, b = st.pop()
        durs.setdefault(p, []).append(ns - b)
    for st in stacks.values():
        for p, _ in st:
            no_end[p] = no_end.get(p, 0) + 1
    return durs, no_end, no_begin


def view_events(mark, trace):
    """(ns since the first event, tid, name) of every event, by `mark view -r`."""
    r = run([mark, "view", "-r", trace], timeout=600)
    check(r.returncode == 0, "view failed: %s" % r.stderr[-300:])
    evs = []
    for l in r.stdout.splitlines():
        m = re.match(r"^\[(\d+)\.(\d{9})\] cpu \d+ tid (\d+) (\S+):", l)
        if m:
            evs.append((int(m.group(1)) * 1000000000 + int(m.group(2)), int(m.group(3)), m.group(4)))
    return evs


def nearest_rank(sorted_vals, p):
    n = len(sorted_vals)
    rank = max(1, -(-n * p // 100))
    return sorted_vals[rank - 1]


def check_against_python(out, durs, no_end, no_begin, exact, what):
    rows = pair_table(out)
    for p, d in durs.items():
        row = rows.get(p)
        check(row is not None, "%s: no row for pair %s in %r" % (what, p, list(rows)))
        if not row:
            continue
        d = sorted(d)
        check(int(row["count"]) == len(d), "%s: %s count %s, want %d" % (what, p, row["count"], len(d)))
        check(ns_of(row["min"]) == d[0] and ns_of(row["max"]) == d[-1],
              "%s: %s min/max %s/%s, want %d/%d" % (what, p, row["min"], row["max"], d[0], d[-1]))
        check(ns_of(row["total"]) == sum(d), "%s: %s total %s, want %d" % (what, p, row["total"], sum(d)))
        for q in (50, 90, 99):
            want, got = nearest_rank(d, q), ns_of(row["p%d" % q])
            ok = got == want if exact else abs(got - want) <= want / 256 + 1
            check(ok, "%s: %s p%d = %s, want %d%s" % (what, p, q, row["p%d" % q], want,
                                                       "" if exact else " within 0.4%"))
        check(int(row["no_end"]) == no_end.get(p, 0), "%s: %s no_end %s, want %d" % (what, p, row["no_end"],
                                                                                  no_end.get(p, 0)))
        check(int(row["no_begin"]) == no_begin.get(p, 0),
              "%s: %s no_begin %s, want %d" % (what, p, row["no_begin"], no_begin.get(p, 0)))
    extra = [k for k in rows if k not in durs and k not in no_end and k not in no_begin]
    check(not extra, "%s: pairs nobody expects: %r" % (what, extra))


def case_conventions(mark, target, workdir):
    """Every naming convention, nesting, an inner begin given up, a begin
    open at the end, an end without begin, a lone end that is no pair:
    counts from the program's structure, durations from `mark view`."""
    need_babeltrace2()
    trace = record(mark, target, workdir, "conv", ROUNDS)
    st = run([mark, "stats", trace])
    check(st.returncode == 0, "stats: %s" % st.stderr)
    rows = pair_table(st.stdout)
    n = 2 * ROUNDS
    want = {"req": (n + 2, 0, 0), "q": (n, 2, 0), "io": (n, 0, 2), "t": (n, 2, 0)}
    for p, (count, no_end, no_begin) in want.items():
        row = short(rows, p)
        check(row is not None, "no pair %s in %r" % (p, st.stdout))
        if row:
            got = (int(row["count"]), int(row["no_end"]), int(row["no_begin"]), int(row["lost"]))
            check(got == (count, no_end, no_begin, 0), "pair %s: (count, no_end, no_begin, lost) = %r, want %r"
                  % (p, got, (count, no_end, no_begin, 0)))
    check(len(rows) == 4, "exactly the four pairs (custom_a/custom_b and lonely_end are none): %r" % list(rows))
    evs = view_events(mark, trace)
    names = {e[2] for e in evs}
    durs, no_end, no_begin = python_pairs(evs, names)
    check_against_python(st.stdout, durs, no_end, no_begin, True, "stats")
    # the same through libbabeltrace2
    bt = run([mark, "stats", trace], env=dict(os.environ, MARK_READER="bt2"))
    check(bt.stdout == st.stdout, "stats differs between the native reader and libbabeltrace2:\n%s\n%s"
          % (st.stdout, bt.stdout))


def case_pair_by(mark, target, workdir):
    """--pair A,B names any two markers; --by FIELD splits a pair per value."""
    need_babeltrace2()
    trace = record(mark, target, workdir, "pairby", ROUNDS)
    st = run([mark, "stats", "--pair", "custom_a,custom_b", trace])
    check(st.returncode == 0, "stats --pair: %s" % st.stderr)
    row = short(pair_table(st.stdout), "custom_a..custom_b")
    check(row is not None and int(row["count"]) == 2 * ROUNDS, "--pair row: %r\n%s" % (row, st.stdout))
    evs = view_events(mark, trace)
    durs, no_end, no_begin = python_pairs(evs, {e[2] for e in evs}, [("custom_a", "custom_b")])
    check_against_python(st.stdout, durs, no_end, no_begin, True, "stats --pair")

    by = run([mark, "stats", "--by", "lock", trace])
    check(by.returncode == 0, "stats --by: %s" % by.stderr)
    rows = pair_table(by.stdout)
    per_lock = {}
    for i in range(ROUNDS):
        lock = ["BufferContent", "WALWrite", "ProcArray"][i % 3]
        per_lock[lock] = per_lock.get(lock, 0) + 2
    for lock, count in per_lock.items():
        row = short(rows, 'req["%s"]' % lock)
        check(row is not None and int(row["count"]) == count, "--by lock %s: %r (want %d)\n%s"
              % (lock, row, count, by.stdout))
    row = short(rows, 'req["x"]')
    check(row is not None and int(row["count"]) == 2, "--by lock x: %r" % row)
    # pairs whose markers have no "lock" argument get the row "-"
    row = short(rows, "io[-]")
    check(row is not None and int(row["count"]) == 2 * ROUNDS and int(row["no_begin"]) == 2,
          "--by on a pair without the field: %r\n%s" % (row, by.stdout))

    for bad in (["--pair", "a"], ["--pair", "a,a"], ["--pair", ",b"], ["--pair", "a,b,c"], ["--by", ""]):
        r = run([mark, "stats"] + bad + [trace])
        check(r.returncode == 2 and ("--pair" in r.stderr or "--by" in r.stderr),
              "stats %r: exit %d, %r" % (bad, r.returncode, r.stderr))


def write_trace(path, streams):
    """A make_ctf.py-layout trace: streams = [(tid, [(discarded, [events])...])]."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "metadata"), "w") as f:
        f.write(make_ctf.metadata())
    for i, (tid, packets) in enumerate(streams):
        with open(os.path.join(path, "stream_%d" % i), "wb") as f:
            for seq, (discarded, evs) in enumerate(packets):
                f.write(make_ctf.packet(i, seq, discarded, i, tid, evs))


def b(t, name="n"):
    return (t, "req_begin", (1, 0x10, name))


def e(t):
    return (t, "req_end", (1,))


def case_lost_exact(mark, target, workdir):
    """Exact durations, and a pair spanning lost events: counted as "lost",
    not in the durations.  A hand-made trace of known times."""
    need_babeltrace2()
    trace = fresh(workdir, "lost")
    # thread 101: 1000, 2000, 4000 ns pairs; then a begin, 3 events lost, an end
    # thread 102: 8000 ns, nested 500 inside it; an end without begin
    write_trace(trace, [
        (101, [(0, [b(1000), e(2000), b(3000), e(5000), b(6000), e(10000), b(20000)]),
               (3, [e(30000), b(31000), e(32000)])]),
        (102, [(0, [b(1500), b(1600), e(2100), e(9500), e(9600)])]),
    ])
    st = run([mark, "stats", trace])
    check(st.returncode == 0, "stats: %s" % st.stderr)
    row = pair_table(st.stdout).get("req")
    # durations: 1000 2000 4000 1000 (31000-32000) | 500 8000
    want = {"count": "6", "min": "500ns", "p50": "1.000us", "p90": "8.000us", "p99": "8.000us",
            "max": "8.000us", "total": "16.500us", "no_end": "0", "no_begin": "1", "lost": "1"}
    check(row == want, "pair req on the lost trace: %r, want %r\n%s" % (row, want, st.stdout))

    hist = run([mark, "stats", "--histogram", trace])
    check(hist.returncode == 0, "stats --histogram: %s" % hist.stderr)
    text = hist.stdout[hist.stdout.find("@req"):]
    # 500 | 1000 1000 (below 1024) | 2000 | 4000 | 8000 (below 8192)
    want_hist = ("@req (ns):\n"
                 "[256, 512)                  1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
                 "[512, 1K)                   2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
                 "[1K, 2K)                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
                 "[2K, 4K)                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
                 "[4K, 8K)                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n")
    check(text == want_hist, "histogram:\n%s\nwant:\n%s" % (text, want_hist))


def case_deep(mark, target, workdir):
    """A thread that only begins: at most 256 begins stay open (the 257th
    gives them all up), so memory is bounded; export's slices stay nested."""
    need_babeltrace2()
    trace = fresh(workdir, "deep")
    evs = [b(1000 + 10 * i) for i in range(300)] + [e(10000)]
    write_trace(trace, [(101, [(0, evs)])])
    st = run([mark, "stats", trace])
    row = pair_table(st.stdout).get("req")
    # begins 1-256 given up at the 257th; 257-300 open; the end closes the 300th
    # (10000 - 3990 = 6010 ns); 257-299 are given up at the end of the trace
    want = {"count": "1", "min": "6.010us", "max": "6.010us", "no_end": str(256 + 43), "no_begin": "0", "lost": "0"}
    check(row is not None and all(row.get(k) == v for k, v in want.items()), "deep stack: %r, want %r" % (row, want))
    out = os.path.join(workdir, "deep.json")
    r = run([mark, "export", "-o", out, trace])
    check(r.returncode == 0, "export: %s" % r.stderr)
    with open(out) as f:
        doc = json.load(f)
    depth, worst = 0, 0
    for x in doc["traceEvents"]:
        depth += {"B": 1, "E": -1}.get(x.get("ph"), 0)
        worst = max(worst, depth)
        check(depth >= 0, "an E without its B")
    check(depth == 0 and worst == 256, "export: depth at the end %d, deepest %d (want 0, 256)" % (depth, worst))
    check(doc["otherData"].get("slices_ended_by_export") == 299, "otherData: %r" % doc["otherData"])


def case_export(mark, target, workdir):
    """mark export turns the same pairs into B/E slices, per thread, well nested."""
    need_babeltrace2()
    trace = record(mark, target, workdir, "export", ROUNDS)
    out = os.path.join(workdir, "pairs.json")
    r = run([mark, "export", "-o", out, trace])
    check(r.returncode == 0, "export: %s" % r.stderr)
    with open(out) as f:
        doc = json.load(f)
    evs = [x for x in doc["traceEvents"] if x.get("ph") != "M"]
    stacks = {}
    count = {}
    for x in evs:
        st = stacks.setdefault(x["tid"], [])
        if x["ph"] == "B":
            st.append(x["name"])
        elif x["ph"] == "E":
            check(st and st[-1] == x["name"], "E %s does not end the innermost slice %r" % (x["name"], st[-1:]))
            if st:
                st.pop()
            if "closed_by" not in x.get("args", {}):
                key = x["name"].split(":", 1)[-1]
                count[key] = count.get(key, 0) + 1
    check(all(not s for s in stacks.values()), "slices left open: %r" % stacks)
    n = 2 * ROUNDS
    check(count == {"req": n + 2, "q": n, "io": n, "t": n}, "slices per pair: %r" % count)
    inst = [x["name"].split(":", 1)[-1] for x in evs if x["ph"] == "i"]
    check(inst.count("io__done") == 2 and inst.count("lonely_end") == 2 and inst.count("custom_a") == n,
          "instants: io__done %d, lonely_end %d, custom_a %d" % (inst.count("io__done"), inst.count("lonely_end"),
                                                                 inst.count("custom_a")))
    od = doc["otherData"]
    check(od.get("slices_ended_by_export") == 4 and od.get("ends_without_begin") == 2,
          "otherData: %r" % od)


def maxrss_kib(args):
    """Peak RSS of the command, from wait4's rusage.  Linux keeps the peak of
    the process that exec'd (this Python, about 20 MiB) too: a floor, below
    which differences do not show; /usr/bin/time, when there, forks the
    command from a small process and reports its own peak."""
    if os.path.exists("/usr/bin/time"):
        r = subprocess.run(["/usr/bin/time", "-f", "maxrss %M"] + args, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        err = r.stderr.decode(errors="replace")
        m = re.search(r"^maxrss (\d+)$", err, re.M)
        check(r.returncode == 0 and m is not None, "%r failed: %s" % (args, err[-300:]))
        return int(m.group(1)) if m else 0
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    check(os.waitstatus_to_exitcode(status) == 0, "%r failed: %s" % (args, err[-300:]))
    return ru.ru_maxrss


def case_memory(mark, target, workdir):
    """stats keeps nothing per event: peak RSS on a 40x larger trace (4 M
    events) grows by less than 8 MiB (8 bytes per interval were 32 MiB
    more); and with more than 1024 values a row's percentiles stay within
    0.4% of the exact ones."""
    need_babeltrace2()
    small = fresh(workdir, "mem-small")
    big = fresh(workdir, "mem-big")
    # Under a sanitizer the peak RSS is not mark's memory: the sanitizer's
    # shadow, quarantine of freed blocks and per-thread history grow with
    # the memory touched; under qemu-user it is qemu's as well, whose
    # translated code grows with the run (8.5 MiB more for the large trace
    # in one aarch64 run, 2 MiB natively).  So no bound there, and no small
    # trace to measure against: stats --histogram still reads the large
    # trace (stats without it does below).
    sanitizer = os.environ.get("MARK_TEST_SANITIZER")
    if os.environ.get("MARK_TEST_EMULATOR"):
        sanitizer = "qemu-user"
    sizes = ((big, 2000000),) if sanitizer else ((small, 50000), (big, 2000000))
    for trace, n in sizes:
        r = run([mark, "record", "-q", "--mode", "block", "-o", trace, "--", target, str(n), "spins"], timeout=600)
        check(r.returncode == 0, "record %s: %s" % (trace, r.stderr[-300:]))
    if sanitizer:
        print("SKIP part: %s build: the peak RSS bound is checked in the plain build" % sanitizer)
        h = run([mark, "stats", "--histogram", big], timeout=600)
        check(h.returncode == 0 and "spin" in h.stdout,
              "stats --histogram on the large trace: exit %d: %s" % (h.returncode, h.stderr[-300:]))
    for extra in ([] if sanitizer else ([], ["--histogram"])):
        a = maxrss_kib([mark, "stats"] + extra + [small])
        z = maxrss_kib([mark, "stats"] + extra + [big])
        print("peak RSS of stats %s: %d KiB (10^5 events), %d KiB (4*10^6 events)" % (" ".join(extra), a, z))
        check(z - a < 8192, "stats %s: peak RSS grows with the trace: %d KiB -> %d KiB" % (extra, a, z))
    st = run([mark, "stats", big])
    row = short(pair_table(st.stdout), "spin")
    check(row is not None and row["count"] == "2000000", "spin pairs on the large trace: %r" % row)
    shutil.rmtree(big, ignore_errors=True)
    trace = record(mark, target, workdir, "mem-quantiles", 5000)
    st = run([mark, "stats", trace])
    evs = view_events(mark, trace)
    durs, no_end, no_begin = python_pairs(evs, {x[2] for x in evs})
    check_against_python(st.stdout, durs, no_end, no_begin, False, "stats on 10^4 pairs per row")


KEYS = 1024           # --by values per pair in memory_by; pairs_target.c's "keys" mode has 64 pairs
BY_ROWS_MAX = 16384   # pairs.h's PAIRS_MAX_KEYED_ROWS: --by values with a row of their own, all pairs together


def case_memory_by(mark, target, workdir):
    """stats --by in bounded memory (F5 of a review): 64 pairs with 1024
    values of k each want 65536 rows.  Each row took 9 KiB on its first value
    (8 KiB of exact values, a 1 KiB histogram chunk), with no limit on the rows
    of all pairs together: this 3 MB trace took about 400 MB more than plain
    stats (the review's 13 MB one, 1.6 GB).  Now the exact values grow from 8,
    the first 16384 values of all pairs have rows, the others their pair's
    (other) row, and the output says so.  Reads the trace with mark's native
    reader: no babeltrace2 needed."""
    trace = fresh(workdir, "keys")
    r = run([mark, "record", "-q", "--mode", "block", "-o", trace, "--", target, str(KEYS), "keys"], timeout=600)
    check(r.returncode == 0, "record: %s" % r.stderr[-300:])
    st = run([mark, "stats", "--by", "k", trace], timeout=600)
    check(st.returncode == 0, "stats --by k: exit %d: %s" % (st.returncode, st.stderr[-300:]))
    rows = pair_table(st.stdout)
    # k-major order: every pair's k = 0..255 come first (64 * 256 = 16384 values)
    own = 0
    for n in range(64):
        name = "p%d%d" % (n // 8, n % 8)   # p00..p07, p10.., ..p77
        counts = {k: v["count"] for k, v in rows.items() if k.split(":", 1)[-1].startswith(name + "[")}
        own += sum(1 for k in counts if not k.endswith("[(other)]"))
        want = {"%s[%d]" % (name, k): "1" for k in range(BY_ROWS_MAX // 64)}
        want["%s[(other)]" % name] = str(KEYS - BY_ROWS_MAX // 64)
        got = {k.split(":", 1)[-1]: v for k, v in counts.items()}
        if got != want:
            check(False, "%s: rows %s..., want %s..." % (name, sorted(got.items())[:5], sorted(want.items())[:5]))
            break
    check(own == BY_ROWS_MAX, "%d values with a row of their own, want %d" % (own, BY_ROWS_MAX))
    check(re.search(r"^\(.*16384 values.*\(other\).*\)$", st.stdout, re.M) is not None,
          "stats does not say that values were folded into (other):\n%s" % st.stdout[-600:])
    plain = maxrss_kib([mark, "stats", trace])
    by = maxrss_kib([mark, "stats", "--by", "k", trace])
    print("peak RSS of stats: %d KiB, stats --by k: %d KiB (%d rows)" % (plain, by, len(rows)))
    if os.environ.get("MARK_TEST_SANITIZER"):
        print("SKIP part: sanitizer build: the peak RSS bound is checked in the plain build")
        return
    # 16448 rows of one duration: about 2.6 KiB each now (the histogram's
    # struct with its pointers, in an array grown by doubling, a 1 KiB chunk,
    # 8 exact values, the row, the key twice): 42 MiB measured.  80 MiB (5 KiB
    # a row) leaves room; the old code took 400 MiB more.
    check(by - plain < 80 * 1024, "stats --by k: peak RSS %d KiB, plain stats %d KiB: %d KiB more (bound 80 MiB)" %
          (by, plain, by - plain))


if __name__ == "__main__":
    main(globals())

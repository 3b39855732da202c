#!/usr/bin/python3
"""`mark stats` keeps each event class's row and pair role in a cache
(cli/cmd_stats.c, stats_event: keyed by the class's name and trace
pointers, 256 direct-mapped slots); this checks that what it remembers is
never another class's, and the inline fast path of histo_add (cli/histo.h).

    test_stats_roles.py MARK_BINARY WORKDIR

A hand-made trace of two processes (make_ctf.py's layout, read through
libbabeltrace2), 400 event classes in all, so that classes share cache
slots and evict each other while their events interleave:
  - pid-1 declares mI_begin and mI_end for I in 0..99: each pairs as mI;
  - pid-2 declares the same names half-way: mI_begin alone for an even I,
    mI_end alone for an odd I, so there they pair with nothing.
A role remembered per marker name instead of per (trace, name), or a slot
whose row is replaced but not its role, pairs pid-2's events too: pid-2's
begins would count as no_end, its ends as no_begin.  Then 3000 pairs of m0
in pid-1 with spread-out durations (its smallest and largest after the
first 1024): every cell of the marker and pair tables (but rate/s) and the
log2 histogram (`--histogram`) are computed here, the percentiles past
1024 values as histo.h describes them.
Exit 0 = pass, 1 = fail, 77 = skip (reason after "SKIP:").
"""
import os
import struct
import sys
import uuid as uuidlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_ctf  # noqa: E402
from test_cli import check, failures, fresh, need_babeltrace2, run, stats_table  # noqa: E402

K = 100          # pairs (mI) declared by pid-1
ROUNDS = 3       # events of every class in the interleaved part
LONG = 3000      # m0 pairs after it (HISTO_EXACT is 1024)


def metadata(pid, uuid, names):
    # make_ctf.py's trace, stream and clock, with these event classes (each
    # with one int32 argument "count")
    head = make_ctf.METADATA_TEMPLATE.split("event {")[0] % {"uuid": str(uuid), "pid": pid}
    return head + "".join('event { name = "%s"; id = %d; stream_id = 0;\n\tfields := struct { int32_t count; }; };\n'
                          % (n, i) for i, n in enumerate(names))


def packet(uuid, seq, tid, events):
    """events: [(t, class id, count)]; make_ctf.packet's layout."""
    payload = b"".join(struct.pack("<IQi", cid, t, count) for t, cid, count in events)
    content = 4 + 16 + 4 + 8 + 8 * 6 + 4 + 4 + len(payload)
    size = (content + 63) // 64 * 64
    head = struct.pack("<I", 0xC1FC1FC1) + uuid.bytes + struct.pack("<IQ", 0, 0)
    ctx = struct.pack("<QQQQQQII", events[0][0], events[-1][0], content * 8, size * 8, seq, 0, 0, tid)
    data = head + ctx + payload
    return data + b"\0" * (size - len(data))


def write(path, pid, tid, names, events):
    uuid = uuidlib.UUID(int=make_ctf.UUID.int ^ pid)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "metadata"), "w") as f:
        f.write(metadata(pid, uuid, names))
    ids = {n: i for i, n in enumerate(names)}
    with open(os.path.join(path, "stream_0"), "wb") as f:
        for seq in range(0, len(events), 1000):
            f.write(packet(uuid, seq // 1000, tid, [(t, ids[n], c) for t, n, c in events[seq:seq + 1000]]))


def durations_of(i, r):
    return 20 + (i * 7 + r) % 13


def long_duration(j):
    # the smallest and the largest value come after the first 1024 (past
    # histo_add's exact part)
    return {2000: 1, 2500: 130000}.get(j, 3 + (j * 7919) % 100000)


def build(trace):
    a_names = [n for i in range(K) for n in ("m%d_begin" % i, "m%d_end" % i)]
    b_names = ["m%d_begin" % i if i % 2 == 0 else "m%d_end" % i for i in range(K)]
    b_names += ["other%d" % i for i in range(2 * K - len(b_names))]   # 200 classes there too
    a, b = [], []
    t = 1000
    for r in range(ROUNDS):
        for i in range(K):
            a.append((t, "m%d_begin" % i, r))
            b.append((t + 5, "m%d_begin" % i if i % 2 == 0 else "m%d_end" % i, r))
            a.append((t + durations_of(i, r), "m%d_end" % i, r))
            b.append((t + 40, "other%d" % ((i + r * 7) % K), r))
            t += 100
    for j in range(LONG):
        a.append((t, "m0_begin", j))
        a.append((t + long_duration(j), "m0_end", j))
        t += long_duration(j) + 1
    write(os.path.join(trace, "pid-1"), 1, 101, a_names, a)
    write(os.path.join(trace, "pid-2"), 2, 201, b_names, b)
    return a, b


def duration_text(ns):
    """cli/trace_time.c's trace_time_append_duration."""
    if ns < 1000:
        return "%dns" % ns
    if ns < 1000000:
        return "%d.%03dus" % (ns // 1000, ns % 1000)
    if ns < 1000000000:
        return "%d.%06dms" % (ns // 1000000, ns % 1000000)
    return "%d.%09ds" % (ns // 1000000000, ns % 1000000000)


def percentile(values, p):
    """histo_percentile (cli/histo.c): nearest rank, exact up to 1024 values;
    beyond, the midpoint of the rank's log-linear bucket (128 per power of
    two, one per value below 128), clamped to min and max."""
    v = sorted(values)
    rank = max(1, (len(v) * p + 99) // 100)
    x = v[rank - 1]
    if len(v) <= 1024:
        return x
    shift = max(0, x.bit_length() - 8)   # bucket width 2^shift
    mid = (x >> shift << shift) + (1 << shift) // 2
    return min(max(mid, v[0]), v[-1])


def log2_lines(values):
    """The bars of `--histogram` (cmd_stats.c print_histogram, as bpftrace's hist())."""
    counts = {}
    for v in values:
        k = v.bit_length() - 1   # -1 for 0
        counts[k] = counts.get(k, 0) + 1
    lo, hi, most = min(counts), max(counts), max(counts.values())

    def lab(v):
        units, u = "KMGTPE", 0
        while v >= 1024 and v % 1024 == 0 and u < 6:
            v //= 1024
            u += 1
        return "%d%s" % (v, units[u - 1]) if u else str(v)

    out = []
    for k in range(lo, hi + 1):
        n = counts.get(k, 0)
        name = "[0]" if k < 0 else "[1]" if k == 0 else "[%s, %s)" % (lab(1 << k), lab(2 << k))
        w = (n * 52 + most - 1) // most
        out.append("%-20s %8d |%s|" % (name, n, "@" * w + " " * (52 - w)))
    return out


def main():
    mark, workdir = sys.argv[1], sys.argv[2]
    need_babeltrace2()
    os.makedirs(workdir, exist_ok=True)
    trace = fresh(workdir, "roles")
    a, b = build(trace)
    st = run([mark, "stats", "--histogram", trace])
    check(st.returncode == 0, "stats: exit %d: %s" % (st.returncode, st.stderr[-400:]))

    # markers: rows by name, both traces together
    markers = stats_table(st.stdout, "marker")
    want = {}
    for _, n, _ in a + b:
        want[n] = want.get(n, 0) + 1
    got = {n: int(cols[0]) for n, cols in markers.items()}
    check(got == want, "marker counts differ: %r" % sorted(set(got.items()) ^ set(want.items()))[:10])
    # and the distribution of the intervals between a marker's events (m0_begin: past 1024)
    times = {}
    for t, n, _ in sorted(a + b):
        times.setdefault(n, []).append(t)
    for n, ts in times.items():
        iv = [y - x for x, y in zip(ts, ts[1:])]
        cells = [duration_text(x) for x in (min(iv), percentile(iv, 50), percentile(iv, 90), percentile(iv, 99), max(iv))]
        check(markers.get(n, [])[2:] == cells, "marker %s: %r, want intervals %r" % (n, markers.get(n), cells))

    # pairs: only pid-1's, every one closed; pid-2's events pair with nothing
    pairs = stats_table(st.stdout, "pair")
    check(len(pairs) == K, "%d pair rows, want %d: %r" % (len(pairs), K, sorted(pairs)[:10]))
    for i in range(K):
        durs = [durations_of(i, r) for r in range(ROUNDS)] + ([long_duration(j) for j in range(LONG)] if i == 0 else [])
        cols = pairs.get("m%d" % i)
        # count min p50 p90 p99 max total no_end no_begin lost
        check(cols is not None and cols[0] == str(len(durs)) and cols[7:] == ["0", "0", "0"],
              "pair m%d: %r, want count %d, no_end/no_begin/lost 0" % (i, cols, len(durs)))
        if cols is None:
            continue
        cells = [duration_text(x) for x in (min(durs), percentile(durs, 50), percentile(durs, 90),
                                            percentile(durs, 99), max(durs))]
        check(cols[1:6] == cells, "pair m%d: %r, want %r" % (i, cols[1:6], cells))
        want_total = duration_text(sum(durs))
        check(cols[6] == want_total, "pair m%d: total %s, want %s" % (i, cols[6], want_total))

    # the log2 histogram of m0: exact counts (the inline histo_add past 1024 values)
    text = st.stdout[st.stdout.find("@m0 (ns):"):].splitlines()[1:]
    m0 = [durations_of(0, r) for r in range(ROUNDS)] + [long_duration(j) for j in range(LONG)]
    want_hist = log2_lines(m0)
    check(text[:len(want_hist)] == want_hist and (len(text) == len(want_hist) or not text[len(want_hist)].startswith("[")),
          "histogram of m0:\n%s\nwant:\n%s" % ("\n".join(text[:len(want_hist) + 1]), "\n".join(want_hist)))
    if failures:
        print("FAILED: %d check(s)" % len(failures), file=sys.stderr)
        print(st.stdout[-3000:], file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()

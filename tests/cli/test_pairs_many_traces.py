#!/usr/bin/python3
"""`mark stats` and `mark export` on a trace of many processes (cli/pairs.c).

    test_pairs_many_traces.py MARK_BINARY TRACER_PROG WORKDIR

A trace of 320 processes (one pid-P trace each) whose events interleave
finely in time: pairs.c once kept what each marker is in a 256-slot
direct-mapped cache keyed by (trace, marker), which thrashed with more
combinations than slots, and each miss on another trace listed that trace's
event classes again (a scan of all 65536 class ids and a malloc): minutes
for a few hundred processes (found by an audit).

The work is checked, not the time (no timed test in CI): MARK_PAIRS_DEBUG=1
makes pairs.c report how many class-name lists it made, which must be one
per trace.  The output must be byte-identical to the libbabeltrace2
reader's (MARK_READER=bt2, which shares pairs.c but not the native
reader), and the native runs are bounded by a generous timeout.
Exit 0 = pass, 1 = fail, 77 = skip (reason after "SKIP:").
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_cli  # noqa: E402
from test_cli import check, fresh, need_babeltrace2, run, stats_table  # noqa: E402

SEQ_PROCS = 300       # tracer_prog paced: one marker, a 2 ms sleep after each event
if os.environ.get("MARK_TEST_EMULATOR") or os.environ.get("MARK_TEST_SANITIZER"):
    # under qemu-user or a sanitizer each of the processes, all alive at
    # once, costs tens of times the CPU and memory: fewer traces there
    # (the check that each trace's class names are listed once holds at
    # any count; the default build covers the scale)
    SEQ_PROCS = 60
SEQ_EVENTS = 300
PAIR_PROCS = 20       # tracer_prog pairs: t_req/t_io pairs on 2 threads
PAIR_ROUNDS = 200
NATIVE_TIMEOUT = 60   # the fixed code needs well under a second here


def compare(mark, args, trace, workdir, label):
    """`mark ARGS TRACE` with both readers: [(output, stderr)] (native first), or
    None when the native one timed out.  "OUT" in args: a file whose bytes are
    the output; both outputs are kept in workdir when they differ."""
    outs = []
    for reader in ("native", "bt2"):
        env = dict(os.environ, MARK_READER=reader, MARK_PAIRS_DEBUG="1")
        path = os.path.join(workdir, "%s-%s" % (reader, label))   # export: label ends with the format's extension
        full = [a.replace("OUT", path) for a in args] + [trace]
        try:
            r = run([mark] + full, env=env, timeout=NATIVE_TIMEOUT if reader == "native" else 1200)
        except subprocess.TimeoutExpired:
            check(False, "%s (%s reader) still running after %d s: the per-marker cache thrashes"
                  % (label, reader, NATIVE_TIMEOUT))
            return None
        check(r.returncode == 0, "%s (%s): exit %d: %s" % (label, reader, r.returncode, r.stderr[-400:]))
        out = r.stdout
        if "OUT" in " ".join(args):
            with open(path, "rb") as f:
                out = f.read()
        outs.append((out, r.stderr))
    check(outs[0][0] == outs[1][0], "%s: the native and bt2 readers' outputs differ" % label)
    if outs[0][0] != outs[1][0]:
        for reader, (out, _) in zip(("native", "bt2"), outs):
            with open(os.path.join(workdir, "%s-%s.out" % (reader, label)), "wb") as f:
                f.write(out if isinstance(out, bytes) else out.encode())
    return outs


def check_lists(stderr, ntraces, label, reader):
    """Each trace's class names are listed once (pairs.c's MARK_PAIRS_DEBUG line)."""
    m = re.search(r"mark pairs: (\d+) class-name lists for (\d+) traces", stderr)
    check(m is not None, "%s (%s): no MARK_PAIRS_DEBUG line on stderr: %r" % (label, reader, stderr[-300:]))
    if m:
        lists, traces = int(m.group(1)), int(m.group(2))
        check(traces == ntraces, "%s (%s): pairs saw %d traces, the directory holds %d"
              % (label, reader, traces, ntraces))
        check(lists == traces, "%s (%s): %d class-name lists for %d traces (one each expected)"
              % (label, reader, lists, traces))


def main():
    mark, tracer, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    need_babeltrace2()
    trace = fresh(workdir, "many")
    # Every process is started at once and the paced ones sleep between
    # events, so the events of the traces interleave in time (as in a forking
    # server): 320 traces, 90,000 changes of trace in 122,200 events, 240
    # traces writing at once.  (tracer_prog seq with a pause, used before,
    # pins each process to the first CPU and starves its consumer: 300
    # processes on that CPU made the recording take 30-40 s instead of 5.)
    script = ("for i in $(seq %d); do \"$0\" paced %d 2000000 & done; "
              "for i in $(seq %d); do \"$0\" pairs %d 2 & done; wait"
              % (SEQ_PROCS, SEQ_EVENTS, PAIR_PROCS, PAIR_ROUNDS))
    r = run([mark, "record", "-q", "--mode", "block", "-o", trace, "--", "/bin/sh", "-c", script, tracer],
            timeout=600)
    check(r.returncode == 0, "record: exit %d: %s" % (r.returncode, r.stderr[-400:]))
    ntraces = len([d for d in os.listdir(trace) if d.startswith("pid-")]) if os.path.isdir(trace) else 0
    check(ntraces == SEQ_PROCS + PAIR_PROCS, "%d pid-P traces, %d expected" % (ntraces, SEQ_PROCS + PAIR_PROCS))

    outs = compare(mark, ["stats"], trace, workdir, "stats")
    if outs:
        for reader, (_, err) in zip(("native", "bt2"), outs):
            check_lists(err, ntraces, "stats", reader)
        out = outs[0][0]
        markers = stats_table(out, "marker")
        pairs = stats_table(out, "pair")
        # per thread of a pairs process: PAIR_ROUNDS t_req and t_io pairs, and
        # one t_req more whose t_io is given up (tracer_prog.c pairs_thread)
        seq = markers.get("t_seq", [None])[0]
        check(seq == str(SEQ_PROCS * SEQ_EVENTS), "t_seq count %r" % seq)
        req = pairs.get("t_req", [None])[0]
        io = pairs.get("t_io", [None])[0]
        check(req == str(PAIR_PROCS * 2 * (PAIR_ROUNDS + 1)), "t_req pairs %r" % req)
        check(io == str(PAIR_PROCS * 2 * PAIR_ROUNDS), "t_io pairs %r" % io)
    compare(mark, ["stats", "--histogram"], trace, workdir, "histogram")
    compare(mark, ["stats", "--by", "i"], trace, workdir, "by")
    outs = compare(mark, ["export", "-o", "OUT"], trace, workdir, "export.json")
    if outs:
        check_lists(outs[0][1], ntraces, "export", "native")
    if test_cli.failures:
        print("FAILED: %d check(s)" % len(test_cli.failures), file=sys.stderr)
        sys.exit(1)
    shutil.rmtree(trace, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""`mark export --format perfetto` (cli/export_perfetto.c): the output is
decoded with the official Perfetto protos (the PyPI `perfetto` package,
tests/pydeps) and checked against the CTF trace as the babeltrace2 Python
bindings read it (an independent reader): every event's track (process
and thread), name, slice/instant type, timestamp to the ns, argument types
and values; the lost events; the packet sequences, interning and clock.

    test_export_perfetto.py CASE MARK RECORD_TARGET TRACER_PROG WORKDIR

Cases: threads (multi-thread and multi-process real traces: record_target
fork, tracer_prog types/values/pairs/strings), lossy (a real discard-mode
trace whose loss is a fact, and the hand-made fixture's exact 5), strings
(every escape form through both readers), numbers (every numeric
annotation type at every varint length), memory (peak RSS independent of
the trace's size), trace_processor (optional: loads the file, skips when
the trace_processor binary cannot be fetched).
Exit 0 = pass, 1 = fail, 77 = skip (reason after "SKIP:").
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pydeps"))
import make_ctf  # noqa: E402
import pydeps  # noqa: E402
from test_cli import bt2_module, bt2_payload, check, failures, fresh, skip  # noqa: E402

SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3
CLEARED, NEEDS = 1, 2


def run(args, env=None, timeout=600):
    e = dict(os.environ)
    for k in ("MARK_TRACE", "MARK_ENABLE", "MARK_MODE", "MARK_BUFFER", "MARK_READER"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run(args, env=e, capture_output=True, timeout=timeout)


def record(mark, workdir, name, cmd, mode="block", buf=None):
    d = fresh(workdir, name)
    r = run([mark, "record", "-q", "-o", d, "--mode", mode] + (["--buffer", buf] if buf else []) + ["--"] + cmd)
    check(r.returncode == 0, "record %s: exit %d: %s" % (name, r.returncode, r.stderr[-400:]))
    return d


def escape(raw):
    """The string rule of docs/export.md: valid UTF-8 as it is, except
    backslash as \\\\, every other byte as \\xNN."""
    out, i = [], 0
    while i < len(raw):
        c = raw[i]
        if c == 0x5C:
            out.append("\\\\")
            i += 1
            continue
        if c < 0x80:
            out.append(chr(c))
            i += 1
            continue
        for n in (4, 3, 2):
            try:
                ch = raw[i:i + n].decode("utf-8", "strict")
            except UnicodeDecodeError:
                continue
            if len(ch) == 1:
                out.append(ch)
                i += n
                break
        else:
            out.append("\\x%02x" % c)
            i += 1
    return "".join(out)


def unescape(text):
    """escape() undone: the bytes the trace held."""
    out, i = bytearray(), 0
    while i < len(text):
        if text.startswith("\\\\", i):
            out += b"\\"
            i += 2
        elif text.startswith("\\x", i):
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        else:
            out += text[i].encode()
            i += 1
    return bytes(out)


# ------------------------------------------------------------ the export

def export(mark, trace, out, env=None, timeout=600):
    r = run([mark, "export", "--format", "perfetto", "-o", out, trace], env, timeout)
    check(r.returncode == 0, "export %s: exit %d: %s" % (trace, r.returncode, r.stderr.decode(errors="replace")))
    return r


class Decoded:
    """The Perfetto file as the protos decode it, resolved: tracks, and per
    thread track the list of (ts, type, name, {annotation: (kind, value)})."""

    def __init__(self, path):
        pb = pydeps.require("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
        trace = pb.Trace()
        with open(path, "rb") as f:
            trace.ParseFromString(f.read())
        self.packets = list(trace.packet)
        self.tracks = {}        # uuid -> dict
        self.events = {}        # uuid -> [(ts, type, name, args)]
        self.snapshots = []
        seqs = {}               # seq id -> {"names": {}, "ann": {}, "cats": {}, "clock": id}
        for i, p in enumerate(self.packets):
            sid = p.trusted_packet_sequence_id
            check(sid != 0, "packet %d has no trusted_packet_sequence_id" % i)
            if sid not in seqs:
                check(p.sequence_flags & CLEARED, "first packet %d of sequence %d lacks "
                      "SEQ_INCREMENTAL_STATE_CLEARED: %s" % (i, sid, p))
                seqs[sid] = {"names": {}, "ann": {}, "cats": {}, "clock": None}
            st = seqs[sid]
            if p.sequence_flags & CLEARED:
                st.update(names={}, ann={}, cats={}, clock=None)
            if p.HasField("trace_packet_defaults"):
                st["clock"] = p.trace_packet_defaults.timestamp_clock_id
            for e in p.interned_data.event_names:
                st["names"][e.iid] = e.name
            for e in p.interned_data.event_categories:
                st["cats"][e.iid] = e.name
            for e in p.interned_data.debug_annotation_names:
                st["ann"][e.iid] = e.name
            if p.HasField("clock_snapshot"):
                self.snapshots.append((sid, {c.clock_id: c.timestamp for c in p.clock_snapshot.clocks}))
            if p.HasField("track_descriptor"):
                td = p.track_descriptor
                d = {"name": td.name if td.HasField("name") else None}
                if td.HasField("process"):
                    d.update(kind="process", pid=td.process.pid, process_name=td.process.process_name)
                elif td.HasField("thread"):
                    d.update(kind="thread", pid=td.thread.pid, tid=td.thread.tid,
                             thread_name=td.thread.thread_name if td.thread.HasField("thread_name") else None)
                else:
                    d.update(kind="other", parent=td.parent_uuid)
                old = self.tracks.get(td.uuid)
                if old and old["kind"] == "thread" == d["kind"] and (old["pid"], old["tid"]) == (d["pid"], d["tid"]):
                    # a thread renamed: described again with its new name
                    check(d["thread_name"] != old["thread_name"], "thread track %d described twice, same name %r"
                          % (td.uuid, d["thread_name"]))
                    d["names"] = old["names"] + [d["thread_name"]]
                else:
                    check(old is None, "track %d described twice" % td.uuid)
                    if d["kind"] == "thread":
                        d["names"] = [d["thread_name"]]
                self.tracks[td.uuid] = d
            if p.HasField("track_event"):
                te = p.track_event
                check(p.sequence_flags & NEEDS or p.sequence_flags & CLEARED,
                      "event packet %d without SEQ_NEEDS_INCREMENTAL_STATE" % i)
                check(st["clock"] == 64 and not p.HasField("timestamp_clock_id"),
                      "event packet %d: clock %r, default %r (want the sequence's clock 64)"
                      % (i, p.timestamp_clock_id, st["clock"]))
                check(te.track_uuid in self.tracks, "event packet %d on an undescribed track %d" % (i, te.track_uuid))
                name = None
                if te.type != SLICE_END and te.HasField("name"):
                    name = te.name   # a name the interning table had no room for
                elif te.type != SLICE_END:
                    check(te.name_iid in st["names"], "packet %d: name_iid %d not interned" % (i, te.name_iid))
                    name = st["names"].get(te.name_iid)
                    check(list(te.category_iids) == [1] and st["cats"].get(1) == "mark",
                          "packet %d: categories %r" % (i, list(te.category_iids)))
                args = {}
                for a in te.debug_annotations:
                    kind = a.WhichOneof("value")
                    if a.HasField("name"):
                        args[a.name] = (kind, getattr(a, kind) if kind else None)
                        continue
                    check(a.name_iid in st["ann"], "packet %d: annotation name_iid %d not interned" % (i, a.name_iid))
                    args[st["ann"].get(a.name_iid)] = (kind, getattr(a, kind) if kind else None)
                self.events.setdefault(te.track_uuid, []).append((p.timestamp, te.type, name, args))
        self.nseqs = len(seqs)

    def thread_key(self, uuid):
        t = self.tracks[uuid]
        return (t.get("pid"), t.get("tid"))

    def by_thread(self):
        return {self.thread_key(u): evs for u, evs in self.events.items()}


# ------------------------------------------------------------ the reference (bt2)

def bt2_thread_names(path):
    """Per (pid, tid): the packet contexts' thread_name values, in the
    order babeltrace2 reads the thread's events (consecutive repeats
    removed); no entry for a trace without thread_name."""
    bt2 = bt2_module()
    names = {}
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            ctx = msg.event.packet.context_field
            if "thread_name" not in ctx:
                continue
            env = msg.event.stream.trace.environment
            key = (int(env["vpid"] if "vpid" in env else env["pid"]), int(ctx["tid"]))
            seq = names.setdefault(key, [])
            if not seq or seq[-1] != str(ctx["thread_name"]):
                seq.append(str(ctx["thread_name"]))
    return names


def bt2_expected(path, ptype=lambda name: None):
    """Per (pid, tid): the events babeltrace2's Python bindings read, in
    order, as (ts, name, {arg: (kind, value)}), and the loss reports."""
    bt2 = bt2_module()
    per = {}
    losses = []
    pending = {}
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            ev = msg.event
            env = ev.stream.trace.environment
            pid = int(env["vpid"] if "vpid" in env else env["pid"])
            tid = int(ev.packet.context_field["tid"])
            args = {}
            for k, v in bt2_payload(ev):
                if v is None:   # a NULL %s: JSON null
                    args[k] = ("legacy_json_value", "null")
                    continue
                fc = v.cls
                if isinstance(v, bt2._StringFieldConst):
                    args[k] = ("string_value", escape(bytes(str(v), "utf-8", "surrogateescape")))
                elif isinstance(v, bt2._RealFieldConst):
                    args[k] = ("double_value", float(v))
                elif isinstance(v, bt2._SignedIntegerFieldConst):
                    args[k] = ("int_value", int(v))
                elif isinstance(fc, bt2._UnsignedEnumerationFieldClassConst) and len(fc) == 256:
                    b = int(v)
                    args[k] = ("string_value", "\\x00" if b == 0 else escape(bytes([b])))
                elif fc.preferred_display_base != 10:
                    args[k] = ("pointer_value", int(v))
                else:
                    args[k] = ("uint_value", int(v))
            if "cpu" not in args:
                args["cpu"] = ("uint_value", int(ev.common_context_field["cpu_id"]))
            per.setdefault((pid, tid), []).append((msg.default_clock_snapshot.ns_from_origin, ev.name, args))
        elif type(msg) is bt2._DiscardedEventsMessageConst:
            pending[msg.stream.addr if hasattr(msg.stream, "addr") else id(msg.stream)] = msg.count
            losses.append(msg.count)
    return per, losses


PAIR_SUFFIXES = (("_begin", "_end"),)


def expected_track(events):
    """The TrackEvents of one thread (pairs.h's rules, for the _begin/_end
    convention these traces use): [(ts, type, name, args)]."""
    out, stack = [], []
    for ts, name, args in events:
        if name.endswith("_begin"):
            if len(stack) == 256:
                while stack:
                    stack.pop()
                    out.append((ts, SLICE_END, None, "too_deep"))
            stack.append(name[:-6])
            out.append((ts, SLICE_BEGIN, name[:-6], args))
        elif name.endswith("_end") and name[:-4] in stack:
            stem = name[:-4]
            while stack[-1] != stem:
                stack.pop()
                out.append((ts, SLICE_END, None, "inner"))
            stack.pop()
            out.append((ts, SLICE_END, None, args))
        else:
            out.append((ts, INSTANT, name, args))
    last = events[-1][0] if events else 0
    while stack:
        stack.pop()
        out.append((last, SLICE_END, None, "at_end"))
    return out


REASONS = {
    "inner": "its end event was lost; ended by an outer slice's end",
    "at_end": "no end event in the trace; ended at the thread's last event",
    "too_deep": "more than 256 slices open on the thread; all ended here",
}


def compare(label, got, want_events):
    """got: Decoded; want_events: bt2_expected's per-thread events."""
    have = got.by_thread()
    # lost-event instants are checked apart
    lost = {k: [e for e in v if e[2] == "mark_lost_events"] for k, v in have.items()}
    have = {k: [e for e in v if e[2] != "mark_lost_events"] for k, v in have.items()}
    have = {k: v for k, v in have.items() if v}
    check(sorted(have) == sorted(want_events), "%s: threads %s, want %s" % (label, sorted(have), sorted(want_events)))
    n = 0
    for key, evs in want_events.items():
        want = expected_track(evs)
        got_t = have.get(key, [])
        check(len(got_t) == len(want), "%s: thread %s: %d track events, want %d" % (label, key, len(got_t), len(want)))
        for i, (g, w) in enumerate(zip(got_t, want)):
            wargs = w[3]
            if isinstance(wargs, str):
                wargs = {"closed_by": ("string_value", "mark export"), "reason": ("string_value", REASONS[wargs])}
            if g != (w[0], w[1], w[2], wargs):
                check(False, "%s: thread %s event %d: %r, want %r" % (label, key, i, g, (w[0], w[1], w[2], wargs)))
                break
        n += len(evs)
    return n, lost


def check_tracks(label, got, procnames, names=None):
    """Every thread under a described process, with the trace's names:
    `names` (bt2_thread_names) when the trace records thread names, else
    the process's name for the main thread and none for the others."""
    procs = {t["pid"]: t for t in got.tracks.values() if t["kind"] == "process"}
    for uuid, t in got.tracks.items():
        if t["kind"] != "thread":
            continue
        check(t["pid"] in procs, "%s: thread %s has no process track" % (label, t))
        if names:
            want = names.get((t["pid"], t["tid"]))
            check(want is not None and t["names"] == want,
                  "%s: thread %d named %r in the export, %r in the trace" % (label, t["tid"], t["names"], want))
        elif t["tid"] == t["pid"]:
            check(t["thread_name"] == procs[t["pid"]]["process_name"], "%s: main thread name %r" % (label, t))
        else:
            check(t["thread_name"] is None, "%s: thread name %r invented" % (label, t))
    for pid, p in procs.items():
        check(p["process_name"] in procnames, "%s: process %d named %r, want one of %r"
              % (label, pid, p["process_name"], procnames))


def check_clock(label, got, first_ts):
    check(got.snapshots, "%s: no ClockSnapshot" % label)
    for sid, clocks in got.snapshots:
        check(clocks.get(64) == clocks.get(6) and 64 in clocks,
              "%s: sequence %d snapshot %r does not set clock 64 = BOOTTIME" % (label, sid, clocks))
    check(got.snapshots[0][1].get(64) == first_ts, "%s: first snapshot at %r, first event at %d"
          % (label, got.snapshots[0][1], first_ts))


# ------------------------------------------------------------ cases

def case_threads(mark, target, prog, workdir):
    traces = [
        ("fork", record(mark, workdir, "fork", [target, "fork"]), {"cli_record_targ"}),
        ("types", record(mark, workdir, "types", [prog, "types", "200"]), {"tracer_prog"}),
        ("values", record(mark, workdir, "values", [prog, "values", "50"]), {"tracer_prog"}),
        ("pairs", record(mark, workdir, "pairs", [prog, "pairs", "300", "3"]), {"tracer_prog"}),
    ]
    for label, d, procnames in traces:
        out = d + ".pftrace"
        r = export(mark, d, out)
        got = Decoded(out)
        want, losses = bt2_expected(d)
        n, lost = compare(label, got, want)
        check(n > 0, "%s: no events" % label)
        check(b"%d events" % n in r.stderr, "%s: summary %r, want %d events" % (label, r.stderr, n))
        check_tracks(label, got, procnames, bt2_thread_names(d))
        first = min(e[0] for evs in want.values() for e in evs)
        check_clock(label, got, first)
        if label == "fork":
            pids = {k[0] for k in want}
            check(len(pids) >= 2, "fork: %d processes in the trace" % len(pids))
            threads = [k for k in want if k[0] == min(pids)]
            check(len(threads) >= 2, "fork: %d threads in the parent" % len(threads))
        if label == "pairs":
            kinds = {e[1] for evs in got.events.values() for e in evs}
            check(kinds == {SLICE_BEGIN, SLICE_END, INSTANT}, "pairs: event types %r" % kinds)
        # the bt2 reader gives the same file as the native reader
        out2 = d + ".bt2.pftrace"
        export(mark, d, out2, {"MARK_READER": "bt2"})
        check(open(out, "rb").read() == open(out2, "rb").read(),
              "%s: the native and babeltrace2 readers give different files" % label)
        print("%s: %d events, %d tracks: ok" % (label, n, len(got.tracks)))


def case_names(mark, target, prog, workdir):
    """Thread names: each ThreadDescriptor names its thread as the thread
    named itself (pthread_setname_np), a rename described again, a hostile
    name cleaned; the same after a SIGKILL, from the recovered buffers."""
    names_target = os.path.join(os.path.dirname(target), "names_target")
    for mode, rc, early in (("run", 0, "late"), ("kill", 128 + 9, "early")):
        d = fresh(workdir, mode)
        r = run([mark, "record", "-q", "-o", d, "--", names_target, mode])
        check(r.returncode == rc, "record names_target %s: exit %d, want %d: %s"
              % (mode, r.returncode, rc, r.stderr[-400:]))
        out = d + ".pftrace"
        export(mark, d, out)
        got = Decoded(out)
        names = bt2_thread_names(d)
        check_tracks("names-" + mode, got, {"names_target"}, names)
        threads = [t for t in got.tracks.values() if t["kind"] == "thread"]
        finals = sorted(str(t["names"][-1]) for t in threads)
        want = sorted(["names_target", "worker-0", "worker-1", early, "?[31mred?"])
        check(finals == want, "names-%s: thread names %r, want %r" % (mode, finals, want))
        main = [t for t in threads if t["tid"] == t["pid"]]
        check(len(main) == 1 and main[0]["names"] == ["names_target"], "names-%s: main thread %r" % (mode, main))
        out2 = d + ".bt2.pftrace"
        export(mark, d, out2, {"MARK_READER": "bt2"})
        check(open(out, "rb").read() == open(out2, "rb").read(),
              "names-%s: the native and babeltrace2 readers give different files" % mode)
        print("names-%s: %r" % (mode, finals))


def lost_total(label, lost_events):
    total, unknown = 0, 0
    for evs in lost_events.values():
        for ts, typ, name, args in evs:
            check(typ == INSTANT, "%s: mark_lost_events of type %d" % (label, typ))
            if "count" in args:
                check(args["count"][0] == "uint_value", "%s: count %r" % (label, args["count"]))
                total += args["count"][1]
            else:
                check(args.get("count_unknown") == ("bool_value", True), "%s: loss args %r" % (label, args))
                unknown += 1
    return total, unknown


def case_lossy(mark, target, prog, workdir):
    # Real: bursts of 1000 into a 4 KiB ring with the consumer starved
    # (tracer_prog pins it to the producer's CPU at SCHED_IDLE): loss is a fact.
    d = record(mark, workdir, "discard", [prog, "seq", "20000", "2000000", "1000"], mode="discard", buf="4k")
    out = d + ".pftrace"
    r = export(mark, d, out)
    got = Decoded(out)
    want, losses = bt2_expected(d)
    n, lost = compare("discard", got, want)
    total, unknown = lost_total("discard", lost)
    want_total = sum(c for c in losses if c)
    check(want_total > 0, "discard: babeltrace2 reports no loss; the scenario must lose events")
    check(total == want_total, "discard: %d lost in mark_lost_events, babeltrace2 says %d" % (total, want_total))
    check(n + total == 20000, "discard: %d kept + %d lost != 20000" % (n, total))
    check(b"(%d lost by the tracer)" % total in r.stderr, "discard: summary %r" % r.stderr)
    print("discard: %d kept, %d lost: ok" % (n, total))

    # Overwrite mode: the rings wrapped, the losses are counted per packet.
    d = record(mark, workdir, "overwrite", [prog, "threads", "3000", "4"], mode="overwrite", buf="4k")
    out = d + ".pftrace"
    export(mark, d, out)
    got = Decoded(out)
    want, losses = bt2_expected(d)
    n, lost = compare("overwrite", got, want)
    total, unknown = lost_total("overwrite", lost)
    want_total = sum(c for c in losses if c)
    check(total == want_total and total > 0, "overwrite: %d lost, babeltrace2 says %d" % (total, want_total))
    check(unknown == sum(1 for c in losses if c is None), "overwrite: %d losses without count, babeltrace2 %d"
          % (unknown, sum(1 for c in losses if c is None)))
    print("overwrite: %d kept, %d lost: ok" % (n, total))

    # A stream whose first packet already says events were lost (CTF's
    # events_discarded is cumulative: not how many since when): a loss
    # without count, reported before any event is read, so written at the
    # first event's time on its thread.
    ea = fresh(workdir, "early")
    os.makedirs(ea)
    with open(os.path.join(ea, "metadata"), "w") as f:
        f.write(make_ctf.metadata())
    with open(os.path.join(ea, "stream_0"), "wb") as f:
        f.write(make_ctf.packet(0, 0, 7, 0, 101, [(5000, "tick", (1.0,))]))
    with open(os.path.join(ea, "stream_1"), "wb") as f:
        f.write(make_ctf.packet(1, 0, 0, 1, 102, [(4000, "tick", (2.0,))]))
    export(mark, ea, ea + ".pftrace")
    th = Decoded(ea + ".pftrace").by_thread()
    base = 1700000000 * 10**9
    want_early = {
        (4242, 101): [(base + 4000, INSTANT, "mark_lost_events", {"count_unknown": ("bool_value", True)}),
                      (base + 5000, INSTANT, "tick", {"value": ("double_value", 1.0), "cpu": ("uint_value", 0)})],
        (4242, 102): [(base + 4000, INSTANT, "tick", {"value": ("double_value", 2.0), "cpu": ("uint_value", 1)})],
    }
    check(th == want_early, "early loss: %r, want %r" % (th, want_early))

    # The hand-made fixture (babeltrace2 path): 5 events lost on thread 101.
    fx = fresh(workdir, "fixture")
    subprocess.run([sys.executable, os.path.join(HERE, "make_ctf.py"), fx], check=True)
    export(mark, fx, fx + ".pftrace")
    got = Decoded(fx + ".pftrace")
    lost = got.by_thread()
    lost = {k: [e for e in v if e[2] == "mark_lost_events"] for k, v in lost.items()}
    check(lost.get((4242, 101)) and len(lost[(4242, 101)]) == 1 and
          lost[(4242, 101)][0][3] == {"count": ("uint_value", 5)},
          "fixture: lost events %r, want one instant with count 5 on thread 101" % lost)
    # at the time of the last event read before the loss report (12000 ns)
    check(lost.get((4242, 101)) and lost[(4242, 101)][0][0] == 1700000000 * 10**9 + 12000,
          "fixture: loss at %r" % lost.get((4242, 101)))


def case_strings(mark, target, prog, workdir):
    # babeltrace2 path: the fixture's string of every escape form
    fx = fresh(workdir, "fixture")
    subprocess.run([sys.executable, os.path.join(HERE, "make_ctf.py"), fx], check=True)
    export(mark, fx, fx + ".pftrace")
    got = Decoded(fx + ".pftrace")
    th = got.by_thread()
    base = 1700000000 * 10**9
    want101 = [
        (base + 1000, SLICE_BEGIN, "req", {"count": ("int_value", 1), "ptr": ("pointer_value", 0x1000),
                                           "name": ("string_value", "alpha"), "cpu": ("uint_value", 0)}),
        (base + 2000, INSTANT, "tick", {"value": ("double_value", 0.5), "cpu": ("uint_value", 0)}),
        (base + 3000, SLICE_END, None, {"count": ("int_value", 1), "cpu": ("uint_value", 0)}),
        (base + 12000, INSTANT, "tick", {"value": ("double_value", 1.5), "cpu": ("uint_value", 0)}),
        (base + 12000, INSTANT, "mark_lost_events", {"count": ("uint_value", 5)}),
        (base + 32000, INSTANT, "tick", {"value": ("double_value", 2.5), "cpu": ("uint_value", 0)}),
        (base + 40000, SLICE_BEGIN, "req", {"count": ("int_value", 2), "ptr": ("pointer_value", 0xBEEF),
                                            "name": ("string_value", escape(make_ctf.ESCAPES)),
                                            "cpu": ("uint_value", 0)}),
        (base + 41000, SLICE_END, None, {"count": ("int_value", 2), "cpu": ("uint_value", 0)}),
    ]
    check(th.get((4242, 101)) == want101, "fixture thread 101:\n%r\nwant\n%r" % (th.get((4242, 101)), want101))
    esc = [e[3]["name"][1] for e in th.get((4242, 101), []) if e[2] == "req" and e[3]["count"][1] == 2]
    check(esc and unescape(esc[0]) == make_ctf.ESCAPES, "escapes do not round-trip: %r" % esc)
    # the exact text: control bytes kept (valid UTF-8), invalid bytes as \xNN
    check(esc and esc[0] == 'quote"d\r\x01\x7f\t\u00e9 \u20ac\U0001F600 \\xff\\xc3( \u0085\u202e',
          "escaped string %r" % esc)
    want102 = [
        (base + 62000, INSTANT, "tick", {"value": ("double_value", -1.0), "cpu": ("uint_value", 1)}),
        (base + 102000, INSTANT, "tick", {"value": ("double_value", 1e300), "cpu": ("uint_value", 1)}),
        (base + 103000, SLICE_BEGIN, "req", {"count": ("int_value", -3), "ptr": ("pointer_value", 2**64 - 1),
                                             "name": ("string_value", "gamma"), "cpu": ("uint_value", 1)}),
        (base + 103000, SLICE_END, None, {"closed_by": ("string_value", "mark export"),
                                          "reason": ("string_value", REASONS["at_end"])}),
    ]
    check(th.get((4242, 102)) == want102, "fixture thread 102:\n%r\nwant\n%r" % (th.get((4242, 102)), want102))
    procs = [t for t in got.tracks.values() if t["kind"] == "process"]
    check(len(procs) == 1 and procs[0]["process_name"] == "fixture" and procs[0]["pid"] == 4242,
          "fixture processes %r" % procs)

    # backslashes and every byte value in a plain string field (babeltrace2 path)
    from test_cli import plain_string_trace
    values = [b"back\\slash \\x41", bytes(range(1, 256)), b"", b"\xed\xa0\x80 surrogate", b"\xf4\x90\x80\x80 >U+10FFFF",
              b"\xc0\xaf overlong"]
    ps = fresh(workdir, "plain")
    plain_string_trace(ps, values, pack=lambda v: v + b"\0")
    export(mark, ps, ps + ".pftrace")
    got = Decoded(ps + ".pftrace")
    strs = [e[3]["s"] for evs in got.events.values() for e in evs]
    check(strs == [("string_value", escape(v)) for v in values], "plain strings %r" % strs)
    check([unescape(s[1]) for s in strs] == values, "plain strings do not round-trip")

    # never to a terminal: the strings keep their control characters
    import pty
    master, slave = pty.openpty()
    r = subprocess.run([mark, "export", "--format", "perfetto", "-o", "-", fx], stdout=slave,
                       stderr=subprocess.PIPE, timeout=120)
    os.close(slave)
    os.set_blocking(master, False)
    try:
        shown = os.read(master, 65536)
    except OSError:
        shown = b""
    os.close(master)
    check(r.returncode == 1 and b"not writing a binary Perfetto trace to a terminal" in r.stderr and not shown,
          "export to a terminal: exit %d, %r, %d bytes shown" % (r.returncode, r.stderr, len(shown)))

    # native reader: tracer_prog's strings (empty, 1, 255, truncated 1000 bytes) and %c of every kind
    d = record(mark, workdir, "strings", [prog, "strings", "50", "2"])
    export(mark, d, d + ".pftrace")
    want, _ = bt2_expected(d)
    compare("strings", Decoded(d + ".pftrace"), want)


def small_trace(path, procname, header, classes, body):
    """A CTF trace of pid 77 with one stream of thread 78: event header
    `header` (TSDL members), event classes `classes` (TSDL), the events'
    bytes `body`; clock in ns from 1700000000 s."""
    import struct
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "metadata"), "w") as f:
        f.write("""/* CTF 1.8 */
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace { major = 1; minor = 8; byte_order = le; packet.header := struct { uint32_t magic; }; };
env { pid = 77; procname = "%s"; };
clock { name = c; freq = 1000000000; offset_s = 1700000000; };
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;
stream { packet.context := struct { uint64_t content_size; uint64_t packet_size; uint32_t tid; };
  event.header := struct { %s }; };
""" % (procname, header) + classes)
    total = 4 + 8 + 8 + 4 + len(body)
    with open(os.path.join(path, "stream"), "wb") as f:
        f.write(struct.pack("<IQQI", 0xC1FC1FC1, total * 8, total * 8, 78) + body)


def many_names_trace(path, n):
    """n event classes, one event each (ids 0..n-1, time 1000 * (id + 1)
    ns), each with an argument named after it."""
    import struct
    classes = "".join('event { name = "ev%d"; id = %d; fields := struct { uint32_t a%d; }; };\n' % (i, i, i)
                      for i in range(n))
    body = b"".join(struct.pack("<IQI", i, 1000 * (i + 1), i) for i in range(n))
    small_trace(path, "names", "uint32_t id; ts_t timestamp;", classes, body)


def case_sequences(mark, target, prog, workdir):
    """More distinct names than an interning table holds (4096): new
    packet sequences, each starting with its incremental state cleared,
    and every name still right."""
    n = 10000
    d = fresh(workdir, "names")
    many_names_trace(d, n)
    # GLib keeps every quark (babeltrace2 makes one per name of the
    # metadata) for the life of the process by design, in blocks allocated
    # from its constructor and g_quark_from_string; past the first block
    # LeakSanitizer reports them (the Chrome export the same): GLib's own
    # allocations (only libbabeltrace2 uses GLib in mark) are not mark's.
    supp = os.path.join(workdir, "lsan.supp")
    with open(supp, "w") as f:
        f.write("leak:g_quark_from_string\nleak:libglib-2.0.so\n")
    # (the slow unwinder: the fast one stops inside libglib, before g_quark_from_string)
    lsan = (os.environ.get("LSAN_OPTIONS", "") + ":suppressions=" + supp).lstrip(":")
    asan = (os.environ.get("ASAN_OPTIONS", "") + ":fast_unwind_on_malloc=0").lstrip(":")
    export(mark, d, d + ".pftrace", {"LSAN_OPTIONS": lsan, "ASAN_OPTIONS": asan})
    got = Decoded(d + ".pftrace")
    evs = got.by_thread().get((77, 78), [])
    base = 1700000000 * 10**9
    want = [(base + 1000 * (i + 1), INSTANT, "ev%d" % i, {"a%d" % i: ("uint_value", i)}) for i in range(n)]
    check(evs == want, "%d events; first differences: %r" %
          (len(evs), [(g, w) for g, w in zip(evs, want) if g != w][:2]))
    check(got.nseqs >= 3, "%d packet sequences for %d names (an interning table holds 4096)" % (got.nseqs, n))
    check(len(got.snapshots) == got.nseqs, "%d clock snapshots for %d sequences" % (len(got.snapshots), got.nseqs))
    print("%d names in %d sequences: ok" % (n, got.nseqs))

    # One event with more arguments than an interning table holds: the
    # names that do not fit are written in the annotations themselves.
    import struct
    w = fresh(workdir, "wide")
    nf = 9000
    fields = " ".join("uint32_t f%d;" % i for i in range(nf))
    small_trace(w, "wide", "ts_t timestamp;", 'event { name = "wide"; fields := struct { %s }; };\n' % fields,
                struct.pack("<Q", 1000) + b"".join(struct.pack("<I", i) for i in range(nf)))
    try:
        export(mark, w, w + ".pftrace", {"LSAN_OPTIONS": lsan, "ASAN_OPTIONS": asan}, timeout=120)
    except subprocess.TimeoutExpired:
        check(False, "export of an event with %d arguments did not end in 120 s" % nf)
        return
    evs = Decoded(w + ".pftrace").by_thread().get((77, 78), [])
    want = [(1700000000 * 10**9 + 1000, INSTANT, "wide", {"f%d" % i: ("uint_value", i) for i in range(nf)})]
    check(evs == want, "the event with %d arguments: %d events, %d arguments"
          % (nf, len(evs), len(evs[0][3]) if evs else 0))


def case_numbers(mark, target, prog, workdir):
    """Every numeric annotation type (int, uint, pointer, double) with a
    value of every varint length, 1 to 10 bytes, and the doubles the wire
    keeps bit for bit (-0.0, NaN, infinities, a subnormal): export_perfetto.c
    writes these annotations and the fixed fields of every event straight
    into reserved room, and through the strbuf when the buffer must grow
    (a few times here: 3000 events, 170 KiB); both ways must give these
    values back."""
    import math
    import struct
    sizes = [0, 1, 127, 128, 2**14 - 1, 2**14, 2**21, 2**28, 2**35, 2**42, 2**49, 2**56 - 1, 2**56, 2**63 - 1,
             2**63, 2**64 - 1]
    signed = [0, 1, -1, 63, -64, 2**31, -2**31, 2**62, -2**62, 2**63 - 1, -2**63]
    doubles = [0.0, -0.0, 1.5, -1.0, 1e300, 5e-324, math.inf, -math.inf, math.nan]
    n = 3000
    rows = [(signed[i % len(signed)], sizes[i % len(sizes)], sizes[(i * 7) % len(sizes)], doubles[i % len(doubles)])
            for i in range(n)]
    classes = ("typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
               "typealias integer { size = 64; align = 8; signed = false; base = 16; } := hex64_t;\n"
               "typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := double_t;\n"
               'event { name = "num"; fields := struct { int64_t s; uint64_t u; hex64_t x; double_t d; }; };\n')
    body = b"".join(struct.pack("<QqQQd", 1000 * (i + 1), *r) for i, r in enumerate(rows))
    d = fresh(workdir, "numbers")
    small_trace(d, "numbers", "ts_t timestamp;", classes, body)
    export(mark, d, d + ".pftrace")

    def bits(args):
        # doubles by their bits: NaN == NaN, -0.0 != 0.0
        return {k: (kind, struct.pack("<d", v) if kind == "double_value" else v) for k, (kind, v) in args.items()}

    evs = [(ts, typ, name, bits(args)) for ts, typ, name, args in Decoded(d + ".pftrace").by_thread().get((77, 78), [])]
    base = 1700000000 * 10**9
    want = [(base + 1000 * (i + 1), INSTANT, "num",
             bits({"s": ("int_value", s), "u": ("uint_value", u), "x": ("pointer_value", x), "d": ("double_value", v)}))
            for i, (s, u, x, v) in enumerate(rows)]
    check(evs == want, "%d events (want %d); first differences: %r" %
          (len(evs), n, [(g, w) for g, w in zip(evs, want) if g != w][:2]))
    if evs == want:
        print("%d events of every numeric type and varint length: ok" % n)


def maxrss_kib(args, env=None):
    """Peak RSS of the command as GNU time measures it: the process that
    forks it is time, not this Python, whose 20 MiB a child forked from here
    keeps as the floor of its peak (the kernel carries it across exec)."""
    r = run(["/usr/bin/time", "-f", "maxrss %M"] + args, env=env)
    check(r.returncode == 0, "%r failed: %s" % (args, r.stderr[-300:]))
    lines = [l for l in r.stderr.decode(errors="replace").splitlines() if l.startswith("maxrss ")]
    return int(lines[-1].split()[1]) if lines else 0


def case_memory(mark, target, prog, workdir):
    """Peak RSS of the export does not grow with the trace: on 400k and 1.6M
    events (an export that kept its output, 18 and 73 MB here, would show
    it) it stays within 1 MiB of the Chrome export's on the same trace.
    Both read with the same reader, whose packet buffers (the size of the
    packets the tracer happened to write, which varies with scheduling from
    one recording to the next) are most of the peak: compared on one trace,
    they cancel out.  Both read with one thread (MARK_READER_THREADS=1):
    with two, the packet buffers held by the batches the reading thread
    has handed over and not yet seen delivered (at most TN_PIPE_DEPTH)
    depend on how far it runs ahead of the slower of the two exports, so
    they would not cancel out (qemu-user: the Perfetto export's guest heap
    1.6 MiB above the Chrome export's on one 1.6M-event trace, equal with
    one thread).  pairs_memory covers the two-thread reader's memory."""
    if os.environ.get("MARK_TEST_SANITIZER"):
        # The TSan build failed it once (25824 KiB against 23836): the
        # sanitizer's shadow memory follows the code each export runs, not
        # what the export keeps.
        skip("peak RSS under %s-sanitizer measures the sanitizer's runtime, not the export"
             % os.environ["MARK_TEST_SANITIZER"])
    if not os.access("/usr/bin/time", os.X_OK):
        skip("/usr/bin/time (Debian package time, in the Makefile's DEB_TEST) is not installed")
    for label, n in (("400k", "100000"), ("1.6M", "400000")):
        d = record(mark, workdir, label, [prog, "threads", n, "4"])
        one = {"MARK_READER_THREADS": "1"}
        pf = maxrss_kib([mark, "export", "--format", "perfetto", "-o", d + ".pftrace", d], one)
        ch = maxrss_kib([mark, "export", "-o", d + ".json", d], one)
        size = os.path.getsize(d + ".pftrace")
        print("%s events: peak RSS %d KiB (%d bytes written), the Chrome export's %d KiB" % (label, pf, size, ch))
        check(size > int(n) * 4 * 40, "%s events: only %d bytes written" % (label, size))
        check(pf < ch + 1024, "%s events: peak RSS %d KiB, the Chrome export's %d KiB" % (label, pf, ch))
        os.unlink(d + ".pftrace")
        os.unlink(d + ".json")


def case_trace_processor(mark, target, prog, workdir):
    pydeps.require("perfetto.trace_processor")
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    fx = fresh(workdir, "fixture")
    subprocess.run([sys.executable, os.path.join(HERE, "make_ctf.py"), fx], check=True)
    export(mark, fx, fx + ".pftrace")
    try:
        tp = TraceProcessor(trace=fx + ".pftrace", config=TraceProcessorConfig(load_timeout=60))
    except Exception as e:  # the binary is downloaded on first use
        skip("trace_processor could not start (it downloads its binary; no network here?): %s" % e)
    try:
        rows = list(tp.query("select ts, dur, name from slice order by ts"))
        got = [(r.ts, r.dur, r.name) for r in rows]
        base = 1700000000 * 10**9
        want = [(base + 1000, 2000, "req"), (base + 2000, 0, "tick"), (base + 12000, 0, "tick"),
                (base + 12000, 0, "mark_lost_events"), (base + 32000, 0, "tick"), (base + 40000, 1000, "req"),
                (base + 62000, 0, "tick"), (base + 102000, 0, "tick"), (base + 103000, 0, "req")]
        check(sorted(got) == sorted(want), "trace_processor slices %r, want %r" % (got, want))
    finally:
        tp.close()


CASES = {"threads": case_threads, "names": case_names, "sequences": case_sequences, "lossy": case_lossy, "strings": case_strings, "memory": case_memory,
         "numbers": case_numbers, "trace_processor": case_trace_processor}


def main():
    case, mark, target, prog, workdir = sys.argv[1:6]
    pydeps.require("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    os.makedirs(workdir, exist_ok=True)
    CASES[case](mark, target, prog, workdir)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()

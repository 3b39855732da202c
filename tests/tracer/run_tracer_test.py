#!/usr/bin/python3
"""Tracer integration tests: traced programs, real babeltrace2.

usage: run_tracer_test.py SCENARIO TRACER_PROG TRACER_API TRACER_DSO WORKDIR

Each scenario runs tests/tracer/tracer_prog (configured from the
environment like any program) or tracer_api, then reads the trace twice:
with the babeltrace2 command (must exit 0 and print every event with its
name, time, cpu_id and fields) and with the bt2 Python bindings, checking
every event's count and field values.  Exit 0 = pass, 1 = fail, 77 = skip.
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

SCENARIO, PROG, API, DSO, WORK = sys.argv[1:6]
# tests/tracer/many_markers.c, built beside tracer_prog (tests/tracer.cmake)
MANY = os.path.join(os.path.dirname(PROG), "tracer_many_markers")
failures = []


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


try:
    import bt2
except ImportError:
    skip("python3-bt2 (Debian package) is not installed")
if not shutil.which("babeltrace2"):
    skip("babeltrace2 (Debian package) is not installed")


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("CHECK failed: " + msg, file=sys.stderr)
    return cond


def fresh_dir(name):
    d = os.path.join(WORK, SCENARIO, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    return d


def run(args, env=None, **kw):
    e = dict(os.environ)
    for k in ("MARK_TRACE", "MARK_ENABLE", "MARK_MODE", "MARK_BUFFER"):
        e.pop(k, None)
    e.update(env or {})
    kw.setdefault("timeout", 100)
    return subprocess.run(args, env=e, capture_output=True, text=True, **kw)


class Trace:
    """Every event of a trace directory, read with bt2."""

    def __init__(self, path):
        self.events = []      # dicts: name, ts_ns, cpu, tid, stream, fields
        self.discarded = 0
        it = bt2.TraceCollectionMessageIterator(path)
        for msg in it:
            if type(msg) is bt2._EventMessageConst:
                ev = msg.event
                fields = {}
                # a %s is a length byte NAME_len selecting a variant NAME
                lens = {k + "_len" for k, v in ev.payload_field.items()
                        if isinstance(v, bt2._VariantFieldConst)}
                for k, v in ev.payload_field.items():
                    if k in lens:
                        continue
                    if isinstance(v, bt2._VariantFieldConst):
                        # a %s is a variant: see s_strings; its "null" option a NULL
                        if v.cls.option_at_index(v.selected_option_index).name == "null":
                            fields[k] = None
                            continue
                        v = v.selected_option
                    if isinstance(v, bt2._StringFieldConst):
                        fields[k] = str(v)
                    elif isinstance(v, bt2._RealFieldConst):
                        fields[k] = float(v)
                    else:
                        fields[k] = int(v)
                self.events.append({
                    "name": ev.name,
                    "ts": msg.default_clock_snapshot.ns_from_origin,
                    "cpu": int(ev.common_context_field["cpu_id"]),
                    "tid": int(ev.packet.context_field["tid"]),
                    "stream": ev.stream.id,
                    "trace": ev.stream.trace.uuid,
                    "fields": fields,
                })
            elif type(msg) is bt2._DiscardedEventsMessageConst:
                self.discarded += msg.count if msg.count is not None else 0

    def named(self, name):
        return [e for e in self.events if e["name"] == name]


class TextTrace(Trace):
    """The same view from the babeltrace2 command's text (much faster than
    bt2 objects); integer fields only.  Discarded counts from its warnings."""

    LINE = re.compile(r"^\[[^]]*\] \([^)]*\) \S+ (\S+): \{ tid = (\d+)(?:, thread_name = \"[^\"]*\")? \}, \{ cpu_id = (\d+) \}, \{ (.*) \}$")

    def __init__(self, path):
        self.events = []
        self.discarded = 0
        r = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=100)
        check(r.returncode == 0, "babeltrace2 %s exited %d: %s" % (path, r.returncode, r.stderr[-2000:]))
        for line in r.stdout.splitlines():
            m = self.LINE.match(line)
            if not check(m is not None, "babeltrace2 line without name/tid/cpu_id/fields: " + line):
                continue
            fields = {}
            for kv in m.group(4).split(", "):
                k, v = kv.split(" = ")
                fields[k] = int(v, 0)
            self.events.append({"name": m.group(1), "tid": int(m.group(2)), "cpu": int(m.group(3)),
                                "fields": fields})
        for m in re.finditer(r"Tracer discarded (\d+) events?\b", r.stderr):
            self.discarded += int(m.group(1))


def babeltrace_text(path, expect_events):
    """The babeltrace2 CLI prints every event: name, time, cpu_id, fields."""
    r = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=100)
    check(r.returncode == 0, "babeltrace2 %s exited %d: %s" % (path, r.returncode, r.stderr[-2000:]))
    lines = [l for l in r.stdout.splitlines() if l.startswith("[")]
    check(len(lines) == expect_events,
          "babeltrace2 printed %d events, expected %d" % (len(lines), expect_events))
    for l in lines[:50]:
        check(re.match(r"^\[\d\d:\d\d:\d\d\.\d{9}\] \(\+[?\d.]+\) \S+ \S+: \{ tid = \d+(?:, thread_name = \"[^\"]*\")? \}, "
                       r"\{ cpu_id = \d+ \}, \{ .* \}$", l) is not None or l.endswith("{ }"),
              "babeltrace2 line has no time/name/cpu/fields: " + l)
    return r


def procdir(d, pid=None):
    """The per-process trace DIR/pid-P (the only one unless pid is given)."""
    subs = sorted(f for f in os.listdir(d) if f.startswith("pid-"))
    if pid is not None:
        return os.path.join(d, "pid-%d" % pid)
    check(len(subs) == 1, "expected one process trace in %s, found %s" % (d, subs))
    return os.path.join(d, subs[0]) if subs else d


def stats(path):
    if not os.path.exists(os.path.join(path, ".mark-stats")):
        path = procdir(path)
    r = run([API, "stats", path])
    check(r.returncode == 0, "tracer_api stats failed: " + r.stderr)
    out = {"markers": {}}
    for line in r.stdout.splitlines():
        p = line.split()
        if p[0] == "marker":
            out["markers"][p[1]] = int(p[2])
        else:
            out[p[0]] = int(p[1])
    return out


def check_loss_placement(d, names, key=None):
    """Each discarded-events message stands where the events were lost: in
    each stream, the `i` of the event after it is the `i` before it, plus
    one, plus the count (the program records i = 0, 1, 2, ... per thread;
    `key`, a field naming the thread, restarts the count when a ring passes
    to another thread).  A loss reported before the records that preceded
    it, or packets out of time order (babeltrace2 stops), fail here."""
    last, pending, bad, seen = {}, {}, [], 0
    try:
        for msg in bt2.TraceCollectionMessageIterator(d):
            if type(msg) is bt2._DiscardedEventsMessageConst:
                sid = (msg.stream.trace.uuid, msg.stream.id)
                pending[sid] = pending.get(sid, 0) + (msg.count or 0)
            elif type(msg) is bt2._EventMessageConst and msg.event.name in names.split():
                ev = msg.event
                sid = (ev.stream.trace.uuid, ev.stream.id)
                i = int(ev.payload_field["i"])
                who = int(ev.payload_field[key]) if key else 0
                lost = pending.pop(sid, 0)
                prev = last.get(sid)
                if prev is not None and prev[0] == who and i != prev[1] + 1 + lost:
                    bad.append("stream %d: i %d after %d with %d reported lost between"
                               % (sid[1], i, prev[1], lost))
                last[sid] = (who, i)
                seen += 1
    except Exception as e:   # bt2.Error: e.g. packets out of time order
        bad.append("babeltrace2 stopped: %s" % str(e).splitlines()[0])
    check(seen > 0, "%s: no %s events" % (d, names))
    check(not bad, "%d losses reported away from where they happened, first: %s" % (len(bad), bad[:3]))


def check_sequence(evs, field, expect, what):
    vals = [e["fields"][field] for e in evs]
    check(vals == expect, "%s: %d values, first mismatch at %s" % (
        what, len(vals), next((i for i, (a, b) in enumerate(zip(vals, expect)) if a != b),
                              min(len(vals), len(expect)))))


def check_monotonic_wallclock(tr, t0, t1):
    ts = [e["ts"] for e in tr.events]
    check(all(t0 - 50e6 <= t <= t1 + 50e6 for t in ts),
          "timestamps are not wall-clock times of the run (%d..%d vs %d..%d)"
          % (min(ts), max(ts), t0, t1))
    ncpu = os.cpu_count()
    check(all(0 <= e["cpu"] < max(ncpu, 1) * 4 for e in tr.events), "cpu_id out of range")


def check_clock_source(d):
    """The clock the metadata declares is the hardware counter of PROG's
    machine when it has one: x86-64's TSC where invariant (CPUID), aarch64's
    CNTVCT_EL0 always (the architecture guarantees it)."""
    with open(PROG, "rb") as f:
        machine = int.from_bytes(f.read(20)[18:20], "little")
    metas = [os.path.join(root, "metadata") for root, _, files in os.walk(d) if "metadata" in files]
    check(metas, "no metadata under %s" % d)
    for m in metas:
        text = open(m).read()
        desc = re.search(r'description = "([^"]*)"', text)
        if machine == 183:   # EM_AARCH64
            check(desc and desc.group(1) == "CNTVCT_EL0",
                  "%s: the aarch64 clock is %r, not CNTVCT_EL0" % (m, desc and desc.group(1)))
        else:
            print("clock: %s" % (desc and desc.group(1)))


# ---------------------------------------------------------------- scenarios

def s_types():
    d = fresh_dir("t")
    n = 50
    t0 = time.time_ns()
    r = run([PROG, "types", str(n)], {"MARK_TRACE": d})
    t1 = time.time_ns()
    check(r.returncode == 0 and r.stderr == "", "program failed: %d %s" % (r.returncode, r.stderr))
    babeltrace_text(d, 4 * n)
    tr = Trace(d)
    check_monotonic_wallclock(tr, t0, t1)
    check_clock_source(d)
    types = tr.named("t_types")
    strs = tr.named("t_strings")
    check(len(types) == n and len(strs) == n, "event counts %d %d" % (len(types), len(strs)))
    for i, e in enumerate(types):
        want = {"count": i - 5, "u": i * 3, "hexv": 0xabc0 + i, "ptr": 0x1000 + i, "d": i + 0.5,
                "big": -1000000000000 * (i + 1), "small": ((-i + 128) % 256) - 128,
                "us": 60000 + i}
        check(e["fields"] == want, "t_types[%d] = %s, want %s" % (i, e["fields"], want))
    more = tr.named("t_more")
    check(len(more) == n, "t_more count %d" % len(more))
    for i, e in enumerate(more):
        want = {"letter": ord("a") + i % 26, "mask": 0xfedcba9876543210 ^ i, "len": i * 1000,
                "neg": -3 * i, "ratio": i / 4, "oct": 0o755}
        check(e["fields"] == want, "t_more[%d] = %s, want %s" % (i, e["fields"], want))
    names = tr.named("t_names")
    check(len(names) == n, "t_names count %d" % len(names))
    for i, e in enumerate(names):
        want = {"event_v": i, "under": 2 * i, "dup": 3 * i, "dup_3": 3 * i, "arg4": i + 1,
                "x": 4 * i, "x_2": 5 * i}
        check(e["fields"] == want, "t_names[%d] = %s, want %s" % (i, e["fields"], want))
    long = "x" * 252 + "..."
    for i, e in enumerate(strs):
        want = {"name": "name-%d" % i, "req_len": 7 * i, "arg2": long if i % 2 else "-", "arg3": None}
        check(e["fields"] == want, "t_strings[%d] = %s, want %s" % (i, e["fields"], want))
    # Field types follow the format (read from the trace's own classes).
    ev = Trace.__new__(Trace)
    it = bt2.TraceCollectionMessageIterator(d)
    for msg in it:
        if type(msg) is bt2._EventMessageConst and msg.event.name == "t_types":
            fc = msg.event.cls.payload_field_class
            check(isinstance(fc["count"].field_class, bt2._SignedIntegerFieldClassConst)
                  and fc["count"].field_class.field_value_range == 32, "count is not int32")
            check(fc["hexv"].field_class.preferred_display_base == 16, "%x is not hex")
            check(fc["ptr"].field_class.preferred_display_base == 16, "%p is not hex")
            check(isinstance(fc["u"].field_class, bt2._UnsignedIntegerFieldClassConst), "%u not unsigned")
            check(isinstance(fc["d"].field_class, bt2._RealFieldClassConst), "%f not double")
            check(fc["small"].field_class.field_value_range == 8, "%hhd is not 8-bit")
            break
    # %o is shown in octal, as the marker printed it (a file mode: 0755, not 493)
    for msg in bt2.TraceCollectionMessageIterator(d):
        if type(msg) is bt2._EventMessageConst and msg.event.name == "t_more":
            fc = msg.event.cls.payload_field_class
            check(fc["oct"].field_class.preferred_display_base == 8,
                  "%%o has display base %d, not 8" % fc["oct"].field_class.preferred_display_base)
            break
    mark = os.environ.get("MARK_CLI")
    if mark:
        for reader in ("native", "bt2"):
            v = run([mark, "view", d], env={"MARK_READER": reader})
            octs = set(re.findall(r"\boct=(\S+)", v.stdout))
            check(v.returncode == 0 and octs == {"0755"}, "mark view (%s reader) shows oct as %s: %s" %
                  (reader, sorted(octs), v.stderr[-300:]))
    st = stats(d)
    check(st["state"] == 2 and st["events"] == 4 * n and st["lost"] == 0
          and st["events_written"] == 4 * n, "stats %s" % st)
    check(st["markers"].get("t_types") == n and st["markers"].get("t_strings") == n,
          "per-marker stats %s" % st["markers"])
    check(not [f for f in os.listdir(procdir(d)) if f.startswith(".mark-ring")], "ring files left after stop")


def mode_seq(mode, n, buf, pause_ns=0, burst=1):
    d = fresh_dir(mode)
    r = run([PROG, "seq", str(n), str(pause_ns), str(burst)], {"MARK_TRACE": d, "MARK_MODE": mode, "MARK_BUFFER": buf})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    tr = TextTrace(d)
    evs = tr.named("t_seq")
    vals = [e["fields"]["i"] for e in evs]
    st = stats(d)
    print("%s: %d events kept, %d discarded (bt2), stats %s" % (mode, len(vals), tr.discarded, st))
    check(st["events"] + st["lost"] == n if mode != "overwrite" else st["events"] == n,
          "stats do not add up: %s" % st)
    return tr, vals, st


def s_discard():
    n = 50000
    # Bursts of 1000 back-to-back events into a ring that holds about 170,
    # then 2 ms of sleep in which the consumer usually drains (not always:
    # at SCHED_IDLE it waits for any other process on that CPU): kept runs
    # and discarded gaps alternate.  tracer_prog pins the consumer to the
    # producer's CPU at SCHED_IDLE, so it cannot drain during a burst and
    # every burst discards after its first 170 or so events.
    tr, vals, st = mode_seq("discard", n, "4k", 2000000, 1000)
    check(vals == sorted(set(vals)), "discard: values not strictly increasing")
    check(len(vals) + tr.discarded == n, "discard: %d kept + %d discarded != %d" % (len(vals), tr.discarded, n))
    check(tr.discarded == st["lost"], "discard: lost %d vs bt2 %d" % (st["lost"], tr.discarded))
    check(st["lost"] >= n // 2, "discard: only %d of %d lost; bursts of 1000 into a 4 KiB ring with "
          "the consumer starved should lose most" % (st["lost"], n))
    check(vals[0] == 0, "discard: the first events (buffer empty) must be kept")
    check(vals[-1] >= 1000, "discard: nothing kept after the first burst; recording did not resume "
          "once the consumer drained the ring")
    check_loss_placement(os.path.join(WORK, SCENARIO, "discard"), "t_seq")


def s_discard_sizes():
    """Records of two sizes (64 and 24 bytes, alternating) into a full
    ring: each loss still reported where it happened (a small record after
    a dropped big one fits under the fast path's limit and took it, so the
    hole was noted only at a later slow-path record: 58 misplaced)."""
    d = fresh_dir("discard_sizes")
    n = 20000
    r = run([PROG, "seq_sizes", str(n), "2000000", "1000"],
            {"MARK_TRACE": d, "MARK_MODE": "discard", "MARK_BUFFER": "4k"})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    st = stats(d)
    check(st["lost"] >= n // 2, "only %d of %d lost: the bursts did not overrun the ring" % (st["lost"], n))
    check_loss_placement(d, "t_seq t_seq6")


def s_overwrite():
    n = 50000
    tr, vals, st = mode_seq("overwrite", n, "4k")
    k = len(vals)
    check(k > 0 and vals == list(range(n - k, n)), "overwrite: not the newest %d events" % k)
    check(k + tr.discarded == n and st["lost"] == n - k, "overwrite: kept %d lost %d (bt2 %d)"
          % (k, st["lost"], tr.discarded))


def s_overwrite_mixed():
    # Mixed record sizes, some longer than a 256-byte overwrite chunk: the
    # ring must still hold exactly the newest events, strings intact, and
    # count every overwritten one.  Python bt2, which reads strings.
    n = 20000
    d = fresh_dir("overwrite_mixed")
    r = run([PROG, "mixed", str(n)], {"MARK_TRACE": d, "MARK_MODE": "overwrite", "MARK_BUFFER": "4k"})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    tr = Trace(d)
    got = [(e["name"], e["fields"]) for e in tr.events]
    idx = [f["i"] for _, f in got]
    k = len(idx)
    check(k > 0 and idx == list(range(n - k, n)), "overwrite_mixed: not the newest %d events: %s..."
          % (k, idx[:10]))
    for name, f in got:
        i = f["i"]
        if i % 5 == 3:
            ln = i * 37 % 1500
            want = "m" * ln if ln <= 253 else "m" * 252 + "..."   # the tracer keeps 253 bytes whole
            check(name == "t_mixed" and f.get("text") == want,
                  "event %d: %s with a text of %d bytes" % (i, name, len(f.get("text", ""))))
        else:
            check(name == "t_seq", "event %d: %s, expected t_seq" % (i, name))
    st = stats(d)
    check(k + tr.discarded == n and st["lost"] == n - k and st["events"] == n,
          "overwrite_mixed: kept %d, bt2 discarded %d, stats %s" % (k, tr.discarded, st))
    # 4 KiB holds at most about 170 of the small records; chunked dropping
    # keeps at least 15/16 of the ring, so never fewer than a few.
    check(k >= 2, "overwrite_mixed: only %d events kept" % k)


def s_block():
    n = 60000
    tr, vals, st = mode_seq("block", n, "4k")
    check(vals == list(range(n)), "block: events lost or out of order (%d of %d)" % (len(vals), n))
    check(tr.discarded == 0 and st["lost"] == 0, "block: discarded %d" % tr.discarded)


def threads(mode):
    d = fresh_dir(mode)
    n, t = 15000, 4
    r = run([PROG, "threads", str(n), str(t)], {"MARK_TRACE": d, "MARK_MODE": mode, "MARK_BUFFER": "16k"})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    tr = TextTrace(d)
    evs = tr.named("t_thread")
    st = stats(d)
    kept = 0
    tids = set()
    for idx in range(t):
        mine = [e for e in evs if e["fields"]["a_idx"] == idx]
        seqs = [e["fields"]["i"] for e in mine]
        tids |= {e["tid"] for e in mine}
        check(len({e["tid"] for e in mine}) <= 1, "thread %d: events from several tids" % idx)
        if mode == "block":
            check(seqs == list(range(n)), "thread %d: %d events, not 0..%d in order" % (idx, len(seqs), n - 1))
        elif mode == "discard":
            check(seqs == sorted(set(seqs)) and (not seqs or seqs[0] == 0), "thread %d: order" % idx)
        else:
            check(seqs == list(range(n - len(seqs), n)), "thread %d: not the newest events" % idx)
        kept += len(seqs)
    check(len(tids) == t, "expected %d distinct tids, got %d" % (t, len(tids)))
    check(kept + tr.discarded == n * t, "%d kept + %d discarded != %d" % (kept, tr.discarded, n * t))
    check(st["lost"] == tr.discarded, "stats lost %d vs bt2 %d" % (st["lost"], tr.discarded))
    if mode == "block":
        check(tr.discarded == 0, "block mode lost events")
    if mode == "discard":
        check_loss_placement(d, "t_thread", "a_idx")


def die(how):
    d = fresh_dir(how)
    n = 20001
    env = dict(os.environ, MARK_TRACE=d, MARK_BUFFER="1M")
    for k in ("ASAN_OPTIONS", "TSAN_OPTIONS"):
        # Sanitizer builds: let the SIGSEGV kill the process, as without them.
        env[k] = (env.get(k, "") + ":handle_segv=0").lstrip(":")
    p = subprocess.Popen([PROG, how, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    line = p.stdout.readline()
    check(line.strip() == "ready", "program did not get ready: %r" % line)
    if how == "kill":
        # Live statistics while the program runs (what `mark record` shows).
        time.sleep(0.05)
        st = stats(d)
        check(st["state"] == 1 and st["events"] == n and st["pid"] == p.pid, "live stats %s" % st)
        r = run([API, "recover", d])
        check(r.returncode != 0 and "still" in r.stderr, "recover must refuse a live process: %s" % r.stderr)
        check([f for f in os.listdir(procdir(d)) if f.startswith(".mark-ring")], "no buffer files while running")
        p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    check(p.returncode == (-signal.SIGKILL if how == "kill" else -signal.SIGSEGV),
          "program exit status %s" % p.returncode)
    if how == "kill":
        # A consumer killed inside a write leaves a torn packet: recovery must cut it.
        streams = sorted(f for f in os.listdir(procdir(d)) if f.startswith("stream-"))
        check(streams, "no stream written while the program ran")
        if streams:
            with open(os.path.join(procdir(d), streams[0]), "ab") as f:
                f.write(b"\xc1\x1f\xfc\xc1" + b"\x55" * 61)
    r = run([API, "recover", d])
    check(r.returncode == 0, "recover failed: %s" % r.stderr)
    tr = TextTrace(d)
    check(len(tr.events) == n, "%d events after recovery, expected %d" % (len(tr.events), n))
    seq = [e["fields"]["i"] for e in tr.named("t_seq")]
    check(seq == list(range(n - 2 * (n // 2))), "t_seq after recovery: %s" % seq[:5])
    for idx in range(2):
        mine = [e["fields"]["i"] for e in tr.named("t_thread") if e["fields"]["a_idx"] == idx]
        check(mine == list(range(n // 2)), "thread %d: %d events after recovery" % (idx, len(mine)))
    check(tr.discarded == 0, "discarded %d" % tr.discarded)
    st = stats(d)
    check(st["state"] == 3 and st["events_written"] == n, "stats after recovery %s" % st)
    check(st["markers"].get("t_thread") == 2 * (n // 2), "per-marker stats after recovery %s" % st)
    r = run([API, "recover", d])
    check(r.returncode == 0 and "recovered 0" in r.stdout, "second recovery not idempotent: %s" % r.stdout)
    check(len(TextTrace(d).events) == n, "second recovery changed the trace")


def s_signals():
    d = fresh_dir("sig")
    n = 100000
    r = run([PROG, "signals", str(n)], {"MARK_TRACE": d, "MARK_MODE": "block"})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    calls = int(re.search(r"handler_calls (\d+)", r.stdout).group(1))
    tr = TextTrace(d)
    check(len(tr.events) == n + calls, "%d events for %d + %d" % (len(tr.events), n, calls))
    outer = tr.named("t_outer")
    check([(e["fields"]["i"], e["fields"]["arg1"]) for e in outer] == [(i, 2 * i) for i in range(n)],
          "t_outer events wrong (%d)" % len(outer))
    sig = [e["fields"]["k"] for e in tr.named("t_sig")]
    check(sig == list(range(calls)), "t_sig: %d events for %d handler calls" % (len(sig), calls))
    check(calls > 0, "no signal was delivered")
    # A signal that lands inside the probe (most of the loop's time) records
    # into the thread's depth-1 buffer: a second buffer proves nesting happened.
    st = stats(d)
    print("signals: %d handler calls, %d buffers" % (calls, st["buffers"]))
    if calls >= 50:
        check(st["buffers"] >= 2, "no signal handler event was nested in the probe")


def s_fork():
    d = fresh_dir("fork")
    n = 1000
    ldd = subprocess.run(["ldd", PROG], capture_output=True, text=True).stdout
    if "libtsan" in ldd:
        skip("ThreadSanitizer cannot run a thread created in the child of a multi-threaded fork "
             "(the child's consumer thread): 'dup thread with used id'")
    r = run([PROG, "fork", str(n)], {"MARK_TRACE": d})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    child = int(re.search(r"child (\d+)", r.stdout).group(1))
    sub = procdir(d, child)
    check(os.path.isdir(sub), "no child trace directory %s" % sub)
    babeltrace_text(d, 3 * n)   # parent + child merged by babeltrace2
    parent = Trace(procdir(d, int(re.search(r"parent (\d+)", r.stdout).group(1))))
    check([list(e["fields"].values())[0] for e in parent.named("t_parent")] == list(range(2 * n)),
          "parent events")
    kid = Trace(sub)
    check([e["fields"]["i"] for e in kid.named("t_child")] == list(range(n)), "child events")
    check(not kid.named("t_parent"), "the child's trace has the parent's events")
    check({e["tid"] for e in kid.events} == {child}, "child events not from the child")


def s_fork_faults():
    """A forked child of a traced process sets up its own trace: directory,
    metadata, statistics, one ring.  That must not write the whole 2 MB
    session object: it did (session_alloc() set each of 4096 rings'
    stream_fd), 512 page faults per child.  Compared with
    the same program untraced, in the same run; the children's events must
    all be in the trace."""
    n = 50
    env = {"MARK_AGENT": "0"}
    base = run([PROG, "forkfaults", str(n)], env)
    check(base.returncode == 0, "untraced run failed: %s" % base.stderr)
    d = fresh_dir("fork_faults")
    r = run([PROG, "forkfaults", str(n)], dict(env, MARK_TRACE=d))
    check(r.returncode == 0, "traced run failed: %s" % r.stderr)
    f0 = float(re.search(r"child_faults ([0-9.]+)", base.stdout).group(1))
    f1 = float(re.search(r"child_faults ([0-9.]+)", r.stdout).group(1))
    print("page faults per child: untraced %.1f, traced %.1f" % (f0, f1))
    # A 2 MB ring is mapped but only its first pages are touched; the
    # statistics file, metadata and the child's session add a few dozen.
    emulator = os.environ.get("MARK_TEST_EMULATOR")
    if emulator:
        # qemu-user takes faults of its own (its translation cache) and
        # drops madvise() hints: neither count says anything about libmark.
        print("page faults and page-cache pages not checked under %s: qemu-user faults for itself and "
              "ignores madvise(MADV_RANDOM); the children's events are still checked" % emulator)
    elif os.environ.get("MARK_TEST_SANITIZER"):
        # ASan's allocator writes the shadow of the 2 MB session object
        # (and TSan its own), 300 faults more: the count means nothing there.
        print("page-fault count not checked under the %s sanitizer (its allocator touches the session's "
              "shadow memory); the page-cache check below still runs" % os.environ["MARK_TEST_SANITIZER"])
    else:
        check(f1 - f0 < 200, "a traced child takes %.1f page faults more than an untraced one "
              "(the whole session object written?)" % (f1 - f0))
    # Nor may its first store into the ring read ahead: the kernel zeroed a
    # large window of the fresh file (the whole 2 MB ring, and the 512 KB
    # statistics file), 81 % of a traced fork's cost (perf).  Only the
    # pages touched may be in the page cache.
    kid = sorted(p for p in os.listdir(d) if p.startswith("pid-"))[-1]
    for name, most in ((".mark-ring-0", 8), (".mark-stats", 8)) if not emulator else ():
        res = run([API, "resident", os.path.join(d, kid, name)])
        check(res.returncode == 0, "resident %s: %s" % (name, res.stderr))
        m = re.search(r"resident (\d+) of (\d+) pages", res.stdout)
        print("%s/%s: %s" % (kid, name, res.stdout.strip()))
        check(m is not None and int(m.group(1)) <= most,
              "%s: %s pages in the page cache after one event (read-ahead?)" % (name, m and m.group(1)))
    # The children _exit: their rings wait for recovery (docs/tracer.md).
    rr = run([API, "recover", d])
    check(rr.returncode == 0, "recover failed: %s" % rr.stderr)
    tr = TextTrace(d)
    check(sorted(list(e["fields"].values())[0] for e in tr.named("t_forked")) == list(range(n)),
          "the children's events")


def s_fork_exec():
    """A child records, then execs a traced program: the events of the image
    before exec reach the trace (the new image's session must not wipe
    DIR/pid-CHILD), and those of the new image too."""
    d = fresh_dir("fork_exec")
    n = 500
    r = run([PROG, "fork_exec", str(n)], {"MARK_TRACE": d})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    child = int(re.search(r"child (\d+)", r.stdout).group(1))
    t = TextTrace(d)
    before = [e for e in t.events if e["name"] == "t_child"]
    after = [e for e in t.events if e["name"] == "t_seq"]
    check([e["fields"]["i"] for e in before] == list(range(n)),
          "the child's %d events before exec: %d in the trace" % (n, len(before)))
    check(len(after) == n, "the exec'd image's %d events: %d in the trace" % (n, len(after)))
    check({e["tid"] for e in before + after} <= {child}, "events not from the child")


def s_fork_exec_full():
    """As fork_exec, but pid-CHILD.1 .. .999 exist: the exec'd image cannot
    set the unfinished trace of the image before it aside.  Its tracing is
    off, saying why, and that trace stays (it was wiped: its events neither
    in the trace nor counted)."""
    d = fresh_dir("fork_exec_full")
    n = 500
    r = run([PROG, "fork_exec_full", str(n)], {"MARK_TRACE": d})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    check("cannot be set aside" in r.stderr and "pid-P.1 to pid-P.999 exist already" in r.stderr,
          "no message saying why the exec'd image is not traced: %r" % r.stderr[-500:])
    r = run([API, "recover", d])
    check(r.returncode == 0, "recover failed: %s" % r.stderr)
    t = TextTrace(d)
    check([e["fields"]["i"] for e in t.named("t_child")] == list(range(n)),
          "the child's %d events before exec: %d in the trace" % (n, len(t.named("t_child"))))


def s_exec_at_once():
    """Events fired as soon as main() runs, then exec: they reach the trace
    (the markers are described in the metadata when the executable
    registers them, not at the consumer's next round, and .mark-stats says
    so at once; before, the exec'd image's recovery counted them lost)."""
    for attempt in range(3):
        d = fresh_dir("exec_at_once")
        n = 300
        r = run([PROG, "exec_at_once", str(n)], {"MARK_TRACE": d})
        check(r.returncode == 0, "program failed: %s" % r.stderr)
        t = TextTrace(d)
        early = [e["fields"]["i"] for e in t.named("t_early")]
        check(early == list(range(n)), "run %d: %d of the %d events before exec in the trace, %d lost"
              % (attempt, len(early), n, t.discarded))
        check([e["fields"]["i"] for e in t.named("t_seq")] == [0], "the exec'd image's event")
    # 5000 markers: a large metadata, long enough to write that the old
    # asynchronous description lost these events in every run
    d = fresh_dir("exec_at_once_many")
    r = run([MANY, "exec_at_once"], {"MARK_TRACE": d})
    check(r.returncode == 0, "many_markers failed: %s" % r.stderr[-300:])
    r = subprocess.run(["babeltrace2", d], capture_output=True, text=True, timeout=100)
    got = sum(1 for line in r.stdout.splitlines() if " m_" in line)
    check(r.returncode == 0 and got == 5001, "5000 markers fired before exec: %d events in the trace (want 5001): %s"
          % (got, r.stderr[-300:]))


def s_exec_chdir():
    """A relative MARK_TRACE, and a program that changes directory and then
    execs (found by a review): the exec'd image resolved the inherited
    relative path against its new directory and wrote its trace there,
    leaving the first image's trace unfinished.  libmark now makes the
    variable absolute in the environment at start: both images write one
    trace, where the user said."""
    top = fresh_dir("exec_chdir")
    a, b = os.path.join(top, "a"), os.path.join(top, "b")
    os.makedirs(a)
    os.makedirs(b)
    n = 300
    r = run([PROG, "exec_at_once", str(n)], {"MARK_TRACE": "rel", "TRACER_PROG_CHDIR": b}, cwd=a)
    check(r.returncode == 0 and r.stderr == "", "program failed (%d): %s" % (r.returncode, r.stderr))
    check(not os.path.exists(os.path.join(b, "rel")),
          "the exec'd image wrote its trace under the directory it changed to: %s" % os.listdir(b))
    t = TextTrace(os.path.join(a, "rel"))
    early = [e["fields"]["i"] for e in t.named("t_early")]
    check(early == list(range(n)), "%d of the %d events before exec in the trace" % (len(early), n))
    check([e["fields"]["i"] for e in t.named("t_seq")] == [0], "the exec'd image's event is not in the trace")


def s_many():
    d = fresh_dir("many")
    total, n = 2000, 20
    r = run([PROG, "many", str(n), str(total)], {"MARK_TRACE": d, "MARK_MODE": "block", "MARK_BUFFER": "64k"})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    tr = TextTrace(d)
    evs = tr.named("t_thread")
    check(len(evs) == total * n, "%d events, expected %d" % (len(evs), total * n))
    per = {}
    for e in evs:
        per.setdefault(e["fields"]["a_idx"], []).append(e["fields"]["i"])
    check(len(per) == total and all(v == list(range(n)) for v in per.values()), "per-thread sequences")
    streams = [f for f in os.listdir(procdir(d)) if f.startswith("stream-")]
    st = stats(d)
    print("many: %d threads used %d buffers" % (total, st["buffers"]))
    # 8 threads alive at a time: buffers are recycled, not one per thread.
    check(st["buffers"] <= 32 and len(streams) <= 32, "%d buffers for %d threads" % (st["buffers"], total))


def s_badenv():
    d = fresh_dir("bad")
    cases = [
        ({"MARK_TRACE": d, "MARK_MODE": "fast"}, "MARK_MODE"),
        ({"MARK_TRACE": d, "MARK_BUFFER": "12q"}, "MARK_BUFFER"),
        ({"MARK_TRACE": d, "MARK_BUFFER": "100"}, "MARK_BUFFER"),
        ({"MARK_TRACE": d, "MARK_BUFFER": "64G"}, "MARK_BUFFER"),
        ({"MARK_TRACE": d, "MARK_ENABLE": " , "}, "MARK_ENABLE"),
        # A bad glob after a good one: refused before the trace directory
        # is made (it was armed glob by glob inside a session whose
        # pid-P/ stayed behind, empty, after "tracing is off").
        ({"MARK_TRACE": d, "MARK_ENABLE": "t_*,["}, "MARK_ENABLE=t_*,["),
        ({"MARK_TRACE": d, "MARK_ENABLE": "t_seq,x\\"}, "MARK_ENABLE"),
        ({"MARK_ENABLE": "t_*,["}, "MARK_ENABLE=t_*,["),
        ({"MARK_TRACE": ""}, "MARK_TRACE"),
        ({"MARK_TRACE": "/proc/self/nope/trace"}, "/proc/self/nope/trace"),
    ]
    for env, word in cases:
        r = run([PROG, "none"], env)
        lines = r.stderr.splitlines()
        check(r.returncode == 0 and r.stdout == "untraced run ok\n", "%s: program did not run: %s" % (env, r))
        check(len(lines) == 1 and lines[0].startswith("mark: ") and word in lines[0],
              "%s: expected one stderr line naming %s, got %r" % (env, word, r.stderr))
        check(not os.path.exists(d) or not os.listdir(d), "%s: a trace was written" % env)
    # Refusals name the variable the user set, not `mark record`'s option
    # (MARK_ROTATE's said --rotate and --max-size), and say what to write;
    # MARK_AGENT takes the usual spellings, and refuses the rest (it took
    # anything but 0 for "on", MARK_AGENT=off included).
    cases = [
        ({"MARK_TRACE": d, "MARK_ROTATE": "100"}, "MARK_ROTATE=100", "at least 4k"),
        ({"MARK_TRACE": d, "MARK_MAX_SIZE": "1M", "MARK_ROTATE": "600k"}, "MARK_ROTATE=600k",
         "more than half of MARK_MAX_SIZE=1M"),
        ({"MARK_TRACE": d, "MARK_SNAPSHOT_ON": "t_seq", "MARK_MODE": "block"}, "MARK_SNAPSHOT_ON",
         "MARK_MODE=block"),
        ({"MARK_AGENT": "maybe"}, "MARK_AGENT=maybe", "1, on, yes, true, or 0, off, no, false"),
        ({"MARK_TRACE": d, "MARK_AGENT": "disable"}, "MARK_AGENT=disable", "the agent is off"),
    ]
    for env, word, advice in cases:
        r = run([PROG, "none"], env)
        lines = r.stderr.splitlines()
        check(r.returncode == 0 and r.stdout == "untraced run ok\n", "%s: program did not run: %s" % (env, r))
        check(len(lines) == 1 and lines[0].startswith("mark: ") and word in lines[0] and advice in lines[0]
              and "--rotate" not in lines[0] and "--max-size" not in lines[0],
              "%s: expected one stderr line naming %s and saying %r (no option of mark record), got %r"
              % (env, word, advice, r.stderr))
        if "MARK_AGENT" not in env:
            check(not os.path.exists(d) or not os.listdir(d), "%s: a trace was written" % env)
    # Values that were taken in silence although they do nothing: said
    # once, and tracing goes on.  MARK_AGENT's accepted spellings say nothing.
    notes = [
        ({"MARK_ROTATE": "0"}, r"MARK_ROTATE=0 .*no chunks"),
        ({"MARK_SNAPSHOT_ON": "t_seq", "MARK_SNAPSHOT_INTERVAL": "0"},
         r"MARK_SNAPSHOT_INTERVAL=0 .*no least time"),
        ({"MARK_MAX_SNAPSHOTS": "5"}, r"MARK_MAX_SNAPSHOTS=5 is ignored.*MARK_SNAPSHOT_ON is not set"),
        ({"MARK_SNAPSHOT_INTERVAL": "1s"}, r"MARK_SNAPSHOT_INTERVAL=1s is ignored.*MARK_SNAPSHOT_ON is not set"),
        ({"MARK_AGENT": "off"}, None),
        ({"MARK_AGENT": "False"}, None),
        ({"MARK_AGENT": "yes"}, None),
    ]
    for extra, said in notes:
        shutil.rmtree(d, ignore_errors=True)
        env = {"MARK_TRACE": d}
        env.update(extra)
        r = run([PROG, "none"], env)
        lines = r.stderr.splitlines()
        check(r.returncode == 0 and r.stdout == "untraced run ok\n", "%s: program did not run: %s" % (extra, r))
        if said:
            check(len(lines) == 1 and lines[0].startswith("mark: ") and re.search(said, lines[0]),
                  "%s: expected one stderr line matching %r, got %r" % (extra, said, r.stderr))
        else:
            check(not lines, "%s: expected nothing on stderr, got %r" % (extra, r.stderr))
        check(os.path.isdir(d) and any(os.path.isfile(os.path.join(d, n, "metadata")) for n in os.listdir(d)),
              "%s: tracing did not go on" % extra)
    shutil.rmtree(d, ignore_errors=True)
    # A value chosen by whoever sets the environment is printed escaped:
    # ESC and BEL (window title), CSI as one byte, a bidi override, invalid
    # UTF-8 ("\udcXX" is the raw byte XX on the way to execve).
    hostile = "\x1b]0;owned\x07\x1b[2J\udc9b31m\u202e\udcff"
    cases = [
        ({"MARK_TRACE": d, "MARK_MODE": hostile}, "MARK_MODE"),
        ({"MARK_TRACE": d, "MARK_BUFFER": "1" + hostile}, "MARK_BUFFER"),
        ({"MARK_TRACE": d, "MARK_MAX_SIZE": hostile}, "MARK_MAX_SIZE"),
        ({"MARK_TRACE": d, "MARK_ROTATE": hostile}, "MARK_ROTATE"),
        ({"MARK_TRACE": d, "MARK_FILTER": "x == " + hostile}, "MARK_FILTER"),
        ({"MARK_TRACE": d, "MARK_ENABLE": "[" + hostile}, "MARK_ENABLE"),
        ({"MARK_TRACE": "/proc/self/nope/" + hostile}, "/proc/self/nope/"),
        ({"MARK_AGENT": hostile}, "MARK_AGENT"),
    ]
    for env, word in cases:
        e = dict(os.environ)
        e.update(env)
        r = subprocess.run([PROG, "none"], env=e, capture_output=True, timeout=100)
        check(r.returncode == 0 and r.stdout == b"untraced run ok\n", "%r: program did not run: %s" % (env, r))
        line = r.stderr.rstrip(b"\n")
        raw = [b for b in line if b < 0x20 or b == 0x7f or b >= 0x80]
        check(line.startswith(b"mark: ") and word.encode() in line and b"\n" not in line,
              "%r: expected one stderr line naming %s, got %r" % (env, word, r.stderr))
        # Either the value is quoted escaped, or not quoted at all.
        check(not raw and (b"\\x1b]0;owned\\x07" in line or b"owned" not in line),
              "%r: the value was printed unescaped: %r" % (env, r.stderr))
    # A very long value (or one that escaping makes four times longer) is
    # shortened in the message, which keeps its end: what to do, "tracing
    # is off" and the newline (it lost all three past 1 KiB of text).
    for big in ("a" * 3000, "\x01" * 1500):
        cases = [
            ({"MARK_TRACE": d, "MARK_MODE": big}, "MARK_MODE", "discard, overwrite or block"),
            ({"MARK_TRACE": d, "MARK_BUFFER": "1" + big}, "MARK_BUFFER", "4k to 4G"),
            ({"MARK_TRACE": d, "MARK_MAX_SIZE": "1" + big}, "MARK_MAX_SIZE", "at least 1M"),
            ({"MARK_TRACE": d, "MARK_ROTATE": "1" + big}, "MARK_ROTATE", "500ms"),
            ({"MARK_TRACE": d, "MARK_MAX_SNAPSHOTS": "1" + big}, "MARK_MAX_SNAPSHOTS", "from 1 to"),
            ({"MARK_TRACE": d, "MARK_SNAPSHOT_INTERVAL": "1" + big}, "MARK_SNAPSHOT_INTERVAL", "500ms"),
            ({"MARK_TRACE": d, "MARK_FILTER": "x == 1 && " + big}, "MARK_FILTER", "filter language"),
            ({"MARK_TRACE": d, "MARK_SNAPSHOT_ON": "t_seq if x == " + big}, "MARK_SNAPSHOT_ON", "column "),
            ({"MARK_TRACE": d, "MARK_ENABLE": "[" + big}, "MARK_ENABLE", "never closed"),
            ({"MARK_TRACE": "/proc/self/nope/" + big[:3000 // len(big[0].encode())]}, "/proc/self/nope/",
             "No such file"),
        ]
        for env, word, advice in cases:
            e = dict(os.environ)
            e.update(env)
            r = subprocess.run([PROG, "none"], env=e, capture_output=True, timeout=100)
            check(r.returncode == 0 and r.stdout == b"untraced run ok\n", "%s: program did not run: %s" % (word, r))
            check(r.stderr.count(b"\n") == 1 and r.stderr.endswith(b"; tracing is off\n") and
                  r.stderr.startswith(b"mark: ") and word.encode() in r.stderr and advice.encode() in r.stderr
                  and len(r.stderr) < 1024,
                  "%s=<%d bytes>: expected one line of at most 1 KiB naming %s, saying %r and ending in "
                  "'; tracing is off', got %d bytes ending %r" % (word, len(big), word, advice, len(r.stderr),
                                                                 r.stderr[-120:]))
            check(not os.path.exists(d) or not os.listdir(d), "%s: a trace was written" % word)


def s_api():
    r = run([API, "parse"])
    check(r.returncode == 0, "parse: " + r.stdout + r.stderr)
    d = fresh_dir("api")
    r = run([API, "api", d])
    check(r.returncode == 0, "api: " + r.stdout + r.stderr)
    tr = Trace(d)
    babeltrace_text(d, 100)
    check([list(e["fields"].values())[0] for e in tr.named("api_event")] == list(range(5000, 5100)),
          "the second session's trace must replace the first")
    check(not tr.named("other_event"), "a marker outside the globs was recorded")


def s_tickgap():
    """A stream file whose first packet has losses to report beyond what
    earlier files of the stream reported (a new chunk): tracer_write_records
    with room for the empty packet before it (stream 98: the losses come
    before the events) and without (stream 99: events 1 tick after the
    stream's last one; the losses come in an empty packet after them).
    Both read by bt2 in time order, the 3 new losses counted in each, in
    the order said."""
    d = fresh_dir("tickgap")
    r = run([API, "tickgap", d])
    check(r.returncode == 0, "tickgap: " + r.stdout + r.stderr)
    seq = {98: [], 99: []}
    for msg in bt2.TraceCollectionMessageIterator(d):
        if type(msg) is bt2._EventMessageConst and msg.event.stream.id in seq:
            seq[msg.event.stream.id].append(("event", int(msg.event.payload_field["arg0"])))
        elif type(msg) is bt2._DiscardedEventsMessageConst and msg.stream.id in seq:
            seq[msg.stream.id].append(("lost", msg.count))
    check(seq[98] == [("lost", None), ("lost", 3), ("event", 100), ("event", 101), ("event", 102)],
          "room for the empty packet before: %r" % seq[98])
    check(seq[99] == [("lost", None), ("event", 100), ("event", 101), ("event", 102), ("lost", 3)],
          "no room: the losses after the events: %r" % seq[99])
    babeltrace_text(d, 7)


def s_snapshot():
    d = fresh_dir("snap-session")
    snap = fresh_dir("snap")
    n = 5000
    r = run([API, "snapshot", d, snap, str(n)])
    check(r.returncode == 0, "snapshot: " + r.stdout + r.stderr)
    st = Trace(snap)
    a = [e["fields"]["i"] for e in st.named("snap_seq")]
    check(len(a) > 0 and a == list(range(n - len(a), n)), "snapshot: not the newest events before it")
    # Taken while another thread wrote: a consecutive run of its newest events, none torn.
    # (Under heavy load the writer may lap its whole buffer during every copy
    # attempt; then its stream is absent, which is consistent too.)
    bg = [e["fields"]["i"] for e in st.named("snap_bg")]
    print("snapshot: %d events of the live writer" % len(bg))
    check(not bg or bg == list(range(bg[0], bg[0] + len(bg))), "snapshot of a live buffer is torn")
    b = [e["fields"]["i"] for e in Trace(d).named("snap_seq")]
    check(len(b) > 0 and b == list(range(2 * n - len(b), 2 * n)), "stop: not the newest events")
    babeltrace_text(snap, len(a) + len(bg))


def s_dlopen():
    d = fresh_dir("dlopen")
    n = 1000
    r = run([PROG, "dlopen", str(n), DSO], {"MARK_TRACE": d})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    tr = Trace(d)
    babeltrace_text(d, 3 * n)
    check([(e["fields"]["i"], e["fields"]["arg1"]) for e in tr.named("t_dso")] ==
          [(i, i * 16) for i in range(n)], "events of the dlopen()ed marker")
    check([e["fields"]["i"] for e in tr.named("t_seq")] == list(range(n)) * 2, "t_seq events")


def s_dlopen_killed():
    """Killed (SIGKILL) while the consumer rewrites the metadata, the new text
    complete in its temporary file: the trace must stay readable after
    recovery (a temporary file named like a stream made every reader fail),
    with the events the old metadata describes."""
    d = fresh_dir("dlopen-killed")
    n = 1000
    r = run([PROG, "dlopen_killed", str(n), DSO], {"MARK_TRACE": d})
    check(r.returncode == -signal.SIGKILL, "the program was not killed at the metadata's rename: %d %s"
          % (r.returncode, r.stderr))
    r = run([API, "recover", d])
    check(r.returncode == 0, "recover failed: %s" % r.stderr)
    left = [f for sub in os.listdir(d) for f in os.listdir(os.path.join(d, sub)) if "tmp" in f]
    check(all(f.startswith(".") for f in left), "a temporary file readers take for a stream: %s" % left)
    tr = TextTrace(d)
    check([e["fields"]["i"] for e in tr.named("t_seq")][:n] == list(range(n)), "the t_seq events before the dlopen")


def s_longjmp():
    """A signal handler leaves a marker's probe with siglongjmp: the exit,
    which stops the tracer, must not wait forever for that probe's RCU
    read-side section (it hung, SIGTERM blocked), and the trace is written."""
    d = fresh_dir("longjmp")
    n = 1000
    # What libmark keeps instead of freeing (other threads may still read
    # it) is a leak to LeakSanitizer, by design here.
    asan = (os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    try:
        r = run([PROG, "longjmp", str(n)], {"MARK_TRACE": d, "ASAN_OPTIONS": asan}, timeout=30)
    except subprocess.TimeoutExpired:
        check(False, "the program did not exit within 30 s (its exit waits for the abandoned probe)")
        return
    check(r.returncode == 0 and "left the probe by longjmp" in r.stdout, "program failed: %d %s"
          % (r.returncode, r.stderr[-500:]))
    check("longjmp" in r.stderr, "no word of the probe left by longjmp: %r" % r.stderr[-300:])
    tr = TextTrace(d)
    check([e["fields"]["i"] for e in tr.named("t_seq")] == list(range(n)), "the t_seq events after the longjmp")


def s_cancel():
    """A thread cancelled while its first event creates its buffer file
    (the cancellation acting in fallocate): no descriptor left open, no
    buffer file left behind, the trace complete with the thread's event."""
    if os.environ.get("MARK_TEST_SANITIZER") == "address":
        skip("AddressSanitizer does not unpoison the stack of a thread unwound by its cancellation, and "
             "glibc reuses that stack for the next thread: a false stack-buffer-underflow there "
             "(AddressSanitizer's own hint: a custom stack unwind); this scenario runs in the other builds")
    d = fresh_dir("cancel")
    r = run([PROG, "cancel"], {"MARK_TRACE": d, "MARK_AGENT": "0"})
    check(r.returncode == 0, "program failed: %s" % r.stderr[-300:])
    m = re.search(r"cancelled (\d) descriptors (\d+) (\d+)", r.stdout)
    check(m is not None and m.group(1) == "1", "the thread was not cancelled: %r" % r.stdout)
    if m:
        check(m.group(2) == "0" and m.group(3) == "0", "descriptors open on a buffer file before the thread "
              "%s, after it %s: its buffer file's descriptor was left open" % (m.group(2), m.group(3)))
    left = [f for f in os.listdir(procdir(d)) if f.startswith(".mark-ring-")]
    check(not left, "buffer files left behind by a process that exited: %s" % left)
    tr = TextTrace(d)
    check([e["fields"]["i"] for e in tr.named("t_seq")] == [-1], "the main thread's event")
    check(len(tr.named("t_cancel")) == 1, "the cancelled thread's event (recorded before the cancellation acted)")


def event_and_loss_times(path):
    """The times (ns from origin, bt2) of the trace's events, and the ends
    of its discarded-events messages that count something."""
    ev_ns, loss_ns = [], []
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            ev_ns.append(msg.default_clock_snapshot.ns_from_origin)
        elif type(msg) is bt2._DiscardedEventsMessageConst and msg.count:
            loss_ns.append(msg.end_default_clock_snapshot.ns_from_origin)
    return ev_ns, loss_ns


def s_noring():
    """A thread whose buffer file cannot be created (no free descriptor):
    one warning naming the reason, and a thread started once descriptors
    are back records every event (a failure used up a ring index and was
    retried, and reported, on every event: after 4096 no thread of the
    process could record again)."""
    d = fresh_dir("noring")
    n = 5000
    r = run([PROG, "noring", str(n)], {"MARK_TRACE": d, "MARK_AGENT": "0"})
    check(r.returncode == 0, "program failed: %s" % r.stderr[-500:])
    warnings = [l for l in r.stderr.splitlines() if "buffer file" in l]
    check(len(warnings) == 1 and "EMFILE" in warnings[0] and "once per recording" in warnings[0],
          "want one warning naming EMFILE: %d lines, %s" % (len(warnings), warnings[:2]))
    tr = TextTrace(d)
    got = [e["fields"]["i"] for e in tr.named("t_seq")]
    check(got == [-1] + list(range(n)),
          "the main thread's event and the second thread's %d (the first thread's are lost): %d events, "
          "first %s, discarded %d; stderr %r" % (n, len(got), got[:3], tr.discarded, r.stderr[-600:]))
    # The first thread's n events had no buffer: reported lost in the
    # trace itself (a stream of their own), not only in .mark-stats.
    check(tr.discarded == n and stats(d)["lost"] == n,
          "the %d events without a buffer: %d discarded in the trace (babeltrace2), %d in .mark-stats"
          % (n, tr.discarded, stats(d)["lost"]))
    # Stamped in the trace's clock (aarch64: CNTVCT ticks, not nanoseconds),
    # within the recording: after its first event, not hours after its last.
    ev_ns, loss_ns = event_and_loss_times(d)
    check(ev_ns and loss_ns and all(min(ev_ns) <= t <= max(ev_ns) + 10 * 10**9 for t in loss_ns),
          "the loss is stamped outside the recording: events %s..%s ns, losses at %s"
          % (min(ev_ns or [0]), max(ev_ns or [0]), loss_ns))
    loss = [f for f in os.listdir(procdir(d)) if f == "stream-4096"]
    check(loss, "no stream-4096 (the events without a buffer) in %s" % os.listdir(procdir(d)))
    st_out = subprocess.run([os.path.join(os.path.dirname(API), "..", "mark"), "stats", d],
                            capture_output=True, text=True)
    check(st_out.returncode == 0 and re.search(r"\b%d\b[^\n]*lost|lost[^\n]*\b%d\b" % (n, n), st_out.stdout),
          "mark stats does not report the %d lost: %r" % (n, st_out.stdout[-800:]))
    v = subprocess.run([os.path.join(os.path.dirname(API), "..", "mark"), "view", d], capture_output=True, text=True)
    check(any(l.startswith("# lost %d events in stream " % n) and "no tracer buffer" in l for l in v.stdout.splitlines()),
          "mark view does not say %d events had no buffer: %r" % (n, [l for l in v.stdout.splitlines() if "lost" in l]))


def loss_stream_reported(path):
    """events_discarded of the last packet of stream-4096 (the events that
    had no buffer), 0 without one; packets of 104 bytes, the count at 72."""
    try:
        data = open(os.path.join(path, "stream-4096"), "rb").read()
    except FileNotFoundError:
        return 0
    if len(data) < 104:
        return 0
    end = len(data) - len(data) % 104
    return struct.unpack_from("<Q", data, end - 104 + 72)[0]


def s_noring_killed():
    """Events without a buffer in the last moments before SIGKILL: the
    consumer writes them to stream-4096 at most every 100 ms, so when the
    process dies the last ones are only counted, by the recording threads,
    in .mark-stats (mark_tf_stats.lost_no_ring).  Recovery writes them to
    the stream: the trace reports all of them, stamped within the
    recording, also when the stream file was never created (a copy of the
    trace without it)."""
    d = fresh_dir("noring_killed")
    n = 3000
    r = run([PROG, "noring_killed", str(n)], {"MARK_TRACE": d, "MARK_AGENT": "0"})
    check(r.returncode == -signal.SIGKILL, "program status %s: %s" % (r.returncode, r.stderr[-500:]))
    check(r.stdout.strip() == "written", "the consumer did not write the first %d losses in 5 s: %r"
          % (n, r.stdout))
    before = loss_stream_reported(procdir(d))
    if before == 2 * n:
        print("NOTE: the consumer had written all %d losses before the kill (a slow kill): the recovery "
              "had nothing to add to the existing stream; the copy without it is still checked" % (2 * n))
    else:
        print("stream-4096 reported %d of %d losses at the kill" % (before, 2 * n))
    bare = d + "-no-loss-stream"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(d, bare, symlinks=True)
    os.unlink(os.path.join(procdir(bare), "stream-4096"))
    for path in (d, bare):
        r = run([API, "recover", path])
        check(r.returncode == 0, "recover %s failed: %s" % (path, r.stderr))
        tr = TextTrace(path)
        got = [e["fields"]["i"] for e in tr.named("t_seq")]
        check(got == [-1], "the main thread's one event: %s" % got[:5])
        check(tr.discarded == 2 * n and stats(path)["lost"] == 2 * n,
              "%s: the %d events without a buffer: %d discarded in the trace (babeltrace2), %d in .mark-stats"
              % (path, 2 * n, tr.discarded, stats(path)["lost"]))
        ev_ns, loss_ns = event_and_loss_times(path)
        check(ev_ns and loss_ns and all(min(ev_ns) <= t <= min(ev_ns) + 60 * 10**9 for t in loss_ns),
              "%s: a loss is stamped outside the recording: first event at %s ns, losses at %s"
              % (path, min(ev_ns or [0]), loss_ns))
        r = run([API, "recover", path])
        check(r.returncode == 0 and "recovered 0" in r.stdout and TextTrace(path).discarded == 2 * n,
              "%s: a second recovery changed the trace: %s" % (path, r.stdout))
    # The same without a readable metadata (a FIFO planted under its name):
    # no UUID for a new stream-4096, so recovery says so, without waiting on
    # the FIFO, and leaves no empty stream file.
    fifo = os.path.join(procdir(bare), "metadata")
    os.unlink(fifo)
    os.unlink(os.path.join(procdir(bare), "stream-4096"))
    os.mkfifo(fifo)
    with open(os.path.join(procdir(bare), ".mark-stats"), "r+b") as f:
        f.seek(0)
        raw = bytearray(f.read(256))
        struct.pack_into("<I", raw, 28, 1)   # state: running again, as at the kill
        f.seek(0)
        f.write(raw)
    try:
        r = run([API, "recover", bare], timeout=20)
        check(r.returncode != 0 and "no trace UUID" in r.stderr,
              "recovery without a metadata: status %d, %r" % (r.returncode, r.stderr[-400:]))
        check(not os.path.exists(os.path.join(procdir(bare), "stream-4096")),
              "recovery without a metadata left a stream-4096 with no packet")
    except subprocess.TimeoutExpired:
        check(False, "recovery waited on a FIFO planted as the metadata")
    shutil.rmtree(bare, ignore_errors=True)


def s_nostream():
    """The consumer cannot create the stream file for 300 ms (interposed
    openat: EMFILE) while the thread records: its events wait in the
    buffer and all reach the trace, with one warning saying so (they were
    all counted lost at the first failure)."""
    d = fresh_dir("nostream")
    n = 3000
    r = run([PROG, "nostream", str(n)], {"MARK_TRACE": d, "MARK_AGENT": "0", "MARK_BUFFER": "1M"})
    check(r.returncode == 0, "program failed: %s" % r.stderr[-500:])
    m = re.search(r"refused (\d+)", r.stdout)
    check(m and int(m.group(1)) > 0, "the consumer never tried to create the stream file in the first "
          "300 ms (refused: %r)" % r.stdout)
    warnings = [l for l in r.stderr.splitlines() if "stream file" in l]
    check(len(warnings) == 1 and "Too many open files" in warnings[0] and "wait" in warnings[0],
          "want one warning, that the events wait: %r" % warnings)
    tr = TextTrace(d)
    got = [e["fields"]["i"] for e in tr.named("t_seq")]
    check(got == list(range(n)) and tr.discarded == 0,
          "%d events of %d, first %s, discarded %d" % (len(got), n, got[:3], tr.discarded))
    st = stats(d)
    check(st["lost"] == 0 and st["events_written"] == n, "stats %s" % st)


def s_closefds():
    if "libtsan" in subprocess.run(["ldd", PROG], capture_output=True, text=True).stdout:
        skip("under ThreadSanitizer the program's close() of the consumer's descriptor is "
             "reported as the race it is; this scenario is for the other builds")
    d = fresh_dir("closefds")
    own = d + ".own"
    if os.path.exists(own):
        os.unlink(own)
    n = 1000
    r = run([PROG, "closefds", str(n), own], {"MARK_TRACE": d})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    with open(own) as f:
        check(f.read() == "mine\n" * 8, "the tracer wrote into the program's own file")
    tr = TextTrace(d)
    check([e["fields"]["i"] for e in tr.named("t_seq")] == list(range(n)) * 2, "events around the close")
    # The same with MARK_MAX_SIZE: the tracer keeps DIR/pid-P/.mark-chunks
    # open to count the events of the chunks it deletes.  After the close
    # the number may be one of the program's files: the tracer must not
    # write its counts there (found by a review: "mark-chunks 2
    # rotated_events ..." at the start of the program's file), and the
    # counts must still add up.
    d = fresh_dir("closefds-chunks")
    if os.path.exists(own):
        os.unlink(own)
    n = 150000
    r = run([PROG, "closefds", str(n), own], {"MARK_TRACE": d, "MARK_MAX_SIZE": "1M", "MARK_MODE": "block",
                                               "MARK_BUFFER": "256k"})
    check(r.returncode == 0, "program failed: %s" % r.stderr)
    with open(own) as f:
        text = f.read()
    check(text == "mine\n" * 8, "the tracer wrote into the program's own file: %r" % text[:200])
    pdir = os.path.join(d, [x for x in os.listdir(d) if re.fullmatch(r"pid-\d+", x)][0])
    with open(os.path.join(pdir, ".mark-chunks")) as f:
        chunks = dict(l.split() for l in f.read().splitlines()[1:])
    rotated = int(chunks["rotated_events"]) - (int(chunks["deleting_events"])
                                              if int(chunks["deleting_chunk"]) >= 0 else 0)
    kept = 0
    for c in sorted(os.listdir(d)):
        if c.startswith("pid-") and os.path.exists(os.path.join(d, c, "metadata")):
            kept += len(TextTrace(os.path.join(d, c)).named("t_seq"))
    check(rotated > 0, "no chunk was deleted (.mark-chunks: %s): the test did not reach the case" % chunks)
    check(kept + rotated == 2 * n, "events kept %d + rotated away %d = %d, want %d" %
          (kept, rotated, kept + rotated, 2 * n))


def s_cpu():
    if not shutil.which("taskset"):
        skip("taskset (util-linux) is not installed")
    cpus = sorted(os.sched_getaffinity(0))
    target = cpus[-1]
    # The CPU comes from rseq; with glibc's rseq off, from rdtscp / sched_getcpu.
    for tunables in ("", "glibc.pthread.rseq=0"):
        d = fresh_dir("cpu" + ("-norseq" if tunables else ""))
        r = run(["taskset", "-c", str(target), PROG, "threads", "2000", "2"],
                {"MARK_TRACE": d, "GLIBC_TUNABLES": tunables})
        check(r.returncode == 0, "program failed: %s" % r.stderr)
        tr = TextTrace(d)
        check(len(tr.events) == 4000 and {e["cpu"] for e in tr.events} == {target},
              "%s: events pinned to CPU %d report CPUs %s" % (tunables or "rseq", target,
                                                              sorted({e["cpu"] for e in tr.events})))


def s_fastpath():
    """Issue 14: ordinary events take the probe's fast path with glibc's
    rseq registration and without it (the fallback reads the CPU number
    with rdtscp); the CPU recorded is still the right one (s_cpu)."""
    skipped = 0
    for tunables in ("", "glibc.pthread.rseq=0"):
        d = fresh_dir("fastpath" + ("-norseq" if tunables else ""))
        r = run([API, "fastpath", d], {"GLIBC_TUNABLES": tunables})
        print((tunables or "rseq") + ": " + r.stdout.strip())
        if r.returncode == 77:
            skipped += 1
            continue
        check(r.returncode == 0, "%s: tracer_api fastpath failed:\n%s%s" % (tunables or "rseq", r.stdout, r.stderr))
    if skipped == 2:
        skip("no cheap CPU-number source (rseq or rdtscp) on this machine")


def s_cpusource():
    """Issue 14: without rseq, the CPU number comes from TSC_AUX by rdpid,
    or by rdtscp on CPUs without rdpid.  tracer_api forces each source in
    turn and records, pinned to each allowed CPU, events whose argument is
    that CPU: every recorded CPU must equal it, from either source."""
    d = fresh_dir("cpusource")
    os.makedirs(d)
    r = run([API, "cpusource", os.path.join(d, "source")], {"GLIBC_TUNABLES": "glibc.pthread.rseq=0"})
    print(r.stdout.strip())
    if r.returncode == 77:
        skip(re.sub(r"^SKIP: ", "", r.stdout.strip().splitlines()[-1]))
    check(r.returncode == 0, "tracer_api cpusource failed:\n%s%s" % (r.stdout, r.stderr))
    sources = [int(line.split()[1].rstrip(":")) for line in r.stdout.splitlines() if line.startswith("source ")]
    check(len(sources) == (1 if "no rdpid" in r.stdout else 2), "sources run: %s" % sources)
    allowed = sorted(os.sched_getaffinity(0))
    for k in sources:
        tr = TextTrace(os.path.join(d, "source-%d" % k))
        ev = tr.named("api_cpusrc")
        check(len(ev) == 100 * len(allowed), "source %d: %d events, expected %d" % (k, len(ev), 100 * len(allowed)))
        wrong = [(e["cpu"], e["fields"]["cpu"]) for e in ev if e["cpu"] != e["fields"]["cpu"]]
        check(not wrong, "source %d: recorded CPU differs from the pinned one: %s" % (k, wrong[:5]))
        check(sorted({e["cpu"] for e in ev}) == allowed, "source %d: CPUs %s" % (k, sorted({e["cpu"] for e in ev})))


def s_pastkick():
    """Issue 14: a discard ring past half full with its consumer stalled
    leaves the fast path once (the kick), and counts exactly what it loses."""
    d = fresh_dir("pastkick")
    r = run([API, "pastkick", d])
    print(r.stdout.strip())
    if r.returncode == 77:
        skip(r.stdout.strip().splitlines()[-1][len("SKIP: "):])
    check(r.returncode == 0, "tracer_api pastkick failed:\n%s%s" % (r.stdout, r.stderr))


def s_kill_overwrite():
    """Flight recorder killed by SIGKILL: recovery writes each buffer's newest events."""
    d = fresh_dir("kill-ow")
    n = 20001
    p = subprocess.Popen([PROG, "kill", str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, MARK_TRACE=d, MARK_MODE="overwrite", MARK_BUFFER="4k"))
    check(p.stdout.readline().strip() == "ready", "program did not get ready")
    time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    r = run([API, "recover", d])
    check(r.returncode == 0, "recover failed: %s" % r.stderr)
    tr = TextTrace(d)
    kept = 0
    for idx in range(2):
        mine = [e["fields"]["i"] for e in tr.named("t_thread") if e["fields"]["a_idx"] == idx]
        check(mine and mine == list(range(n // 2 - len(mine), n // 2)),
              "thread %d: not its newest events (%d)" % (idx, len(mine)))
        kept += len(mine)
    seq = [e["fields"]["i"] for e in tr.named("t_seq")]
    check(seq == [0], "t_seq (still in the main thread's buffer at the kill): %s" % seq)
    kept += len(seq)
    check(kept + tr.discarded == n, "kept %d + overwritten %d != %d" % (kept, tr.discarded, n))


def run_for_cli(scenario, *args):
    """Run tracer_prog SCENARIO ARGS... in block mode (nothing lost) for the
    tests that also read the trace with the mark command (MARK_CLI).
    Returns (mark, trace directory)."""
    mark = os.environ.get("MARK_CLI")
    if not mark:
        skip("MARK_CLI (the mark command) is not set")
    d = fresh_dir("t")
    r = run([PROG, scenario] + [str(a) for a in args], env={"MARK_TRACE": d, "MARK_MODE": "block"})
    check(r.returncode == 0, "tracer_prog %s failed: %s" % (scenario, r.stderr))
    return mark, d


def export_json(mark, d):
    """The Chrome JSON that `mark export` writes for trace d."""
    import json
    out = os.path.join(WORK, SCENARIO, "t.json")
    r = run([mark, "export", "-o", out, d])
    check(r.returncode == 0, "mark export exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def s_strings():
    """Issue 16 item 1: every %s reads back exactly, in babeltrace2 itself
    (the command and the bt2 bindings), `mark view` and `mark export`.
    Two threads, events cycling through "", 1 byte, 253 bytes (the longest
    kept whole), "" and a 1000-byte string (kept as 252 bytes + "...", tagged
    cut: `mark view` shows the "..." after the closing quote)."""
    n, t = 10000, 2
    mark, d = run_for_cli("strings", n, t)
    vals = ["", "b", "m" * 253, "", "z" * 252 + "..."]
    want = {}   # (tid, i) -> (s, next)

    def expect(tid, i):
        return (vals[i % 5], vals[(i + 1) % 5])

    def compare(what, got):
        tids = sorted({k[0] for k in got})
        check(len(tids) == t, "%s: events of %d threads, expected %d" % (what, len(tids), t))
        check(len(got) == n * t, "%s: %d events, expected %d" % (what, len(got), n * t))
        bad = [(k, v) for k, v in sorted(got.items()) if v != expect(*k)]
        empties = sum(1 for k in got if expect(*k)[0] == "")
        check(not bad, "%s: %d of %d events have the wrong strings (%d of %d empty ones), first: "
              "tid %d i %d: %r, expected %r" % (what, len(bad), len(got), sum(
                  1 for k, v in bad if expect(*k)[0] == "" and v[0] != ""), empties,
                  bad[0][0][0] if bad else 0, bad[0][0][1] if bad else 0,
                  tuple(x[:20] for x in bad[0][1]) if bad else None,
                  tuple(x[:20] for x in expect(*bad[0][0])) if bad else None))

    # 1. the bt2 bindings
    tr = Trace(d)
    compare("bt2", {(e["fields"]["tid"], e["fields"]["i"]): (e["fields"]["s"], e["fields"]["next"])
                    for e in tr.named("t_str")})
    # 2. the babeltrace2 command (a string field prints as "..." or, in a
    #    variant, as { "..." })
    r = subprocess.run(["babeltrace2", d], capture_output=True, text=True, timeout=100)
    check(r.returncode == 0, "babeltrace2 exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    str_re = r'(?:\{ )?"([^"]*)"(?: \})?'
    line_re = re.compile(r"t_str: .*\{ tid = (\d+), i = (\d+), .*\bs = %s, .*\bnext = %s \}$"
                         % (str_re, str_re))
    got = {}
    for line in r.stdout.splitlines():
        m = line_re.search(line)
        if check(m is not None, "babeltrace2 line not understood: " + line[:300]):
            got[(int(m.group(1)), int(m.group(2)))] = (m.group(3), m.group(4))
    compare("babeltrace2", got)
    # 3. mark view
    r = run([mark, "view", d])
    check(r.returncode == 0, "mark view exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    line_re = re.compile(r't_str: tid=(\d+) i=(\d+) s="([^"]*)"((?:\.\.\.)?) next="([^"]*)"((?:\.\.\.)?)$')
    got = {}
    for line in r.stdout.splitlines():
        m = line_re.search(line)
        if check(m is not None, "mark view line not understood: " + line[:300]):
            got[(int(m.group(1)), int(m.group(2)))] = (m.group(3) + m.group(4), m.group(5) + m.group(6))
    compare("mark view", got)
    # 4. mark export (Chrome JSON)
    got = {}
    for ev in export_json(mark, d)["traceEvents"]:
        if ev.get("name") == "t_str":
            a = ev["args"]
            got[(a["tid"], a["i"])] = (a["s"], a["next"])
    compare("mark export", got)

def s_values():
    """Issue 16 items 4, 6, 7 through the written metadata (bt2), mark view
    and mark export: field names from the format or the argument
    expression, doubles as the shortest decimal that reads back exactly,
    %c as a character."""
    import math
    n = 5000
    mark, d = run_for_cli("values", n)
    tr = Trace(d)
    v = run([mark, "view", d])
    check(v.returncode == 0, "mark view exited %d: %s" % (v.returncode, v.stderr[-2000:]))
    view = {}
    for line in v.stdout.split("\n"):
        m = re.search(r" (t_\w+): (.*)$", line)
        if m:
            view.setdefault(m.group(1), []).append(m.group(2))
    exported = {}
    for ev in export_json(mark, d)["traceEvents"]:
        if ev.get("ph") != "M":
            exported.setdefault(ev["name"], []).append(ev["args"])

    # item 6: every double reads back exactly, in as few digits as repr's
    def digits(text):
        mant = text.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0").rstrip("0")
        return max(len(mant), 1)
    want = [e["fields"]["d"] for e in tr.named("t_dbl")]
    check(len(want) == n, "t_dbl: %d events in bt2, expected %d" % (len(want), n))
    got = [l[len("d="):] for l in view.get("t_dbl", [])]
    check(len(got) == n, "t_dbl: %d lines in mark view" % len(got))
    bad = []
    for w, g in zip(want, got):
        try:
            back = float(g)
        except ValueError:
            back = None
        if back != w or math.copysign(1, back) != math.copysign(1, w) or digits(g) != digits(repr(w)):
            bad.append((g, repr(w)))
    check(not bad, "mark view: %d of %d doubles not the shortest exact decimal, e.g. %s"
          % (len(bad), len(got), bad[:4]))
    ex = [a["d"] for a in exported.get("t_dbl", [])]
    check(ex == want and all(math.copysign(1, a) == math.copysign(1, b) for a, b in zip(ex, want)),
          "mark export: doubles differ from the trace's")

    # item 7: %c as a character
    def c_text(c):
        special = {ord("'"): "\\'", ord("\\"): "\\\\", 10: "\\n", 9: "\\t"}
        if c in special:
            return "'%s'" % special[c]
        return "'%s'" % chr(c) if 0x20 <= c < 0x7f else "'\\x%02x'" % c
    got = [l[len("ch="):] for l in view.get("t_chr", [])]
    check(got == [c_text(c) for c in range(256)], "mark view %%c: %s"
          % [(c, g) for c, g in enumerate(got) if g != c_text(c)][:6])
    got = [a["ch"] for a in exported.get("t_chr", [])]
    check(got == [chr(c) for c in range(256)], "mark export %%c: %s"
          % [(c, g) for c, g in enumerate(got) if g != chr(c)][:6])
    bt = subprocess.run(["babeltrace2", d], capture_output=True, text=True, timeout=100)
    check('ch = ( "a" : container = 97 )' in bt.stdout, "babeltrace2 does not show %c as a character")

    # item 4: field names, in the metadata (bt2) and in mark view
    names = {
        "t_fmt_names": ["pid", "comm"],           # "pid %d comm %s"
        "t_eq_names": ["fd", "len"],              # "fd=%d len: %u"
        # (void *)rp, *ip, rp->len, (int)(r.flags), &r, fd + 1
        "t_expr_names": ["rp", "ip", "rp_len", "r_flags", "r", "arg5"],
        # -fd, !fd, ~len, +fd, -(int)len: only the unary + keeps the value
        "t_op_names": ["arg0", "arg1", "arg2", "fd", "arg4"],
    }
    for ev, want in names.items():
        evs = tr.named(ev)
        got = list(evs[0]["fields"]) if evs else None
        check(got == want, "%s: fields %s in the metadata, expected %s" % (ev, got, want))
        line = view.get(ev, [""])[0]
        got = re.findall(r"(?:^| )(\w+)=", line)
        check(got == want, "%s: mark view shows %s, expected %s" % (ev, line, want))


def s_wide():
    """%ls and %lc: the slots of a marker hold the bytes of a char string
    and one byte of a %c, so a wide string L"hello" was recorded as "h" and
    the character U+263A as ':' (its low byte), shown so by every reader.
    Such a marker is refused when it registers, with a message naming the
    conversion and what to use instead, and never recorded; the program's
    other markers are."""
    prog = os.environ.get("MARK_WIDE_PROG")
    if not prog:
        skip("MARK_WIDE_PROG (tests/tracer/wide_prog.c) is not set")
    d = fresh_dir("t")
    n = 5
    r = run([prog, str(n)], {"MARK_TRACE": d})
    check(r.returncode == 0, "program failed: %d %s" % (r.returncode, r.stderr))
    tr = Trace(d)
    check([e["fields"]["i"] for e in tr.named("t_seq")] == list(range(n)),
          "t_seq: %s" % [e["fields"] for e in tr.named("t_seq")])
    for name, conv in (("t_wide_s", "%ls"), ("t_wide_c", "%lc")):
        evs = tr.named(name)
        check(not evs, "%s (%s) recorded as %s, not what the program passed" % (name, conv, evs[:1]))
        warned = [l for l in r.stderr.splitlines() if name in l]
        check(len(warned) == 1 and '"%s"' % conv in warned[0] and "never armed" in warned[0],
              "%s (%s): no message that it is refused: %r" % (name, conv, r.stderr))


def s_chrome():
    """Issue 16 item 5, mark export --format chrome: ts relative to the
    first event, exact to the ns (checked against bt2's clock values), the
    start in otherData; slices well nested per thread whatever the trace
    holds: an end without its begin is an instant, an end closes the inner
    slices whose ends are missing, a slice left open ends at its thread's
    last event."""
    n, t = 300, 2
    mark, d = run_for_cli("pairs", n, t)
    tr = Trace(d)
    doc = export_json(mark, d)
    other = doc["otherData"]
    evs = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    start = int(other.get("trace_start_ns", "0"))
    check(start == min(e["ts"] for e in tr.events), "otherData.trace_start_ns %d is not the first event's "
          "time %d" % (start, min(e["ts"] for e in tr.events)))
    # every event of the trace, at its exact ns, from ts (µs, relative)
    real = sorted((e["tid"], e["ts"]) for e in tr.events)
    got = sorted((e["tid"], start + round(e["ts"] * 1000)) for e in evs
                 if e.get("args", {}).get("closed_by") is None)
    check(got == real, "export times differ from the trace's (first: %s vs %s)"
          % (next(((a, b) for a, b in zip(got, real) if a != b), None), len(got)))
    check(min(e["ts"] for e in evs) == 0, "ts does not start at 0: %s" % min(e["ts"] for e in evs))
    # nesting, per thread
    per = {}
    for e in evs:
        per.setdefault(e["tid"], []).append(e)
    check(len(per) == t, "events of %d threads, expected %d" % (len(per), t))
    for tid, es in per.items():
        stack, bad = [], []
        for e in es:
            if e["ph"] == "B":
                stack.append(e["name"])
            elif e["ph"] == "E":
                if not stack or stack[-1] != e["name"]:
                    bad.append(e)
                else:
                    stack.pop()
        check(not bad, "thread %d: %d ends that do not end the innermost open slice, first %s"
              % (tid, len(bad), bad[:1]))
        check(not stack, "thread %d: slices left open: %s" % (tid, stack))
        inst = [e for e in es if e["ph"] == "i"]
        check([(e["name"], e["args"].get("i")) for e in inst] == [("t_req_end", -1)],
              "thread %d: the end without a begin is not the one instant: %s" % (tid, inst[:3]))
        synth = [(e["name"], e["ts"] == es[-1]["ts"] or e is es[-1]) for e in es
                 if e.get("args", {}).get("closed_by")]
        check([x[0] for x in synth] == ["t_io", "t_req"] and synth[1][1],
              "thread %d: synthesised ends %s (want t_io, inside the last complete req, "
              "and the last t_req at the thread's last event)" % (tid, synth))
        check(sum(e["ph"] == "B" for e in es) == 2 * n + 3, "thread %d: %d begins" % (
            tid, sum(e["ph"] == "B" for e in es)))
    check(other.get("slices_ended_by_export") == 2 * t and other.get("ends_without_begin") == t,
          "otherData counts: %s" % other)



SCENARIOS = {
    "chrome": s_chrome,
    "values": s_values,
    "wide": s_wide,
    "strings": s_strings,
    "types": s_types, "discard": s_discard, "discard_sizes": s_discard_sizes, "overwrite": s_overwrite, "block": s_block,
    "overwrite_mixed": s_overwrite_mixed,
    "threads_block": lambda: threads("block"), "threads_discard": lambda: threads("discard"),
    "threads_overwrite": lambda: threads("overwrite"),
    "kill": lambda: die("kill"), "kill_overwrite": s_kill_overwrite, "segv": lambda: die("segv"), "signals": s_signals, "fork": s_fork, "fork_faults": s_fork_faults,
    "fork_exec": s_fork_exec,
    "many": s_many, "closefds": s_closefds, "cpu": s_cpu, "fastpath": s_fastpath, "cpusource": s_cpusource, "pastkick": s_pastkick, "badenv": s_badenv, "api": s_api, "tickgap": s_tickgap, "snapshot": s_snapshot, "dlopen": s_dlopen,
    "dlopen_killed": s_dlopen_killed, "noring": s_noring, "noring_killed": s_noring_killed, "nostream": s_nostream, "longjmp": s_longjmp, "exec_at_once": s_exec_at_once, "exec_chdir": s_exec_chdir, "cancel": s_cancel, "fork_exec_full": s_fork_exec_full,
}

SCENARIOS[SCENARIO]()
if failures:
    print("FAILED: %d check(s)" % len(failures))
    sys.exit(1)
print("ok")

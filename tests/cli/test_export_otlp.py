#!/usr/bin/python3
"""`mark export --format otlp` (cli/export_otlp.c): OTLP/JSON lines and the
OTLP/HTTP POST path.

    test_export_otlp.py CASE MARK_BINARY OTLP_TARGET WORKDIR

Real traces of tests/cli/otlp_target.c (threads, nested pairs, every
argument type, a forked child) recorded by `mark record`.  Every line is
parsed strictly with the official opentelemetry-proto schema (protobuf
json_format, unknown fields refused), and every span, log record, id,
attribute and timestamp is checked against the CTF trace as libbabeltrace2
(python3-bt2) reads it, paired here in Python independently of cli/pairs.c.
The POST cases run a local HTTP receiver (http.server on 127.0.0.1).
Exit 0 = pass, 1 = fail, 77 = skip (reason after "SKIP:").
"""
import base64
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pydeps"))
from test_cli import (bt2_module, bt2_payload, check, fixture, fresh, main, need_babeltrace2,  # noqa: E402
                      run, skip, skip_forked_child_under_tsan)

ROUNDS = 300          # per thread; otlp_target.c has 2 threads
BATCH = 512           # the most spans or log records export_otlp.c puts in one request
HEX = re.compile(r"^[0-9a-f]+$")


def schemas():
    import pydeps
    trace_pb2, logs_pb2, json_format = pydeps.require(
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        "opentelemetry.proto.collector.logs.v1.logs_service_pb2",
        "google.protobuf.json_format")
    return trace_pb2, logs_pb2, json_format


def record(mark, target, workdir, name, *args):
    need_babeltrace2()
    trace = fresh(workdir, name)
    r = run([mark, "record", "-q", "--mode", "block", "-o", trace, "--", target] + list(args), timeout=600)
    check(r.returncode == 0, "record %s: exit %d: %s" % (name, r.returncode, r.stderr[-400:]))
    return trace


def json_text(raw):
    """The string mark's JSON escaping (cli/text.c, shared with the Chrome
    export) gives a %s's bytes: valid UTF-8 as the characters it holds (a
    C1 or bidirectional control written \\uXXXX, read back as itself); every
    byte that is not UTF-8 as the character U+00XX."""
    out, i = [], 0
    while i < len(raw):
        b = raw[i]
        n = 2 if 0xc2 <= b <= 0xdf else 3 if 0xe0 <= b <= 0xef else 4 if 0xf0 <= b <= 0xf4 else 1
        if n > 1:
            try:
                c = raw[i:i + n].decode("utf-8")
                if len(c) == 1:
                    out.append(c)
                    i += n
                    continue
            except UnicodeDecodeError:
                pass
        out.append(chr(b))
        i += 1
    return "".join(out)


def ctf_events(trace):
    """Every event of the trace (and of its forked children's traces) as
    libbabeltrace2 reads it: dicts name, ns, pid, procname, tid, fields
    (the OTLP AnyValue each field should become)."""
    bt2 = bt2_module()
    evs = []
    for msg in bt2.TraceCollectionMessageIterator(trace):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        env = ev.stream.trace.environment
        fields = []
        for k, v in bt2_payload(ev):
            if v is None:   # a NULL %s: the empty AnyValue
                fields.append((k, {}))
                continue
            fc = v.cls
            if isinstance(v, bt2._StringFieldConst):
                val = {"stringValue": json_text(str(v).encode("utf-8", "surrogateescape"))}
            elif isinstance(v, bt2._RealFieldConst):
                val = {"doubleValue": float(v)}
            elif isinstance(fc, bt2._UnsignedEnumerationFieldClassConst) and len(fc) == 256:
                val = {"stringValue": chr(int(v))}      # %c: one byte (ASCII here)
            elif fc.preferred_display_base == 16:
                val = {"stringValue": "0x%x" % int(v)}   # %p %x: as written
            elif int(v) >= 2 ** 63:
                val = {"stringValue": str(int(v))}       # beyond int64
            else:
                val = {"intValue": str(int(v))}
            fields.append((k, val))
        evs.append({"name": ev.name, "ns": msg.default_clock_snapshot.ns_from_origin,
                    "pid": int(env["vpid"] if "vpid" in env else env["pid"]), "procname": str(env["procname"]),
                    "tid": int(ev.packet.context_field["tid"]), "fields": fields,
                    "thread_name": (str(ev.packet.context_field["thread_name"])
                                    if "thread_name" in ev.packet.context_field else None)})
    return evs


def expected(evs):
    """Spans (begin/end pairs, NAME_begin/NAME_end, per thread, nested) and
    log records (every other event) the export should give."""
    spans, logs, stacks, last = [], [], {}, {}
    for e in evs:
        key = (e["pid"], e["tid"])
        st = stacks.setdefault(key, [])
        last[key] = e["ns"]
        n = e["name"]
        if n.endswith("_begin"):
            st.append({"name": n[:-6], "begin": e, "parent": st[-1] if st else None, "end": None})
            continue
        if n.endswith("_end") and any(s["name"] == n[:-4] for s in st):
            while st[-1]["name"] != n[:-4]:
                s = st.pop()
                s["end_ns"] = e["ns"]
                spans.append(s)
            s = st.pop()
            s["end"], s["end_ns"] = e, e["ns"]
            spans.append(s)
            continue
        logs.append({"ev": e, "span": st[-1] if st else None})
    for key, st in stacks.items():
        while st:
            s = st.pop()
            s["end_ns"] = last[key]
            spans.append(s)
    return spans, logs


def mix(h, v):
    """export_otlp.c's mix(): one step of its 64-bit id hash chain."""
    m = (1 << 64) - 1
    z = h ^ ((v + 0x9e3779b97f4a7c15 + ((h << 6) & m) + (h >> 2)) & m)
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & m
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & m
    return z ^ (z >> 31)


def hex_id(value, nbytes, what):
    check(isinstance(value, str) and len(value) == 2 * nbytes and HEX.match(value) and value != "0" * 2 * nbytes,
          "%s %r is not %d bytes of lowercase hex (not all zero)" % (what, value, nbytes))
    return value


def strict_parse(line, kind):
    """Parse one line strictly with the opentelemetry-proto schema.  OTLP/JSON
    writes trace and span ids as hex where the protobuf JSON mapping has
    base64: the spec's one exception, undone here before parsing."""
    trace_pb2, logs_pb2, json_format = schemas()
    doc = json.loads(line)
    copy = json.loads(line)
    if kind == "traces":
        for rs in copy["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if k in sp:
                            sp[k] = base64.b64encode(bytes.fromhex(hex_id(sp[k], 16 if k == "traceId" else 8, k))).decode()
        msg = trace_pb2.ExportTraceServiceRequest()
    else:
        for rl in copy["resourceLogs"]:
            for sl in rl["scopeLogs"]:
                for lr in sl["logRecords"]:
                    for k in ("traceId", "spanId"):
                        if k in lr:
                            lr[k] = base64.b64encode(bytes.fromhex(hex_id(lr[k], 16 if k == "traceId" else 8, k))).decode()
        msg = logs_pb2.ExportLogsServiceRequest()
    try:
        json_format.ParseDict(copy, msg, ignore_unknown_fields=False)
    except json_format.ParseError as e:
        check(False, "line does not parse as %s: %s: %s" % (kind, e, line[:300]))
    return doc


def read_jsonl(path):
    """(spans, logs) of an OTLP/JSON lines file: each span/log dict gets
    "_resource" (its resource attributes as a dict) and "_line"."""
    spans, logs, nline = [], [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            nline += 1
            check(line.endswith("\n") and "\n" not in line[:-1], "line %d is not one JSON line" % nline)
            spans_l, logs_l = parse_request(line)
            spans += spans_l
            logs += logs_l
    return spans, logs, nline


def parse_request(body, kind=None):
    doc = json.loads(body)
    if kind is None:
        kind = "traces" if "resourceSpans" in doc else "logs"
    check(set(doc) == {"resourceSpans" if kind == "traces" else "resourceLogs"}, "unexpected keys %s" % sorted(doc))
    doc = strict_parse(body, kind)
    out = []
    for r in doc.get("resourceSpans" if kind == "traces" else "resourceLogs", []):
        res = attrs(r["resource"]["attributes"])
        n = 0
        for s in r["scopeSpans" if kind == "traces" else "scopeLogs"]:
            check(s["scope"]["name"] == "mark", "scope name %r" % s["scope"])
            for item in s["spans" if kind == "traces" else "logRecords"]:
                item["_resource"] = res
                out.append(item)
                n += 1
        check(0 < n <= BATCH, "%d items in one request (at most %d)" % (n, BATCH))
    return (out, []) if kind == "traces" else ([], out)


def attrs(kvs):
    d = {}
    for kv in kvs:
        check(kv["key"] not in d, "attribute %r twice" % kv["key"])
        d[kv["key"]] = kv["value"]
    return d


def compare(spans, logs, evs):
    """The export's spans and logs against the trace's events."""
    want_spans, want_logs = expected(evs)
    check(len(spans) == len(want_spans), "%d spans, expected %d (pairs)" % (len(spans), len(want_spans)))
    check(len(logs) == len(want_logs), "%d log records, expected %d (other events)" % (len(logs), len(want_logs)))
    check(len(evs) > 0 and evs[0]["ns"] > 1500000000 * 10 ** 9, "trace times are not Unix times")

    def res_ok(got, e, what):
        check(got.get("service.name") == {"stringValue": e["procname"]} and
              got.get("process.pid") == {"intValue": str(e["pid"])},
              "%s: resource %s, expected service.name %r process.pid %d" % (what, got, e["procname"], e["pid"]))

    # spans: by (pid, tid, start, name); ids unique; parents and traces right
    by_key = {}
    for s in spans:
        k = (s["_resource"]["process.pid"]["intValue"], attrs(s["attributes"]).get("thread.id", {}).get("intValue"),
             s["startTimeUnixNano"], s["name"])
        check(k not in by_key, "two spans %s" % (k,))
        by_key[k] = s
    ids = [hex_id(s["spanId"], 8, "spanId") for s in spans]
    check(len(set(ids)) == len(ids), "span ids are not unique")
    got_of = {}
    for w in want_spans:
        b = w["begin"]
        k = (str(b["pid"]), str(b["tid"]), str(b["ns"]), w["name"])
        s = by_key.get(k)
        if not check(s is not None, "no span %s" % (k,)) and s is None:
            continue
        got_of[id(w)] = s
        what = "span %s" % (k,)
        check(s["endTimeUnixNano"] == str(w["end_ns"]), "%s: end %s, expected %d" % (what, s["endTimeUnixNano"], w["end_ns"]))
        check(s["kind"] == 1, "%s: kind %r, expected 1 (SPAN_KIND_INTERNAL, an integer)" % (what, s.get("kind")))
        res_ok(s["_resource"], b, what)
        a = attrs(s["attributes"])
        for name, val in b["fields"]:
            check(a.get(name) == val, "%s: attribute %s = %s, expected %s" % (what, name, a.get(name), val))
        check(("mark.end_missing" in a) == (w["end"] is None), "%s: mark.end_missing %s" % (what, a.get("mark.end_missing")))
        if w["end"] is not None and w["end"]["fields"]:
            evl = s.get("events", [])
            check(len(evl) == 1 and evl[0]["name"] == w["end"]["name"] and
                  evl[0]["timeUnixNano"] == str(w["end_ns"]) and
                  attrs(evl[0]["attributes"]) == dict(w["end"]["fields"]),
                  "%s: end event %s, expected %s" % (what, evl, w["end"]["fields"]))
    for w in want_spans:
        s = got_of.get(id(w))
        if s is None:
            continue
        p = w["parent"]
        if p is None:
            check("parentSpanId" not in s, "root span %s has a parent" % s["name"])
        else:
            ps = got_of.get(id(p))
            check(ps is not None and s.get("parentSpanId") == ps["spanId"] and s["traceId"] == ps["traceId"],
                  "span %s: parent %s, expected %s" % (s["name"], s.get("parentSpanId"), ps and ps["spanId"]))
    roots = [got_of[id(w)]["traceId"] for w in want_spans if w["parent"] is None and id(w) in got_of]
    check(len(set(roots)) == len(roots), "root spans share trace ids")
    for t in roots:
        hex_id(t, 16, "traceId")
    # A root span's trace id is derived from its span id (export_otlp.c:
    # mix(span, 1), mix(span, 2) | 1): both written by the export's own hex
    # encoder, so a digit misplaced there shows as a mismatch here.
    for w in want_spans:
        s = got_of.get(id(w))
        if w["parent"] is None and s is not None:
            sid = int(s["spanId"], 16)
            want = "%016x%016x" % (mix(sid, 1), mix(sid, 2) | 1)
            check(s["traceId"] == want, "root span %s: traceId %s, expected %s from its spanId %s" %
                  (s["name"], s["traceId"], want, s["spanId"]))

    # log records, in the trace's order per thread
    per_thread = {}
    for lr in logs:
        k = (lr["_resource"]["process.pid"]["intValue"], attrs(lr["attributes"]).get("thread.id", {}).get("intValue"))
        per_thread.setdefault(k, []).append(lr)
    want_thread = {}
    for w in want_logs:
        want_thread.setdefault((str(w["ev"]["pid"]), str(w["ev"]["tid"])), []).append(w)
    check(sorted(per_thread) == sorted(want_thread), "log threads %s, expected %s" % (sorted(per_thread), sorted(want_thread)))
    for k, ws in want_thread.items():
        got = per_thread.get(k, [])
        for lr, w in zip(got, ws):
            e = w["ev"]
            what = "log %s %s at %d" % (k, e["name"], e["ns"])
            res_ok(lr["_resource"], e, what)
            check(lr["timeUnixNano"] == str(e["ns"]), "%s: time %s" % (what, lr["timeUnixNano"]))
            check(lr["body"] == {"stringValue": e["name"]}, "%s: body %s" % (what, lr["body"]))
            a = attrs(lr["attributes"])
            a.pop("thread.id", None)
            tn = a.pop("thread.name", None)
            check(tn == ({"stringValue": e["thread_name"]} if e["thread_name"] else None),
                  "%s: thread.name %s, the trace says %r" % (what, tn, e["thread_name"]))
            check(a == dict(e["fields"]), "%s: attributes %s, expected %s" % (what, a, dict(e["fields"])))
            sp = w["span"]
            if sp is None:
                check("spanId" not in lr and "traceId" not in lr, "%s: in a span, expected none" % what)
            else:
                s = got_of.get(id(sp))
                check(s is not None and lr.get("spanId") == s["spanId"] and lr.get("traceId") == s["traceId"],
                      "%s: span %s, expected %s" % (what, lr.get("spanId"), s and s["spanId"]))


def export(mark, trace, out, *extra):
    r = run([mark, "export", "--format", "otlp", "-o", out, trace] + list(extra), timeout=600)
    check(r.returncode == 0, "export exit %d: %s" % (r.returncode, r.stderr[-600:]))
    return r


def case_file(mark, target, workdir):
    """Threads: spans = pairs, logs = the other events, values and times exact;
    re-exporting gives the same bytes (ids are deterministic)."""
    schemas()
    trace = record(mark, target, workdir, "threads", str(ROUNDS))
    evs = ctf_events(trace)
    out = os.path.join(workdir, "threads.jsonl")
    export(mark, trace, out)
    spans, logs, nlines = read_jsonl(out)
    check(nlines >= 4, "only %d lines: batches of %d expected" % (nlines, BATCH))
    compare(spans, logs, evs)
    again = os.path.join(workdir, "again.jsonl")
    export(mark, trace, again)
    check(open(out, "rb").read() == open(again, "rb").read(), "a second export differs: ids are not deterministic")
    # the libbabeltrace2 path gives the same lines as mark's native reader
    r = run([mark, "export", "--format", "otlp", "-o", os.path.join(workdir, "bt2.jsonl"), trace],
            env=dict(os.environ, MARK_READER="bt2"), timeout=600)
    check(r.returncode == 0, "bt2 export: %s" % r.stderr[-300:])
    check(open(out, "rb").read() == open(os.path.join(workdir, "bt2.jsonl"), "rb").read(),
          "MARK_READER=bt2 gives other lines than the native reader")


def case_names(mark, target, workdir):
    """thread.name: the name each thread gave itself, as the trace records it."""
    schemas()
    names_target = os.path.join(os.path.dirname(target), "names_target")
    trace = fresh(workdir, "names")
    r = run([mark, "record", "-q", "-o", trace, "--", names_target, "run"], timeout=600)
    check(r.returncode == 0, "record names: exit %d: %s" % (r.returncode, r.stderr[-400:]))
    evs = ctf_events(trace)
    out = os.path.join(workdir, "names.jsonl")
    export(mark, trace, out)
    spans, logs, _ = read_jsonl(out)
    compare(spans, logs, evs)   # every log record's thread.name is its packet's thread_name
    last = {}
    for lr in logs:
        a = attrs(lr["attributes"])
        last[a["thread.id"]["intValue"]] = a.get("thread.name", {}).get("stringValue")
    want = sorted(["names_target", "worker-0", "worker-1", "late", "?[31mred?"])
    check(sorted(last.values()) == want, "thread names %r, want %r" % (sorted(last.values()), want))


def case_fork(mark, target, workdir):
    """Two processes (a forked child's trace in pid-CHILD/): each its resource."""
    schemas()
    skip_forked_child_under_tsan(target)
    trace = record(mark, target, workdir, "fork", "40", "fork")
    evs = ctf_events(trace)
    check(len({e["pid"] for e in evs}) == 2, "the trace has %d processes, expected 2" % len({e["pid"] for e in evs}))
    out = os.path.join(workdir, "fork.jsonl")
    export(mark, trace, out)
    spans, logs, _ = read_jsonl(out)
    compare(spans, logs, evs)


def case_lossy(mark, target, workdir):
    """A hand-made CTF trace (make_ctf.py, read through libbabeltrace2) with
    lost events, a begin never ended and strings with every escape form."""
    schemas()
    need_babeltrace2()
    trace = fixture(workdir)
    evs = ctf_events(trace)
    out = os.path.join(workdir, "lossy.jsonl")
    r = export(mark, trace, out)
    check(re.search(r"\(\d+ ended by the export\).*\((\d+) events lost", r.stderr) is not None and
          not re.search(r"\(0 events lost", r.stderr), "the summary does not count the lost events: %s" % r.stderr)
    spans, logs, _ = read_jsonl(out)
    compare(spans, logs, evs)
    check(any("mark.end_missing" in attrs(s["attributes"]) for s in spans), "no span ended by the export")
    # test_pairs.py's trace of exact times: one pair spans 3 lost events
    from test_pairs import b, e, write_trace
    trace = fresh(workdir, "lost")
    write_trace(trace, [
        (101, [(0, [b(1000), e(2000), b(3000), e(5000), b(6000), e(10000), b(20000)]),
               (3, [e(30000), b(31000), e(32000)])]),
        (102, [(0, [b(1500), b(1600), e(2100), e(9500), e(9600)])]),
    ])
    out = os.path.join(workdir, "lost.jsonl")
    export(mark, trace, out)
    spans, logs, _ = read_jsonl(out)
    compare(spans, logs, ctf_events(trace))
    lossy = [s for s in spans if attrs(s["attributes"]).get("mark.spans_lost_events") == {"boolValue": True}]
    check(len(lossy) == 1 and int(lossy[0]["endTimeUnixNano"]) - int(lossy[0]["startTimeUnixNano"]) == 10000,
          "spans marked as spanning lost events: %s, expected the one of 10000 ns" % lossy)


class Receiver(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP receiver: records every request; `fail` holds the status
    codes to answer the next requests with (then 200)."""

    def __init__(self, fail=(), always=None):
        self.requests = []
        self.fail = list(fail)
        self.always = always
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        s = self.server
        with s.lock:
            status = s.always or (s.fail.pop(0) if s.fail else 200)
            s.requests.append((self.path, dict(self.headers), body, status, time.monotonic()))
        reply = b"{}" if status == 200 else b"busy"
        self.send_response(status)
        if status == 503:
            self.send_header("Retry-After", "1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def serve(recv):
    t = threading.Thread(target=recv.serve_forever, daemon=True)
    t.start()
    return "http://127.0.0.1:%d" % recv.server_address[1]


def case_post(mark, target, workdir):
    """--endpoint: every request well formed, one 503 retried (after its
    Retry-After), the totals those of the file export."""
    schemas()
    trace = record(mark, target, workdir, "post", str(ROUNDS))
    evs = ctf_events(trace)
    recv = Receiver(fail=[503])
    url = serve(recv)
    r = run([mark, "export", "--format", "otlp", "--endpoint", url, trace], timeout=600)
    recv.shutdown()
    check(r.returncode == 0, "export --endpoint exit %d: %s" % (r.returncode, r.stderr[-600:]))
    spans, logs = [], []
    reqs = recv.requests
    check(len(reqs) >= 3, "%d requests" % len(reqs))
    for i, (path, headers, body, status, when) in enumerate(reqs):
        check(path in ("/v1/traces", "/v1/logs"), "request to %r" % path)
        check(headers.get("Content-Type") == "application/json", "Content-Type %r" % headers.get("Content-Type"))
        check(headers.get("Host", "").startswith("127.0.0.1:"), "Host %r" % headers.get("Host"))
        if status != 200:
            nxt = reqs[i + 1] if i + 1 < len(reqs) else None
            check(nxt is not None and nxt[2] == body and nxt[0] == path, "the failed request was not sent again")
            check(nxt is not None and nxt[4] - when >= 0.9, "the retry came before Retry-After: 1")
            continue
        s, l = parse_request(body.decode("utf-8"), "traces" if path == "/v1/traces" else "logs")
        spans += s
        logs += l
    check(sum(1 for q in reqs if q[3] == 503) == 1, "the one 503 was not seen")
    compare(spans, logs, evs)
    out = os.path.join(workdir, "post.jsonl")
    export(mark, trace, out)
    fs, fl, _ = read_jsonl(out)
    check((len(fs), len(fl)) == (len(spans), len(logs)), "POST sent %d spans %d logs, the file has %d %d" %
          (len(spans), len(logs), len(fs), len(fl)))


def case_post_fail(mark, target, workdir):
    """A receiver that always answers 503, one that refuses connections, and an
    https:// URL: a clear error naming the endpoint, a non-zero exit, in
    bounded time."""
    trace = record(mark, target, workdir, "fail", "5")
    recv = Receiver(always=503)
    url = serve(recv)
    t0 = time.monotonic()
    r = run([mark, "export", "--format", "otlp", "--endpoint", url, trace], timeout=300)
    took = time.monotonic() - t0
    recv.shutdown()
    check(r.returncode == 1, "always-503 endpoint: exit %d, expected 1" % r.returncode)
    check(url in r.stderr and "503" in r.stderr, "the error names neither the endpoint nor the status: %s" % r.stderr)
    check(2 <= len(recv.requests) <= 10, "%d attempts (bounded retries expected)" % len(recv.requests))
    check(took < 120, "gave up after %.0f s" % took)
    # a status that retrying cannot fix: one attempt, its status and body in the message
    recv = Receiver(always=400)
    url = serve(recv)
    r = run([mark, "export", "--format", "otlp", "--endpoint", url + "/", trace], timeout=300)
    recv.shutdown()
    check(r.returncode == 1 and len(recv.requests) == 1 and "400" in r.stderr and "busy" in r.stderr,
          "400: exit %d after %d requests: %s" % (r.returncode, len(recv.requests), r.stderr))
    check(all(q[0] in ("/v1/traces", "/v1/logs") for q in recv.requests),
          "URL/ posted to %s" % [q[0] for q in recv.requests])
    # a port nobody listens on
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    dead = "http://127.0.0.1:%d" % port
    # --timeout 1: a refused connection is retried with the backoff (0.5, 1,
    # 2 s, ...) until the attempts' time (4 x --timeout) is spent, 15.5 s with
    # the default 30 s; the refusal itself comes at once on loopback
    t0 = time.monotonic()
    r = run([mark, "export", "--format", "otlp", "--endpoint", dead, "--timeout", "1", trace], timeout=300)
    took = time.monotonic() - t0
    check(r.returncode == 1 and dead in r.stderr and "refused" in r.stderr.lower(),
          "refused endpoint: exit %d: %s" % (r.returncode, r.stderr))
    check(re.search(r"gave up after [2-6] attempts", r.stderr) is not None,
          "refused endpoint: not retried, or retried without bound: %s" % r.stderr)
    check(took < 4 + SLACK_S, "refused endpoint with --timeout 1: gave up after %.0f s, the limit is 4 s" % took)
    r = run([mark, "export", "--format", "otlp", "--endpoint", "https://127.0.0.1:4318", trace])
    check(r.returncode == 2 and "https" in r.stderr and "Collector" in r.stderr,
          "https: exit %d: %s" % (r.returncode, r.stderr))
    r = run([mark, "export", "--format", "otlp", "--endpoint", "http://[oops", trace])
    check(r.returncode == 2 and "endpoint" in r.stderr, "bad URL: exit %d: %s" % (r.returncode, r.stderr))


class Dripper:
    """A hostile endpoint (the review's slow_server.py): it takes the POST, then
    answers one byte every `every` seconds and never ends the headers.  Each
    byte comes well inside any per-read timeout, so only a deadline for the
    whole attempt stops it.  A raw socket server: no HTTP library involved."""

    def __init__(self, every=1.0):
        self.every = every
        self.conns = []                 # monotonic time of each connection
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.stop = threading.Event()
        threading.Thread(target=self.accept, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]

    def accept(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            self.conns.append(time.monotonic())
            threading.Thread(target=self.drip, args=(c,), daemon=True).start()

    def drip(self, c):
        c.settimeout(0.3)
        try:
            while c.recv(1 << 20):      # the request (small: one short batch)
                pass
        except OSError:
            pass
        answer = b"HTTP/1.1 200 OK\r\nX-Pad: "
        i = 0
        try:
            while not self.stop.is_set():
                c.sendall(answer[i:i + 1] or b"a")
                i += 1
                time.sleep(self.every)
        except OSError:
            pass                        # mark closed the connection
        finally:
            c.close()

    def close(self):
        self.stop.set()
        self.sock.close()


# export_otlp.c's limits with --timeout 2 (30 s by default, to keep the
# test short): an attempt ends HTTP_ATTEMPT_S after it starts; a batch is
# given up HTTP_TOTAL_S (4 attempts' time) after its first attempt started.
# 2 s, not 1: the attempts then stand apart from the backoff between them
# (0.5, 1, 2 s), which is how an attempt ended by its deadline is told from
# one that ended early.
HTTP_ATTEMPT_S = 2
HTTP_TOTAL_S = 4 * HTTP_ATTEMPT_S
# What may come on top of the limits: Python and mark starting on a loaded
# machine, under a sanitizer or qemu (the ASan build's resolve_stall gave up
# after 9 s of 8 with the load average at 50)
SLACK_S = 5


def case_post_stall(mark, target, workdir):
    """--endpoint against an endpoint that trickles its answer (F4 of a
    review): every attempt ends at its deadline, the batch is given up within
    the total limit, and the error names the endpoint, the time and the bytes
    that came.  Before the fix a byte every second kept the first attempt
    waiting for days (each read had its own 30 s timeout).  Needs neither
    babeltrace2 nor opentelemetry: the trace is not checked here."""
    trace = fresh(workdir, "stall")
    r = run([mark, "record", "-q", "--mode", "block", "-o", trace, "--", target, "5"], timeout=600)
    check(r.returncode == 0, "record: exit %d: %s" % (r.returncode, r.stderr[-400:]))
    srv = Dripper(every=0.5)            # several bytes in each attempt
    t0 = time.monotonic()
    limit = 3 * HTTP_TOTAL_S            # generous: the export must end well before
    try:
        r = run([mark, "export", "--format", "otlp", "--endpoint", srv.url, "--timeout", str(HTTP_ATTEMPT_S), trace],
                timeout=limit)
    except subprocess.TimeoutExpired:
        srv.close()
        check(False, "export --endpoint to a trickling endpoint still waiting after %d s (%d connections)" %
              (limit, len(srv.conns)))
        return
    took = time.monotonic() - t0
    srv.close()
    check(r.returncode == 1, "trickling endpoint: exit %d, expected 1: %s" % (r.returncode, r.stderr))
    check(HTTP_TOTAL_S - HTTP_ATTEMPT_S - 1 <= took <= HTTP_TOTAL_S + SLACK_S,
          "gave up after %.0f s, expected about %d s" % (took, HTTP_TOTAL_S))
    # every attempt ended at its own deadline, so there were several (2 s
    # each, with the backoff between them, in 8 s: 3, starting 2.5 and 3 s
    # apart; an attempt that ended early would start the next one 0.5 s later)
    gaps = [b - a for a, b in zip(srv.conns, srv.conns[1:])]
    check(3 <= len(srv.conns) <= 6 and all(HTTP_ATTEMPT_S - 1 <= g <= HTTP_ATTEMPT_S + 5 for g in gaps),
          "attempts at %s s, expected one every %d s or so" % ([round(c - t0) for c in srv.conns], HTTP_ATTEMPT_S))
    err = r.stderr
    print("gave up after %.0f s, %d connections; mark said: %s" % (took, len(srv.conns), err.strip()))
    check(srv.url in err, "the error does not name the endpoint: %s" % err)
    check(re.search(r"no complete answer in time: \d+ bytes? came in \d+ s", err) is not None,
          "the error does not say the answer did not come in time, nor how much came: %s" % err)
    check(re.search(r"gave up after \d attempts in \d+ s", err) is not None,
          "the error does not say how long it tried: %s" % err)
    check(err.count("\n") == 1, "one line of error expected: %r" % err)
    check("longer --timeout" in err, "the error does not name --timeout: %s" % err)
    # --timeout is checked
    for bad in ("0", "x", "-3", "3601"):
        b = run([mark, "export", "--format", "otlp", "--endpoint", srv.url, "--timeout", bad, trace], timeout=60)
        check(b.returncode == 2 and "--timeout" in b.stderr, "--timeout %s: exit %d: %s" % (bad, b.returncode,
                                                                                           b.stderr))
    b = run([mark, "export", "--timeout", "5", "-o", "-", trace], timeout=60)
    check(b.returncode == 2 and "--endpoint" in b.stderr, "--timeout without --endpoint: exit %d: %s" %
          (b.returncode, b.stderr))


RESOLVE_NAME = "collector.example.com"   # in no hosts file: the resolver is asked


def case_resolve_stall(mark, target, workdir):
    """--endpoint whose host name the resolver never answers (a review: the
    getaddrinfo() of each attempt waited as long as resolv.conf says, 150 s
    here, whatever --timeout said).  In a network and mount namespace of its
    own (root, unshare): loopback up, /etc/resolv.conf bound to one naming
    127.0.0.1, where a socket takes the queries and never answers.  The
    export must give up like any stalled attempt, within the total limit,
    and say the name was not resolved in time."""
    if os.geteuid() != 0:
        skip("needs root for a network and mount namespace of its own (unshare --net --mount)")
    trace = fresh(workdir, "resolve")
    r = run([mark, "record", "-q", "--mode", "block", "-o", trace, "--", target, "5"], timeout=600)
    check(r.returncode == 0, "record: exit %d: %s" % (r.returncode, r.stderr[-400:]))
    resolv = os.path.join(workdir, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("nameserver 127.0.0.1\noptions timeout:30 attempts:5\n")
    t0 = time.monotonic()
    limit = 3 * HTTP_TOTAL_S
    try:
        r = run(["unshare", "--net", "--mount", sys.executable, os.path.abspath(__file__), "resolve_inner", mark,
                 trace, workdir], timeout=limit)
    except subprocess.TimeoutExpired:
        check(False, "export --endpoint http://%s still waiting for the resolver after %d s" % (RESOLVE_NAME, limit))
        return
    took = time.monotonic() - t0
    if r.returncode == 77:
        skip(r.stdout.strip())
    print("gave up after %.0f s; mark said: %s" % (took, r.stderr.strip()))
    check(r.returncode == 1, "unanswered resolver: exit %d, expected 1: %s %s" % (r.returncode, r.stdout, r.stderr))
    check(took <= HTTP_TOTAL_S + SLACK_S, "gave up after %.0f s, expected about %d s" % (took, HTTP_TOTAL_S))
    check(RESOLVE_NAME in r.stderr and "not resolved in time" in r.stderr,
          "the error does not say the name was not resolved in time: %s" % r.stderr)
    check("longer --timeout" in r.stderr, "the error does not name --timeout: %s" % r.stderr)


def case_resolve_inner(mark, trace, workdir):
    """Inside the namespaces of case_resolve_stall (argv: MARK TRACE WORKDIR,
    which holds the resolv.conf to use)."""
    import fcntl
    resolv = os.path.join(workdir, "resolv.conf")
    import struct
    # loopback up (SIOCGIFFLAGS / SIOCSIFFLAGS | IFF_UP), without iproute2
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ifreq = struct.pack("16sH14x", b"lo", 0)
    flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifreq))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
    s.close()
    m = subprocess.run(["mount", "--bind", resolv, "/etc/resolv.conf"], capture_output=True, text=True)
    if m.returncode != 0:
        print("cannot bind a resolv.conf over /etc/resolv.conf: %s" % m.stderr.strip())
        sys.exit(77)
    # A name server that takes every query and answers none (UDP; TCP too,
    # should the resolver switch: it connects, and nothing comes).
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 53))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 53))
    tcp.listen(64)
    r = subprocess.run([mark, "export", "--format", "otlp", "--endpoint", "http://%s:4318" % RESOLVE_NAME,
                        "--timeout", str(HTTP_ATTEMPT_S), trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    sys.exit(r.returncode)

if __name__ == "__main__":
    main(globals())

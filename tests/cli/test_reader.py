#!/usr/bin/python3
"""The native trace reader (cli/trace_native.c) against libbabeltrace2.

    test_reader.py CASE MARK RECORD_TARGET TRACER_PROG WORKDIR

compare  Real traces made by the tracer (block, lossy discard, overwrite
         flight recorder, SIGKILL then recovery, a forked child's sub-trace,
         every argument type, strings from several threads; copies with
         every timestamp equal, so that only the muxer's tie-breaking orders
         them) read by
         `mark view` (plain, -r, -u -e), `mark stats` and `mark export` twice: with the
         native reader forced (MARK_READER=native) and with libbabeltrace2
         forced (MARK_READER=bt2).  Every byte of stdout and stderr and the
         exit status must be equal: each event's time, cpu, process, thread,
         name, fields and values, and each lost-events line.
hostile  Truncated and corrupt stream files (cut in a packet, bad magic, a
         packet size beyond the file, an unknown event id, a string without
         its NUL, time going backwards): an error naming the file and the
         offset, exit status 1, the events before the damage printed, never
         a crash.  A corrupt metadata file is left to libbabeltrace2.
progress `--progress` shows events read, % of bytes and ETA on stderr; only
         on a terminal without it.
forced   MARK_READER=native on a trace mark did not write (tests/cli/make_ctf.py)
         is refused with a message; without it, babeltrace2 reads it.
threads  The native reader on two threads (one reads and merges, the caller
         runs the callbacks: the default with two CPUs or more) against one
         (MARK_READER_THREADS=1): every byte of stdout and stderr and the exit
         status equal for view, stats and export on traces of many small
         packets (the packet buffers are recycled while batches are in
         flight), with losses, of several processes, damaged (the events
         before the damage, then the error) and written to a full disk (the
         callbacks stop the reading), also with the reading thread writing
         the arguments' text of every batch ahead (MARK_READER_TEXT_AHEAD=
         always, and with it the --filter), for view, Chrome JSON and OTLP.  The reading thread exists with two and
         not with one, nor by default when the process may use one CPU only.
"""
import itertools
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("CHECK failed: " + what, file=sys.stderr)
    return cond


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(77)


def run(args, env=None, stdout=None, **kw):
    """args with env added to a clean environment; stdout and stderr
    captured, or stdout written to the file named `stdout`."""
    e = dict(os.environ)
    for k in ("MARK_TRACE", "MARK_ENABLE", "MARK_MODE", "MARK_BUFFER", "MARK_READER", "MARK_READER_THREADS",
              "MARK_READER_TEXT_AHEAD"):
        e.pop(k, None)
    e.update(env or {})
    if stdout is None:
        return subprocess.run(args, env=e, capture_output=True, timeout=300, **kw)
    with open(stdout, "wb") as out:
        return subprocess.run(args, env=e, stdout=out, stderr=subprocess.PIPE, timeout=300, **kw)


def fresh(workdir, name):
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    return d


def record(mark, workdir, name, cmd, mode="block", buf=None):
    d = fresh(workdir, name)
    args = [mark, "record", "-q", "-o", d, "--mode", mode] + (["--buffer", buf] if buf else []) + ["--"] + cmd
    r = run(args)
    return d, r


def both(mark, args):
    n = run([mark] + args, {"MARK_READER": "native"})
    b = run([mark] + args, {"MARK_READER": "bt2"})
    return n, b


def compare(x, y, label, xname, yname):
    """x and y (finished runs) gave the same exit status, stderr and stdout
    bytes; True if so, else each difference is a failed check."""
    ok = check(x.returncode == y.returncode, "%s: exit %d %s, %d %s: %r" %
               (label, x.returncode, xname, y.returncode, yname, x.stderr[-400:]))
    ok = check(x.stderr == y.stderr, "%s: stderr differs:\n%s: %r\n%s: %r" %
               (label, xname, x.stderr[-400:], yname, y.stderr[-400:])) and ok
    if x.stdout != y.stdout:
        xl, yl = (x.stdout or b"").splitlines(), (y.stdout or b"").splitlines()
        i = next((i for i in range(min(len(xl), len(yl))) if xl[i] != yl[i]), min(len(xl), len(yl)))
        check(False, "%s: stdout differs at line %d (%d vs %d lines):\n%s: %r\n%s: %r" %
              (label, i + 1, len(xl), len(yl), xname, xl[i] if i < len(xl) else None,
               yname, yl[i] if i < len(yl) else None))
        ok = False
    return ok


def same(mark, args, label):
    n, b = both(mark, args)
    return compare(n, b, label, "native", "babeltrace2"), n


def case_compare(mark, target, prog, workdir):
    traces = []
    d, r = record(mark, workdir, "block", [target, "exit", "0"])
    traces.append(("block", d))
    d, r = record(mark, workdir, "lossy", [target, "exit", "0"], mode="discard", buf="4k")
    traces.append(("lossy", d))
    d, r = record(mark, workdir, "overwrite", [target, "exit", "0"], mode="overwrite", buf="4k")
    traces.append(("overwrite", d))
    d, r = record(mark, workdir, "kill", [target, "kill"])
    check(r.returncode == 137, "kill: record exit %d" % r.returncode)
    traces.append(("kill", d))
    d, r = record(mark, workdir, "fork", [target, "fork"])
    traces.append(("fork", d))
    d, r = record(mark, workdir, "types", [prog, "types", "300"])
    traces.append(("types", d))
    d, r = record(mark, workdir, "values", [prog, "values", "50"])
    traces.append(("values", d))
    d, r = record(mark, workdir, "strings", [prog, "strings", "500", "3"], mode="discard", buf="16k")
    traces.append(("strings", d))
    d, r = record(mark, workdir, "threads-ow", [prog, "threads", "3000", "4"], mode="overwrite", buf="4k")
    traces.append(("threads-ow", d))
    # SIGKILL with overwrite buffers: recovery writes the rings' newest events
    d = fresh(workdir, "kill-ow")
    p = subprocess.Popen([mark, "record", "-q", "-o", d, "--mode", "overwrite", "--buffer", "4k", "--",
                          prog, "killseq", "20000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.stdout.readline().strip() == b"ready", "killseq did not get ready")
    kids = run(["pgrep", "-P", str(p.pid)]).stdout.split()
    for k in kids:
        os.kill(int(k), signal.SIGKILL)
    p.wait(timeout=60)
    traces.append(("kill-ow", d))

    # Every timestamp equal: the order is then only the tie-breaking of
    # babeltrace2's muxer (stream, then trace), which the native reader
    # must reproduce.
    for label in ("fork", "lossy", "strings"):
        src = dict(traces)[label]
        d = fresh(workdir, label + "-ties")
        shutil.copytree(src, d)
        flatten_time(d)
        traces.append((label + "-ties", d))
    # The same with a hostname per process, in the reverse order of their
    # UUIDs: babeltrace2's muxer compares trace UUIDs before trace names
    # (plugins/common/muxing, 2.0), so the hostnames must not decide
    # (found by a review: the native reader compared hostnames first).
    d = fresh(workdir, "fork-hosts")
    shutil.copytree(dict(traces)["fork-ties"], d)
    metas = []
    for root, dirs, files in os.walk(d):
        if "metadata" in files:
            m = os.path.join(root, "metadata")
            text = open(m, "rb").read()
            metas.append((re.search(rb'\tuuid = "([0-9a-f-]+)"', text).group(1), m, text))
    check(len(metas) >= 2, "fork-hosts: want two traces or more, have %d" % len(metas))
    for i, (u, m, text) in enumerate(sorted(metas, reverse=True)):
        new = re.sub(rb'\thostname = "[^"]*";', b'\thostname = "host-%d";' % i, text, count=1)
        check(new != text, "fork-hosts: no hostname in %s" % m)
        open(m, "wb").write(new)
    traces.append(("fork-hosts", d))

    seen_loss = seen_string = seen_char = seen_procs = False
    for label, d in traces:
        ok, n = same(mark, ["view", d], label + " view")
        same(mark, ["view", "-r", d], label + " view -r")
        same(mark, ["view", "-u", "-e", "*req*", "-e", "t_s*", d], label + " view -u -e")
        same(mark, ["stats", d], label + " stats")
        same(mark, ["export", "-o", "-", d], label + " export")
        out = n.stdout.decode(errors="replace")
        check(n.returncode == 0 and out, "%s: native view failed: %r" % (label, n.stderr[-300:]))
        seen_loss |= "# lost" in out
        seen_string |= re.search(r'="[^"]', out) is not None
        seen_char |= re.search(r"='.'", out) is not None
        seen_procs |= " pid " in out
    check(seen_loss, "no trace had lost events: the loss lines were not compared")
    check(seen_string and seen_char, "strings (%s) or %%c (%s) not compared" % (seen_string, seen_char))
    check(seen_procs, "no multi-process trace compared")


def flatten_time(d):
    """Set every timestamp of every packet and event under d to 1000 (the
    record size the tracer keeps in bytes 10-11 of each event finds them)."""
    for root, dirs, files in os.walk(d):
        for f in files:
            if not f.startswith("stream-"):
                continue
            p = os.path.join(root, f)
            data = bytearray(open(p, "rb").read())
            for off, content, size in packets(p):
                struct.pack_into("<QQ", data, off + 32, 1000, 1000)
                pos = PKT
                while pos + 16 <= content:
                    struct.pack_into("<Q", data, off + pos, 1000)
                    pos += (struct.unpack_from("<H", data, off + pos + 10)[0] + 7) & ~7
            open(p, "wb").write(data)


# ---------------------------------------------------------------- hostile

# Bytes before a packet's first event: struct mark_tf_packet (with the
# thread_name of src/tracer/trace_format.h).
PKT = 104


def packets(path):
    """(offset, content bytes, packet bytes) of each packet of a stream file."""
    out = []
    data = open(path, "rb").read()
    off = 0
    while off + PKT <= len(data):
        content, size = struct.unpack_from("<QQ", data, off + 48)
        out.append((off, content // 8, size // 8))
        off += size // 8
    return out


def biggest_stream(d):
    best = None
    for root, dirs, files in os.walk(d):
        for f in files:
            if f.startswith("stream-"):
                p = os.path.join(root, f)
                if best is None or os.path.getsize(p) > os.path.getsize(best):
                    best = p
    return best


def case_hostile(mark, target, prog, workdir):
    base, r = record(mark, workdir, "base", [prog, "strings", "400", "1"], buf="16k")
    check(r.returncode == 0, "record failed: %r" % r.stderr[-300:])

    def damaged(name, edit):
        d = fresh(workdir, name)
        shutil.copytree(base, d)
        s = biggest_stream(d)
        pk = packets(s)
        check(len(pk) >= 2, "%s: want two packets or more, have %d" % (name, len(pk)))
        with open(s, "r+b") as f:
            where = edit(f, pk)
        return d, os.path.basename(s), where

    def second_event(f, pk):
        return pk[1][0] + PKT

    cases = [
        ("cut", lambda f, pk: (f.truncate(pk[1][0] + PKT + 12), pk[1][0])[1], "bad packet size"),
        ("magic", lambda f, pk: (f.seek(pk[1][0]), f.write(b"\0\0\0\0"), pk[1][0])[2], "bad packet magic"),
        ("size", lambda f, pk: (f.seek(pk[1][0] + 56), f.write(struct.pack("<Q", 1 << 60)), pk[1][0])[2],
         "bad packet size"),
        ("id", lambda f, pk: (f.seek(second_event(f, pk) + 8), f.write(struct.pack("<H", 0xfff0)),
                              second_event(f, pk))[2], "event id 65520 is not in the metadata"),
        # t_str "%d %ld %s %s": the first string's length byte is at +32
        ("nul", lambda f, pk: (f.seek(pk[1][0] + PKT + 16), f.write(b"\x07" * (pk[1][1] - PKT - 16)),
                               pk[1][0] + PKT + 32)[2], "runs past the packet's content"),
        ("backwards", lambda f, pk: (f.seek(second_event(f, pk)), f.write(struct.pack("<Q", 1)),
                                     second_event(f, pk))[2], "time goes backwards"),
    ]
    for name, edit, reason in cases:
        d, stream, where = damaged(name, edit)
        for cmd in ("view", "stats"):
            r = run([mark, cmd, d], {"MARK_READER": "native"})
            err = r.stderr.decode(errors="replace")
            check(r.returncode == 1, "%s %s: exit %d, want 1: %r" % (name, cmd, r.returncode, err[-300:]))
            check(stream in err and ("offset %d" % where) in err and reason in err,
                  "%s %s: the error does not name %s, offset %d and %r: %r" % (name, cmd, stream, where, reason, err))
        r = run([mark, "view", d], {"MARK_READER": "native"})
        check(name in ("magic", "size", "cut") or r.stdout.count(b"\n") >= 1,
              "%s: the events before the damage are not shown" % name)

    # metadata edited into something else: not read natively, babeltrace2 decides, no crash
    d = fresh(workdir, "meta")
    shutil.copytree(base, d)
    for root, dirs, files in os.walk(d):
        if "metadata" in files:
            m = os.path.join(root, "metadata")
            text = open(m, "rb").read().replace(b"align = 64; signed", b"align = 8; signed", 1)
            open(m, "wb").write(text)
    r = run([mark, "view", d])
    check(r.returncode in (0, 1), "edited metadata: exit %d" % r.returncode)
    r = run([mark, "view", d], {"MARK_READER": "native"})
    check(r.returncode == 1 and b"native reader" in r.stderr, "edited metadata read natively: %r" % r.stderr)
    # Comments that hold lines of mark's own layout (found by a review: the
    # native reader took the first "\tfreq = " it found, babeltrace2 skips
    # the comment, so the times differed): such a metadata is not mark's
    # exact text, so libbabeltrace2 reads it and both readers agree.
    def commented(text, before, comment):
        i = text.index(before)
        return text[:i] + comment + text[i:]
    def layout_in_comment(t):
        ctx = t[t.index(b"stream {\n"):t.index(b"\tevent.header := struct {\n") + 26]
        real = t.replace(b"} thread_name[16];", b"} thread_namf[16];", 1)
        return commented(real, b"stream {\n", b"/*\n" + ctx + b"*/\n")
    edits = [
        ("comment-clock", lambda t: commented(t, b"\tfreq = ", b"/*\n\tfreq = 1000;\n\toffset_s = 0;\n\toffset = 0;\n*/\n")),
        ("comment-line", lambda t: commented(t, b"\tfreq = ", b"//\tfreq = 1000;\n//\toffset_s = 7;\n")),
        # a comment holding the packet context mark reads (with thread
        # names) before a real one that differs (thread_namf)
        ("comment-layout", layout_in_comment),
    ]
    for name, edit in edits:
        d = fresh(workdir, name)
        shutil.copytree(base, d)
        for root, dirs, files in os.walk(d):
            if "metadata" in files:
                m = os.path.join(root, "metadata")
                old = open(m, "rb").read()
                new = edit(old)
                check(new != old, "%s: the edit did not apply" % name)
                open(m, "wb").write(new)
        dflt = run([mark, "view", d])
        bt2 = run([mark, "view", d], {"MARK_READER": "bt2"})
        compare(dflt, bt2, name + " view (default reader)", "default", "babeltrace2")
        check(dflt.returncode == 0 and dflt.stdout.count(b"\n") >= 400, "%s: view failed or short: %r" %
              (name, dflt.stderr[-300:]))
        for args in (["stats", d], ["export", "-o", "-", d]):
            compare(run([mark] + args), run([mark] + args, {"MARK_READER": "bt2"}), name + " " + args[0],
                    "default", "babeltrace2")
        r = run([mark, "view", d], {"MARK_READER": "native"})
        check(r.returncode == 1 and b"native reader" in r.stderr, "%s: read natively: %r" % (name, r.stderr[-300:]))
    # events_discarded going backwards (found by a review: both readers
    # reported a wrapped loss of ~2^64 events, and the totals wrapped)
    def discarded(name, values):
        d = fresh(workdir, name)
        shutil.copytree(base, d)
        s = biggest_stream(d)
        pk = packets(s)
        check(len(pk) >= len(values), "%s: want %d packets, have %d" % (name, len(values), len(pk)))
        with open(s, "r+b") as f:
            for (off, _, _), v in zip(pk, values + [values[-1]] * len(pk)):
                f.seek(off + 72)
                f.write(struct.pack("<Q", v))
        return d

    def lost_numbers(out):
        return [int(x) for x in re.findall(rb"# lost (\d+) events", out)]

    def other_data(out):
        m = re.search(rb'"lost_events": (\d+), "loss_reports_without_count": (\d+)', out)
        return (int(m.group(1)), int(m.group(2))) if m else None

    # 5, 8, 2, 4: the first packet's 5 and the drop to 2 have no count
    d = discarded("disc-down", [5, 8, 2, 4])
    ok, n = same(mark, ["view", d], "disc-down view")
    same(mark, ["stats", d], "disc-down stats")
    same(mark, ["export", "-o", "-", d], "disc-down export")
    check(lost_numbers(n.stdout) == [3, 2] and n.stdout.count(b"# lost events in stream") == 2,
          "disc-down: want losses of 3 and 2 and two without a count, got %r" %
          [l for l in n.stdout.splitlines() if l.startswith(b"# lost")])
    st = run([mark, "stats", d])
    check(b"400 events, 5 lost" in st.stdout, "disc-down stats: %r" % st.stdout[:200])
    x = run([mark, "export", "-o", "-", d])
    check(other_data(x.stdout) == (5, 2), "disc-down export otherData: %r" % (other_data(x.stdout),))
    # 0, 2^63-1, 2^64-2, 0: losses of 2^63-1, 2^63-1 and 2 (the counter
    # wrapped, as CTF allows and babeltrace2 counts): the total saturates
    big = (1 << 63) - 1
    d = discarded("disc-sum", [0, big, 2 * big, 0])
    ok, n = same(mark, ["view", d], "disc-sum view")
    same(mark, ["stats", d], "disc-sum stats")
    same(mark, ["export", "-o", "-", d], "disc-sum export")
    check(lost_numbers(n.stdout) == [big, big, 2], "disc-sum: losses %r" % lost_numbers(n.stdout))
    st = run([mark, "stats", d])
    check(b"400 events, 18446744073709551615 lost" in st.stdout, "disc-sum stats: %r" % st.stdout[:200])
    x = run([mark, "export", "-o", "-", d])
    check(other_data(x.stdout) == ((1 << 64) - 1, 0), "disc-sum export otherData: %r" % (other_data(x.stdout),))
    # random bytes over a stream file: an error or the events, never a signal
    d = fresh(workdir, "noise")
    shutil.copytree(base, d)
    s = biggest_stream(d)
    size = os.path.getsize(s)
    with open(s, "r+b") as f:
        for i, off in enumerate(range(200, size, 997)):
            f.seek(off)
            f.write(bytes([(i * 37 + 11) & 0xff]) * 3)
    for cmd in ("view", "stats"):
        r = run([mark, cmd, d], {"MARK_READER": "native"})
        check(r.returncode in (0, 1), "noise %s: exit %d (a crash?)" % (cmd, r.returncode))


def case_forced(mark, target, prog, workdir):
    d = fresh(workdir, "handmade")
    r = run([sys.executable, os.path.join(HERE, "make_ctf.py"), d])
    check(r.returncode == 0, "make_ctf.py failed: %r" % r.stderr)
    r = run([mark, "view", d], {"MARK_READER": "native"})
    check(r.returncode == 1 and b"not exactly the layout mark's tracer writes" in r.stderr,
          "MARK_READER=native on a foreign trace: %d %r" % (r.returncode, r.stderr))
    r = run([mark, "view", d])
    check(r.returncode == 0 and b"req_begin" in r.stdout, "a foreign trace goes to babeltrace2: %r" % r.stderr)


def case_progress(mark, target, prog, workdir):
    """--progress draws the reading progress on stderr even when it is not a
    terminal: events read, percentage of the stream bytes, ETA; the last state
    (100%) ends with a newline.  Without it, stderr stays empty (not a tty)."""
    d, r = record(mark, workdir, "progress", [prog, "threads", "20000", "2"])
    check(r.returncode == 0, "record failed: %r" % r.stderr[-300:])
    for args, threads in itertools.product((["stats", "--progress", d], ["view", "--progress", d],
                                            ["export", "--progress", "-o", "-", d]), ("1", "2")):
        # one thread delivers as it reads, two in batches: both keep the count
        r = run([mark] + args, {"MARK_READER_THREADS": threads})
        err = r.stderr.decode(errors="replace")
        check(r.returncode == 0, "%s: exit %d: %r" % (args[0], r.returncode, err[-300:]))
        check(re.search(r"mark: 40000 events read, 100% of [0-9.]+ [kMG]?B", err) is not None and err.endswith("\n"),
              "%s --progress, %s reader thread(s): no final progress line: %r" % (args[0], threads, err[-300:]))
        quiet = run([mark] + [a for a in args if a != "--progress"])
        check(b"events read" not in quiet.stderr, "%s: progress shown on a non-terminal: %r" % (args[0], quiet.stderr))
        check(quiet.stdout == r.stdout, "%s: --progress changed stdout" % args[0])


def threads_same(mark, args, label, stdout=None):
    """MARK_READER_THREADS=1 and 2 (native reader) give the same bytes, and
    so does 2 with the arguments' text of every batch written ahead by the
    reading thread (MARK_READER_TEXT_AHEAD=always; by default only while
    the callbacks are behind, which a small trace may never be)."""
    one, two, ahead = (run([mark] + args, dict({"MARK_READER": "native", "MARK_READER_THREADS": t}, **extra),
                           stdout=stdout)
                       for t, extra in (("1", {}), ("2", {}), ("2", {"MARK_READER_TEXT_AHEAD": "always"})))
    compare(one, two, label, "one thread", "two")
    compare(one, ahead, label, "one thread", "two, the text written ahead")
    return one


def reader_threads(mark, d, env, affinity=None):
    """Start `mark view d` into a pipe nobody reads, wait until it blocks, and
    return how many threads it has then (the reading thread, if any, waits
    for the caller, which waits for the pipe)."""
    e = dict(os.environ, **env)
    e.pop("MARK_READER", None)
    pre = (lambda: os.sched_setaffinity(0, affinity)) if affinity else None
    p = subprocess.Popen([mark, "view", d], env=e, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         preexec_fn=pre)
    try:
        seen = 0
        for _ in range(100):
            time.sleep(0.05)
            try:
                n = len(os.listdir("/proc/%d/task" % p.pid))
                with open("/proc/%d/stat" % p.pid) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                break
            seen = max(seen, n)
            if state == "S" and n == seen and _ >= 10:
                break   # blocked on the pipe for a while: settled
        return seen
    finally:
        p.kill()
        p.wait()


def case_threads(mark, target, prog, workdir):
    traces = []
    d, r = record(mark, workdir, "many", [prog, "threads", "30000", "4"], buf="4k")
    check(r.returncode == 0, "record failed: %r" % r.stderr[-300:])
    traces.append(("many", d))
    d, r = record(mark, workdir, "lossy", [prog, "strings", "3000", "3"], mode="discard", buf="4k")
    traces.append(("lossy", d))
    d, r = record(mark, workdir, "fork", [target, "fork"])
    traces.append(("fork", d))
    seen_loss = False
    for label, d in traces:
        out = threads_same(mark, ["view", d], label + " view")
        seen_loss |= b"# lost" in out.stdout
        check(out.returncode == 0 and out.stdout.count(b"\n") > 100 if label == "many" else True,
              "%s: view failed or short: %r" % (label, out.stderr[-300:]))
        threads_same(mark, ["view", "-r", "-e", "t_*", d], label + " view -r -e")
        # the reading thread evaluates --filter ahead, with the text
        threads_same(mark, ["view", "--filter", "i & 1 == 0", d], label + " view --filter")
        threads_same(mark, ["stats", d], label + " stats")
        threads_same(mark, ["export", "-o", "-", d], label + " export")
        threads_same(mark, ["export", "--format", "perfetto", "-o", "-", d], label + " export perfetto")
        threads_same(mark, ["export", "--format", "otlp", "-o", "-", d], label + " export otlp")
    check(seen_loss, "no trace with lost events was compared")
    # damaged: the events before the damage, then the same error
    base = dict(traces)["many"]
    s = biggest_stream(base)
    pk = packets(s)
    check(len(pk) > 50, "want many packets, have %d" % len(pk))
    for name, edit in (("magic", lambda f: (f.seek(pk[len(pk) // 2][0]), f.write(b"\0\0\0\0"))),
                       ("cut", lambda f: f.truncate(pk[len(pk) // 3][0] + PKT + 12))):
        d = fresh(workdir, "damaged-" + name)
        shutil.copytree(base, d)
        with open(os.path.join(d, os.path.relpath(s, base)), "r+b") as f:
            edit(f)
        out = threads_same(mark, ["view", d], "damaged " + name + " view")
        check(out.returncode == 1 and b"cannot read trace" in out.stderr and out.stdout.count(b"\n") > 1000,
              "damaged %s: want the events before the damage and the error: %d lines, %r" %
              (name, out.stdout.count(b"\n"), out.stderr[-200:]))
        threads_same(mark, ["stats", d], "damaged " + name + " stats")
    # the callbacks stop the reading: stdout cannot be written
    if os.path.exists("/dev/full"):
        out = threads_same(mark, ["view", base], "view > /dev/full", stdout="/dev/full")
        check(out.returncode == 1 and b"No space left on device" in out.stderr,
              "view > /dev/full: %d %r" % (out.returncode, out.stderr))
    # the reading thread: there with two, not with one
    if len(os.sched_getaffinity(0)) < 2:
        print("SKIP part: this process may use one CPU only: the thread counts were not checked")
        return
    two = reader_threads(mark, base, {"MARK_READER_THREADS": "2"})
    one = reader_threads(mark, base, {"MARK_READER_THREADS": "1"})
    default = reader_threads(mark, base, {})
    pinned = reader_threads(mark, base, {}, affinity={min(os.sched_getaffinity(0))})
    # (ThreadSanitizer starts a thread of its own once there are two;
    # qemu-user runs threads of its own beside the program's.)
    loose = os.environ.get("MARK_TEST_SANITIZER") or os.environ.get("MARK_TEST_EMULATOR")
    more = two > one if loose else one == 1 and two == one + 1
    check(more and default == two and pinned == one,
          "threads of a blocked `mark view`: %d with MARK_READER_THREADS=2, %d with 1 (want one more with 2), "
          "%d by default (want as with 2), %d on one CPU (want as with 1)" % (two, one, default, pinned))


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    case, mark, target, prog, workdir = sys.argv[1:]
    if not shutil.which("babeltrace2"):
        skip("babeltrace2 is not installed")
    os.makedirs(workdir, exist_ok=True)
    globals()["case_" + case](mark, target, prog, workdir)
    if FAILED:
        print("%d check(s) failed" % len(FAILED), file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

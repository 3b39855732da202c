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
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys

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


def run(args, env=None, **kw):
    e = dict(os.environ)
    for k in ("MARK_TRACE", "MARK_ENABLE", "MARK_MODE", "MARK_BUFFER", "MARK_READER"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run(args, env=e, capture_output=True, timeout=300, **kw)


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


def same(mark, args, label):
    n, b = both(mark, args)
    ok = check(n.returncode == b.returncode, "%s: exit %d native, %d babeltrace2: %r" %
               (label, n.returncode, b.returncode, n.stderr[-400:]))
    ok = check(n.stderr == b.stderr, "%s: stderr differs:\nnative: %r\nbt2:    %r" %
               (label, n.stderr[-400:], b.stderr[-400:])) and ok
    if n.stdout != b.stdout:
        nl, bl = n.stdout.splitlines(), b.stdout.splitlines()
        i = next((i for i in range(min(len(nl), len(bl))) if nl[i] != bl[i]), min(len(nl), len(bl)))
        check(False, "%s: stdout differs at line %d (%d vs %d lines):\nnative: %r\nbt2:    %r" %
              (label, i + 1, len(nl), len(bl), nl[i] if i < len(nl) else None, bl[i] if i < len(bl) else None))
        ok = False
    return ok, n


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
    for args in (["stats", "--progress", d], ["view", "--progress", d], ["export", "--progress", "-o", "-", d]):
        r = run([mark] + args)
        err = r.stderr.decode(errors="replace")
        check(r.returncode == 0, "%s: exit %d: %r" % (args[0], r.returncode, err[-300:]))
        check(re.search(r"mark: 40000 events read, 100% of [0-9.]+ [kMG]?B", err) is not None and err.endswith("\n"),
              "%s --progress: no final progress line: %r" % (args[0], err[-300:]))
        quiet = run([mark] + [a for a in args if a != "--progress"])
        check(b"events read" not in quiet.stderr, "%s: progress shown on a non-terminal: %r" % (args[0], quiet.stderr))
        check(quiet.stdout == r.stdout, "%s: --progress changed stdout" % args[0])


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

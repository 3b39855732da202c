#!/usr/bin/env python3
"""Bounded disk (issue 13 section 2), with the real tracer and babeltrace2.

test_chunks.py CASE MARK CHUNK_PROG WORKDIR

max_size: ~200 MB of events under MARK_MAX_SIZE=20M (block mode: nothing is
  lost).  While the program runs, the test walks the trace directory and
  sums the file sizes: it must never hold more than 20M + one chunk + the
  buffer files.  Afterwards babeltrace2 and `mark view` read what remains;
  it is exactly the newest events (a contiguous suffix ending with the last
  one), and `mark stats` counts the others as rotated away: recorded +
  rotated away + lost == produced.
rotate: MARK_ROTATE=4M cuts chunks but deletes nothing: every event is
  there, in several chunks, each of which babeltrace2 reads alone.
record: `mark record --max-size 8M --mode block -- chunk_prog`: the same
  checks through the command line.
rotate_time: MARK_ROTATE=100ms: the program writes a batch of events per
  line the test sends; the test sends the next one once it sees a new
  chunk directory (a condition, bounded by 60 s, never a sleep): every
  event is there, in one chunk per batch at least.
record_pid: `mark record --pid P --max-size 8M --mode block` on a running
  chunk_prog that writes 10 batches of events on request, then Ctrl-C
  (SIGINT) to `mark`: the same checks (the settings go through the agent).
detach: `mark record --pid P --detach` returns at once; the process records
  its batches with no controller; `mark ps` says it records into DIR;
  `mark stop P` ends the recording: every event is in the trace.
detach_exit: the same, but the process exits during the detached
  recording (no `mark stop`): its exit flushes the trace, every event is
  there.
controller_killed: `mark record --pid P` (not detached) is killed with
  SIGKILL after the batches: the process notices the lost connection and
  stops the recording, flushing its buffers (it runs on); every event is
  in the trace.
max_size_discard: as max_size, in discard mode with a 64k buffer, so that
  events are lost, also in chunks that are deleted later: those losses
  count too (recorded + rotated away + lost, in the trace or in deleted
  chunks == produced), and what remains is increasing, not contiguous.
kill: as max_size with 8M, but the program is killed with SIGKILL once it
  has produced its events (some still in its buffers) and `mark recover`
  completes the live chunk: the same checks hold.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import time

MB = 1 << 20
# The statistics file's two counted sets (struct mark_tf_counted,
# trace_format.h), which it holds beside its 512 KB of entries: part of
# "the buffer files" of the bound below.
COUNTED_SETS = 2 * (16 + 8 * 8192)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def dir_bytes(top):
    """Bytes of the files under top.  Each file is counted once, by inode:
    the walk is not atomic, and a stream file the tracer renames from
    pid-P/ into pid-P.chunk-K/ meanwhile would otherwise be seen twice."""
    total = 0
    seen = set()
    for root, dirs, files in os.walk(top):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except FileNotFoundError:
                continue   # deleted while we walk: fine
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def chunk_dirs(top):
    out = []
    for root, dirs, files in os.walk(top):
        if "metadata" in files:
            out.append(root)
    return out


def bt_ns(ticks, freq):
    """The nanoseconds babeltrace2 2.0 makes of a clock value: 1e9 *
    (double)ticks / freq, truncated (coarser than a tick beyond 2^53)."""
    return ticks if freq == 1000000000 else int(1e9 * float(ticks) / float(freq))


def check_packet_order(top):
    """A reader merges a stream's files from every chunk (pid-P.chunk-N in
    order, then pid-P) and orders the packets by timestamp_begin in its
    nanoseconds, keeping no order among equal ones.  So where the
    events_discarded of two consecutive packets differ (the empty packet
    that opens a chunk's file, or one after the last event), the later one
    must begin in a later nanosecond than the earlier one begins, and not
    before it ends.  Reads the packet contexts (docs/tracer.md layout)."""
    groups = {}
    for d in chunk_dirs(top):
        base = os.path.basename(d)
        m = re.match(r"(pid-\d+)(?:\.chunk-(\d+))?$", base)
        if not m:
            continue
        key = int(m.group(2)) if m.group(2) else 1 << 62
        groups.setdefault((os.path.dirname(d), m.group(1)), []).append((key, d))
    for dirs in groups.values():
        dirs.sort()
        streams = {}
        for _, d in dirs:
            with open(os.path.join(d, "metadata")) as f:
                m = re.search(r"\tfreq = (\d+);", f.read())
            freq = int(m.group(1)) if m else 1000000000
            for name in sorted(os.listdir(d)):
                if not name.startswith("stream-"):
                    continue
                with open(os.path.join(d, name), "rb") as f:
                    data = f.read()
                off = 0
                while off + 104 <= len(data):
                    tb, te, _cs, ps, _seq, disc = struct.unpack_from("<6Q", data, off + 32)
                    if ps < 104 * 8:
                        break
                    streams.setdefault(name, []).append((os.path.join(d, name), off, bt_ns(tb, freq),
                                                         bt_ns(te, freq), disc))
                    off += ps // 8
        for pkts in streams.values():
            for a, b in zip(pkts, pkts[1:]):
                if a[4] != b[4] and not (a[2] < b[2] and a[3] <= b[2]):
                    fail("packets at %s+%d (ns %d..%d, discarded %d) and %s+%d (ns %d.., discarded %d): "
                         "a reader cannot order them" % (a[0], a[1], a[2], a[3], a[4], b[0], b[1], b[2], b[4]))


def start_recording(mark, target, args):
    """`mark record --pid TARGET ARGS` in the background, once it has said
    "...; Ctrl-C stops" (its signal handlers are in place).  The agent's
    socket appears when libmark starts: retry while `mark` says the
    process has no agent, for at most 60 s."""
    deadline = time.monotonic() + 60
    while True:
        rec = subprocess.Popen([mark, "record", "--pid", str(target.pid)] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = rec.stderr.readline()
        if "Ctrl-C stops" in line:
            return rec
        rec.wait()
        if "has no mark agent" not in line or time.monotonic() > deadline:
            target.kill()
            fail("mark record --pid did not start: %s" % line)
        time.sleep(0.05)


def send_batches(target, count):
    """Have chunk_prog (`N stdin`) write `count` batches, each acknowledged."""
    for batch in range(count):
        target.stdin.write("go\n")
        target.stdin.flush()
        if target.stdout.readline() != "batch\n":
            target.kill()
            fail("chunk_prog did not answer batch %d" % batch)


def sealed(top):
    """Sealed chunks: DIR/pid-P.chunk-K directories holding metadata."""
    return sum(1 for c in chunk_dirs(top) if ".chunk-" in os.path.basename(c))


def seqs_babeltrace(path):
    p = subprocess.run(["babeltrace2", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    if p.returncode != 0:
        fail("babeltrace2 %s failed: %s" % (path, p.stderr[-2000:]))
    return [int(m.group(1)) for m in re.finditer(r"t_chunk: .*?[{,] seq = (\d+)", p.stdout)]


def run(case, mark, prog, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, mode=0o700)
    trace = os.path.join(work, "trace")
    env = dict(os.environ, MARK_TRACE=trace, MARK_MODE="block", MARK_BUFFER="1M")
    if case == "max_size":
        n = 1_100_000   # about 200 MB of records
        env["MARK_MAX_SIZE"] = "20M"
        bound = 20 * MB + (20 * MB) // 8 + 1 * MB + 256 * 1024 + COUNTED_SETS
    elif case == "max_size_discard":
        n = 1_100_000
        env.update(MARK_MAX_SIZE="8M", MARK_MODE="discard", MARK_BUFFER="64k")
        bound = 8 * MB + MB + 1 * MB + 256 * 1024 + COUNTED_SETS
    elif case == "max_size_small":
        # A budget smaller than one buffer: one pass of the consumer writes
        # more than the whole budget, and the chunk sealed after it alone
        # exceeds it.  That chunk holds the newest events and must stay
        # (before, every sealed chunk was deleted, the newest too: 7 runs
        # of 8 left a trace of 0 events, found by a review).
        n = 40_000
        env.update(MARK_MAX_SIZE="1M", MARK_BUFFER="4M")
        bound = None
    elif case == "rotate_time":
        n = 3000 * 4
        env["MARK_ROTATE"] = "100ms"
        bound = None
    elif case == "record_pid":
        n = 40_000 * 10
        bound = 8 * MB + MB + 1 * MB + 256 * 1024 + COUNTED_SETS
    elif case in ("detach", "detach_exit", "controller_killed"):
        n = 20_000 * 5
        bound = None
    elif case == "record":
        n = 400_000
        bound = 8 * MB + MB + 1 * MB + 256 * 1024 + COUNTED_SETS
    elif case == "kill":
        n = 400_000     # about 76 MB
        env["MARK_MAX_SIZE"] = "8M"
        bound = 8 * MB + MB + 1 * MB + 256 * 1024 + COUNTED_SETS
    else:
        n = 150_000     # about 28 MB
        env["MARK_ROTATE"] = "4M"
        bound = None
    peak = 0
    args = [prog, str(n)] + (["wait"] if case == "kill" else [])
    if case == "record":
        args = [mark, "record", "-q", "--max-size", "8M", "--mode", "block", "--buffer", "1M", "-o", trace,
                "--"] + args
        env = dict(os.environ)
    if case == "controller_killed":
        target = subprocess.Popen([prog, "20000", "stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        rec = start_recording(mark, target, ["--mode", "block", "-o", trace])
        send_batches(target, 5)
        rec.kill()
        rec.wait()
        # The process stops the recording when its agent sees the
        # connection close: wait for that condition (the stats file says
        # stopped and the rings are gone), bounded by 60 s.
        ring = os.path.join(trace, "pid-%d" % target.pid, ".mark-ring-0")
        deadline = time.monotonic() + 60
        while os.path.exists(ring):
            if time.monotonic() > deadline:
                target.kill()
                fail("60 s after its controller was killed, process %d still records" % target.pid)
            time.sleep(0.01)   # polling a condition
        if target.poll() is not None:
            fail("the traced process died with its controller")
        target.stdin.close()
        proc = target
    elif case in ("detach", "detach_exit"):
        target = subprocess.Popen([prog, "20000", "stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        deadline = time.monotonic() + 60
        while True:
            p = subprocess.run([mark, "record", "--pid", str(target.pid), "--detach", "--mode", "block",
                                "-o", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=120)
            if p.returncode == 0:
                break
            if "has no mark agent" not in p.stderr or time.monotonic() > deadline:
                target.kill()
                fail("mark record --pid --detach: exit %d: %s" % (p.returncode, p.stderr))
            time.sleep(0.05)
        print("mark record --detach: " + p.stderr.strip())
        ps = subprocess.run([mark, "ps"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        row = [l for l in ps.stdout.splitlines() if l.split()[:1] == [str(target.pid)]]
        if not row or trace not in row[0] or "block" not in row[0]:
            target.kill()
            fail("mark ps does not show %d recording into %s in block mode: %s" % (target.pid, trace, ps.stdout))
        print("mark ps: " + row[0])
        send_batches(target, 5)
        if case == "detach":
            p = subprocess.run([mark, "stop", str(target.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=120)
            print("mark stop: exit %d: %s %s" % (p.returncode, p.stdout.strip(), p.stderr.strip()))
            if p.returncode != 0:
                target.kill()
                fail("mark stop %d failed" % target.pid)
            st = os.path.join(trace, "pid-%d" % target.pid, ".mark-ring-0")
            if os.path.exists(st):
                target.kill()
                fail("after mark stop the recording still runs (%s exists)" % st)
        target.stdin.close()
        proc = target
    elif case == "record_pid":
        env = dict(os.environ)
        target = subprocess.Popen([prog, "40000", "stdin"], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        rec = start_recording(mark, target, ["--max-size", "8M", "--mode", "block", "--buffer", "1M",
                                             "-o", trace])
        for batch in range(10):
            send_batches(target, 1)
            b = dir_bytes(trace)
            peak = max(peak, b)
            if b > bound:
                fail("the trace directory holds %d bytes; the bound is %d" % (b, bound))
        rec.send_signal(2)
        rec_out, rec_err = rec.communicate(timeout=120)
        if rec.returncode != 0:
            fail("mark record --pid exited %d: %s" % (rec.returncode, rec_err))
        target.stdin.close()
        proc = target
    elif case != "rotate_time":
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    samples = 0
    if case == "kill":
        # Every event is produced (the line says so) before the kill: no
        # timing window decides what the trace must hold.
        line = proc.stdout.readline()
        if line.strip() != "produced %d" % n:
            proc.kill()
            fail("chunk_prog printed %r" % line)
        proc.kill()
        proc.wait()
        b = dir_bytes(trace)
        if b > bound:
            fail("the trace directory holds %d bytes after the kill; the bound is %d" % (b, bound))
        p = subprocess.run([mark, "recover", trace], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=600)
        print("mark recover: exit %d: %s" % (p.returncode, p.stdout.strip()[-500:]))
        if p.returncode != 0:
            fail("mark recover %s failed" % trace)
        proc = subprocess.Popen(["echo", "produced %d" % n], stdout=subprocess.PIPE, text=True)
    if case == "rotate_time":
        proc = subprocess.Popen([prog, "3000", "stdin"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        for batch in range(4):
            before = sealed(trace)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            if proc.stdout.readline() != "batch\n":
                fail("chunk_prog did not answer batch %d" % batch)
            if batch == 3:
                break
            deadline = time.monotonic() + 60
            while sealed(trace) <= before:
                if time.monotonic() > deadline:
                    proc.kill()
                    fail("no chunk was cut within 60 s of batch %d under MARK_ROTATE=100ms" % batch)
                time.sleep(0.01)   # polling a condition, not a synchronisation by time
        proc.stdin.close()
    while proc.poll() is None:
        if os.path.isdir(trace):
            b = dir_bytes(trace)
            if bound is not None and b > bound:
                # A walk is not atomic: it can count the oldest chunk before
                # the tracer deletes it and the chunk that replaced it after
                # (one chunk too many; seen once in the ASan build, 10793734
                # bytes against 10747904).  A directory really over the
                # bound is still over on the next walks.
                b = min(b, dir_bytes(trace), dir_bytes(trace))
            samples += 1
            peak = max(peak, b)
            if bound is not None and b > bound:
                proc.kill()
                proc.wait()
                fail("the trace directory holds %d bytes while the program runs; the bound is %d" % (b, bound))
    out = proc.stdout.read()
    proc.wait(timeout=600)
    if proc.returncode != 0 or ("produced %d" % n) not in out:
        fail("chunk_prog exited %d: %s" % (proc.returncode, out))
    final = dir_bytes(trace)
    print("peak %d bytes over %d samples, final %d bytes" % (peak, samples, final))
    if bound is not None and final > bound:
        fail("the trace directory holds %d bytes at the end; the bound is %d" % (final, bound))
    chunks = chunk_dirs(trace)
    print("%d traces (chunks) in %s" % (len(chunks), trace))
    if len(chunks) < 3 and case not in ("detach", "detach_exit", "controller_killed", "max_size_small"):
        fail("expected the trace cut into several chunks, found %d: %s" % (len(chunks), chunks))
    if case == "max_size_small" and sealed(trace) < 1:
        fail("no sealed chunk is left under MARK_MAX_SIZE=1M: the newest was deleted: %s" % chunks)
    check_packet_order(trace)
    # Each chunk reads alone.
    for c in chunks:
        seqs_babeltrace(c)
    seqs = seqs_babeltrace(trace)
    if not seqs:
        fail("babeltrace2 read no t_chunk event")
    first = seqs[0]
    if case == "max_size_discard":
        if any(a >= b for a, b in zip(seqs, seqs[1:])) or seqs[-1] >= n:
            fail("babeltrace2 %s: the events are not increasing sequence numbers below %d" % (trace, n))
    elif seqs != list(range(first, n)):
        bad = next(i for i, (a, b) in enumerate(zip(seqs, range(first, n))) if a != b) if len(seqs) <= n - first else len(seqs)
        fail("babeltrace2 %s: not the contiguous newest events [%d, %d): %d events, first mismatch at #%d"
             % (trace, first, n, len(seqs), bad))
    if case == "rotate_time" and sealed(trace) < 3:
        fail("expected at least 3 sealed chunks (one per batch but the last), found %d" % sealed(trace))
    if case in ("rotate", "rotate_time", "detach", "detach_exit", "controller_killed") and first != 0:
        fail("--rotate deleted events: the trace starts at seq %d" % first)
    if case in ("max_size", "max_size_discard", "max_size_small") and first == 0:
        fail("nothing was deleted under MARK_MAX_SIZE")
    p = subprocess.run([mark, "view", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    nview = sum(1 for l in p.stdout.splitlines() if "t_chunk" in l)
    if p.returncode != 0 or nview != len(seqs):
        fail("mark view %s: exit %d, %d events (babeltrace2: %d): %s" % (trace, p.returncode, nview, len(seqs),
                                                                          p.stderr[-1000:]))
    p = subprocess.run([mark, "stats", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    print(p.stdout.splitlines()[0] if p.stdout else p.stderr)
    m = re.search(r": (\d+) events, (\d+) lost", p.stdout)
    if p.returncode != 0 or not m:
        fail("mark stats %s: exit %d: %s %s" % (trace, p.returncode, p.stdout[:500], p.stderr[-500:]))
    recorded, lost = int(m.group(1)), int(m.group(2))
    r = re.search(r"(\d+) events rotated away", p.stdout)
    rotated = int(r.group(1)) if r else 0
    # Losses counted in chunks that were deleted (discard mode).
    rl = re.search(r"(\d+) events lost in the deleted chunks", p.stdout)
    if rl:
        lost += int(rl.group(1))
    if case == "max_size_discard" and lost == 0:
        print("SKIP: no event was lost with a 64k discard-mode buffer; this run cannot check the "
              "count of losses in deleted chunks")
        sys.exit(77)
    if case in ("max_size", "max_size_discard", "max_size_small") and not r:
        fail("mark stats does not report the events rotated away: %s" % p.stdout[:500])
    if recorded != len(seqs):
        fail("mark stats counts %d events, babeltrace2 reads %d" % (recorded, len(seqs)))
    if recorded + rotated + lost != n:
        fail("counts do not add up: recorded %d + rotated away %d + lost %d != produced %d"
             % (recorded, rotated, lost, n))
    print("OK: recorded %d + rotated away %d + lost %d == produced %d" % (recorded, rotated, lost, n))


if __name__ == "__main__":
    if shutil.which("babeltrace2") is None:
        print("SKIP: babeltrace2 is not installed")
        sys.exit(77)
    run(*sys.argv[1:5])

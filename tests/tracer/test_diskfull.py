#!/usr/bin/env python3
"""A full disk: the losses the trace could not record are still reported.

test_diskfull.py CASE MARK CHUNK_PROG WORKDIR

The trace goes to a small tmpfs (mounted by the test: skipped, exit 77,
when mounting is denied).  chunk_prog writes batches of events in block
mode with 64k buffers; between two batches the test fills the tmpfs to
the last page, so the tracer cannot write what follows and counts it
lost.  Those losses are exact in .mark-stats, but the packets that were
to report them cannot be written either: `mark stats` must still add up
(events + lost + lost that the trace could not record == produced), and
`mark view` and `mark export` (each format) must say how many it lacks.

full_later: one batch is written with room to spare (a buffer and its
  stream file exist), then the disk is filled: the stream file cannot
  grow.  The closing packet may still find room (the tracer frees its
  buffer files at the stop), so this case checks only that the totals
  are exact, whichever way they are reported.
full_before: the disk is filled before the first event: no buffer, and
  no stream file, can be created at all.
full_at_start: the disk is full before the program starts: the tracer
  cannot write its statistics nor its metadata and turns itself off.  It
  says so with what to do, and leaves nothing it made behind: before, an
  empty DIR/pid-P/.mark-stats stayed, and the readers said "not a CTF
  trace".  A trace directory that existed (as `mark record` makes it),
  and a file of someone else in it, stay; `mark record` then removes the
  DIR it made, and its summary points at the tracer's message.

Found by a review (the trace said 38,915 events + 257,257 lost,
.mark-stats 38,915 + 4,086,085 lost of 4,125,000 produced); the review's
run failed 1 time in 3; full_before fails every time on the old code.
"""
import errno
import glob
import os
import re
import subprocess
import sys
import time

BATCH = 5000   # events of about 200 bytes: 1 MB per batch


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def wait_for(what, cond, timeout=60):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            fail("timed out waiting for " + what)
        time.sleep(0.01)


def fill(mnt):
    """Write mnt/fill until the disk is full (tmpfs counts whole pages)."""
    block = b"f" * 4096
    with open(os.path.join(mnt, "fill"), "ab", buffering=0) as f:
        while True:
            try:
                f.write(block)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break


def main():
    case, mark, prog, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    mnt = os.path.join(work, "mnt")
    if os.path.ismount(mnt):
        subprocess.run(["umount", mnt])
    os.makedirs(mnt, exist_ok=True)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if m.returncode != 0:
        print("SKIP: cannot mount a tmpfs to fill (%s)" % m.stdout.strip())
        sys.exit(77)
    try:
        run(case, mark, prog, mnt)
    finally:
        subprocess.run(["umount", "-l", mnt])


def tree(top):
    """Every path below top, relative to it (what a start left behind)."""
    return sorted(os.path.relpath(os.path.join(d, n), top)
                  for d, dirs, files in os.walk(top) for n in dirs + files)


def run_full_at_start(mark, prog, mnt):
    made = os.path.join(mnt, "t")       # the tracer makes it
    given = os.path.join(mnt, "given")  # it exists, with a file that is not the tracer's
    os.mkdir(given, 0o700)
    open(os.path.join(given, "keep"), "w").close()
    fill(mnt)
    for trace, want in ((made, None), (given, ["keep"])):
        env = dict(os.environ, MARK_TRACE=trace)
        p = subprocess.run([prog, "10", "stdin"], env=env, input="\n", stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        print("chunk_prog (MARK_TRACE=%s): exit %d; its stderr:\n%s" % (trace, p.returncode, p.stderr))
        if p.returncode != 0 or "produced 10" not in p.stdout:
            fail("the program did not run on untraced when its tracer could not start (exit %d)" % p.returncode)
        if want is None and os.path.exists(trace):
            fail("the tracer that could not start left %s holding %r" % (trace, tree(trace)))
        if want is not None and (not os.path.isdir(trace) or tree(trace) != want):
            fail("%s held %r before the start that failed; after it: %r" % (trace, want,
                 tree(trace) if os.path.isdir(trace) else "nothing"))
        if not re.search(r"cannot write the metadata .*No space left on device.*free space", p.stderr):
            fail("the tracer did not say it could not write its metadata for want of space, and what to do")
        v = subprocess.run([mark, "view", mnt], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if ".mark-stats" in v.stderr:
            fail("mark view still finds a statistics file: %s" % v.stderr)
    # `mark record` makes DIR itself: once the tracer removed what it made,
    # the command removes DIR, and its summary points at the tracer's words.
    trace = os.path.join(mnt, "rec")
    r = subprocess.run([mark, "record", "-o", trace, "--", prog, "10", "stdin"], input="\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    print("mark record: exit %d; it said:\n%s" % (r.returncode, r.stderr))
    if os.path.exists(trace):
        fail("mark record left %s holding %r after its program's tracer could not start" % (trace, tree(trace)))
    if not re.search(r"never started the tracer .*a tracer that could not start says why above", r.stderr) or \
       "No space left on device" not in r.stderr:
        fail("mark record's summary does not point at why the tracer could not start: %r" % r.stderr)
    print("OK: the tracers that could not start said so and left only what was there")


def run(case, mark, prog, mnt):
    if case == "full_at_start":
        return run_full_at_start(mark, prog, mnt)
    trace = os.path.join(mnt, "t")
    env = dict(os.environ, MARK_TRACE=trace, MARK_MODE="block", MARK_BUFFER="64k")
    p = subprocess.Popen([prog, str(BATCH), "stdin"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    # The tracer starts when the program loads: its statistics and metadata
    # first.  Both must be there before the disk is filled: a tracer that
    # cannot write its metadata turns itself off, and there is no trace to
    # read (seen under qemu, where the fill could overtake the metadata).
    wait_for("the tracer's statistics file",
             lambda: glob.glob(os.path.join(trace, "pid-*", ".mark-stats")))
    wait_for("the tracer's metadata",
             lambda: glob.glob(os.path.join(trace, "pid-*", "metadata")))
    if case == "full_later":
        p.stdin.write("\n")
        p.stdin.flush()
        if p.stdout.readline() != "batch\n":
            fail("chunk_prog did not write its first batch")
        wait_for("a stream file", lambda: glob.glob(os.path.join(trace, "pid-*", "stream-*")))
    fill(mnt)
    for _ in range(3):
        p.stdin.write("\n")
        p.stdin.flush()
        if p.stdout.readline() != "batch\n":
            fail("chunk_prog did not write a batch")
        # Again: a metadata file the tracer failed to write is removed,
        # and the pages it held would let the closing packet through.
        fill(mnt)
    p.stdin.close()
    out = p.stdout.read()
    err = p.stderr.read()
    p.wait()
    mo = re.search(r"produced (\d+)", out)
    if p.returncode != 0 or not mo:
        fail("chunk_prog failed (%d): %s %s" % (p.returncode, out, err))
    produced = int(mo.group(1))
    print("chunk_prog: produced %d; its stderr: %s" % (produced, err.strip()))

    s = subprocess.run([mark, "stats", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    print("mark stats:\n" + s.stdout + s.stderr)
    mo = re.search(r": (\d+) events, (\d+) lost", s.stdout)
    if s.returncode != 0 or not mo:
        fail("mark stats failed")
    events, lost = int(mo.group(1)), int(mo.group(2))
    mo = re.search(r"(\d+) more events? lost that the trace could not record", s.stdout)
    missing = int(mo.group(1)) if mo else 0
    if events + lost + missing != produced:
        fail("mark stats: %d events + %d lost + %d not recorded = %d, but %d were produced"
             % (events, lost, missing, events + lost + missing, produced))
    if missing == 0 and case == "full_before":
        fail("the disk was full, yet the trace reports every loss: the test did not fill it in time")

    v = subprocess.run([mark, "view", trace], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       universal_newlines=True)
    print("mark view (stderr):\n" + v.stderr)
    mo = re.search(r"(\d+) more events? lost that the trace could not record", v.stderr)
    if (int(mo.group(1)) if mo else 0) != missing:
        fail("mark view does not report the %d events lost that the trace could not record" % missing)
    # The exports say so too: their files cannot show those losses.
    for fmt, ext in (("chrome", "json"), ("perfetto", "pftrace"), ("otlp", "jsonl")):
        out = os.path.join(os.path.dirname(mnt), "export." + ext)
        e = subprocess.run([mark, "export", "--format", fmt, "-o", out, trace], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, universal_newlines=True)
        print("mark export --format %s (stderr):\n%s" % (fmt, e.stderr))
        if e.returncode != 0:
            fail("mark export --format %s failed (%d)" % (fmt, e.returncode))
        mo = re.search(r"(\d+) more events? lost that the trace could not record", e.stderr)
        if (int(mo.group(1)) if mo else 0) != missing:
            fail("mark export --format %s does not report the %d events lost that the trace could not record"
                 % (fmt, missing))
    print("OK: %d events + %d lost in the trace + %d lost that it could not record == %d produced"
          % (events, lost, missing, produced))


if __name__ == "__main__":
    main()

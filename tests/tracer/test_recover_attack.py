#!/usr/bin/python3
"""Crash recovery against hostile trace directories (issue 10, defects 2 and 3).

usage: test_recover_attack.py CASE MARK TRACER_PROG WORKDIR

Every case runs the real CLI path that recovers: `mark record -o DIR -- CMD`,
where CMD is this script in an "attacker" role.  The attacker runs
tracer_prog (a traced program), kills it with SIGKILL so that its events are
left in the .mark-ring files, then tampers with the trace directory and
exits; `mark record` then completes the trace with mark_trace_recover().

  symlink   (root only) the trace directory belongs to `nobody`, who plants
            stream-N -> a root-owned 0600 file: the file must stay byte for
            byte unchanged.
  nobody_ok (root only) root recovers an untampered trace of `nobody`: the
            stream file recovery creates belongs to nobody, not root.
  pid0      .mark-stats of a process that still runs says pid 0: recovery
            must refuse (it would take the buffers from under a live writer).
  stats_*   a crafted .mark-stats field (header_size, entry_size,
            max_entries, markers_described, a file cut short): a clear error
            naming the file and the field, no crash, the buffers left as they are.
  ring_*    a crafted .mark-ring-N header field: a clear error naming that
            file and field, no crash, the file left as it is, and a good
            buffer beside it (a copy as stream 99) still recovered.
  stats_race the traced user flips entry_size of a clean trace's
            .mark-stats while `mark record` prints its summary: no crash.
  stats_truncate the same, cutting the file to 0 bytes and back: no crash.
  live_max_entries (PROG = tracer_many_markers) a running program with
            more markers than .mark-stats has entries; its max_entries is
            made huge: the program's own statistics writer must not crash.
  ok        (positive) plain SIGKILL: every event is recovered.
  ok_wrapped (positive) SIGKILL of a flight recorder (overwrite mode) whose
            buffer has wrapped: its newest events are recovered, kept + lost
            = every event.
  ok_large  (positive) the same with a 16 MiB buffer, which recovery reads a
            4 MiB window at a time: the events kept are the newest, in order,
            none missing at a window's or the ring's end.
  sparse_ring a ring whose header says 2 GiB, in a sparse file of that
            size (costless to the traced user): recovery reads what the
            ring holds, not 2 GiB into its memory (the old code took 2 GiB
            of RSS; now the largest process of the run stays under 256 MiB).

Exit 0 = pass, 1 = fail, 77 = skip.
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("CHECK failed: " + msg, file=sys.stderr)
    return cond


def verdict():
    """The exit status: 1 after any failed check, else 0."""
    if failures:
        print("FAIL: %d check(s)" % len(failures))
        return 1
    print("ok")
    return 0


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


# Offsets in struct mark_tf_stats / struct mark_tf_ring (src/tracer/trace_format.h).
STATS = {"header_size": (12, "I"), "entry_size": (16, "I"), "max_entries": (20, "I"), "pid": (24, "i"),
         "markers_described": (112, "I"), "counted_offset": (184, "Q"), "counted_set": (192, "Q")}
RING = {"capacity": (16, "Q"), "head": (64, "Q"), "oldest": (72, "Q"), "tail": (128, "Q"),
        "stream_bytes": (144, "Q"), "pending_tail": (160, "Q"), "pending_bytes": (168, "Q"),
        "stream_index": (28, "I"), "header_size": (12, "I")}


def poke(path, table, field, value):
    off, fmt = table[field]
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(struct.pack("<" + fmt, value))


def proc_dir(d):
    subs = [s for s in os.listdir(d) if s.startswith("pid-")]
    return os.path.join(d, subs[0]) if subs else d


def start_prog(prog, mode, n=2001, what="kill", buffer="64k"):
    """tracer_prog kill N: 2 threads fire N/2 events each and exit (their buffers are
    written), main fires the odd one and waits to be killed: in overwrite mode its
    event stays in its buffer, for recovery."""
    env = dict(os.environ, MARK_MODE=mode, MARK_BUFFER=buffer)
    # stderr not inherited: a tracer_prog left running (pid0) must not hold
    # the pipe of `mark record`'s stderr open.
    p = subprocess.Popen([prog, what, str(n)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=env)
    if p.stdout.readline().strip() != "ready":
        print("attacker: tracer_prog did not get ready", file=sys.stderr)
        sys.exit(3)
    time.sleep(0.1)
    return p


def rings_of(pdir):
    return sorted(f for f in os.listdir(pdir) if f.startswith(".mark-ring-"))


def ring_with_events(pdir):
    """The .mark-ring-N whose records are not all written yet (head > tail)."""
    for r in rings_of(pdir):
        with open(os.path.join(pdir, r), "rb") as f:
            b = f.read(256)
        head, tail = struct.unpack_from("<Q", b, 64)[0], struct.unpack_from("<Q", b, 128)[0]
        if head > tail:
            return r
    return rings_of(pdir)[-1]


def attacker(case, prog):
    """Runs as the traced user, inside `mark record`; MARK_TRACE is set."""
    d = os.environ["MARK_TRACE"]
    if case == "pid0":
        p = start_prog(prog, "overwrite")
        pdir = proc_dir(d)
        poke(os.path.join(pdir, ".mark-stats"), STATS, "pid", 0)
        with open(os.path.join(os.path.dirname(d), "live.pid"), "w") as f:
            f.write(str(p.pid))
        os._exit(0)   # tracer_prog keeps running; the test kills it
    if case in ("stats_race", "stats_truncate"):
        # A clean run, then a process of the traced user flips entry_size
        # between 0 and 128 while `mark record` reads the per-marker counts
        # for its summary (the file is checked once, then read again; an odd
        # seq makes the reader retry, so it reads entry_size many times).
        r = subprocess.run([prog, "seq", "100"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        st = os.path.join(proc_dir(d), ".mark-stats")
        rfd, wfd = os.pipe()
        if os.fork() == 0:
            os.close(rfd)
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            import mmap
            with open(st, "r+b") as f:
                m = mmap.mmap(f.fileno(), 4096)
                m[40:48] = struct.pack("<Q", 1)   # seq odd: readers retry, re-reading entry_size
                full = os.fstat(f.fileno()).st_size
                end = time.time() + 1.5
                os.write(wfd, b"x")   # flipping from now on
                os.close(wfd)
                while time.time() < end:
                    for _ in range(1000):
                        if case == "stats_race":
                            m[16:20] = b"\0\0\0\0"
                            m[16:20] = b"\x80\0\0\0"
                        else:
                            # A file cut short under the reader's mapping: SIGBUS.
                            os.ftruncate(f.fileno(), 0)
                            os.ftruncate(f.fileno(), full)
                            m[40:48] = struct.pack("<Q", 1)
            os._exit(0)
        os.close(wfd)
        os.read(rfd, 1)
        os._exit(r.returncode)
    if case == "ok_wrapped":
        p = start_prog(prog, "overwrite", 1000, "killseq", "4k")   # the ring wraps many times
    elif case == "ok_large":
        p = start_prog(prog, "overwrite", LARGE_EVENTS, "killseq", "16m")   # wraps once
    elif case == "sparse_ring":
        p = start_prog(prog, "overwrite", 100, "killseq")
    elif case == "nobody_ok":
        p = start_prog(prog, "overwrite", 100, "killseq")   # no stream file yet: recovery makes it
    else:
        p = start_prog(prog, "overwrite")
    p.send_signal(signal.SIGKILL)
    p.wait()
    pdir = proc_dir(d)
    if case == "symlink":
        victim = sys.argv[4]
        for r in rings_of(pdir):
            s = os.path.join(pdir, "stream-" + r[len(".mark-ring-"):])
            if os.path.lexists(s):
                os.unlink(s)
            os.symlink(victim, s)
    elif case in ("stats_race", "stats_truncate"):
        check(r.returncode == 0, "mark record failed (status %d)" % r.returncode)
    elif case.startswith("stats_"):
        st = os.path.join(pdir, ".mark-stats")
        field = case[len("stats_"):]
        if field == "short":
            os.truncate(st, 256 + 128 * 2)
        else:
            poke(st, STATS, field, {"header_size": 0xfffffff8, "entry_size": 0, "max_entries": 0xffffffff,
                                    "markers_described": 0xffffffff}[field])
    elif case == "sparse_ring":
        # 100 events, far from the end of 64 KiB: at the same offsets in a
        # ring of 2 GiB.  Header and sparse size say 2 GiB.
        r = os.path.join(pdir, ring_with_events(pdir))
        poke(r, RING, "capacity", SPARSE_CAPACITY)
        os.truncate(r, 4096 + SPARSE_CAPACITY)
    elif case.startswith("ring_"):
        field = case[len("ring_"):]
        r = os.path.join(pdir, ring_with_events(pdir))
        # A second good buffer in the same trace (a copy as stream 99): it must
        # be recovered although its neighbour is damaged.
        good = os.path.join(pdir, ".mark-ring-99")
        shutil.copyfile(r, good)
        poke(good, RING, "stream_index", 99)
        with open(os.path.join(os.path.dirname(d), "bad.ring"), "w") as f:
            f.write(os.path.basename(r))
        if field == "short":
            os.truncate(r, 4096 + 1000)
        else:
            poke(r, RING, field, {"capacity": 1 << 62, "head": 1 << 60, "stream_index": 0xffffffff,
                                  "tail": 1 << 61, "header_size": 0}[field])
    os._exit(0)


LARGE_EVENTS = 1000000
SPARSE_CAPACITY = 1 << 31


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "attacker":
        attacker(sys.argv[2], sys.argv[3])
    case, mark, prog, work = sys.argv[1:5]
    top = os.path.join(work, case)
    shutil.rmtree(top, ignore_errors=True)
    os.makedirs(top)
    os.chmod(top, 0o755)
    d = os.path.join(top, "trace")
    me = [sys.executable, os.path.abspath(__file__), "attacker", case, prog]
    victim = os.path.join(top, "victim")
    env = dict(os.environ)
    for k in ("MARK_TRACE", "MARK_ENABLE", "MARK_MODE", "MARK_BUFFER"):
        env.pop(k, None)
    if case in ("symlink", "nobody_ok"):
        if os.geteuid() != 0:
            skip("this case needs root (it is root's recovery of another user's trace)")
        if not shutil.which("setpriv"):
            skip("setpriv (util-linux) is not installed")
        import pwd
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            skip("no user nobody")
        probe = subprocess.run(["setpriv", "--reuid=nobody", "--regid=%d" % nobody.pw_gid, "--clear-groups",
                                "test", "-x", prog], capture_output=True)
        if probe.returncode != 0:
            skip("nobody cannot run %s (or setpriv is denied): %s" % (prog, probe.stderr.decode().strip()))
        with open(victim, "wb") as f:
            f.write(b"root:secret:0:0\n" * 8)
        os.chmod(victim, 0o600)
        original = open(victim, "rb").read()
        os.mkdir(d)
        os.chown(d, nobody.pw_uid, nobody.pw_gid)
        me = ["setpriv", "--reuid=nobody", "--regid=%d" % nobody.pw_gid, "--clear-groups"] + me + [victim]
    if case == "live_max_entries":
        # PROG is tracer_many_markers: 5000 markers, more than the 4096
        # entries of its .mark-stats.  Another process of the same user
        # makes max_entries huge while it runs: its consumer thread must
        # keep writing inside the file it created.
        p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(env, MARK_TRACE=d))
        check(p.stdout.readline().strip() == "ready", "tracer_many_markers did not get ready")
        time.sleep(0.2)
        poke(os.path.join(proc_dir(d), ".mark-stats"), STATS, "max_entries", 0xffffffff)
        # ... and where the counted sets are, and which one is committed:
        # its consumer must keep its own idea of both.
        poke(os.path.join(proc_dir(d), ".mark-stats"), STATS, "counted_offset", 1 << 40)
        poke(os.path.join(proc_dir(d), ".mark-stats"), STATS, "counted_set", 0x10000001)
        p.stdin.write("go\n")
        p.stdin.flush()
        rc = p.wait(timeout=30)
        check(rc == 0, "the traced program died (status %d) after max_entries was changed" % rc)
        return verdict()
    if case == "pid_stats_header_size":
        # `mark record --pid` completes the trace of a target that died too,
        # and must not take a .mark-stats it cannot read as proof that the
        # trace is complete: recovery runs and names the damaged field.
        p = subprocess.Popen([prog, "waitkill", "100"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env)
        check(p.stdout.readline().strip() == "ready", "tracer_prog did not get ready")
        # Its agent thread starts beside main(): wait until it answers.
        deadline = time.time() + 20
        while subprocess.run([mark, "list", str(p.pid)], capture_output=True, env=env).returncode != 0:
            check(time.time() < deadline, "the agent of tracer_prog never answered `mark list`")
            if failures:
                p.kill()
                return 1
            time.sleep(0.05)
        rec = subprocess.Popen([mark, "record", "--pid", str(p.pid), "-o", d, "-m", "overwrite", "-b", "64k"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        # Recording has begun once mark says so (its first line); a kill
        # before that would only test an aborted start.
        first = rec.stderr.readline()
        if "recording process" not in first:
            p.kill()
            check(False, "mark record --pid did not start (status %s): %s%s"
                  % (rec.wait(), first, rec.stderr.read()))
            return verdict()
        p.stdin.write("go\n")
        p.stdin.flush()
        check(p.stdout.readline().strip() == "fired", "tracer_prog did not fire")
        pdir = proc_dir(d)
        poke(os.path.join(pdir, ".mark-stats"), STATS, "header_size", 0xfffffff8)
        p.kill()
        p.wait()
        err = first + rec.communicate(timeout=40)[1]
        print("mark record --pid exit status %d; stderr:\n%s" % (rec.returncode, err))
        err = err.replace(top, "WORK")
        check(0 <= rec.returncode < 128, "mark record --pid crashed (status %d)" % rec.returncode)
        check(".mark-stats" in err and "header_size" in err,
              "no error naming .mark-stats and header_size: the trace was taken as complete")
        check(rings_of(pdir), "the buffers were deleted although their statistics file is damaged")
        return verdict()
    runs = 10 if case in ("stats_race", "stats_truncate") else 1   # a race: give it several chances
    for i in range(runs):
        if i:
            shutil.rmtree(d)
        r = subprocess.run([mark, "record", "-o", d, "--"] + me, capture_output=True, text=True, env=env,
                           timeout=100)
        if r.returncode < 0 or r.returncode >= 128:
            break
    print("mark record exit status %d; stderr:\n%s" % (r.returncode, r.stderr))
    # The case's name is in the paths: look for field names in the rest only.
    r.stderr = r.stderr.replace(top, "WORK")
    check(r.returncode >= 0 and r.returncode < 128, "mark record crashed (status %d)" % r.returncode)
    pdir = proc_dir(d) if os.path.isdir(d) else d

    if case == "ok":
        check(not rings_of(pdir), "buffer files left after recovery: %s" % rings_of(pdir))
        check("recovered 1 events" in r.stderr and "2001 events written, 0 lost" in r.stderr,
              "not every event recovered: %s" % r.stderr)
    elif case == "ok_wrapped":
        m = re.search(r"recovered (\d+) events.*\n(?:.*\n)*?mark: (\d+) events written, (\d+) lost", r.stderr)
        check(m and int(m.group(1)) > 0 and int(m.group(2)) + int(m.group(3)) == 1000,
              "a wrapped flight-recorder buffer not recovered (kept + lost must be 1000): %s" % r.stderr)
        check(not rings_of(pdir), "buffer files left after recovery: %s" % rings_of(pdir))
    elif case == "ok_large":
        m = re.search(r"recovered (\d+) events.*\n(?:.*\n)*?mark: (\d+) events written, (\d+) lost", r.stderr)
        check(m and int(m.group(1)) > 0 and int(m.group(2)) + int(m.group(3)) == LARGE_EVENTS,
              "a 16 MiB flight-recorder buffer not recovered (kept + lost must be %d): %s" % (LARGE_EVENTS, r.stderr))
        v = subprocess.run([mark, "view", d], capture_output=True, text=True, env=env, timeout=100)
        seq = [int(x) for x in re.findall(r"t_seq: \w+=(\d+)$", v.stdout, re.M)]
        kept = int(m.group(2)) if m else -1
        check(len(seq) == kept, "mark view shows %d t_seq events, the summary says %d were written"
              % (len(seq), kept))
        check(seq == list(range(LARGE_EVENTS - len(seq), LARGE_EVENTS)),
              "the recovered events are not the newest, in order and without a hole (first %s, last %s)"
              % (seq[:3], seq[-3:]))
        print("ok_large: %d newest events of %d recovered in order" % (len(seq), LARGE_EVENTS))
    elif case == "sparse_ring":
        import resource
        rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print("largest process of the run: %.0f MiB" % rss_mib)
        check("recovered 100 events" in r.stderr, "the ring's 100 events not recovered: %s" % r.stderr)
        check(rss_mib < 256, "recovery of a sparse ring whose header says %d bytes took %.0f MiB of memory"
              % (SPARSE_CAPACITY, rss_mib))
        check(not rings_of(pdir), "buffer files left after recovery: %s" % rings_of(pdir))
    elif case == "nobody_ok":
        check("recovered 100 events" in r.stderr, "root did not recover nobody's trace: %s" % r.stderr)
        check(os.path.exists(os.path.join(pdir, "stream-0")), "no stream-0")
        wrong = [f for f in os.listdir(pdir) if os.lstat(os.path.join(pdir, f)).st_uid != os.stat(d).st_uid]
        check(not wrong, "files of nobody's trace that root's recovery left owned by someone else: %s" % wrong)
    elif case == "symlink":
        check(open(victim, "rb").read() == original, "recovery run by root changed %s through a symlink" % victim)
        check(os.stat(victim).st_uid == 0 and (os.stat(victim).st_mode & 0o777) == 0o600,
              "the victim's owner or mode changed")
        check("stream-" in r.stderr and "symbolic link" in r.stderr,
              "no error naming the planted stream-N link: %s" % r.stderr)
    elif case == "pid0":
        pid = int(open(os.path.join(top, "live.pid")).read())
        left = rings_of(pdir)
        os.kill(pid, signal.SIGKILL)
        check(left, "recovery took the buffers of process %d, which was still running" % pid)
        check("pid" in r.stderr and ".mark-stats" in r.stderr,
              "no error naming .mark-stats and its pid field: %s" % r.stderr)
    elif case in ("stats_race", "stats_truncate"):
        check(r.returncode == 0, "mark record failed (status %d)" % r.returncode)
    elif case.startswith("stats_"):
        field = case[len("stats_"):]
        want = {"short": "size"}.get(field, field)
        check(".mark-stats" in r.stderr and want in r.stderr,
              "no error naming .mark-stats and %s: %s" % (want, r.stderr))
        check(rings_of(pdir), "the buffers were deleted although their statistics file is damaged")
    elif case.startswith("ring_"):
        field = case[len("ring_"):]
        bad = open(os.path.join(top, "bad.ring")).read()
        want = {"short": "size"}.get(field, field)
        check(bad in r.stderr and want in r.stderr, "no error naming %s and %s: %s" % (bad, want, r.stderr))
        check(rings_of(pdir) == [bad], "other buffers not recovered, or the bad one deleted: %s" % rings_of(pdir))
        check(os.path.getsize(os.path.join(pdir, "stream-99")) > 0, "the good buffer's stream is empty")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())

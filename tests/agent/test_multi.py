#!/usr/bin/env python3
"""Several processes in one recording, and `mark view --follow` (issue 13 §4).

test_multi.py CASE MARK STEP_TARGET WORKDIR

Every process is tests/agent/step_target.c: it records one multi_step
event per line the test writes to its stdin and answers "done N" after the
event is recorded, so the order of events across processes is decided by
the test through pipes (A's answer arrives before B is asked), never by
sleeps.  Every wait is for a condition, bounded by 30 s (60 s for a whole
command): a bound on a starved machine, not a timing assumption.

pids: `mark record --pid A --pid B -o DIR`: one directory, DIR/pid-A/ and
  DIR/pid-B/; events asked of A, B, A, B are shown by `mark view DIR` in that
  order (one clock: timestamps of two processes compare); babeltrace2 reads
  the whole directory; A exits during the recording (reported; B's later
  events are still recorded); the summary has a line per process and a
  total; a --pid of a process without a mark agent, or of one that records
  already, refuses the whole command, starts no recording and leaves no
  directory.
name: `mark record --name COMM`: every process named COMM (two
  step_targets and a third one with MARK_AGENT=0, which is reported with the
  reason and skipped) records into one directory; a name nothing has is
  refused.  Then the same processes are recorded --detach by name and
  `mark stop --name COMM` stops both (the one without an agent is
  mentioned, not an error).
follow: a detached two-process recording; `mark view --follow DIR`, started
  first, prints each event the test then asks for, in order across the two
  processes, while the recording runs; `mark stop A B` ends the recording and
  follow exits by itself with a summary of the events shown.
follow_rotate: the same for one detached process with --rotate 100ms: its
  stream files are renamed into sealed chunks while follow reads them; each
  event is printed exactly once, in order (the test waits for a new chunk
  directory between events: a condition, not a sleep).
follow_chunks: follow_rotate for 60 chunks, follow limited to 32 open
  descriptors (RLIMIT_NOFILE): it closes each stream file once the file is
  sealed in a chunk and read to its end, so it shows all 60 events, each
  once, in order, with at most a few descriptors open meanwhile.
follow_nofile: eight processes traced through MARK_TRACE, each with an
  event; follow, limited to 8 descriptors (RLIMIT_NOFILE), holds one per
  stream file being written and cannot open them all: it says which file
  it could not open, why (EMFILE) and what to do, and exits 1 instead of
  leaving that file's events out and ending "the recording ended" with 0.
  Then `mark view` of the finished trace with 8 descriptors: the same,
  exit 1 (it showed 3 of the 8 events, exit 0, and blamed a full disk).
follow_exec: a process traced through MARK_TRACE executes itself while
  follow reads its trace: the new image sets the old image's DIR/pid-P/ aside
  (DIR/pid-P.1/) and starts a new DIR/pid-P/; follow shows the events of both
  images, each once, in order, with no error, and exits when it exits.
follow_killed: the followed process is killed (SIGKILL) during a detached
  recording: follow notices it is gone and exits, having shown its events.
follow_damaged: follow of finished traces whose stream file ends in half a
  packet (what a reader can see while a packet is written) prints the
  whole packets and exits 0; a stream whose next packet header is garbage
  is reported, and the other process's events are still shown (exit 1).
controller_killed: `mark record --pid A --pid B` is killed with SIGKILL: both
  processes notice, stop recording (flushing their buffers) and run on; the
  trace holds every event and reads whole.
"""
import os
import queue
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time

BOUND = 30.0


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


class Lines:
    """The lines of a pipe, read by a thread, so that a wait can be bounded."""

    def __init__(self, pipe, name):
        self.q = queue.Queue()
        self.seen = []
        self.name = name
        self.t = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self.t.start()

    def _run(self, pipe):
        for line in pipe:
            self.q.put(line)
        self.q.put(None)

    def rest(self):
        """Once the pipe is closed: every line, the ones not waited for included."""
        self.t.join(timeout=BOUND)
        while True:
            try:
                line = self.q.get_nowait()
            except queue.Empty:
                return self.seen
            if line is not None:
                self.seen.append(line)

    def wait_for(self, pattern, bound=BOUND):
        """The first line from now on matching pattern; fail after bound seconds."""
        deadline = time.monotonic() + bound
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.q.get(timeout=max(left, 0.01))
            except queue.Empty:
                line = ""
            if line is None:
                fail("%s ended before a line matching %r; it said: %r" % (self.name, pattern, self.seen[-20:]))
            if line:
                self.seen.append(line)
                m = re.search(pattern, line)
                if m:
                    return m
            if left <= 0:
                fail("%s: no line matching %r within %g s; it said: %r" % (self.name, pattern, bound,
                                                                              self.seen[-20:]))


class Target:
    def __init__(self, prog, comm, xdg, env_extra=None):
        env = dict(os.environ, XDG_RUNTIME_DIR=xdg)
        env.pop("MARK_TRACE", None)
        if env_extra:
            env.update(env_extra)
        self.p = subprocess.Popen([prog, comm], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.out = Lines(self.p.stdout, "target %s" % comm)
        self.pid = int(self.out.wait_for(r"^ready (\d+)").group(1))
        self.xdg = xdg

    def wait_agent(self):
        sock = os.path.join(self.xdg, "mark", "%d.sock" % self.pid)
        deadline = time.monotonic() + BOUND
        while not os.path.exists(sock):
            if time.monotonic() > deadline:
                fail("no agent socket %s" % sock)
            time.sleep(0.02)

    def step(self, n):
        """Have the process record multi_step n; returns once it is recorded."""
        self.p.stdin.write("%d\n" % n)
        self.p.stdin.flush()
        self.out.wait_for(r"^done %d$" % n)

    def exec_self(self):
        """Have the process execute itself (same pid); returns once the new image runs."""
        self.p.stdin.write("exec\n")
        self.p.stdin.flush()
        if int(self.out.wait_for(r"^ready (\d+)").group(1)) != self.pid:
            fail("the process changed its pid across exec")

    def finish(self):
        """Close its stdin: it exits with status 0 (healthy)."""
        self.p.stdin.close()
        try:
            rc = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("target %d did not exit" % self.pid)
        if rc != 0:
            fail("target %d exited with status %d: %s" % (self.pid, rc, self.p.stderr.read()))


def run(cmd, env, bound=60):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=bound)
    print("$ %s -> %d" % (" ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd)),
                          p.returncode))
    for line in (p.stdout + p.stderr).splitlines():
        print("  | " + line)
    return p


def start_record(mark, args, env):
    """`mark record ARGS` in the background, once it says it records (its
    signal handlers are then in place)."""
    rec = subprocess.Popen([mark, "record"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env)
    err = Lines(rec.stderr, "mark record")
    err.wait_for(r"Ctrl-C stops")
    return rec, err


def steps_in_view(mark, trace, env):
    """The multi_step numbers `mark view DIR` shows, in its order, with their pids."""
    p = run([mark, "view", trace], env)
    if p.returncode != 0:
        fail("mark view %s: exit %d" % (trace, p.returncode))
    return [(int(m.group(2)), int(m.group(1)))
            for m in re.finditer(r" pid (\d+) .*multi_step: \w+=(-?\d+)", p.stdout)]


def babeltrace_steps(trace):
    if not shutil.which("babeltrace2"):
        skip("babeltrace2 is not installed")
    p = subprocess.run(["babeltrace2", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail("babeltrace2 %s failed: %s" % (trace, p.stderr[-2000:]))
    return [int(m.group(1)) for m in re.finditer(r"multi_step: .*?\{ n = (-?\d+)", p.stdout)]


def check_trace(mark, trace, env, pids, want):
    """DIR holds one sub-trace per process and the events `want` in order."""
    for pid in pids:
        if not os.path.isfile(os.path.join(trace, "pid-%d" % pid, "metadata")):
            fail("no sub-trace %s/pid-%d/ (has %s)" % (trace, pid, sorted(os.listdir(trace))))
    got = steps_in_view(mark, trace, env)
    if [n for n, _ in got] != [n for n, _ in want]:
        fail("mark view shows steps %r, expected %r (in this order)" % (got, want))
    if got != want:
        fail("mark view shows the steps from processes %r, expected %r" % (got, want))
    bt = babeltrace_steps(trace)
    if bt != [n for n, _ in want]:
        fail("babeltrace2 shows steps %r, expected %r" % (bt, [n for n, _ in want]))


def two_targets(prog, comm, xdg, targets):
    """Two step_targets named comm, their agents listening (added to targets)."""
    a, b = Target(prog, comm, xdg), Target(prog, comm, xdg)
    targets += [a, b]
    a.wait_agent()
    b.wait_agent()
    return a, b


def record_two(mark, a, b, trace, env):
    """`mark record --pid A --pid B -e multi_step -o TRACE` in the background."""
    return start_record(mark, ["--pid", str(a.pid), "--pid", str(b.pid), "-e", "multi_step", "-o", trace], env)


def start_rotating(mark, prog, comm, xdg, trace, env, targets):
    """A target recorded detached into trace, a chunk cut every 100 ms."""
    a = Target(prog, comm, xdg)
    targets.append(a)
    a.wait_agent()
    p = run([mark, "record", "--pid", str(a.pid), "-e", "multi_step", "--detach", "--rotate", "100ms",
             "-o", trace], env)
    if p.returncode != 0:
        fail("mark record --detach --rotate 100ms: exit %d" % p.returncode)
    return a


def start_follow(mark, trace, env, holdback, nofile=None):
    """`mark view --follow --holdback HOLDBACK TRACE` in the background
    (with at most NOFILE descriptors if given): (process, stdout lines,
    stderr lines)."""
    def limit():
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    fol = subprocess.Popen([mark, "view", "--follow", "--holdback", holdback, trace], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env, preexec_fn=limit)
    return fol, Lines(fol.stdout, "mark view --follow"), Lines(fol.stderr, "mark view --follow (stderr)")


def follow_exit(fol, ferr, why):
    """Wait (bounded) for follow to exit by itself after `why`: (status, its stderr)."""
    try:
        rc = fol.wait(timeout=BOUND)
    except subprocess.TimeoutExpired:
        fol.kill()
        fail("mark view --follow did not exit when " + why)
    said = "".join(ferr.rest())
    print("follow said:\n  " + said)
    return rc, said


def main():
    case, mark, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    xdg = os.path.join(work, "xdg")
    os.makedirs(xdg, mode=0o700)
    os.chmod(xdg, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=xdg)
    env.pop("MARK_TRACE", None)
    trace = os.path.join(work, "trace")
    # A name no other test's process has: --name looks at every process.
    comm = "mt%d%s" % (os.getpid() % 100000, case[:4])
    targets = []
    try:
        if case == "pids":
            a, b = two_targets(prog, comm, xdg, targets)
            # A process without an agent among the --pid: nothing starts.
            p = run([mark, "record", "--pid", str(a.pid), "--pid", str(os.getpid()), "-o", trace, "-d", "1"],
                    env)
            if p.returncode != 1 or "%d" % os.getpid() not in p.stderr:
                fail("a --pid without an agent: exit %d, expected 1 naming it" % p.returncode)
            if os.path.exists(os.path.join(trace, "pid-%d" % a.pid)):
                fail("a refused multi-process recording still started process %d's" % a.pid)
            # B records already (detached): the command is refused before
            # anything starts, with the reason, and leaves no directory.
            # Before, A's recording was started, then ended with the
            # command, leaving its partial trace in DIR (so a second try
            # with the same -o was refused: "already holds a trace").
            busy = os.path.join(work, "busy")
            p = run([mark, "record", "--pid", str(b.pid), "--detach", "-e", "multi_step", "-o", busy], env)
            if p.returncode != 0:
                fail("mark record --pid B --detach: exit %d" % p.returncode)
            p = run([mark, "record", "--pid", str(a.pid), "--pid", str(b.pid), "-o", trace, "-d", "1"], env)
            if p.returncode != 1 or not re.search(r"process %d\b.* is already recording, detached, into %s"
                                                  % (b.pid, re.escape(busy)), p.stderr):
                fail("a --pid that records already: exit %d, expected 1 saying so" % p.returncode)
            if os.path.exists(trace):
                fail("a multi-process recording refused because process %d records already left %s "
                     "(holding %r)" % (b.pid, trace, sorted(os.listdir(trace))))
            p = run([mark, "stop", str(b.pid)], env)
            if p.returncode != 0:
                fail("mark stop B: exit %d" % p.returncode)
            rec, err = record_two(mark, a, b, trace, env)
            a.step(1)
            b.step(2)
            a.step(3)
            b.step(4)
            a.finish()   # exits during the recording
            err.wait_for(r"process %d .*exited during the recording" % a.pid)
            b.step(5)
            rec.send_signal(signal.SIGINT)
            rc = rec.wait(timeout=60)
            err.rest()
            print("mark record said:\n  " + "  ".join(err.seen))
            if rc != 0:
                fail("mark record --pid A --pid B: exit %d" % rc)
            said = "".join(err.seen)
            for pid, n in ((a.pid, 2), (b.pid, 3)):
                if not re.search(r"process %d .*: %d events written" % (pid, n), said):
                    fail("the summary has no line 'process %d ...: %d events written'" % (pid, n))
            if not re.search(r"total: 5 events written, 0 lost.* from 2 processes", said):
                fail("the summary has no total of 5 events from 2 processes")
            check_trace(mark, trace, env, [a.pid, b.pid],
                        [(1, a.pid), (2, b.pid), (3, a.pid), (4, b.pid), (5, b.pid)])
            b.finish()
        elif case == "name":
            a, b = Target(prog, comm, xdg), Target(prog, comm, xdg)
            c = Target(prog, comm, xdg, {"MARK_AGENT": "0"})
            targets += [a, b, c]
            a.wait_agent()
            b.wait_agent()
            p = run([mark, "record", "--name", comm + "x", "-o", trace, "-d", "1"], env)
            if p.returncode != 1 or "no process" not in p.stderr:
                fail("--name matching nothing: exit %d, expected 1 with 'no process'" % p.returncode)
            rec, err = start_record(mark, ["--name", comm, "-e", "multi_step", "-o", trace], env)
            said = "".join(err.seen)
            a.step(1)
            b.step(2)
            c.step(3)    # not recorded: no agent
            a.step(4)
            rec.send_signal(signal.SIGINT)
            rc = rec.wait(timeout=60)
            err.rest()
            said = "".join(err.seen)
            print("mark record said:\n  " + "  ".join(err.seen))
            if rc != 0:
                fail("mark record --name: exit %d" % rc)
            if not re.search(r"process %d .*has no mark agent" % c.pid, said) or \
               not re.search(r"process %d skipped" % c.pid, said):
                fail("process %d without an agent was not reported as skipped with the reason" % c.pid)
            if os.path.exists(os.path.join(trace, "pid-%d" % c.pid)):
                fail("a sub-trace for the process without an agent")
            check_trace(mark, trace, env, [a.pid, b.pid], [(1, a.pid), (2, b.pid), (4, a.pid)])
            # Detached by name, stopped by name (c, without an agent, is only mentioned).
            trace2 = os.path.join(work, "trace2")
            p = run([mark, "record", "--name", comm, "-e", "multi_step", "--detach", "-o", trace2], env)
            if p.returncode != 0:
                fail("mark record --name --detach: exit %d" % p.returncode)
            a.step(5)
            b.step(6)
            p = run([mark, "stop", "--name", comm], env)
            if p.returncode != 0 or len(re.findall(r"stopped the recording of process", p.stderr)) != 2 or \
               not re.search(r"process %d skipped" % c.pid, p.stderr):
                fail("mark stop --name: exit %d, expected 0, two recordings stopped, %d skipped" % (p.returncode,
                                                                                                    c.pid))
            check_trace(mark, trace2, env, [a.pid, b.pid], [(5, a.pid), (6, b.pid)])
            p = run([mark, "stop", "--name", comm + "x"], env)
            if p.returncode != 1 or "no process" not in p.stderr:
                fail("mark stop --name matching nothing: exit %d, expected 1" % p.returncode)
            for t in (a, b, c):
                t.finish()
        elif case == "follow":
            a, b = two_targets(prog, comm, xdg, targets)
            p = run([mark, "record", "--pid", str(a.pid), "--pid", str(b.pid), "-e", "multi_step", "--detach",
                     "-o", trace], env)
            if p.returncode != 0:
                fail("mark record --detach of two processes: exit %d" % p.returncode)
            # A hold-back of 3 s: on a loaded machine a consumer may write a
            # little late; the order is what is checked, not the speed.
            fol, out, ferr = start_follow(mark, trace, env, "3")
            # Two events at a time, from the two processes, before follow is
            # read: whichever process's consumer writes first, follow must
            # hold the later event back until the earlier one has arrived.
            for pair in (((a, 1), (b, 2)), ((b, 3), (a, 4)), ((a, 5), (b, 6))):
                for t, n in pair:
                    t.step(n)
                for t, n in pair:
                    # Shown while the recording runs, in order across the processes.
                    m = out.wait_for(r"multi_step: \w+=(-?\d+)")
                    if int(m.group(1)) != n:
                        fail("follow printed step %s where %d was expected: %r" % (m.group(1), n, out.seen))
                    if " pid %d " % t.pid not in m.string:
                        fail("follow printed step %d without its process %d: %r" % (n, t.pid, m.string))
            if fol.poll() is not None:
                fail("follow exited while the recording runs")
            p = run([mark, "stop", str(a.pid), str(b.pid)], env)
            if p.returncode != 0:
                fail("mark stop A B: exit %d" % p.returncode)
            rc, said = follow_exit(fol, ferr, "the recording stopped")
            if rc != 0:
                fail("mark view --follow: exit %d" % rc)
            if not re.search(r"6 events shown", said):
                fail("follow's summary does not say 6 events shown")
            check_trace(mark, trace, env, [a.pid, b.pid],
                        [(1, a.pid), (2, b.pid), (3, b.pid), (4, a.pid), (5, a.pid), (6, b.pid)])
            # On a finished trace, follow prints it all and exits at once.
            p = run([mark, "view", "--follow", trace], env)
            if p.returncode != 0 or len(re.findall("multi_step:", p.stdout)) != 6:
                fail("follow of a finished trace: exit %d, expected 0 and the 6 events" % p.returncode)
            a.finish()
            b.finish()
        elif case == "follow_rotate":
            a = start_rotating(mark, prog, comm, xdg, trace, env, targets)
            fol, out, ferr = start_follow(mark, trace, env, "0.2")

            def chunks():
                return sorted(d for d in os.listdir(trace) if ".chunk-" in d)
            for n in range(1, 5):
                before = chunks()
                a.step(n)
                m = out.wait_for(r"multi_step: \w+=(-?\d+)")
                if int(m.group(1)) != n:
                    fail("follow printed step %s where %d was expected: %r" % (m.group(1), n, out.seen))
                # The event's stream is sealed into a chunk before the next one.
                deadline = time.monotonic() + BOUND
                while len(chunks()) <= len(before):
                    if time.monotonic() > deadline:
                        fail("no new chunk within %g s (have %r)" % (BOUND, chunks()))
                    time.sleep(0.02)
            p = run([mark, "stop", str(a.pid)], env)
            if p.returncode != 0:
                fail("mark stop: exit %d" % p.returncode)
            rc, said = follow_exit(fol, ferr, "the recording stopped")
            shown = [int(x) for x in re.findall(r"multi_step: \w+=(-?\d+)", "".join(out.rest()))]
            if rc != 0 or shown != [1, 2, 3, 4] or "4 events shown" not in said:
                fail("follow across chunks: exit %d, steps %r (each once expected), %r" % (rc, shown, said))
            a.finish()
        elif case == "follow_chunks":
            a = start_rotating(mark, prog, comm, xdg, trace, env, targets)
            fol, out, ferr = start_follow(mark, trace, env, "0.2", nofile=32)

            def chunks():
                return [d for d in os.listdir(trace) if ".chunk-" in d]
            most = 0
            for n in range(1, 61):
                before = len(chunks())
                a.step(n)
                # A chunk holding the event, so that each event has a stream file of its own.
                deadline = time.monotonic() + BOUND
                while len(chunks()) <= before:
                    if time.monotonic() > deadline:
                        fail("no new chunk within %g s (have %r)" % (BOUND, chunks()))
                    time.sleep(0.02)
                try:
                    most = max(most, len(os.listdir("/proc/%d/fd" % fol.pid)))
                except OSError:
                    fail("follow exited while the recording runs: %r" % ferr.rest())
            out.wait_for(r"multi_step: \w+=60\b")
            p = run([mark, "stop", str(a.pid)], env)
            if p.returncode != 0:
                fail("mark stop: exit %d" % p.returncode)
            rc, said = follow_exit(fol, ferr, "the recording stopped")
            shown = [int(x) for x in re.findall(r"multi_step: \w+=(-?\d+)", "".join(out.rest()))]
            if rc != 0 or shown != list(range(1, 61)) or "60 events shown" not in said:
                fail("follow across 60 chunks with 32 descriptors: exit %d, steps %r (1..60 each once expected), %r"
                     % (rc, shown, said))
            print("follow had at most %d descriptors open" % most)
            if most > 16:
                fail("follow held %d descriptors open (one per stream file it read?)" % most)
            a.finish()
        elif case == "follow_nofile":
            many = [Target(prog, comm, xdg, {"MARK_TRACE": trace, "MARK_ENABLE": "multi_step"})
                    for _ in range(8)]
            targets += many
            for n, t in enumerate(many, 1):
                t.step(n)
            fol, out, ferr = start_follow(mark, trace, env, "0.2", nofile=8)
            # Follow has exited (it could not open a stream file) or printed an event.
            deadline = time.monotonic() + BOUND
            while fol.poll() is None and out.q.empty():
                if time.monotonic() > deadline:
                    fail("follow neither printed an event nor exited within %g s" % BOUND)
                time.sleep(0.02)
            for t in many:
                t.finish()
            rc, said = follow_exit(fol, ferr, "the processes exited")
            shown = [int(x) for x in re.findall(r"multi_step: \w+=(-?\d+)", "".join(out.rest()))]
            if len(shown) == len(many):
                fail("follow with 8 descriptors showed all %d events: the limit did not bind" % len(many))
            if rc == 0 or "the recording ended" in said:
                fail("follow with 8 descriptors showed %d of %d events, exit %d, and said %r: the other "
                     "processes' events were left out in silence" % (len(shown), len(many), rc, said))
            if not re.search(r"cannot open %s/pid-\d+\S*: Too many open files" % re.escape(trace), said) or \
               "ulimit -n" not in said or "not shown" not in said:
                fail("follow did not say which file it could not open, why and what to do: %r" % said)
            # The finished trace, read whole with as few descriptors.
            v = subprocess.run([mark, "view", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, timeout=60,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8)))
            shown = re.findall(r"multi_step: ", v.stdout)
            print("mark view with 8 descriptors: exit %d, %d events; it said:\n  %s" % (v.returncode, len(shown),
                                                                                       v.stderr))
            if len(shown) == len(many):
                fail("mark view with 8 descriptors showed all %d events: the limit did not bind" % len(many))
            if v.returncode == 0 or \
               not re.search(r"cannot open %s/pid-\d+/\S+: Too many open files" % re.escape(trace), v.stderr) or \
               "ulimit -n" not in v.stderr:
                fail("mark view with 8 descriptors showed %d of %d events, exit %d, without saying which file it "
                     "could not open, why and what to do: %r" % (len(shown), len(many), v.returncode, v.stderr))
        elif case == "follow_exec":
            a = Target(prog, comm, xdg, {"MARK_TRACE": trace, "MARK_ENABLE": "multi_step"})
            targets.append(a)
            a.step(1)
            live = os.path.join(trace, "pid-%d" % a.pid)
            fol, out, ferr = start_follow(mark, trace, env, "0.2")
            # Printed: follow has opened the old image's stream file in DIR/pid-P/.
            out.wait_for(r"multi_step: \w+=1\b")
            a.exec_self()
            if not os.path.isfile(os.path.join(trace, "pid-%d.1" % a.pid, "metadata")):
                fail("the new image did not set the old trace aside in pid-%d.1 (have %r)"
                     % (a.pid, sorted(os.listdir(trace))))
            a.step(2)
            a.step(3)
            # The new image's stream file: wait for its packets, then for follow.
            deadline = time.monotonic() + BOUND
            while not any(f.startswith("stream-") and os.path.getsize(os.path.join(live, f)) > 0
                          for f in os.listdir(live)):
                if time.monotonic() > deadline:
                    fail("the new image wrote no stream file in %s within %g s" % (live, BOUND))
                time.sleep(0.02)
            a.finish()
            rc, said = follow_exit(fol, ferr, "the process exited")
            shown = [int(x) for x in re.findall(r"multi_step: \w+=(-?\d+)", "".join(out.rest()))]
            if rc != 0 or shown != [1, 2, 3] or "3 events shown" not in said or "cannot read" in said:
                fail("follow across an exec: exit %d, steps %r (1, 2, 3 expected, each once), %r"
                     % (rc, shown, said))
            if steps_in_view(mark, trace, env) != [(1, a.pid), (2, a.pid), (3, a.pid)]:
                fail("mark view of the finished trace does not show steps 1, 2, 3")
        elif case == "follow_killed":
            a = Target(prog, comm, xdg)
            targets.append(a)
            a.wait_agent()
            p = run([mark, "record", "--pid", str(a.pid), "-e", "multi_step", "--detach", "-o", trace], env)
            if p.returncode != 0:
                fail("mark record --detach: exit %d" % p.returncode)
            fol, out, ferr = start_follow(mark, trace, env, "0.2")
            a.step(1)
            out.wait_for(r"multi_step: \w+=1\b")
            a.p.kill()
            a.p.wait()
            rc, said = follow_exit(fol, ferr, "the process was killed")
            if rc != 0 or "1 events shown" not in said or "mark recover" not in said:
                fail("follow of a killed process: exit %d, %r (expected 0, 1 event, a hint to mark recover)"
                     % (rc, said))
        elif case == "follow_damaged":
            a, b = two_targets(prog, comm, xdg, targets)
            rec, err = record_two(mark, a, b, trace, env)
            for n in range(1, 4):
                a.step(n)
                b.step(10 + n)
            rec.send_signal(signal.SIGINT)
            if rec.wait(timeout=60) != 0:
                fail("mark record: exit %d: %r" % (rec.returncode, err.rest()))
            sa = os.path.join(trace, "pid-%d" % a.pid, "stream-0")
            sb = os.path.join(trace, "pid-%d" % b.pid, "stream-0")
            good = open(sa, "rb").read()
            # Half of a copy of its first packet: a packet still being written.
            size = int.from_bytes(good[56:64], "little") // 8
            with open(sa, "ab") as f:
                f.write(good[:size // 2])
            p = run([mark, "view", "--follow", trace], env, bound=BOUND)
            shown = [int(x) for x in re.findall(r"multi_step: \w+=(-?\d+)", p.stdout)]
            if p.returncode != 0 or shown != [1, 11, 2, 12, 3, 13]:
                fail("follow with half a packet at the end: exit %d, steps %r" % (p.returncode, shown))
            # A whole "packet" of garbage after B's packets: reported, A still shown.
            with open(sb, "ab") as f:
                f.write(b"\xff" * 4096)
            p = run([mark, "view", "--follow", trace], env, bound=BOUND)
            shown = [int(x) for x in re.findall(r"multi_step: \w+=(-?\d+)", p.stdout)]
            if p.returncode != 1 or "bad packet magic" not in p.stderr or sorted(shown) != [1, 2, 3, 11, 12, 13]:
                fail("follow with a garbage packet: exit %d, steps %r" % (p.returncode, shown))
            a.finish()
            b.finish()
        elif case == "controller_killed":
            a, b = two_targets(prog, comm, xdg, targets)
            rec, err = record_two(mark, a, b, trace, env)
            a.step(1)
            b.step(2)
            rec.kill()
            rec.wait(timeout=60)
            # Both processes notice the lost controller and stop recording.
            deadline = time.monotonic() + BOUND
            while True:
                p = run([mark, "ps"], env)
                rows = [l for l in p.stdout.splitlines() if re.match(r"\s*(%d|%d)\s" % (a.pid, b.pid), l)]
                if len(rows) == 2 and all(" yes " not in l for l in rows):
                    break
                if time.monotonic() > deadline:
                    fail("the processes still record after their controller was killed: %r" % rows)
                time.sleep(0.1)
            a.step(3)   # not recorded: the recording is over
            check_trace(mark, trace, env, [a.pid, b.pid], [(1, a.pid), (2, b.pid)])
            a.finish()
            b.finish()
        else:
            fail("unknown case " + case)
    finally:
        for t in targets:
            if t.p.poll() is None:
                t.p.kill()
                t.p.wait()
    print("PASS")


main()

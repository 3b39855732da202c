#!/usr/bin/env python3
"""libmark never holds a lock that fork() takes while it writes to stderr.
The agent's descriptor lock (found by a review):  tests/agent/stderr_full_target.c runs with stderr a
full pipe that nobody reads and every descriptor taken; `mark list PID`
connects, the agent cannot accept (EMFILE) and logs that once, and the
write blocks.  Then the program forks.  fork() runs the agent's prepare
handler, which takes the lock: it used to wait for the write, for ever
(until someone read the pipe).  Now it must return at once; the bound is
20 s on a starved machine, where it takes milliseconds.  With `dlopen LIB`
the warning is the registry's: a thread loads a library whose marker
descriptor has a wrong ABI, libmark warns while it registers it, and the
program forks (the registry lock is in fork's prepare handler).

    test_stderr_full.py MARK TARGET WORKDIR [dlopen LIB]
"""
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time

mark, target, work = sys.argv[1:4]
extra = sys.argv[4:]
blocked_thread = "dlopener" if extra else "mark-agent"
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work, mode=0o700)
xdg = os.path.join(work, "xdg")
os.makedirs(xdg, mode=0o700)
env = dict(os.environ, XDG_RUNTIME_DIR=xdg, MARK_AGENT="1")
for k in ("MARK_TRACE", "MARK_ENABLE"):
    env.pop(k, None)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


r, w = os.pipe()
flags = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, flags | os.O_NONBLOCK)
try:
    while True:
        os.write(w, b"x" * 4096)
except BlockingIOError:
    pass
fcntl.fcntl(w, fcntl.F_SETFL, flags)   # the program's writes block, as on a real full pipe
out_path = os.path.join(work, "target.out")
out = open(out_path, "w+")
p = subprocess.Popen([target] + extra, stdout=out, stderr=w, env=env)
failed = []
lister = None
try:
    deadline = time.monotonic() + 30
    while "ready" not in open(out_path).read():
        if p.poll() is not None or time.monotonic() > deadline:
            failed.append("the target did not get ready: %r" % open(out_path).read())
            raise StopIteration
        time.sleep(0.05)
    sock = os.path.join(xdg, "mark", "%d.sock" % p.pid)
    if not extra:
        if not os.path.exists(sock):
            skip("the target has no agent socket at %s (the agent cannot listen here)" % sock)
        lister = subprocess.Popen([mark, "list", str(p.pid)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=env)
    # Wait until the agent thread is blocked writing its line to the full pipe.
    agent_blocked = False
    deadline = time.monotonic() + 20
    while not agent_blocked and time.monotonic() < deadline:
        for t in os.listdir("/proc/%d/task" % p.pid):
            try:
                comm = open("/proc/%d/task/%s/comm" % (p.pid, t)).read().strip()
                wchan = open("/proc/%d/task/%s/wchan" % (p.pid, t)).read().strip()
            except OSError:
                continue
            if comm == blocked_thread and "pipe" in wchan:
                agent_blocked = True
        time.sleep(0.05)
    if not agent_blocked:
        skip("thread %s was never seen blocked writing to the full pipe (wchan not available?)" % blocked_thread)
    os.kill(p.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 20
    while "fork took" not in open(out_path).read() and time.monotonic() < deadline:
        time.sleep(0.05)
    text = open(out_path).read()
    print(text.strip())
    if "fork took" not in text:
        failed.append("the program's fork() did not return within 20 s while %s's stderr write "
                      "blocked (it waited for a lock held across the write)" % blocked_thread)
except StopIteration:
    pass
finally:
    # Drain the pipe so that everything can finish, then reap.
    os.set_blocking(r, False)
    try:
        while os.read(r, 1 << 16):
            pass
    except BlockingIOError:
        pass
    for proc in (lister, p):
        if proc and proc.poll() is None:
            proc.kill()
        if proc:
            proc.wait()
if failed:
    for f in failed:
        print("FAIL: " + f)
    sys.exit(1)
print("ok")

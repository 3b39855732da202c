#!/usr/bin/python3
"""Root's `mark ps` must never remove files outside the socket directory it checked.

usage: test_ps_race.py MARK

`mark ps` as root looks in every user's /tmp/mark-* directory and removes
stale sockets there.  The user owns that directory, so between mark's checks
and its unlinks they can swap it (renameat2 RENAME_EXCHANGE) for a symbolic
link to a directory of root's: a mark that checks one name and then removes
by path deletes root's files.

Phase 1 (deterministic): user nobody fills the directory with sockets of
dead processes (stale: ps removes them) and two listening sockets of live
processes (pid 1 and the helper) whose accept queue is full, so that a
blocking connect() to them waits.  A mark that probes by path blocks there,
in the middle of its listing; the test sees that in /proc/PID/syscall, has
the helper swap the directory for a link to a root-only "victim" directory
that holds files with the same names, and then lets the connect finish.
Every victim file must survive.  (A mark that probes without waiting never
blocks: then the victims must survive just the same.)

Phase 2 (a race, bounded to a few seconds): nobody swaps the directory and
the link in a loop while root runs `mark ps -q` over and over, as the
audit's reproducer does.  The victims must survive.

Needs root and the user nobody: else it prints "SKIP: ..." and exits 77.
"""
import ctypes
import os
import platform
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# connect(2)'s number, to see in /proc/PID/syscall that mark waits in it.
CONNECT_NR = {"x86_64": 42, "aarch64": 203, "riscv64": 203, "i686": 362, "i386": 362}

# The helper, run as nobody.  Commands on stdin, one per line:
#   setup DIR LINK VICTIM NAMES...   make DIR (0700), the link LINK -> VICTIM,
#                                    a stale socket for each name in DIR,
#                                    and the two full listening sockets
#   swap                             exchange DIR and LINK, then accept
#                                    (so that a waiting connect finishes)
#   close                            close every socket (a connect to
#                                    them is refused from now on)
#   exchange                         exchange DIR and LINK once
#   loop SECONDS                     exchange DIR and LINK as fast as possible
# It answers "ok ..." or "error ..." on stdout.
HELPER = r'''
import ctypes, os, select, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2
AT_FDCWD = -100
def exchange(a, b):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "renameat2(%s, %s, RENAME_EXCHANGE): %s" % (a, b, os.strerror(e)))
def say(s):
    sys.stdout.write(s + "\n"); sys.stdout.flush()
keep = []
listeners = []
d = l = None
while True:
    line = sys.stdin.readline()
    if not line:
        break
    w = line.split()
    if not w:
        continue
    try:
        if w[0] == "setup":
            d, l, victim, names = w[1], w[2], w[3], w[4:]
            os.mkdir(d, 0o700)
            os.symlink(victim, l)
            half = len(names) // 2
            def stale(names):
                for n in names:
                    s = socket.socket(socket.AF_UNIX)
                    s.bind(os.path.join(d, n))
                    keep.append(s)   # bound, never listening: connect is refused
            # The stale names before and after the full sockets, whatever
            # order the file system lists them in.
            stale(names[:half])
            for pid in (1, os.getpid()):
                s = socket.socket(socket.AF_UNIX)
                s.bind(os.path.join(d, "%d.sock" % pid))
                s.listen(0)
                c = socket.socket(socket.AF_UNIX)
                c.setblocking(False)
                c.connect(os.path.join(d, "%d.sock" % pid))   # fills the queue
                keep.append(c)
                listeners.append(s)
            stale(names[half:])
            say("ok")
        elif w[0] == "swap":
            exchange(d, l)
            say("ok swapped")
            # Accept for a while, so that any connect waiting finishes.
            end = time.time() + 5
            while time.time() < end:
                r, _, _ = select.select(listeners, [], [], 0.05)
                for s in r:
                    keep.append(s.accept()[0])
                if select.select([sys.stdin], [], [], 0)[0]:
                    break
        elif w[0] == "close":
            for s in listeners + keep:
                s.close()
            listeners, keep = [], []
            say("ok")
        elif w[0] == "exchange":
            exchange(d, l)
            say("ok")
        elif w[0] == "loop":
            end = time.time() + float(w[1])
            n = 0
            while time.time() < end:
                for _ in range(200):
                    exchange(d, l)
                    n += 1
            if n % 2:
                exchange(d, l)   # back as it was
            say("ok %d swaps" % n)
        elif w[0] == "quit":
            break
    except OSError as e:
        say("error %s" % e)
'''


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_ps_race.py MARK")
    mark = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip("needs root (the defect is root's `mark ps` in another user's directory)")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        skip("there is no user nobody")
    if not hasattr(ctypes.CDLL(None), "renameat2"):
        skip("the C library has no renameat2")
    machine = platform.machine()
    connect_nr = CONNECT_NR.get(machine)

    base = tempfile.mkdtemp(prefix="test_ps_race.")          # root's, 0700
    victim = os.path.join(base, "victim")
    os.mkdir(victim, 0o700)
    tag = "%d.%d" % (os.getpid(), int(time.time() * 1000) % 100000)
    sockdir = "/tmp/mark-psrace.%s" % tag                     # a directory `mark ps` looks in as root
    link = "/tmp/psrace-link.%s" % tag
    # Pids that cannot exist (above pid_max): their sockets are stale.
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    names = []
    for k in range(12):
        names.append("%d.sock" % (pid_max + 1000 + k))
        names.append(".%d.%08x.tmp" % (pid_max + 2000 + k, k))
    for n in names:
        open(os.path.join(victim, n), "w").close()            # root's files

    def drop():
        os.setgid(nobody.pw_gid)
        os.setgroups([])
        os.setuid(nobody.pw_uid)

    helper = subprocess.Popen(["/usr/bin/python3", "-c", HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, preexec_fn=drop, cwd="/")
    ps = None
    failures = []

    def ask(cmd, timeout=30):
        helper.stdin.write(cmd + "\n")
        helper.stdin.flush()
        line = helper.stdout.readline().strip()
        if not line.startswith("ok"):
            fail("the helper (as nobody) could not do \"%s\": %s" % (cmd.split()[0], line or "it exited"))
        return line

    def missing():
        return [n for n in names if not os.path.lexists(os.path.join(victim, n))]

    try:
        ask("setup %s %s %s %s" % (sockdir, link, victim, " ".join(names)))

        # ---- phase 1: the swap while mark is in the middle of its listing ----
        ps = subprocess.Popen([mark, "ps", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        blocked = False
        deadline = time.time() + 10
        while time.time() < deadline and ps.poll() is None:
            try:
                nr = open("/proc/%d/syscall" % ps.pid).read().split()[0]
            except (OSError, IndexError):
                nr = ""
            if connect_nr is not None and nr == str(connect_nr):
                # Still in connect() a moment later: it waits on a full socket.
                time.sleep(0.2)
                try:
                    again = open("/proc/%d/syscall" % ps.pid).read().split()[0]
                except (OSError, IndexError):
                    again = ""
                if again == str(connect_nr):
                    blocked = True
                    break
            time.sleep(0.01)
        if blocked:
            ask("swap")
        try:
            out, err = ps.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            ps.kill()
            out, err = ps.communicate()
            failures.append("phase 1: `mark ps -q` did not finish within 15 s (stderr: %s)" % err.strip())
        if blocked:
            # End the helper's accepting, and put the directory back under
            # its name for phase 2.
            helper.stdin.write("stop\n")
            helper.stdin.flush()
            ask("exchange")
        gone = missing()
        stale_left = [n for n in names if os.path.lexists(os.path.join(sockdir, n))]
        print("phase 1: mark %s in connect() on a full socket%s; %d of %d stale sockets of dead processes "
              "removed from %s" % ("waited" if blocked else "did not wait",
                                    " (the directory was swapped for a link to %s meanwhile)" % victim
                                    if blocked else "",
                                    len(names) - len(stale_left), len(names), sockdir))
        if gone:
            failures.append("phase 1: root's `mark ps -q` deleted %s in the root-only directory %s, reached "
                            "through the link %s swapped in while it listed the directory"
                            % (", ".join(gone), victim, sockdir))
        elif not blocked and len(stale_left) == len(names):
            skip("`mark ps` did not look at %s (it neither waited on its sockets nor removed the stale "
                 "ones): cannot test here (too many /tmp/mark-* directories?)" % sockdir)
        # Recreate what phase 1 took, so that phase 2 starts whole.
        for n in gone:
            open(os.path.join(victim, n), "w").close()

        # ---- phase 2: the audit's race, for a bounded time ----
        # Without the full sockets: this phase is about the swap alone.
        ask("close")
        if os.path.islink(sockdir):
            fail("internal: %s is still the link after phase 1" % sockdir)
        helper.stdin.write("loop 6\n")
        helper.stdin.flush()
        runs = 0
        gone2 = []
        end = time.time() + 6
        while time.time() < end:
            try:
                subprocess.run([mark, "ps", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5)
            except subprocess.TimeoutExpired:
                failures.append("phase 2: `mark ps -q` did not finish within 5 s")
                break
            runs += 1
            gone2 = missing()
            if gone2:
                break
        line = helper.stdout.readline().strip()
        print("phase 2: %d runs of `mark ps -q` while nobody swapped %s and a link to %s (%s)"
              % (runs, sockdir, victim, line))
        if gone2:
            failures.append("phase 2: after %d runs of root's `mark ps -q` while nobody swapped %s with a "
                            "link to %s, these files of root's are gone: %s"
                            % (runs, sockdir, victim, ", ".join(gone2)))
    finally:
        if ps and ps.poll() is None:
            ps.kill()
        try:
            helper.stdin.write("quit\n")
            helper.stdin.flush()
        except OSError:
            pass
        try:
            helper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()
        # Only what this test made: the directory, the link, and its own base.
        for p in (sockdir, link):
            if os.path.islink(p):
                os.unlink(p)
            elif os.path.isdir(p):
                shutil.rmtree(p)
        shutil.rmtree(base)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASS: root's files survived every run of `mark ps`")
    sys.exit(0)


main()

#!/usr/bin/env python3
"""fake_agent.py PATH [MODE]: a socket that pretends to be a mark agent.

Without MODE, as an attacker (or another process that happens to have the
same pid number in another pid namespace) would plant it: prints
"listening", then for each client "connected" and, when it leaves,
"received N bytes".  Never answers.

With MODE, a hostile agent that the client reaches as the real agent of
this process: "%p" in PATH is replaced by this process's pid (so the
client's owner and SO_PEERCRED checks pass when PATH is
$SOCKDIR/%p.sock).  It answers every request (INFO, LIST, TRACE_START,
...) with well-formed replies, served one client at a time, except:
  flood      LIST -> MARKER messages (small ones) without end, never LIST_END
  flood_big  the same with 3000-byte formats (the byte limit, not the count)
  drip       LIST -> one whole MARKER every 0.5 s, never LIST_END: each
             message comes in time, the reply never ends
  trickle    every reply is sent one byte every DELAY s (default 0.5)
  deaf       accepts and never reads nor answers (its socket buffer fills)
  stray      after its OK to TRACE_START, one byte that no request asked for
  info_dir   INFO names the trace directory $FAKE_DIR as its recording's
             (a process may name any directory: mark list must read the
             hits only from one the process owns)
"""
import os
import socket
import struct
import sys
import time

# Message types and tags of src/agent/protocol.h.
OK, INFO_REPLY, MARKER, LIST_END, STATS = 64, 66, 67, 68, 69
INFO, LIST, TRACE_START, TRACE_STOP, TRACE_STATS = 1, 2, 5, 6, 7


def field_u64(tag, v):
    return struct.pack('<HIQ', tag, 8, v)


def field_str(tag, s):
    b = s.encode() + b'\0'
    return struct.pack('<HI', tag, len(b)) + b


def msg(t, payload=b''):
    return b'MARK' + struct.pack('<HHI', 1, t, len(payload)) + payload


def info_reply(mode=None):
    # PID CMDLINE MARKERS SITES ARMED TRACING(off) [DIR]
    extra = field_str(2, os.environ['FAKE_DIR']) if mode == 'info_dir' else b''
    return msg(INFO_REPLY, field_u64(7, os.getpid()) + field_str(8, 'fake') + field_u64(9, 1)
               + field_u64(10, 1) + field_u64(11, 0) + field_u64(12, 0) + extra)


def marker(i, fmt='%u'):
    # NAME FORMAT KIND LOCATION OBJECT SITES MORE_SITES ARMED PROBES
    return msg(MARKER, field_str(14, 'm%d' % i) + field_str(15, fmt) + field_str(16, 'jump')
               + field_str(17, 'f.c:1') + field_str(27, 'obj') + field_u64(10, 1)
               + field_u64(28, 0) + field_u64(11, 0) + field_u64(18, 0))


def recv_exact(c, n):
    b = b''
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            return None
        b += d
    return b


def recv_type(c):
    """The type of the next request, its payload skipped; None at EOF."""
    h = recv_exact(c, 12)
    if h is None:
        return None
    _, _, t, ln = struct.unpack('<IHHI', h)
    if ln and recv_exact(c, ln) is None:
        return None
    return t


def send(c, mode, data):
    if mode == 'trickle':
        delay = float(os.environ.get('DELAY', '0.5'))
        for i in range(len(data)):
            c.sendall(data[i:i + 1])
            time.sleep(delay)
    else:
        c.sendall(data)


def serve(c, mode):
    if mode == 'deaf':
        # Hold the connection, read nothing: the client's send must give up.
        time.sleep(3600)
        return
    while True:
        t = recv_type(c)
        if t is None:
            return
        if t == INFO:
            send(c, mode, info_reply(mode))
        elif t == LIST and mode in ('flood', 'flood_big'):
            # Built once: the client, not this script, must be the bottleneck.
            fmt = 'x' * 3000 if mode == 'flood_big' else '%u'
            block = b''.join(marker(i, fmt) for i in range(1000))
            while True:
                c.sendall(block)
        elif t == LIST and mode == 'drip':
            i = 0
            while True:
                c.sendall(marker(i))
                i += 1
                time.sleep(0.5)
        elif t == LIST:
            send(c, mode, marker(0) + msg(LIST_END, field_u64(9, 1)))
        elif t == TRACE_START:
            send(c, mode, msg(OK, field_str(2, '/tmp')))
            if mode == 'stray':
                c.sendall(b'X')
        elif t in (TRACE_STOP, TRACE_STATS):
            send(c, mode, msg(STATS, field_u64(22, 0) + field_u64(23, 0) + field_u64(24, 0)
                              + field_u64(25, 0)))
        else:
            send(c, mode, msg(OK))


def main():
    path = sys.argv[1].replace('%p', str(os.getpid()))
    mode = sys.argv[2] if len(sys.argv) > 2 else None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o600)
    s.listen(4)
    print("listening", flush=True)
    while True:
        c, _ = s.accept()
        print("connected", flush=True)
        if mode:
            try:
                serve(c, mode)
            except OSError:   # the client gave up (EPIPE, ECONNRESET)
                pass
            print("client gone", flush=True)
            c.close()
            continue
        n = 0
        c.settimeout(2)
        try:
            while True:
                b = c.recv(4096)
                if not b:
                    break
                n += len(b)
        except OSError:
            pass
        print(f"received {n} bytes", flush=True)
        c.close()


main()

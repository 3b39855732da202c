#!/usr/bin/env python3
"""stalled_client.py SOCKET NCONN NREQ HOLD_S: a controller that asks and
never reads, as a `mark list PID` stopped with Ctrl-Z would, or a hostile
client of the same user.

Opens NCONN connections to the agent socket SOCKET, sends NREQ LIST
requests on each (pipelined, in one write) and never reads a byte.  Prints
"sent" once all are sent, then waits (at most HOLD_S seconds) for the agent
to close each connection, which it must do when a reply is not taken in
time, and prints "closed K of NCONN after S s" (S: when the last one was
seen closed, or HOLD_S)."""
import select
import socket
import struct
import sys
import time

path, nconn, nreq, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
LIST = b"MARK" + struct.pack("<HHI", 1, 2, 0)   # version 1, LIST, no field
conns = []
for _ in range(nconn):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # As small as the kernel allows: the replies back up at once.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
    s.connect(path)
    s.sendall(LIST * nreq)
    conns.append(s)
print("sent", flush=True)
start = time.monotonic()
p = select.poll()
for s in conns:
    # POLLHUP (and POLLERR: the agent left requests unread) without
    # reading: the data the agent sent stays unread.
    p.register(s, select.POLLHUP | select.POLLERR)
closed = set()
last = hold
while len(closed) < nconn and time.monotonic() - start < hold:
    for fd, ev in p.poll(100):
        if ev & (select.POLLHUP | select.POLLERR) and fd not in closed:
            closed.add(fd)
            p.unregister(fd)
            last = time.monotonic() - start
print(f"closed {len(closed)} of {nconn} after {last:.1f} s", flush=True)
for s in conns:
    s.close()

#!/usr/bin/env python3
"""fake_listener.py MODE DIR [UIDS]: a socket DIR/<our pid>.sock, where
`mark` looks for the agent of this very process, that is not a good agent.
It never accepts and never answers.  Prints "ready" once set up, then waits
until killed.

  full DIR                 the listener's queue of pending connections is
                           full (listen(0), then filled with connections of
                           our own that are never accepted): connect() to it
                           blocks, or fails with EAGAIN when non-blocking
  uid DIR LISTEN TARGET    (root only) listen() as uid LISTEN, then run as
                           uid TARGET: the socket (root's) and the process
                           are right, but SO_PEERCRED names uid LISTEN, which
                           is neither the process's euid nor root's
"""
import os
import socket
import sys
import time

mode = sys.argv[1]
path = os.path.join(sys.argv[2], f"{os.getpid()}.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o600)
keep = []
if mode == "full":
    s.listen(0)
    # Fill the queue: a Unix listener takes connections until its queue
    # holds more than the backlog; each of these stays pending for ever.
    for _ in range(64):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(path)
        except BlockingIOError:
            c.close()
            break
        keep.append(c)
    else:
        sys.exit("the listen queue never filled")
    print(f"ready ({len(keep)} pending connections)", flush=True)
elif mode == "uid":
    listen_uid, target_uid = int(sys.argv[3]), int(sys.argv[4])
    # The kernel records the listener's credentials at listen() time.
    os.seteuid(listen_uid)
    s.listen(4)
    os.seteuid(0)
    os.setgroups([])
    os.setresgid(target_uid, target_uid, target_uid)
    os.setresuid(target_uid, target_uid, target_uid)
    print("ready", flush=True)
else:
    sys.exit(f"unknown mode {mode}")
while True:
    time.sleep(60)

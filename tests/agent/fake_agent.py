#!/usr/bin/env python3
"""fake_agent.py PATH: a socket that pretends to be a mark agent, as an
attacker (or another process that happens to have the same pid number in
another pid namespace) would plant it.  Prints "listening", then for each
client "connected" and, when it leaves, "received N bytes".  Never answers."""
import os
import socket
import sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o600)
s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    print("connected", flush=True)
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

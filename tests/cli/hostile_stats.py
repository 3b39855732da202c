#!/usr/bin/env python3
"""A command for `mark record -- CMD` that plants a hostile statistics file
where the tracer would write one (MARK_TRACE/.mark-stats) and exits: N
entries with distinct names (the file's layout allows up to what fits),
and with `odd` a seqlock sequence left odd, as if its writer died in the
middle of an update.  Used by test_cli.py case record_hostile_stats.

    hostile_stats.py N [odd]
"""
import os
import struct
import sys

n = int(sys.argv[1])
odd = len(sys.argv) > 2 and sys.argv[2] == "odd"
d = os.environ["MARK_TRACE"]
os.makedirs(d, exist_ok=True)
hdr = bytearray(256)
# struct mark_tf_stats: magic, version, header_size, entry_size, max_entries,
# pid, state (1 running), mode, nentries; seq at 40, events at 64.
struct.pack_into("<8sIIIIiIII", hdr, 0, b"MARKSTAT", 1, 256, 128, n, os.getpid(), 2, 0, n)
struct.pack_into("<Q", hdr, 40, 1 if odd else 2)
struct.pack_into("<Q", hdr, 64, n)
body = bytearray(128 * n)
for i in range(n):
    # struct mark_tf_stats_entry: events, id, name_len, reserved, name[112]
    struct.pack_into("<QIH", body, 128 * i, 1, i, 11)
    body[128 * i + 16:128 * i + 27] = b"m%010d" % i
with open(os.path.join(d, ".mark-stats"), "wb") as f:
    f.write(hdr + body)

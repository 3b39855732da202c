#!/usr/bin/python3
"""Write a small CTF 1.8 trace with known content, for the tests of
`mark view`, `mark stats` and `mark export` that must not depend on the
tracer (written from the CTF 1.8 specification: TSDL metadata plus binary
packets, little endian, byte-aligned fields).

Content (times are ns after the clock offset 1700000000 s, Unix epoch):
  stream 0 (cpu 0, tid 101), packet 1:
    req_begin  t=1000  count=1  ptr=0x1000  name="alpha"
    tick       t=2000  value=0.5
    req_end    t=3000  count=1
    tick       t=12000 value=1.5           (+10 us)
  stream 0, packet 2 (events_discarded = 5, cumulative as CTF says):
    tick       t=32000 value=2.5           (+20 us)
    req_begin  t=40000 count=2  ptr=0xbeef name=ESCAPES (bytes every escape form covers)
    req_end    t=41000 count=2
  stream 1 (cpu 1, tid 102):
    tick       t=62000  value=-1           (+30 us)
    tick       t=102000 value=1e300        (+40 us)
    req_begin  t=103000 count=-3 ptr=0xffffffffffffffff name="gamma"
Totals: req_begin 3, req_end 2, tick 5; 10 events; 5 lost.
tick intervals: 10, 20, 30, 40 us.

    make_ctf.py DIR [PID]   PID (default 4242) also changes the trace UUID, so
                            a second trace in DIR/pid-P/ is a distinct trace
                            (as the tracer writes a forked child's).
"""
import os
import struct
import sys
import uuid as uuidlib

UUID = uuidlib.UUID("6f3b0f5e-1d2c-4b8a-9e7f-0123456789ab")
PID = 4242

METADATA_TEMPLATE = """/* CTF 1.8 */

typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = false; base = 16; } := xuint64_t;
typealias floating_point { exp_dig = 11; mant_dig = 53; byte_order = le; align = 8; } := double;

trace {
	major = 1;
	minor = 8;
	uuid = "%(uuid)s";
	byte_order = le;
	packet.header := struct {
		uint32_t magic;
		uint8_t  uuid[16];
		uint32_t stream_id;
		uint64_t stream_instance_id;
	};
};

env {
	hostname = "fixture";
	domain = "ust";
	tracer_name = "mark-test-fixture";
	pid = %(pid)d;
	procname = "fixture";
};

clock {
	name = "monotonic";
	uuid = "%(uuid)s";
	description = "fixture clock";
	freq = 1000000000;
	precision = 1;
	offset_s = 1700000000;
	offset = 0;
	absolute = true;
};

typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := ts64_t;

stream {
	id = 0;
	event.header := struct {
		uint32_t id;
		ts64_t timestamp;
	};
	packet.context := struct {
		ts64_t timestamp_begin;
		ts64_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		uint64_t events_discarded;
		uint32_t cpu_id;
		uint32_t tid;
	};
};

event { name = "req_begin"; id = 0; stream_id = 0;
	fields := struct { int32_t count; xuint64_t ptr; string name; }; };
event { name = "req_end"; id = 1; stream_id = 0;
	fields := struct { int32_t count; }; };
event { name = "tick"; id = 2; stream_id = 0;
	fields := struct { double value; }; };
"""


def metadata():
    return METADATA_TEMPLATE % {"uuid": str(UUID), "pid": PID}


# A string (bytes: a %s is any bytes) that needs every kind of escape:
# quote, carriage return, a control byte, DEL, tab; valid UTF-8 that is
# shown as it is (é, €, a 4-byte emoji); bytes that are not UTF-8 (a lone
# 0xff, a sequence cut short by "("); a C1 control (U+0085) and a
# bidirectional override (U+202E) that a terminal would act on.
ESCAPES = (b'quote"d\r\x01\x7f\t\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80 \xff\xc3( '
           b'\xc2\x85\xe2\x80\xae')


def encode(name, args):
    if name == "req_begin":
        count, ptr, text = args
        if isinstance(text, str):
            text = text.encode()
        return struct.pack("<IiQ", 0, count, ptr) + text + b"\0"
    if name == "req_end":
        return struct.pack("<Ii", 1, args[0])
    return struct.pack("<Id", 2, args[0])


def event_bytes(ev):
    t, name, args = ev
    body = encode(name, args)
    # header: id (uint32) then timestamp (uint64) then payload
    return body[:4] + struct.pack("<Q", t) + body[4:]


def packet(stream_instance, seq, discarded, cpu, tid, events):
    payload = b"".join(event_bytes(e) for e in events)
    header_len = 4 + 16 + 4 + 8
    context_len = 8 * 6 + 4 + 4
    content = header_len + context_len + len(payload)
    size = (content + 63) // 64 * 64  # pad packets to 64 bytes
    head = struct.pack("<I", 0xC1FC1FC1) + UUID.bytes + struct.pack("<IQ", 0, stream_instance)
    ctx = struct.pack("<QQQQQQII", events[0][0], events[-1][0], content * 8, size * 8,
                      seq, discarded, cpu, tid)
    data = head + ctx + payload
    return data + b"\0" * (size - len(data))


def main():
    global UUID, PID
    out = sys.argv[1]
    if len(sys.argv) > 2:
        PID = int(sys.argv[2])
        UUID = uuidlib.UUID(int=UUID.int ^ PID)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "metadata"), "w") as f:
        f.write(metadata())
    s0p1 = [(1000, "req_begin", (1, 0x1000, "alpha")), (2000, "tick", (0.5,)),
             (3000, "req_end", (1,)), (12000, "tick", (1.5,))]
    s0p2 = [(32000, "tick", (2.5,)), (40000, "req_begin", (2, 0xBEEF, ESCAPES)),
            (41000, "req_end", (2,))]
    s1 = [(62000, "tick", (-1.0,)), (102000, "tick", (1e300,)),
          (103000, "req_begin", (-3, 0xFFFFFFFFFFFFFFFF, "gamma"))]
    with open(os.path.join(out, "stream_0"), "wb") as f:
        f.write(packet(0, 0, 0, 0, 101, s0p1))
        f.write(packet(0, 1, 5, 0, 101, s0p2))
    with open(os.path.join(out, "stream_1"), "wb") as f:
        f.write(packet(1, 0, 0, 1, 102, s1))


if __name__ == "__main__":
    main()

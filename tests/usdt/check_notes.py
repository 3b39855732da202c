#!/usr/bin/python3
"""Check the .note.stapsdt notes of an ELF file, the way the tools read them.

usage: check_notes.py BINARY KIND EXPECT...
  KIND     jump | immediate | generic (generic sites carry a semaphore)
  EXPECT   PROVIDER:NAME:NARGS, one per probe that must be present

Checks, per note (sys/sdt.h's format, type 3, owner "stapsdt"):
  * the probe location is inside an executable PT_LOAD segment and holds a
    NOP (x86-64: 0x90; aarch64: d503201f), where uprobes are placed;
  * the base is the address of .stapsdt.base (tools relocate with it);
  * the semaphore is 0 for jump/immediate sites; for generic sites it lies in
    a writable PT_LOAD segment, and the file offset bcc (bpftrace) and perf
    compute from the .probes section header equals its real file offset;
  * the argument specs are well formed: "[-]SIZE@OPERAND" with SIZE 1/2/4/8
    and OPERAND in the machine's syntax as the tools parse it (x86-64: AT&T,
    "%rdi", "$5", "-8(%rbp)"; aarch64: "x3", "5", "[sp, 96]", "[x2]", the
    forms libbpf and bcc accept);
  * readelf -n prints the same provider and name.
"""
import re
import struct
import subprocess
import sys

EM_X86_64, EM_AARCH64 = 62, 183
SPEC = {
    EM_X86_64: re.compile(r"^-?(1|2|4|8)@(%[a-z0-9]+|\$-?[0-9]+|-?[0-9]*\(%[a-z0-9]+(,%[a-z0-9]+(,[1248])?)?\)"
                          r"|[A-Za-z_.][\w.]*(\+[0-9]+)?\(%rip\))$"),
    # x0..x30 or sp; an immediate without '#'; [reg] or [reg, offset]
    EM_AARCH64: re.compile(r"^-?(1|2|4|8)@(x([0-9]|[12][0-9]|30)|sp|-?[0-9]+"
                           r"|\[(x([0-9]|[12][0-9]|30)|sp)(, -?[0-9]+)?\])$"),
}
NOP = {EM_X86_64: b"\x90", EM_AARCH64: b"\x1f\x20\x03\xd5"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    path, kind, expect = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        fail("%s is not a 64-bit ELF file" % path)
    (e_machine,) = struct.unpack_from("<H", data, 0x12)
    if e_machine not in SPEC:
        fail("%s: machine %d is neither x86-64 nor aarch64" % (path, e_machine))
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    (e_phoff,) = struct.unpack_from("<Q", data, 0x20)
    e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
    segs = []
    for i in range(e_phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1:  # PT_LOAD
            segs.append((p_flags, p_offset, p_vaddr, p_filesz, p_memsz))
    sections = []
    for i in range(e_shnum):
        sh = struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
        sections.append(sh)
    stroff = sections[e_shstrndx][4]

    def secname(sh):
        start = stroff + sh[0]
        return data[start:data.index(b"\0", start)].decode()

    by_name = {}
    for sh in sections:
        by_name.setdefault(secname(sh), []).append(sh)
    if ".note.stapsdt" not in by_name:
        fail("no .note.stapsdt section in %s" % path)
    base_sec = by_name.get(".stapsdt.base")
    if not base_sec:
        fail("no .stapsdt.base section")
    base_addr = base_sec[0][3]

    def segment_of(addr):
        for s in segs:
            if s[2] <= addr < s[2] + s[4]:
                return s
        return None

    probes = {}
    for sh in by_name[".note.stapsdt"]:
        off, size = sh[4], sh[5]
        pos = off
        while pos < off + size:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz]
            desc_start = pos + 12 + ((namesz + 3) & ~3)
            desc = data[desc_start:desc_start + descsz]
            pos = desc_start + ((descsz + 3) & ~3)
            if name != b"stapsdt\0":
                fail("note owner %r, expected 'stapsdt'" % name)
            if ntype != 3:
                fail("note type %d, expected 3 (NT_STAPSDT)" % ntype)
            loc, base, sem = struct.unpack_from("<QQQ", desc, 0)
            strings = desc[24:].split(b"\0")
            if len(strings) < 3:
                fail("note strings truncated: %r" % desc[24:])
            prov, pname, args = (s.decode() for s in strings[:3])
            where = "%s:%s" % (prov, pname)
            if not prov or not pname:
                fail("empty provider or name in a note")
            # location: executable segment, a NOP there
            seg = segment_of(loc)
            if not seg or not (seg[0] & 1):
                fail("%s: location %#x is not in an executable segment" % (where, loc))
            foff = loc - seg[2] + seg[1]
            nop = NOP[e_machine]
            if data[foff:foff + len(nop)] != nop:
                fail("%s: the code at the location %#x is %s, not a NOP (%s)"
                     % (where, loc, data[foff:foff + len(nop)].hex(), nop.hex()))
            if base != base_addr:
                fail("%s: base %#x differs from .stapsdt.base at %#x" % (where, base, base_addr))
            if kind == "generic":
                if sem == 0:
                    fail("%s: a generic site has no semaphore" % where)
                sseg = segment_of(sem)
                if not sseg or not (sseg[0] & 2):
                    fail("%s: semaphore %#x is not in a writable segment" % (where, sem))
                real_off = sem - sseg[2] + sseg[1]
                probes_sec = by_name.get(".probes")
                if not probes_sec:
                    fail("%s: no .probes section: bcc/bpftrace and perf cannot find the "
                         "semaphore's file offset" % where)
                tool_off = sem - probes_sec[0][3] + probes_sec[0][4]
                if tool_off != real_off:
                    fail("%s: semaphore file offset as tools compute it (%#x) != real (%#x)"
                         % (where, tool_off, real_off))
            elif sem != 0:
                fail("%s: a %s site has semaphore %#x, expected 0" % (where, kind, sem))
            specs = args.split() if args else []
            for s in specs:
                if not SPEC[e_machine].match(s):
                    fail("%s: malformed argument spec %r in %r" % (where, s, args))
            probes.setdefault(where, []).append(len(specs))
    for e in expect:
        prov, pname, nargs = e.split(":")
        key = prov + ":" + pname
        if key not in probes:
            fail("probe %s missing; notes have %s" % (key, sorted(probes)))
        if any(n != int(nargs) for n in probes[key]):
            fail("probe %s has %s argument specs, expected %s" % (key, probes[key], nargs))
    # readelf must agree
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for key in probes:
        prov, pname = key.split(":")
        if not re.search(r"Provider: %s\n\s+Name: %s\n" % (re.escape(prov), re.escape(pname)), out):
            fail("readelf -n does not show %s" % key)
    print("ok: %d notes, probes %s" % (sum(len(v) for v in probes.values()), sorted(probes)))


main()

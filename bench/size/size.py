#!/usr/bin/python3
"""Table 4: code bytes per site, read from the object code.

For each variant object (size_objects.txt: VARIANT=OBJECT lines) the
function my_open_VARIANT is disassembled: bytes from its entry to the end of
its first `ret` are the straight-line ("likely") path; the rest of the
function (less the alignment NOPs right after that ret) plus its .cold part
are out of line.  The "none" object (no site) is subtracted.

Then the padding census: in the objects of the 10,000 generated jump sites
(sites_objects.txt), every __mark_sites entry gives a site's offset; a site
whose NOP would cross a 64-byte line gets a `.p2align 6,,4` pad (<= 4
bytes) in front of it, and a site at an odd address a 1-byte `.p2align 1`
NOP.  Counted: sites, padded sites, pad bytes, 1-byte even-up pads, and
any site that straddles a line or starts at an odd address (both must be
0).

Prints result lines in bench/common/bench.h's format.
"""
import re
import subprocess
import sys

INSN = re.compile(r"^\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(.*)$")
FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
SECTION = re.compile(r"^Disassembly of section (\S+):$")


def disassemble(obj):
    """{section: [(addr, length, text, function)]} with raw bytes folded."""
    out = subprocess.run(["objdump", "-d", "-w", obj], check=True, capture_output=True, text=True).stdout
    sections, sec, func = {}, None, None
    for line in out.splitlines():
        m = SECTION.match(line)
        if m:
            sec = m.group(1)
            sections.setdefault(sec, [])
            continue
        m = FUNC.match(line)
        if m:
            func = m.group(2)
            continue
        m = INSN.match(line)
        if m and sec:
            nbytes = len(m.group(2).split())
            text = m.group(3).strip()
            lst = sections[sec]
            addr = int(m.group(1), 16)
            if not text and lst and lst[-1][0] + lst[-1][1] == addr:
                # continuation line of a long instruction
                a, n, t, f = lst[-1]
                lst[-1] = (a, n + nbytes, t, f)
                continue
            lst.append((addr, nbytes, text, func))
    return sections


def is_nop(text):
    t = text.split()
    return bool(t) and (t[0].startswith("nop") or t[0] in ("data16", "cs", "xchg") and "nop" in text
                        or text.startswith("xchg   %ax,%ax"))


def func_bytes(obj, name):
    secs = disassemble(obj)
    body = [i for s in secs.values() for i in s if i[3] == name]
    cold = [i for s in secs.values() for i in s if i[3] == name + ".cold"]
    if not body:
        raise SystemExit(f"size.py: {name} not found in {obj}")
    start = body[0][0]
    straight = None
    rest = []
    for k, (addr, n, text, _) in enumerate(body):
        if text.split()[0] in ("ret", "retq", "repz") and straight is None:
            straight = addr + n - start
            rest = body[k + 1:]
            break
    if straight is None:
        straight = sum(i[1] for i in body)
    # Alignment NOPs before the out-of-line code and padding after the
    # function's last instruction (objdump counts it to the function) are
    # not the site's bytes.
    while rest and is_nop(rest[0][2]):
        rest = rest[1:]
    while rest and is_nop(rest[-1][2]):
        rest = rest[:-1]
    while cold and is_nop(cold[-1][2]):
        cold = cold[:-1]
    ool = sum(i[1] for i in rest) + sum(i[1] for i in cold)
    return straight, ool


def census(objs):
    sites = padded = pad_bytes = straddle = max_pad = odd = even_pads = 0
    for obj in objs:
        rel = subprocess.run(["objdump", "-r", "-j", "__mark_sites", obj], check=True,
                             capture_output=True, text=True).stdout
        offsets = []
        for line in rel.splitlines():
            f = line.split()
            if len(f) == 3 and re.fullmatch(r"[0-9a-f]+", f[0]) and f[1] == "R_X86_64_PC32":
                off = int(f[0], 16)
                if off % 12 == 0:          # the first field of an entry: the code address
                    sym, _, add = f[2].partition("+0x")
                    offsets.append((sym, int(add, 16) if add else 0))
        secs = disassemble(obj)
        ends = {}
        for sec, insns in secs.items():
            for addr, n, text, _ in insns:
                ends[(sec, addr + n)] = (n, text, addr)
        site_set = set(offsets)
        for sec, off in offsets:
            sites += 1
            if off % 64 > 59:
                straddle += 1
            if off % 2:
                odd += 1
            prev = ends.get((sec, off))
            # The 1-byte pad of ".p2align 1" (even sites: docs/markers.md).
            if off % 64 != 0 and prev and prev[0] == 1 and is_nop(prev[1]) and (sec, prev[2]) not in site_set:
                even_pads += 1
            # A NOP that is itself a site (two markers back to back) is no pad.
            if off % 64 == 0 and prev and is_nop(prev[1]) and (sec, prev[2]) not in site_set:
                padded += 1
                pad_bytes += prev[0]
                max_pad = max(max_pad, prev[0])
    return sites, padded, pad_bytes, max_pad, straddle, odd, even_pads


def main():
    size_list, sites_list = sys.argv[1], sys.argv[2]   # [argv[3]: clang objects]
    objs = dict(line.strip().split("=", 1) for line in open(size_list) if "=" in line)
    def measure(objs, suffix):
        for fn, tag in (("my_open_", ""), ("my_work_", "_work")):
            base_s, base_o = func_bytes(objs["none"], fn + "none")
            if not suffix:
                print(f"I size_baseline {fn}none: {base_s} bytes straight-line, {base_o} out of line")
            for v, obj in objs.items():
                if v == "none":
                    continue
                s, o = func_bytes(obj, fn + v)
                print(f"R t4 {v} straight{tag}{suffix} bytes {s - base_s}")
                print(f"R t4 {v} ool{tag}{suffix} bytes {o - base_o}")
    measure(objs, "")
    # Optional third list: the same objects from a second compiler (clang).
    if len(sys.argv) > 3:
        lines = [line.strip() for line in open(sys.argv[3])]
        other = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
        for line in lines:
            if line.startswith("#compiler="):
                print(f"I size_compiler2 {line.split('=', 1)[1]}")
        if "none" in other:
            measure(other, "_clang")
    kinds = dict(line.strip().split("=", 1) for line in open(sites_list) if "=" in line)
    if "jump" in kinds:
        sites, padded, pad_bytes, max_pad, straddle, odd, even_pads = census(kinds["jump"].split())
        print(f"R t4pad jump sites count {sites}")
        print(f"R t4pad jump padded count {padded}")
        print(f"R t4pad jump pad_bytes bytes {pad_bytes}")
        print(f"R t4pad jump max_pad bytes {max_pad}")
        print(f"R t4pad jump straddling count {straddle}")
        print(f"R t4pad jump odd count {odd}")
        print(f"R t4pad jump even_pads count {even_pads}")


if __name__ == "__main__":
    main()

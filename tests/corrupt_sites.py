#!/usr/bin/env python3
"""Write damaged copies of an executable with jump sites, for test_list_file:
   OUT.nop     the first jump site's NOP overwritten with other NOPs (x86-64:
               5 one-byte NOPs; aarch64: "yield")
   OUT.rodata  the first jump site's __mark_sites entry pointed into .rodata
Usage: corrupt_sites.py EXE OUT"""
import struct
import subprocess
import sys

exe, out = sys.argv[1], sys.argv[2]
data = bytearray(open(exe, 'rb').read())
sections = {}
for line in subprocess.run(['readelf', '-SW', exe], capture_output=True, text=True, check=True).stdout.splitlines():
    line = line.replace('[ ', '[')
    parts = line.split()
    if len(parts) > 6 and parts[0].startswith('[') and parts[0] != '[Nr]':
        name, addr, off, size = parts[1], int(parts[3], 16), int(parts[4], 16), int(parts[5], 16)
        sections[name] = (addr, off, size)
addr, off, size = sections['__mark_sites']
text_addr, text_off, _ = sections['.text']
# The jump site's NOP and its replacement, by e_machine.
machine = struct.unpack_from('<H', data, 18)[0]
nop, other = {62: (bytes([0x0f, 0x1f, 0x44, 0x00, 0x00]), b'\x90' * 5),
              183: (bytes([0x1f, 0x20, 0x03, 0xd5]), bytes([0x3f, 0x20, 0x03, 0xd5]))}[machine]
for i in range(size // 12):
    entry_off = off + 12 * i
    code, target, desc = struct.unpack_from('<iii', data, entry_off)
    if code == 0 or target == 0:
        continue   # a data-only or an immediate entry
    code_addr = addr + 12 * i + code
    code_off = code_addr - text_addr + text_off
    if bytes(data[code_off:code_off + len(nop)]) != nop:
        continue
    rewritten = bytearray(data)
    rewritten[code_off:code_off + len(nop)] = other
    open(out + '.nop', 'wb').write(rewritten)
    ro = bytearray(data)
    ro_addr = sections['.rodata'][0]
    struct.pack_into('<i', ro, entry_off, ro_addr - (addr + 12 * i))
    open(out + '.rodata', 'wb').write(ro)
    sys.exit(0)
sys.exit('no jump site found in ' + exe)

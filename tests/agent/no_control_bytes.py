#!/usr/bin/env python3
"""no_control_bytes.py FILE...: fail if a file holds a byte a terminal could
act on: a C0 control other than newline and tab, DEL, a C1 control
(U+0080-U+009F), or bytes that are not valid UTF-8 (a lone 0x9b is CSI to
an 8-bit terminal).  Prints each offending line, escaped.  Also imported by
tests/cli/test_cli.py (raw_controls)."""
import sys


def raw_controls(data):
    """The lines of `data` (bytes) that hold a raw control byte, as
    (line number, byte, line)."""
    found = []
    text = data.decode('utf-8', errors='surrogateescape')
    for n, line in enumerate(text.split('\n'), 1):
        for ch in line:
            c = ord(ch)
            if (c < 0x20 and ch != '\t') or 0x7f <= c <= 0x9f or 0xdc80 <= c <= 0xdcff:
                found.append((n, c & 0xff, line))
                break
    return found


def main():
    bad = 0
    for name in sys.argv[1:]:
        with open(name, 'rb') as f:
            for n, c, line in raw_controls(f.read()):
                print(f'{name}:{n}: raw control byte {c:#04x} in: {line!r}')
                bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())

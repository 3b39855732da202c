#!/usr/bin/env bash
# `mark list FILE` on files that someone else controls (cli/cmd_list.c):
#
#   test_list_hostile.sh MARK ELF_WITH_MARKERS WORKDIR
#
# root lists a file another user owns, so the file may be a FIFO planted
# where a binary was expected (opening it must not block), or may be
# truncated by its owner while mark reads it (mark must not die of SIGBUS,
# as it did when it mmap()ed the file).  Every mark run here is bounded
# by `timeout`, so a regression fails the test instead of hanging it.
# Exit 0: pass, 1: fail, 77: skipped (the reason is printed).
set -uo pipefail
MARK=$(realpath "$1") ELF=$(realpath "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../shell_lib.sh"
fresh_workdir "$3"
command -v timeout >/dev/null || skip "timeout(1) is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"

# The file is fine to begin with: mark lists it.
run good timeout 20 "$MARK" list "$ELF"
expect_rc 0 "mark list on an intact ELF file"
expect_in good.out ' markers\?, [0-9]* sites\? in '

# 1. A FIFO: open() without O_NONBLOCK waits for a writer forever.
mkfifo "$WORK/fifo" || skip "cannot create a FIFO in $WORK"
run fifo timeout 10 "$MARK" list "$WORK/fifo"
[ "$rc" != 124 ] || fail "mark list on a FIFO still blocked after 10 s (it must refuse it at once)"
expect_rc 1 "mark list on a FIFO"
expect_in fifo.err 'is not a regular file'
# Other files that are not regular files get the same answer.
run dirfile timeout 10 "$MARK" list "$WORK"
expect_rc 1 "mark list on a directory"
expect_in dirfile.err 'is not a regular file'
run devnull timeout 10 "$MARK" list /dev/null
expect_rc 1 "mark list on /dev/null"
expect_in devnull.err 'is not a regular file'

# 2. Truncated while read.  The copy gets a relocation section (a
# non-allocated section retyped SHT_RELA) of BIG bytes of zeros appended
# as a hole, which mark walks entry by entry: that keeps it reading the
# file long enough for `truncate` to land in the middle.  With the file
# mmap()ed, the next page touched after the truncation raises SIGBUS.
BIG=$((256 << 20))
python3 - "$ELF" "$WORK/big.elf" "$BIG" <<'EOF' || fail "cannot build the enlarged ELF copy"
import struct, sys
src, dst, big = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(src, 'rb').read())
shoff, = struct.unpack_from('<Q', data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
strtab_off, = struct.unpack_from('<Q', data, shoff + shstrndx * shentsize + 0x18)
def name(i):
    n, = struct.unpack_from('<I', data, shoff + i * shentsize)
    return bytes(data[strtab_off + n:data.index(0, strtab_off + n)])
SHF_ALLOC, SHT_RELA = 2, 4
pick = None
for i in range(1, shnum):
    flags, = struct.unpack_from('<Q', data, shoff + i * shentsize + 8)
    if i != shstrndx and not flags & SHF_ALLOC:
        pick = i
        if name(i) == b'.comment':
            break
if pick is None:
    sys.exit('no non-allocated section to retype')
end = (len(data) + 4095) & ~4095
h = shoff + pick * shentsize
struct.pack_into('<I', data, h + 4, SHT_RELA)          # sh_type
struct.pack_into('<Q', data, h + 0x18, end)            # sh_offset
struct.pack_into('<Q', data, h + 0x20, big)            # sh_size
struct.pack_into('<Q', data, h + 0x38, 24)             # sh_entsize: Elf64_Rela
with open(dst, 'wb') as f:
    f.write(data)
    f.truncate(end + big)                                # a hole: no disk space
EOF
cp "$WORK/big.elf" "$WORK/victim" || fail "cannot copy $WORK/big.elf"
run big timeout 60 "$MARK" list "$WORK/victim"
expect_rc 0 "mark list on the enlarged (intact) copy"
expect_in big.out ' sites\? in '

# Truncate at a range of delays after the start; stop at the first signal.
signalled=
for attempt in $(seq 1 40); do
	cp --sparse=always "$WORK/big.elf" "$WORK/victim" || fail "cannot copy $WORK/big.elf"
	timeout 60 "$MARK" list "$WORK/victim" >"$WORK/trunc.out" 2>"$WORK/trunc.err" &
	p=$!
	sleep "0.$(printf %03d $(( (attempt * 7) % 120 + 2 )))"
	truncate -s 4096 "$WORK/victim"
	wait "$p"
	rc=$?
	if [ "$rc" = 124 ]; then
		fail "attempt $attempt: mark list hung on a file truncated while it was read"
	elif [ "$rc" -ge 128 ]; then
		signalled="attempt $attempt: mark list died of signal $((rc - 128)) ($(kill -l $((rc - 128)))) on a file truncated while it was read"
		break
	elif [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
		cat "$WORK/trunc.err"
		fail "attempt $attempt: mark list exited with status $rc on a file truncated while it was read"
	elif [ "$rc" = 1 ] && ! [ -s "$WORK/trunc.err" ]; then
		fail "attempt $attempt: mark list failed without saying why"
	fi
done
[ -z "$signalled" ] || fail "$signalled"
echo "40 truncations while reading: no signal"

# Larger than mark list reads: refused with the reason, not read.
truncate -s $(( (1 << 30) + 1 )) "$WORK/huge" || skip "cannot create a sparse file in $WORK"
dd if="$ELF" of="$WORK/huge" bs=64 count=1 conv=notrunc status=none
run huge timeout 20 "$MARK" list "$WORK/huge"
expect_rc 1 "mark list on a file over the size limit"
expect_in huge.err 'larger than'
rm -f "$WORK/big.elf" "$WORK/victim" "$WORK/huge"
echo "PASS"
exit 0

#!/bin/bash
# tests/process/test_fork_lazy_binding.sh PROGRAM WORKDIR - a forked child
# must not resolve any of libmark's symbols lazily (issue 17, defect 4: fork
# cost).  A lazily bound libmark leaves the PLT slots of its fork child
# handlers unresolved in the parent (the parent never runs them), so every
# child looks each one up again in the loader and writes the GOT page, a
# copy-on-write fault per child.  libmark is linked -z now (full RELRO):
# everything is bound once, at load, in the parent.
#
# The loader's own log (LD_DEBUG=bindings) shows each binding with the pid
# of the process that made it and the object that asked for it; forked
# children inherit the parent's log file.
set -u
PROG=$1 WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK" || { echo "FAIL: cannot create $WORK"; exit 1; }
parent=$(MARK_AGENT=0 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$WORK/ld" "$PROG" 3) ||
	{ echo "FAIL: $PROG failed (exit $?)"; exit 1; }
LOG=$WORK/ld.$parent
grep -q 'binding file' "$LOG" 2>/dev/null ||
	{ echo "SKIP: the loader wrote no LD_DEBUG=bindings log ($LOG): cannot observe bindings"; exit 77; }
# "  PID:\tbinding file OBJ [0] to DEP [0]: normal symbol `NAME' [VERSION]"
awk -v parent="$parent" '$1 != parent ":" && /binding file [^ ]*libmark/' "$LOG" >"$WORK/lazy"
if [ -s "$WORK/lazy" ]; then
	echo "FAIL: forked children resolved libmark symbols lazily (libmark must be linked -z now):"
	sed 's/^ *//' "$WORK/lazy" | head -20
	exit 1
fi
echo "PASS: forked children resolved no libmark symbol lazily"

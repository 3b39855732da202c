#!/bin/bash
# tests/process/test_fork_faults.sh LINKED OUT - a single-threaded program
# with libmark linked, the agent off and nothing armed must not write a page
# in its fork handlers (issue 17, defect 4: "a fork costs within noise of a
# program built without mark").  Each page the parent writes after a fork
# is a copy-on-write fault in the parent (and another in the child), so the
# parent's minor faults per fork must equal those of the same program built
# without mark.  The counts are per round over 200 rounds and do not depend
# on the machine's load; the bound allows one stray fault in the run.
set -u
LINKED=$1 OUT=$2
l=$(MARK_AGENT=0 "$LINKED" 200) || { echo "FAIL: $LINKED failed (exit $?)"; exit 1; }
o=$("$OUT" 200) || { echo "FAIL: $OUT failed (exit $?)"; exit 1; }
read -r lp lc <<<"$l"
read -r op oc <<<"$o"
echo "minor faults per fork: linked parent $lp child $lc; compiled out parent $op child $oc"
if awk -v a="$lp" -v b="$op" 'BEGIN { exit !(a - b > 0.01) }'; then
	echo "FAIL: with libmark linked (MARK_AGENT=0, single-threaded, nothing armed) the parent takes" \
		"$(awk -v a="$lp" -v b="$op" 'BEGIN { printf "%.2f", a - b }') more page faults per fork than" \
		"compiled out: libmark's fork handlers write pages a single-threaded process need not protect"
	exit 1
fi
echo "PASS: libmark's fork handlers cost the single-threaded parent no page fault"

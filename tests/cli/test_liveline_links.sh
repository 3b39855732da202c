#!/bin/bash
# `mark stats DIR` and `mark view DIR` read the live statistics of a trace
# (DIR/.mark-stats, DIR/pid-P/.mark-stats) and count its ring files
# (.mark-ring-N in DIR and DIR/pid-P/): cli/liveline.c.  The trace directory
# belongs to the traced user, often not the one who runs mark (root), so a
# symbolic link planted there must never be followed: not a `.mark-stats`
# link to a FIFO or device, not a `pid-P` link to a directory of root's.
#
# usage: test_liveline_links.sh MARK TRACER_PROG [WORKDIR]
#
# The trace is a real one (TRACER_PROG types 10 with MARK_TRACE).  Then:
#   DIR/.mark-stats             -> a FIFO
#   DIR/pid-99999/              a real directory, its .mark-stats -> another FIFO
#   DIR/pid-1                   -> a private directory (0700) holding a valid
#                                  .mark-stats and a .mark-ring-0
# Checks, for `mark stats` and `mark view`:
#   - with strace (if installed): no open/openat/getdents64 reaches a link's
#     target (strace -y names the file behind each descriptor);
#   - a writer waiting to open each FIFO is never let through (an open of
#     the FIFO for reading, even O_NONBLOCK, would release it);
#   - the private .mark-stats keeps its old access time and content;
#   - the output is the same as on the trace without the links: the real
#     events, and no "incomplete" warning made up from the private ring file.
# Exit 0 on success, 1 (with what failed) on failure, 77 to skip.
set -u
MARK=${1:?usage: test_liveline_links.sh MARK TRACER_PROG [WORKDIR]}
PROG=${2:?usage: test_liveline_links.sh MARK TRACER_PROG [WORKDIR]}
WORK=${3:-}
if [ -z "$WORK" ]; then
	WORK=$(mktemp -d /tmp/test_liveline_links.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
	OWN_WORK=1
else
	rm -rf "$WORK" && mkdir -p "$WORK" || { echo "FAIL: cannot make $WORK"; exit 1; }
	OWN_WORK=0
fi
WORK=$(cd "$WORK" && pwd -P)
chmod 0711 "$WORK"
failures=0
writers=()
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
	local p
	for p in "${writers[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ "$OWN_WORK" = 1 ] && rm -rf "$WORK"
}
trap cleanup EXIT

D=$WORK/trace
FA=$WORK/fifo-top
FB=$WORK/fifo-child
PRIV=$WORK/private
mkdir -p "$WORK/clean"
if ! MARK_TRACE=$D "$PROG" types 10 >"$WORK/prog.out" 2>&1; then
	echo "FAIL: $PROG types 10 failed: $(cat "$WORK/prog.out")"
	exit 1
fi
ls -d "$D"/pid-* >/dev/null 2>&1 || { echo "FAIL: no pid-P/ in the trace $D"; exit 1; }

# The reference: the trace as the tracer wrote it.
for c in stats view; do
	timeout 60 "$MARK" $c "$D" >"$WORK/clean/$c.out" 2>"$WORK/clean/$c.err"
	echo $? >"$WORK/clean/$c.rc"
done
grep -q "40 events" "$WORK/clean/stats.out" || fail "mark stats on the clean trace: expected 40 events: $(cat "$WORK/clean/stats.out" "$WORK/clean/stats.err")"
[ "$(wc -l <"$WORK/clean/view.out")" -eq 40 ] || fail "mark view on the clean trace: expected 40 lines, got $(wc -l <"$WORK/clean/view.out")"

# The links, as the trace's owner would plant them.
mkfifo -m 0666 "$FA" "$FB" || { echo "FAIL: mkfifo"; exit 1; }
mkdir -m 0700 "$PRIV"
cp "$(ls -d "$D"/pid-* | head -n 1)/.mark-stats" "$PRIV/.mark-stats"
: >"$PRIV/.mark-ring-0"
priv_sum=$(sha256sum <"$PRIV/.mark-stats")
# An old access time: a read through the link would update it (relatime).
touch -a -d "2001-01-01 00:00:00" "$PRIV/.mark-stats"
priv_atime=$(stat -c %X "$PRIV/.mark-stats")
ln -s "$FA" "$D/.mark-stats"
mkdir -m 0700 "$D/pid-99999"
ln -s "$FB" "$D/pid-99999/.mark-stats"
ln -s "$PRIV" "$D/pid-1"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	chown -R -h nobody "$D"
fi

# A writer blocked in open() of FIFO $1 until a reader opens it: then it
# leaves the file $2 behind.
start_writer() {
	( exec 3>"$1"; echo opened >"$2" ) &
	writers+=($!)
}

for c in stats view; do
	rm -f "$WORK/$c.opened-a" "$WORK/$c.opened-b"
	start_writer "$FA" "$WORK/$c.opened-a"
	start_writer "$FB" "$WORK/$c.opened-b"
	start=$(date +%s)
	timeout 30 "$MARK" $c "$D" >"$WORK/$c.out" 2>"$WORK/$c.err"
	rc=$?
	[ "$rc" = 124 ] && fail "mark $c $D did not finish within 30 s (blocked on a planted link?)"
	[ "$rc" = "$(cat "$WORK/clean/$c.rc")" ] || fail "mark $c: exit status $rc, $(cat "$WORK/clean/$c.rc") on the clean trace; stderr: $(cat "$WORK/$c.err")"
	sleep 0.3
	[ -e "$WORK/$c.opened-a" ] && fail "mark $c opened the FIFO $FA through the link $D/.mark-stats"
	[ -e "$WORK/$c.opened-b" ] && fail "mark $c opened the FIFO $FB through the link $D/pid-99999/.mark-stats"
	cmp -s "$WORK/clean/$c.out" "$WORK/$c.out" ||
		fail "mark $c: the output differs from the clean trace's: $(diff "$WORK/clean/$c.out" "$WORK/$c.out" | head -n 5)"
	cmp -s "$WORK/clean/$c.err" "$WORK/$c.err" ||
		fail "mark $c: stderr differs from the clean trace's: $(diff "$WORK/clean/$c.err" "$WORK/$c.err" | head -n 5)"
	if command -v strace >/dev/null 2>&1; then
		strace -f -y -qq -e trace=open,openat,getdents64 -o "$WORK/$c.strace" \
			timeout 30 "$MARK" $c "$D" >/dev/null 2>&1
		if grep -E "<($FA|$FB|$PRIV)(/[^>]*)?>" "$WORK/$c.strace" >"$WORK/$c.reached"; then
			fail "mark $c reached link targets (strace): $(sed 's/^[0-9]* *//' "$WORK/$c.reached" | head -n 6)"
		fi
	else
		echo "note: strace is not installed: checked with the FIFO writers, access time and output only"
	fi
	for p in "${writers[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	writers=()
done
[ "$(stat -c %X "$PRIV/.mark-stats")" = "$priv_atime" ] ||
	fail "the private $PRIV/.mark-stats was read through the link $D/pid-1 (its access time changed)"
[ "$(sha256sum <"$PRIV/.mark-stats")" = "$priv_sum" ] || fail "the private $PRIV/.mark-stats changed"

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "PASS: mark stats and mark view followed none of the planted links and printed the real events"
exit 0

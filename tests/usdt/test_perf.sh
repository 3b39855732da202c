#!/usr/bin/env bash
# perf sees every marker as an SDT event: perf buildid-cache --add, perf list
# sdt, perf probe, then perf stat counts exact hits and perf script shows the
# argument values.  Generic sites fire under perf alone (perf sets the uprobe
# reference counter = the semaphore = the site's flag); jump and immediate
# sites fire once the marker is armed (mark_arm() here), and not before.
set -u
bin=$1 kind=$2
. "$(dirname "$0")/common.sh"
command -v perf >/dev/null || skip "perf is not installed (apt-get install linux-perf)"
need_root
need_tracefs
perf stat -e task-clock true >/dev/null 2>&1 || skip "perf cannot open events here (perf_event_paranoid or no PMU access)"

work=$(mktemp -d)
cleanup() { perf probe -q -d 'sdt_mark:*' >/dev/null 2>&1; perf probe -q -d 'sdt_usdtprov:*' >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
# A private build-id cache, so that other programs' SDT notes stay out of the way.
export PERF_BUILDID_DIR=$work/buildid
perf="perf --buildid-dir $PERF_BUILDID_DIR"
cleanup_probes() { perf probe -q -d 'sdt_mark:*' >/dev/null 2>&1; perf probe -q -d 'sdt_usdtprov:*' >/dev/null 2>&1; }
cleanup_probes

$perf buildid-cache --add "$bin" || fail "perf buildid-cache --add failed"
list=$($perf list sdt 2>&1); echo "$list"
for e in sdt_mark:usdt_hit sdt_mark:usdt_noargs sdt_usdtprov:prov_hit; do
	echo "$list" | grep -q "$e" || fail "perf list sdt does not show $e"
done
$perf probe -a sdt_mark:usdt_hit 2>&1 || fail "perf probe -a sdt_mark:usdt_hit failed"
grep usdt_hit /sys/kernel/tracing/uprobe_events

N=1000
count() {   # MODE -> hits counted by perf stat
	$perf stat -x, -e sdt_mark:usdt_hit -- "$bin" "$1" $N 2>&1 >/dev/null | awk -F, '/sdt_mark:usdt_hit/ { print $1 }'
}
if [ "$kind" = generic ]; then
	c=$(count run); echo "perf stat (no arming): $c"
	[ "$c" = $N ] || fail "perf counted '$c' hits of the generic site, expected $N"
else
	c=$(count run); echo "perf stat (disarmed): $c"
	[ "$c" = 0 ] || fail "perf counted '$c' hits of a disarmed $kind site, expected 0"
	c=$(count arm); echo "perf stat (armed): $c"
	[ "$c" = $N ] || fail "perf counted '$c' hits, expected $N"
fi
# Argument values: hit 7 passes (7, -21, "usdt-string", &anchor, 7000000049).
$perf record -q -o "$work/perf.data" -e sdt_mark:usdt_hit -- "$bin" arm 8 >/dev/null 2>&1 || fail "perf record failed"
s=$($perf script -i "$work/perf.data" 2>&1 | sed -n 8p); echo "$s"
echo "$s" | grep -q "arg1=7 arg2=-21 " || fail "perf script shows wrong values for hit 7: $s"
echo "$s" | grep -qE "arg5=(7000000049|0x1a13b8631)" || fail "perf script shows a wrong 5th argument for hit 7: $s"
echo "ok: perf ($kind)"

# Shared by the USDT tool tests: skip with a reason (exit 77) when the
# machine cannot run them, mount tracefs when it is missing.
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

need_root() {
	[ "$(id -u)" = 0 ] || skip "uprobes need root (CAP_SYS_ADMIN/CAP_PERFMON); run the suite as root"
}

# Uprobe-based tools need tracefs (bpftrace and perf both use it).
need_tracefs() {
	if [ ! -e /sys/kernel/tracing/uprobe_events ] && [ ! -e /sys/kernel/debug/tracing/uprobe_events ]; then
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
		[ -e /sys/kernel/tracing/uprobe_events ] ||
			skip "tracefs is not mounted and 'mount -t tracefs nodev /sys/kernel/tracing' failed (kernel without CONFIG_UPROBE_EVENTS, or no permission)"
	fi
}

#!/usr/bin/env bash
# End to end: build memcached from its Debian source package with
#   ./configure --enable-dtrace DTRACE=/path/to/mark-dtrace
# (nothing else changed: no LIBS, no CPPFLAGS, no patch), then check that
#   - its 31 probes are USDT notes under systemtap's names (readelf, bpftrace -l);
#   - `mark list BINARY` shows them as memcached:PROBE-NAME;
#   - with MARK_TRACE=DIR MARK_ENABLE='memcached:*' the server records its
#     probes into a CTF trace while a client sets and gets keys, and the
#     trace holds those commands with their keys;
#   - an existing bpftrace script (usdt:BIN:memcached:command__set, systemtap's
#     name) counts the commands of the server armed with MARK_ENABLE.
#
# usage: e2e_memcached.sh BUILD_DIR     (the mark build tree: mark, mark-dtrace, libmark)
# Installs its own build dependencies with apt-get (deb-src for the running
# Debian release is added when missing).  The source and the build are cached
# in $MARK_E2E_CACHE (default /tmp/mark-e2e); a rebuild happens when
# mark dtrace's output changes.  Exits 77 (SKIP) when the source package
# cannot be fetched.
set -u
build=$(cd "${1:?usage: e2e_memcached.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
cache=${MARK_E2E_CACHE:-/tmp/mark-e2e}
mkdir -p "$cache"
log=$cache/log.txt
: >"$log"
step() { echo "== $*"; }

[ -x "$build/mark-dtrace" ] || fail "$build/mark-dtrace is missing (build mark first)"
command -v apt-get >/dev/null || skip "no apt-get: this test fetches memcached's Debian source package"
[ "$(id -u)" = 0 ] || skip "installing memcached's build dependencies needs root (apt-get build-dep)"
# memcached loads libmark with dlopen: a sanitizer build of libmark needs its
# runtime loaded first, which an uninstrumented memcached does not do.
[ -z "${MARK_TEST_SANITIZER:-}" ] || skip "not under $MARK_TEST_SANITIZER sanitizer builds (memcached dlopens an instrumented libmark)"

# ---- the source package ---------------------------------------------------
src=$(ls -d "$cache"/src/memcached-*/ 2>/dev/null | head -n1)
if [ -z "$src" ]; then
	step "fetching memcached's source package"
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || skip "cannot tell the Debian release (VERSION_CODENAME in /etc/os-release)"
	if ! grep -rqs "^Types: deb-src\|^deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
		cat >/etc/apt/sources.list.d/mark-e2e-deb-src.sources <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	fi
	apt-get update -qq >>"$log" 2>&1 || skip "apt-get update failed (no network?); see $log"
	mkdir -p "$cache/src"
	(cd "$cache/src" && apt-get source -qq memcached >>"$log" 2>&1) ||
		skip "apt-get source memcached failed (no network or no deb-src); see $log"
	src=$(ls -d "$cache"/src/memcached-*/ | head -n1)
fi
src=${src%/}
step "source: $src"
# libevent-dev alone is not enough: `make bench` installs it without
# memcached's other build dependencies (autoconf, automake).
if ! dpkg -s libevent-dev >/dev/null 2>&1 || ! command -v autoreconf >/dev/null; then
	step "installing build dependencies"
	DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq memcached >>"$log" 2>&1 ||
		skip "apt-get build-dep memcached failed; see $log"
fi
for tool in autoreconf make cc python3; do
	command -v $tool >/dev/null || skip "$tool is missing after apt-get build-dep"
done

# ---- the build, keyed by what mark dtrace generates -------------------------
"$build/mark-dtrace" -h -s "$src/memcached_dtrace.d" -o "$cache/probe-header.h" || fail "mark-dtrace -h failed"
"$build/mark-dtrace" -G -s "$src/memcached_dtrace.d" -o "$cache/probe-object.o" || fail "mark-dtrace -G failed"
# Rebuild when what mark dtrace generates changes (header, mark.h, -G object,
# which holds the path of this build's libmark).
key=$( { echo "$build"; cat "$cache/probe-header.h" "$cache/probe-object.o" \
	"$(sed -n 's/^#include "\(.*\)"$/\1/p' "$cache/probe-header.h")"; } 2>/dev/null | md5sum | cut -c1-12)
obj=$cache/build-$key
bin=$obj/memcached
if [ ! -x "$bin" ]; then
	step "building memcached with DTRACE=$build/mark-dtrace (log: $log)"
	rm -rf "$obj"
	# keep the 3 most recent other builds (other build trees of mark), drop older ones
	ls -dt "$cache"/build-* 2>/dev/null | tail -n +4 | xargs -r rm -rf
	cp -a "$src" "$obj"
	(
		cd "$obj" &&
		{ [ -x configure ] || autoreconf -fi; } &&
		./configure --enable-dtrace DTRACE="$build/mark-dtrace" &&
		make memcached_dtrace.h && make -j2 memcached
	) >>"$log" 2>&1 || { tail -n 40 "$log"; fail "building memcached failed; see $log"; }
fi
step "built $bin"
grep -q "^#define ENABLE_DTRACE 1" "$obj/config.h" || fail "configure did not enable dtrace"

# ---- the probes are USDT notes under systemtap's names ------------------------
python3 "$here/check_notes.py" "$bin" jump memcached:command__get:5 memcached:command__set:5 \
	memcached:conn__allocate:1 memcached:process__command__start:3 || fail "notes"
nnotes=$(readelf -n "$bin" | grep -c "Provider: memcached")
echo "memcached USDT notes: $nnotes"
[ "$nnotes" -ge 31 ] || fail "expected at least 31 memcached probe sites, found $nnotes"
if command -v bpftrace >/dev/null; then
	bpftrace -l "usdt:$bin:memcached:*" 2>/dev/null | grep -q "memcached:command__get$" ||
		fail "bpftrace -l does not list memcached:command__get"
fi

# ---- mark list shows PROVIDER:PROBE -----------------------------------------
list=$("$build/mark" list "$bin" 2>&1); echo "$list" | head -n 8
for m in memcached:command-get memcached:command-set memcached:conn-allocate memcached:process-command-start; do
	echo "$list" | grep -q "$m" || fail "mark list does not show $m"
done

# ---- recording a real workload ------------------------------------------------
trace=$(mktemp -d)/trace
port=$((20000 + RANDOM % 20000))
step "running memcached on port $port with MARK_TRACE=$trace MARK_ENABLE='memcached:*'"
MARK_TRACE=$trace MARK_ENABLE='memcached:*' "$bin" -u root -l 127.0.0.1 -p $port -U 0 -t 2 >"$cache/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
python3 - "$port" <<'EOF' || { cat "$cache/server.log"; fail "the client failed"; }
import socket, sys, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        break
    except OSError:
        time.sleep(0.05)
else:
    sys.exit("memcached did not start")
f = s.makefile("rwb")
def cmd(line, data=None):
    f.write(line + b"\r\n" + (data + b"\r\n" if data is not None else b""))
    f.flush()
    return f.readline()
for i in range(10):
    assert cmd(b"set mark-key-%d 0 0 5" % i, b"value") == b"STORED\r\n"
for i in range(10):
    assert cmd(b"get mark-key-%d" % i).startswith(b"VALUE")
    assert f.readline() == b"value\r\n" and f.readline() == b"END\r\n"
assert cmd(b"get missing-key") == b"END\r\n"
assert cmd(b"delete mark-key-0") == b"DELETED\r\n"
s.close()
print("client: 10 set, 11 get, 1 delete")
EOF
kill -TERM $pid; wait $pid 2>/dev/null
trap - EXIT
cat "$cache/server.log"
[ -d "$trace" ] || fail "no trace directory $trace: MARK_TRACE had no effect (did libmark load? see above)"
view=$("$build/mark" view "$trace" 2>&1) || { echo "$view" | tail; fail "mark view failed on $trace"; }
echo "$view" | grep -E "command-(set|get|delete)" | head -n 5
nset=$(echo "$view" | grep -c "memcached:command-set.*mark-key-")
nget=$(echo "$view" | grep -c "memcached:command-get.*mark-key-")
ndel=$(echo "$view" | grep -c "memcached:command-delete.*mark-key-0")
echo "trace: $nset command-set, $nget command-get, $ndel command-delete events with our keys"
[ "$nset" = 10 ] || fail "expected 10 command-set events with the keys, got $nset"
[ "$nget" -ge 10 ] || fail "expected 10 command-get events with the keys, got $nget"
[ "$ndel" = 1 ] || fail "expected 1 command-delete event, got $ndel"
echo "$view" | grep -q "memcached:conn-allocate\|memcached:conn-create" || fail "no connection events in the trace"

# ---- an existing bpftrace script, unchanged, on the armed server --------------
if command -v bpftrace >/dev/null; then
	need_tracefs
	ulimit -l unlimited 2>/dev/null || ulimit -l 8192 2>/dev/null
	port=$((20000 + RANDOM % 20000))
	step "bpftrace on usdt:memcached:memcached:command__set, markers armed with MARK_ENABLE"
	MARK_ENABLE='memcached:command-*' "$bin" -u root -l 127.0.0.1 -p $port -U 0 -t 2 >"$cache/server2.log" 2>&1 &
	pid=$!
	bt=$cache/bpftrace.out
	# Bounded: a bpftrace that never attaches or never exits must not hang the suite.
	timeout -s INT 120 bpftrace -p $pid -e 'BEGIN { printf("ready\n"); }
		usdt:'"$bin"':memcached:command__set { @sets[str(arg1)] = count(); }' >"$bt" 2>&1 &
	bpid=$!
	trap 'kill $pid $bpid 2>/dev/null' EXIT
	for _ in $(seq 300); do grep -q '^ready' "$bt" && break; sleep 0.1; done
	python3 - "$port" <<'EOF2' || fail "the client failed (bpftrace run)"
import socket, sys, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10); break
    except OSError:
        time.sleep(0.05)
f = s.makefile("rwb")
for i in range(3):
    f.write(b"set bpf-key-%d 0 0 1\r\nx\r\n" % i); f.flush()
    assert f.readline() == b"STORED\r\n"
EOF2
	kill -INT $bpid; wait $bpid
	kill -TERM $pid; wait $pid 2>/dev/null
	trap - EXIT
	cat "$bt"
	for i in 0 1 2; do
		grep -q "^@sets\[bpf-key-$i\]: 1\$" "$bt" || fail "bpftrace did not see command__set(bpf-key-$i) once"
	done
fi
echo "ok: memcached built with mark-dtrace records its DTrace probes"

#!/bin/bash
# tests/aarch64/run.sh deps|test|install [PREFIX] - the aarch64 build (issue 12).
#
#   deps     installs Debian's cross toolchain, qemu-user, gdb-multiarch
#            and the arm64 multiarch libraries libmark and the mark command
#            need (liburcu-dev:arm64, libbabeltrace2-dev:arm64,
#            libstdc++6:arm64 for the C++ tests), without their recommended
#            packages: libbabeltrace2-0 recommends its Python plugin
#            provider, and the arm64 Python would replace the host's
#            python3.11-minimal.  Any install that would still touch the
#            host's Python is refused.
#   test     cross-builds libmark, the mark command and the test programs
#            into build-aarch64 (cmake/aarch64-linux-gnu.cmake) and runs
#            ctest under qemu-aarch64.  Programs a test starts with exec(),
#            and the build's own runs of the aarch64 mark (mark dtrace makes
#            the USDT tests' headers), run through binfmt_misc: registered
#            here for qemu-aarch64, before the build, when missing (as
#            Debian's qemu-user-binfmt does at boot through systemd, which a
#            container lacks).  Script tests run on the host and start the
#            aarch64 programs, mark among them, that way (gdb ones through
#            qemu's gdb stub and gdb-multiarch); those that need uprobe
#            tools, fuzzing or a host build, or that meet a defect of qemu
#            itself, are listed and skip, saying why (tests/CMakeLists.txt).
#            With the host build (BUILD_HOST, default build/; `make test`
#            makes it first), `mark list` is also checked across the two
#            architectures: the host's mark on the aarch64 files and the
#            aarch64 mark on the host's (tests/core.cmake).
#   install  installs the cross-built library, command, headers, mark.pc and
#            the CMake package into PREFIX.
#
# What the machine may deny (no network for apt, no binfmt_misc, a qemu
# that cannot run the toolchain's programs) ends the run with "SKIP:" and
# the reason, exit 0: a skip, never a silent pass.  A failing test fails.
set -u
ACTION=${1:?usage: run.sh deps|test|install [PREFIX]}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD_AARCH64:-$ROOT/build-aarch64}
JOBS=${JOBS:-$(nproc)}
PKGS_HOST="gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user gdb-multiarch"
PKGS_ARM64="liburcu-dev:arm64 libbabeltrace2-dev:arm64 libstdc++6:arm64"

skip() {
	echo "SKIP: make test-aarch64: $*"
	exit 0
}

missing() {
	local p out=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || out="$out $p"
	done
	echo "$out"
}

deps() {
	local need
	need=$(missing $PKGS_HOST $PKGS_ARM64)
	[ -z "$need" ] && return 0
	[ "$(id -u)" = 0 ] || skip "needs root to install$need"
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		dpkg --add-architecture arm64 || skip "dpkg --add-architecture arm64 failed"
	fi
	echo "installing:$need"
	apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed (no network?)"
	# Refuse, rather than let apt swap the host's Python for arm64's.
	if apt-get install -s --no-install-recommends $need 2>/dev/null | grep -qE '^(Inst|Remv) python3'; then
		skip "installing$need would replace the host's Python packages; not done"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null ||
		skip "apt-get install$need failed"
	/usr/bin/python3 -c 'import sys' || { echo "the host Python broke while installing$need" >&2; exit 1; }
}

# configure TESTS [PREFIX]: TESTS is ON or OFF (MARK_BUILD_TESTS).
configure() {
	# MARK_HOST_BUILD: the host build whose mark and files the
	# cross-architecture `mark list` tests use (tests/core.cmake).
	cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" \
		-DMARK_BUILD_CLI=ON -DMARK_BUILD_TESTS="$1" -DCMAKE_INSTALL_PREFIX="${2:-/usr/local}" \
		-DMARK_HOST_BUILD="${BUILD_HOST:-$ROOT/build}" >/dev/null || exit 1
}

build() {
	cmake --build "$BUILD" -j "$JOBS" "$@" || exit 1
}

binfmt() {
	local dir=/proc/sys/fs/binfmt_misc
	[ -e "$dir/register" ] || mount -t binfmt_misc binfmt_misc "$dir" 2>/dev/null ||
		skip "binfmt_misc is not available (mount -t binfmt_misc failed): tests that exec a program cannot run it under qemu"
	[ -e "$dir/qemu-aarch64" ] && return 0
	# The registration qemu-user-binfmt ships: ELF64, little endian, EM_AARCH64 (183).
	printf '%s\n' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64:' \
		>"$dir/register" 2>/dev/null || skip "cannot register qemu-aarch64 with binfmt_misc"
}

case "$ACTION" in
deps)
	deps
	;;
test)
	deps
	# The loader and libc of the multiarch libc6:arm64 (see the toolchain file).
	export QEMU_LD_PREFIX=/
	configure ON
	build --target test_api_jump
	qemu-aarch64 -L / "$BUILD/tests/test_api_jump" >/dev/null 2>&1 ||
		skip "qemu-aarch64 cannot run the cross-built test_api_jump"
	# Before the rest of the build: it runs the aarch64 mark (mark dtrace
	# makes the USDT tests' headers and objects), which needs binfmt.
	binfmt
	build
	cd "$BUILD" && ctest --output-on-failure -j 2 --timeout 600
	;;
install)
	deps
	PREFIX=${2:?usage: run.sh install PREFIX}
	# Without the tests nothing runs at build time: no qemu, no binfmt.
	configure OFF "$PREFIX"
	build
	cmake --install "$BUILD" --prefix "$PREFIX"
	;;
*)
	echo "usage: run.sh deps|test|install [PREFIX]" >&2
	exit 2
	;;
esac

# Convenience wrapper around CMake.  On a fresh Debian 12 machine:
#   make demo   installs dependencies, builds, runs the example program
#   make test   installs dependencies, builds, runs every test (plus ASan+UBSan, TSan, clang,
#               and the aarch64 cross build under qemu-user)
PREFIX ?= /usr/local
BUILD  ?= build
JOBS   ?= $(shell nproc)
CMAKE_FLAGS ?=

# Debian packages the build, tests and benchmarks use.  The export tests also
# decode with the formats' official schemas from PyPI: tests/pydeps/requirements.txt,
# installed by deps-test into .pydeps/ with pip (they skip, saying why, without it).
DEB_BUILD = build-essential cmake ninja-build pkg-config liburcu-dev libbabeltrace2-dev clang libclang-rt-14-dev
DEB_TEST  = babeltrace2 python3-bt2 systemtap-sdt-dev bpftrace gdb binutils \
            linux-perf afl++ systemtap python3-pip time python3-matplotlib
DEB_BENCH = liblttng-ust-dev lttng-tools python3-matplotlib dpkg-dev libevent-dev patch debian-archive-keyring

.PHONY: all build deps deps-test deps-bench install test test-quick test-asan test-tsan test-clang \
        test-aarch64 install-aarch64 deps-aarch64 demo bench bench-quick fuzz clean

all: build

# apt-get runs only when something is missing, so repeated runs stay fast.
define apt_install
	@missing=""; for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; fi
endef

deps:
	$(call apt_install,$(DEB_BUILD))
deps-test: deps
	$(call apt_install,$(DEB_TEST))
	@./tests/pydeps/install.sh $(CURDIR)/.pydeps
deps-bench: deps-test
	$(call apt_install,$(DEB_BENCH))

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The whole suite: the default build, then ASan+UBSan, TSan and clang builds,
# then the aarch64 cross build under qemu-user.
test: deps-test build
	cd $(BUILD) && ctest --output-on-failure -j 2
	$(MAKE) test-asan test-tsan test-clang test-aarch64

# aarch64: Debian's cross toolchain, arm64 multiarch libraries, qemu-user
# (tests/aarch64/run.sh says what it installs, registers and skips).
deps-aarch64: deps
	./tests/aarch64/run.sh deps
test-aarch64: deps
	./tests/aarch64/run.sh test
install-aarch64: deps
	./tests/aarch64/run.sh install $(PREFIX)

test-quick: deps-test build
	cd $(BUILD) && ctest --output-on-failure -j 2

test-asan: deps-test
	cmake -S . -B build-asan -G Ninja -DMARK_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  MARK_TEST_SANITIZER=address ctest --output-on-failure -j 2

test-tsan: deps-test
	cmake -S . -B build-tsan -G Ninja -DMARK_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  MARK_TEST_SANITIZER=thread ctest --output-on-failure -j 2

# clang builds everything with -Werror, and runs the tests of what the compiler
# shapes: libmark (sites, patching, the tracer, the agent, event handlers) and
# the programs and tools built on it.  It leaves out the tests of the CLI's
# readers, exporters and text alone (plain C that gcc's run and ASan+UBSan's
# already check, about 4 minutes): CLANG_TEST_EXCLUDE.  As in the ASan, TSan
# and aarch64 builds, the tests whose result does not depend on the build
# (test_compile, *_fuzz_short) are listed as skipped, saying why
# (MARK_TEST_BUILD_INDEPENDENT in tests/CMakeLists.txt).
CLANG_TEST_EXCLUDE = ^(cli_|reader_|pairs_|export_|perfetto_|e2e_)|^dtrace_corpus$$
test-clang: deps-test
	CC=clang CXX=clang++ cmake -S . -B build-clang -G Ninja
	cmake --build build-clang -j $(JOBS)
	@echo "clang: not run here (gcc, ASan+UBSan and TSan run them): tests matching $(CLANG_TEST_EXCLUDE)"
	cd build-clang && ctest --output-on-failure -j 2 -E '$(CLANG_TEST_EXCLUDE)'

demo: deps build
	./examples/demo.sh $(BUILD)

bench: deps-bench
	./bench/run.sh full

bench-quick: deps-bench
	./bench/run.sh quick

fuzz: deps-test
	./tests/fuzz/run.sh 300
	./tests/fuzz/run_recover.sh 300
	./tests/fuzz/run_reader.sh 300
	./tests/fuzz/run_filter.sh 300

clean:
	rm -rf $(BUILD) build-asan build-tsan build-clang

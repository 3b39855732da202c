#!/usr/bin/env bash
# make install works for users: headers, libmark.so/.a, mark.pc and the CMake
# package let a program with markers build and run, from C and from C++.
# The compilers are $CC and $CXX, and MARK_TEST_CMAKE_ARGS goes to cmake: the
# aarch64 cross build sets them (and PKG_CONFIG_LIBDIR) to cross-build the
# programs against its installed tree, as `make install-aarch64` users do,
# and runs them under qemu-user through binfmt_misc.
set -eu
CC=${CC:-cc} CXX=${CXX:-c++}
build=$1
src=$2
prefix=$(mktemp -d /tmp/mark-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/mark/mark.h include/mark/tracer.h lib/libmark.so lib/libmark.a lib/pkgconfig/mark.pc lib/cmake/mark/markConfig.cmake; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done
[ -x "$prefix/bin/mark" ] || { echo "FAIL: bin/mark was not installed"; exit 1; }

cat > "$prefix/app.c" <<'C'
#include <mark/mark.h>
#include <stdio.h>
static int hits;
static void probe(const struct mark_marker *m, void *p, const uint64_t *a) { (void)m; (void)p; hits += (int)a[0]; }
int main(void) {
	mark_probe_register_fast("app_event", probe, NULL);
	MARK(app_event, "%d", 1);
	if (mark_arm("app_*") != 2) return 1;   /* two sites */
	MARK(app_event, "%d", 2);
	printf("hits=%d\n", hits);
	return hits == 2 ? 0 : 1;
}
C
# A sanitizer build installs an instrumented libmark: the user's program
# must then be built with the same sanitizer (its runtime has to come first).
case "${MARK_TEST_SANITIZER:-}" in
  address) san="-fsanitize=address,undefined" ;;
  thread) san="-fsanitize=thread" ;;
  *) san="" ;;
esac
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
$CC $san -Wall -Wextra -Werror "$prefix/app.c" -o "$prefix/app" $(pkg-config --cflags --libs mark)
"$prefix/app"
$CXX -x c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$prefix/app.c"

# The tracer's API (<mark/tracer.h>) from the installed files only.
cat > "$prefix/tracer_app.c" <<'C'
#include <mark/mark.h>
#include <mark/tracer.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
	if (argc < 2) return 2;
	const char *globs[] = { "app_traced", NULL };
	struct mark_trace_config cfg = { argv[1], MARK_TRACE_DISCARD, 64 * 1024, globs };
	enum mark_trace_mode mode;
	size_t size;
	if (mark_trace_mode_parse("block", &mode) != 0 || mode != MARK_TRACE_BLOCK) return 3;
	if (mark_size_parse("64k", &size) != 0 || size != 65536 || size < MARK_TRACE_BUFFER_MIN) return 4;
	if (mark_tracer_start(&cfg) != 0) { fprintf(stderr, "start: %s\n", mark_last_error()); return 5; }
	for (int i = 0; i < 100; i++)
		MARK(app_traced, "%d", i);
	struct mark_trace_stats st;
	mark_tracer_get_stats(&st);
	if (!st.active || st.events != 100) { fprintf(stderr, "stats: %d active, %llu events\n", st.active, (unsigned long long)st.events); return 6; }
	if (mark_tracer_stop() != 0) { fprintf(stderr, "stop: %s\n", mark_last_error()); return 7; }
	char meta[4096];
	snprintf(meta, sizeof(meta), "%s/pid-%d/metadata", argv[1], (int)getpid());
	struct stat sb;
	if (stat(meta, &sb) != 0) { fprintf(stderr, "no %s\n", meta); return 8; }
	if (!mark_process_running((int)getpid()) || mark_trace_recover(argv[1]) != 0) return 9;
	printf("tracer ok\n");
	return 0;
}
C
# shellcheck disable=SC2046
$CC $san -Wall -Wextra -Werror "$prefix/tracer_app.c" -o "$prefix/tracer_app" $(pkg-config --cflags --libs mark)
"$prefix/tracer_app" "$prefix/trace"
$CXX -x c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$prefix/tracer_app.c"

mkdir -p "$prefix/cm"
cp "$prefix/app.c" "$prefix/cm/app.c"
cat > "$prefix/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(app C)
find_package(mark REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE mark::mark)
CM
# shellcheck disable=SC2086
cmake -S "$prefix/cm" -B "$prefix/cm/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$san" \
	${MARK_TEST_CMAKE_ARGS:-} >/dev/null
cmake --build "$prefix/cm/build" >/dev/null
LD_LIBRARY_PATH=$prefix/lib "$prefix/cm/build/app"
"$prefix/bin/mark" list "$prefix/app" | grep -q "app_event" || { echo "FAIL: mark list on the installed app"; exit 1; }
echo "install ok"

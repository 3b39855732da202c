# Cross build for aarch64 Linux with Debian's cross toolchain and arm64
# multiarch libraries (make test-aarch64):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Test programs run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR, which
# ctest puts in front of every test command that is a built program).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# -L /: the loader and libc of Debian's multiarch libc6:arm64 (which
# liburcu-dev:arm64 brings), in /lib/aarch64-linux-gnu.  Not the cross
# toolchain's /usr/aarch64-linux-gnu: its ld.so is another build of glibc
# than the multiarch libc.so.6 that the loader then finds, and the mixed
# pair spins forever in the first pthread_create().
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# pkg-config: the arm64 .pc files only (liburcu-bp).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

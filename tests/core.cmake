# Core: sites, registry, arming, probes.
mark_kind_test(test_api SOURCES test_api.c test_api_other_tu.c)
mark_kind_test(test_stress SOURCES test_stress.c)
if(CMAKE_CROSSCOMPILING)
  # Under qemu-user every arm or disarm throws away translated code: 2000
  # arm/disarm operations (with 4 threads running the sites) instead of 10^5.
  foreach(kind jump immediate generic)
    set_tests_properties(test_stress_${kind} PROPERTIES ENVIRONMENT "MARK_STRESS_OPS=2000")
  endforeach()
elseif(MARK_SANITIZE)
  # Under ASan or TSan an operation costs 2 to 8 times as much (10^5 of them
  # for jump and immediate: 49 and 48 s under ASan, 58 and 59 s under TSan,
  # 29 and 13 s in the default build), and the sanitizer checks the same
  # code paths (arm, disarm, the probe swaps, the workers' sites) every few
  # hundred operations: 50,000 operations and 10 probe swaps there, half the
  # count the default build keeps.
  foreach(kind jump immediate generic)
    set_tests_properties(test_stress_${kind} PROPERTIES ENVIRONMENT "MARK_STRESS_OPS=50000")
  endforeach()
endif()

# dlopen/dlclose 1,000 times while other threads run.
foreach(kind jump immediate generic)
  add_library(dl_markers_${kind} SHARED dl_markers.c)
  target_link_libraries(dl_markers_${kind} PRIVATE mark)
  target_compile_definitions(dl_markers_${kind} PRIVATE MARK_SITE=${kind})
  mark_test(test_dlopen_${kind} SOURCES test_dlopen.c
            DEFS MARK_SITE=${kind} DL_MARKERS_PATH="$<TARGET_FILE:dl_markers_${kind}>")
  add_dependencies(test_dlopen_${kind} dl_markers_${kind})
endforeach()

# libmark loaded by dlopen into a program that does not link it.
add_executable(test_dlopen_libmark test_dlopen_libmark.c)
target_link_libraries(test_dlopen_libmark PRIVATE ${CMAKE_DL_LIBS})
target_compile_definitions(test_dlopen_libmark PRIVATE
  DL_MARKERS_PATH="$<TARGET_FILE:dl_markers_jump>" LIBMARK_PATH="$<TARGET_FILE:mark>")
add_test(NAME test_dlopen_libmark COMMAND test_dlopen_libmark)
set_tests_properties(test_dlopen_libmark PROPERTIES TIMEOUT 60)

mark_kind_test(test_fork SOURCES test_fork.c)
mark_kind_test(test_wx_refusal SOURCES test_wx_refusal.c)
mark_kind_test(test_sigtrap_chain SOURCES test_sigtrap_chain.c)

# mark_synchronize() inside a probe returns -EDEADLK instead of waiting for itself.
mark_kind_test(test_sync_in_probe SOURCES test_sync_in_probe.c)

# Batching and cache-line placement: jump sites, static library (reads the sync counter).
add_executable(test_batch test_batch.c)
target_compile_definitions(test_batch PRIVATE MARK_SITE=jump)
target_include_directories(test_batch PRIVATE ${MARK_TEST_DIR})
target_link_libraries(test_batch PRIVATE mark_static)
add_test(NAME test_batch COMMAND test_batch)

# C++: inline functions, templates, members; C++11 and C++17; in an exe and a shared object.
foreach(kind jump immediate generic)
  foreach(std 11 17)
    add_library(cxx_lib_${kind}_${std} SHARED cxx_lib.cc)
    target_link_libraries(cxx_lib_${kind}_${std} PRIVATE mark)
    target_compile_definitions(cxx_lib_${kind}_${std} PRIVATE MARK_SITE=${kind})
    set_target_properties(cxx_lib_${kind}_${std} PROPERTIES CXX_STANDARD ${std} CXX_EXTENSIONS OFF)
    add_executable(test_cxx${std}_${kind} test_cxx.cc)
    target_compile_definitions(test_cxx${std}_${kind} PRIVATE MARK_SITE=${kind})
    set_target_properties(test_cxx${std}_${kind} PROPERTIES CXX_STANDARD ${std} CXX_EXTENSIONS OFF)
    target_link_libraries(test_cxx${std}_${kind} PRIVATE mark cxx_lib_${kind}_${std})
    add_test(NAME test_cxx${std}_${kind} COMMAND test_cxx${std}_${kind})
  endforeach()
endforeach()

# gdb: patching under a debugger (trap-free protocol) and breakpoints still work.
foreach(kind jump immediate)
  add_executable(gdb_target_${kind} gdb_target.c)
  target_compile_definitions(gdb_target_${kind} PRIVATE MARK_SITE=${kind})
  target_link_libraries(gdb_target_${kind} PRIVATE mark Threads::Threads)
  add_test(NAME test_gdb_${kind} COMMAND ${MARK_TEST_DIR}/test_gdb.sh $<TARGET_FILE:gdb_target_${kind}>)
  set_tests_properties(test_gdb_${kind} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
endforeach()

# make install: headers, libraries, pkg-config and CMake package work for a user program.
add_test(NAME test_install COMMAND ${MARK_TEST_DIR}/test_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
set_tests_properties(test_install PROPERTIES TIMEOUT 300)
if(CMAKE_CROSSCOMPILING)
  # The user's programs are cross-built too (what make install-aarch64 is for).
  set_property(TEST test_install APPEND PROPERTY ENVIRONMENT
    "CC=${CMAKE_C_COMPILER}" "CXX=${CMAKE_CXX_COMPILER}"
    "MARK_TEST_CMAKE_ARGS=-DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE}"
    "PKG_CONFIG_LIBDIR=$ENV{PKG_CONFIG_LIBDIR}")
endif()

# mark list FILE: markers read from an executable and a shared object without running them.
# On x86-64 also test_odd_site_jump, whose one jump site is at an odd address.
set(odd_site "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(odd_site $<TARGET_FILE:test_odd_site_jump>)
endif()
add_test(NAME test_list_file COMMAND ${MARK_TEST_DIR}/test_list_file.sh $<TARGET_FILE:mark_cli>
         $<TARGET_FILE:test_api_jump> $<TARGET_FILE:cxx_lib_generic_17> $<TARGET_FILE:dl_markers_immediate> ${odd_site})

# `mark list` takes a file's architecture from its ELF header, not from the
# machine it runs on.  In the cross build (tests/aarch64/run.sh passes
# MARK_HOST_BUILD, the host's build directory), the same checks run with
# the host's mark on this build's files, and with this build's mark (under
# qemu) on the host build's x86-64 files, the odd jump site among them.
# Without a host build they skip, saying so.  (_add_test: the cross
# build's add_test() would split the shell text at its semicolons.)
if(CMAKE_CROSSCOMPILING)
  set(MARK_HOST_BUILD "" CACHE PATH "the host build directory, for the cross-architecture `mark list` tests")
  set(host ${MARK_HOST_BUILD})
  set(need_host "[ -x \"\$0\" ] || { echo \"SKIP: no host build of mark at \$0 (MARK_HOST_BUILD='${host}'): make test builds it before the cross build\"; exit 77; }; exec \"\$@\"")
  _add_test(NAME test_list_file_host_mark COMMAND sh -c "${need_host}" ${host}/mark
           ${MARK_TEST_DIR}/test_list_file.sh ${host}/mark
           $<TARGET_FILE:test_api_jump> $<TARGET_FILE:cxx_lib_generic_17> $<TARGET_FILE:dl_markers_immediate>)
  _add_test(NAME test_list_file_host_files COMMAND sh -c "${need_host}" ${host}/tests/test_odd_site_jump
           ${MARK_TEST_DIR}/test_list_file.sh $<TARGET_FILE:mark_cli>
           ${host}/tests/test_api_jump ${host}/tests/libcxx_lib_generic_17.so
           ${host}/tests/libdl_markers_immediate.so ${host}/tests/test_odd_site_jump)
  set_tests_properties(test_list_file_host_mark test_list_file_host_files PROPERTIES SKIP_RETURN_CODE 77)
endif()

# Strict ISO C and -O0/-O2 builds of the header, for each site kind.
foreach(kind jump immediate generic)
  foreach(std 99 11)
    foreach(opt O0 O2)
      set(t test_modes_c${std}_${opt}_${kind})
      add_executable(${t} test_modes.c)
      target_include_directories(${t} PRIVATE ${MARK_TEST_DIR})
      target_compile_definitions(${t} PRIVATE MARK_SITE=${kind})
      target_compile_options(${t} PRIVATE -${opt})
      set_target_properties(${t} PROPERTIES C_STANDARD ${std} C_EXTENSIONS OFF)
      target_link_libraries(${t} PRIVATE mark)
      add_test(NAME ${t} COMMAND ${t})
    endforeach()
  endforeach()
endforeach()

# Compile time: format mismatch is a -Werror failure; -DMARK_DISABLE leaves nothing.
# The host's compilers on the source tree's include/: nothing of this build
# (MARK_TEST_BUILD_INDEPENDENT, tests/CMakeLists.txt).
if(MARK_TEST_BUILD_INDEPENDENT)
  add_test(NAME test_compile COMMAND ${MARK_TEST_DIR}/test_compile.sh ${CMAKE_SOURCE_DIR}/include)
else()
  mark_skipped_test(test_compile
    "it compiles the source tree's include/ with the host's gcc, g++, clang and clang++, ${MARK_TEST_ELSEWHERE}")
endif()

# Patching safety (issue 17): threads with SIGTRAP blocked, failed core syncs, page protection.
mark_kind_test(test_blocked_signals SOURCES test_blocked_signals.c)
if(CMAKE_CROSSCOMPILING)
  # 10^4 arm/disarm cycles natively (the issue's count).  Under qemu-user
  # every cycle throws away translated code (about 45 s for 10^4): 2000
  # there.  qemu's translation cache decides when the workers see the new
  # code, not the processor's, so more cycles add no hardware timing.
  foreach(kind jump immediate generic)
    set_tests_properties(test_blocked_signals_${kind} PROPERTIES ENVIRONMENT "MARK_BLOCKED_CYCLES=2000")
  endforeach()
endif()
mark_kind_test(test_patch_failure SOURCES test_patch_failure.c)
mark_kind_test(test_page_protection SOURCES test_page_protection.c)
mark_kind_test(test_patch_rollback SOURCES test_patch_rollback.c KINDS jump immediate)
# A jump site at an odd address (an object of an older header) is refused.
mark_kind_test(test_odd_site SOURCES test_odd_site.c KINDS jump)

# A marker in a signal handler that interrupts a thread's exit (liburcu-bp's
# TSD destructor) must neither hang nor lose the event (review finding).
mark_test(test_exit_signal SOURCES test_exit_signal.c)
set_tests_properties(test_exit_signal PROPERTIES TIMEOUT 90)
# 1000 rounds instead of 3000 where each costs 5-10 times as much (a
# sanitizer, qemu): the old code hung within a second or two natively, a
# few hundred rounds; the default build keeps the margin.
if(MARK_SANITIZE OR CMAKE_CROSSCOMPILING)
  set_tests_properties(test_exit_signal PROPERTIES ENVIRONMENT MARK_EXIT_SIGNAL_ROUNDS=1000)
endif()

# mark_arm/mark_disarm when an allocation fails: all or nothing (every
# allocation point in turn; the rule also holds for objects loaded later).
mark_test(test_arm_oom SOURCES test_arm_oom.c DEFS DL_MARKERS_PATH="$<TARGET_FILE:dl_markers_jump>"
          ENV MARK_AGENT=0)
add_dependencies(test_arm_oom dl_markers_jump)

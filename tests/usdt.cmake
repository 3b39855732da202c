# USDT interop: every marker is a .note.stapsdt probe that readelf, bpftrace,
# perf and gdb see (tests/usdt/), and `mark dtrace` (tests/dtrace/).
# Tests that place uprobes share the RESOURCE_LOCK "uprobes": perf and bpftrace
# events are global to the machine.
foreach(kind jump immediate generic)
  add_executable(usdt_target_${kind} usdt/usdt_target.c usdt/usdt_target_prov.c)
  target_compile_definitions(usdt_target_${kind} PRIVATE MARK_SITE=${kind})
  target_link_libraries(usdt_target_${kind} PRIVATE mark)

  add_test(NAME usdt_readelf_${kind}
    COMMAND /usr/bin/python3 ${MARK_TEST_DIR}/usdt/check_notes.py $<TARGET_FILE:usdt_target_${kind}> ${kind}
            mark:usdt_hit:5 mark:usdt_noargs:0 usdtprov:prov_hit:1)
  add_test(NAME usdt_bpftrace_${kind}
    COMMAND ${MARK_TEST_DIR}/usdt/test_bpftrace.sh $<TARGET_FILE:usdt_target_${kind}> ${kind}
            $<$<TARGET_EXISTS:mark_cli>:$<TARGET_FILE:mark_cli>>)
  add_test(NAME usdt_perf_${kind}
    COMMAND ${MARK_TEST_DIR}/usdt/test_perf.sh $<TARGET_FILE:usdt_target_${kind}> ${kind})
  add_test(NAME usdt_gdb_${kind}
    COMMAND ${MARK_TEST_DIR}/usdt/test_gdb.sh $<TARGET_FILE:usdt_target_${kind}> ${kind})
  set_tests_properties(usdt_readelf_${kind} usdt_bpftrace_${kind} usdt_perf_${kind} usdt_gdb_${kind}
    PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS usdt)
  if(kind STREQUAL "jump")
    add_test(NAME usdt_stap COMMAND ${MARK_TEST_DIR}/usdt/test_stap.sh $<TARGET_FILE:usdt_target_jump>)
    set_tests_properties(usdt_stap PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS usdt)
  endif()
  set_tests_properties(usdt_bpftrace_${kind} usdt_perf_${kind} PROPERTIES RESOURCE_LOCK uprobes)
endforeach()

# ---- mark dtrace: the provider language, generated headers and objects ----
if(TARGET mark_cli)
  set(DT_SRC ${MARK_TEST_DIR}/dtrace)
  set(DT_OUT ${CMAKE_CURRENT_BINARY_DIR}/dtrace)
  file(MAKE_DIRECTORY ${DT_OUT})
  # Headers through `mark dtrace -h` (cpp.d needs -C with -I and -D).
  set(DT_HEADERS)
  foreach(d basic types multi cpp)
    set(extra)
    if(d STREQUAL "cpp")
      set(extra -C -I ${DT_SRC}/inc -DWITH_EXTRA)
    endif()
    add_custom_command(OUTPUT ${DT_OUT}/${d}.h
      COMMAND $<TARGET_FILE:mark_cli> dtrace ${extra} -s ${DT_SRC}/${d}.d -h -o ${DT_OUT}/${d}.h
      DEPENDS mark_cli ${DT_SRC}/${d}.d ${DT_SRC}/inc/cpp_types.h VERBATIM)
    list(APPEND DT_HEADERS ${DT_OUT}/${d}.h)
  endforeach()
  # The -G object, through the installed-name wrapper as autoconf calls it,
  # compiled by this build's compiler ($CC, as a cross-building project
  # sets it: the aarch64 build needs an aarch64 object).
  add_custom_command(OUTPUT ${DT_OUT}/basic_dtrace.o
    COMMAND ${CMAKE_COMMAND} -E env CC=${CMAKE_C_COMPILER} ${CMAKE_BINARY_DIR}/mark-dtrace -G -s ${DT_SRC}/basic.d -o ${DT_OUT}/basic_dtrace.o
    DEPENDS mark_cli ${DT_SRC}/basic.d VERBATIM)
  add_custom_target(dtrace_generated DEPENDS ${DT_HEADERS} ${DT_OUT}/basic_dtrace.o)

  foreach(kind jump generic)
    add_executable(dtrace_user_${kind} dtrace/dtrace_user.c ${DT_OUT}/basic_dtrace.o)
    add_dependencies(dtrace_user_${kind} dtrace_generated)
    target_include_directories(dtrace_user_${kind} PRIVATE ${DT_OUT} ${MARK_TEST_DIR})
    target_compile_definitions(dtrace_user_${kind} PRIVATE MARK_SITE=${kind})
    # Projects compile their probes with -pedantic -Werror (memcached does).
    target_compile_options(dtrace_user_${kind} PRIVATE -pedantic -Wshadow
      -Wmissing-prototypes -Wmissing-declarations -Wredundant-decls)
    target_link_libraries(dtrace_user_${kind} PRIVATE mark)
    add_test(NAME dtrace_user_${kind} COMMAND dtrace_user_${kind})
    # The notes keep systemtap's probe names (transaction__start).
    add_test(NAME dtrace_notes_${kind}
      COMMAND /usr/bin/python3 ${MARK_TEST_DIR}/usdt/check_notes.py $<TARGET_FILE:dtrace_user_${kind}> ${kind}
              basic:transaction__start:1 basic:transaction__done:2 basic:tick:0 types:fixed:12
              types:twelve:12 types:floating:2 cpp:lock__acquire:3 first:b__c:0 second:a:1)
    set_tests_properties(dtrace_user_${kind} dtrace_notes_${kind} PROPERTIES LABELS dtrace TIMEOUT 60)
  endforeach()

  # Linked like an autoconf project: the -G object, no libmark.
  add_executable(dtrace_shim_user dtrace/dtrace_shim_user.c ${DT_OUT}/basic_dtrace.o)
  add_dependencies(dtrace_shim_user dtrace_generated)
  target_include_directories(dtrace_shim_user PRIVATE ${DT_OUT})
  target_link_libraries(dtrace_shim_user PRIVATE ${CMAKE_DL_LIBS})
  add_test(NAME dtrace_shim_user COMMAND dtrace_shim_user)

  add_executable(dtrace_user_cxx dtrace/dtrace_user_cxx.cc)
  add_dependencies(dtrace_user_cxx dtrace_generated)
  target_include_directories(dtrace_user_cxx PRIVATE ${DT_OUT})
  target_compile_options(dtrace_user_cxx PRIVATE -pedantic)
  target_link_libraries(dtrace_user_cxx PRIVATE mark)
  add_test(NAME dtrace_user_cxx COMMAND dtrace_user_cxx)

  # The installed mark-dtrace: default outputs, no -I, no -lmark.
  add_test(NAME dtrace_install COMMAND ${MARK_TEST_DIR}/dtrace/test_install.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(dtrace_install PROPERTIES LABELS dtrace TIMEOUT 120 SKIP_RETURN_CODE 77)
  # The project's compiler is this build's (the aarch64 one when cross-built).
  set_property(TEST dtrace_install APPEND PROPERTY ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
  # Syntax errors: file, line and what was expected; the command line.
  add_test(NAME dtrace_errors COMMAND ${MARK_TEST_DIR}/dtrace/run_errors.sh $<TARGET_FILE:mark_cli>)
  # bpftrace attaches to a probe by its systemtap name.
  # Real projects' provider files against systemtap's dtrace: same macros and
  # notes, no warning in any language mode, their own post-processing seds.
  # The warning matrix of every language mode compiles the headers with the
  # host's compilers, the same in every build: only the default build runs
  # it (MARK_TEST_BUILD_INDEPENDENT, tests/CMakeLists.txt); this build's
  # mark-dtrace is checked against systemtap's in every build.
  set(corpus_mode "")
  if(NOT MARK_TEST_BUILD_INDEPENDENT)
    set(corpus_mode --skip-language-modes "${MARK_TEST_THIS_BUILD}")
  endif()
  add_test(NAME dtrace_corpus
    COMMAND ${MARK_TEST_DIR}/dtrace/corpus_check.sh ${corpus_mode} ${CMAKE_BINARY_DIR}/mark-dtrace
            ${MARK_TEST_DIR}/dtrace/corpus)
  set_tests_properties(dtrace_corpus PROPERTIES LABELS dtrace TIMEOUT 900 SKIP_RETURN_CODE 77)

  add_test(NAME dtrace_bpftrace
    COMMAND ${MARK_TEST_DIR}/dtrace/test_bpftrace.sh $<TARGET_FILE:dtrace_user_generic>)
  set_tests_properties(dtrace_shim_user dtrace_user_cxx dtrace_errors dtrace_bpftrace PROPERTIES
    LABELS dtrace TIMEOUT 120 SKIP_RETURN_CODE 77)
  set_tests_properties(dtrace_bpftrace PROPERTIES RESOURCE_LOCK uprobes)
endif()

# ---- end to end: a real program's probes.d through DTRACE=mark-dtrace ------
# memcached from its Debian source package (fetched, with its build
# dependencies, on first run; cached in $MARK_E2E_CACHE or /tmp/mark-e2e).
# Minutes on a fresh machine, about 30 s cached; skips when the source
# package cannot be fetched.  Label e2e: `ctest -L e2e` runs it alone,
# `ctest -LE e2e` leaves it out.
if(TARGET mark_cli)
  add_test(NAME e2e_memcached COMMAND ${MARK_TEST_DIR}/usdt/e2e_memcached.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(e2e_memcached PROPERTIES LABELS e2e TIMEOUT 1800 SKIP_RETURN_CODE 77)
endif()

# C++ takes another path for descriptors (class template static members):
# the same checks on the target compiled as C++.
foreach(kind jump generic)
  add_executable(usdt_target_cxx_${kind} usdt/usdt_target_cxx.cc usdt/usdt_target_prov_cxx.cc)
  target_compile_definitions(usdt_target_cxx_${kind} PRIVATE MARK_SITE=${kind})
  target_link_libraries(usdt_target_cxx_${kind} PRIVATE mark)
  add_test(NAME usdt_readelf_cxx_${kind}
    COMMAND /usr/bin/python3 ${MARK_TEST_DIR}/usdt/check_notes.py $<TARGET_FILE:usdt_target_cxx_${kind}> ${kind}
            mark:usdt_hit:5 mark:usdt_noargs:0 usdtprov:prov_hit:1)
  add_test(NAME usdt_bpftrace_cxx_${kind}
    COMMAND ${MARK_TEST_DIR}/usdt/test_bpftrace.sh $<TARGET_FILE:usdt_target_cxx_${kind}> ${kind})
  set_tests_properties(usdt_readelf_cxx_${kind} usdt_bpftrace_cxx_${kind}
    PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS usdt)
  set_tests_properties(usdt_bpftrace_cxx_${kind} PROPERTIES RESOURCE_LOCK uprobes)
endforeach()

# A shared object's generic sites: notes, semaphore offsets and the .probes anchor.
add_library(usdt_shared_generic SHARED usdt/usdt_target_prov.c)
target_compile_definitions(usdt_shared_generic PRIVATE MARK_SITE=generic)
target_link_libraries(usdt_shared_generic PRIVATE mark)
add_test(NAME usdt_readelf_shared_generic
  COMMAND /usr/bin/python3 ${MARK_TEST_DIR}/usdt/check_notes.py $<TARGET_FILE:usdt_shared_generic> generic
          usdtprov:prov_hit:1)
set_tests_properties(usdt_readelf_shared_generic PROPERTIES LABELS usdt TIMEOUT 60)

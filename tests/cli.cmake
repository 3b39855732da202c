# The trace commands: mark record / view / stats / export (tests/cli/test_cli.py).
# view/stats/export are checked on a hand-made CTF 1.8 trace of known content
# (tests/cli/make_ctf.py); record runs tests/cli/record_target.c through the
# tracer and cross-checks against the babeltrace2 command line.
if(TARGET mark_cli)
  add_executable(cli_record_target cli/record_target.c)
  target_link_libraries(cli_record_target PRIVATE mark Threads::Threads)
  # Threads that name themselves (the exports' thread names).
  add_executable(names_target cli/names_target.c)
  target_link_libraries(names_target PRIVATE mark Threads::Threads)
  # Marker names with UTF-8 letters (C11 identifiers), read back as they are.
  add_executable(cli_utf8_names cli/utf8_names.c)
  target_link_libraries(cli_utf8_names PRIVATE mark)
  # NULL, "(null)", a 253-byte string ending in "...", a cut one, "".
  add_executable(cli_strings_target cli/strings_target.c)
  target_link_libraries(cli_strings_target PRIVATE mark)
  # Formats and %s values holding a backslash beside ones holding ESC.
  add_executable(cli_backslash_target cli/backslash_target.c)
  target_link_libraries(cli_backslash_target PRIVATE mark)
  # 64-bit values around 2^53 and at the ends of their types (the Chrome export).
  add_executable(cli_int64_target cli/int64_target.c)
  target_link_libraries(cli_int64_target PRIVATE mark)
  foreach(case view stats export output errors glob help hostile hostile_labels hostile_backslash export_int64 utf8_names string_tags wide_payload variant_selector trace_links record_hostile_stats record_exit record_filter record_fork record_fork_kill record_kill record_kill_busy record_signal record_interrupt record_liveline
               recover record_quiet record_duration list_pid)
    add_test(NAME cli_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target>
              ${CMAKE_CURRENT_BINARY_DIR}/cli-work/${case})
    set_tests_properties(cli_${case} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
  # A marker with two formats, one site duplicated by inlining: warned once.
  add_executable(cli_dup_format cli/dup_format.c)
  target_compile_options(cli_dup_format PRIVATE -O2)
  target_link_libraries(cli_dup_format PRIVATE mark)
  add_test(NAME cli_warn_once
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.py warn_once
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_dup_format> ${CMAKE_CURRENT_BINARY_DIR}/cli-work/warn_once)
  set_tests_properties(cli_warn_once PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  # The shortest-double text (cli/trace_value.c) against the algorithm it replaced.
  add_executable(cli_double_text cli/double_text.c ${CMAKE_SOURCE_DIR}/cli/text.c ${CMAKE_SOURCE_DIR}/src/util/printable.c)
  target_include_directories(cli_double_text PRIVATE ${CMAKE_SOURCE_DIR}/cli ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(cli_double_text PRIVATE PkgConfig::BABELTRACE2 m)
  add_test(NAME cli_double_text COMMAND cli_double_text 100000)
  # The same and the integer and time text against libc, with round-trip and
  # shortest checks, for a million random bit patterns (a tenth under a sanitizer or
  # qemu: MARK_TEST_VALUES_SCALE) and the edge values.
  add_executable(cli_double_shortest cli/double_shortest.c ${CMAKE_SOURCE_DIR}/cli/text.c
                 ${CMAKE_SOURCE_DIR}/cli/trace_time.c ${CMAKE_SOURCE_DIR}/src/util/printable.c)
  target_include_directories(cli_double_shortest PRIVATE ${CMAKE_SOURCE_DIR}/cli ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(cli_double_shortest PRIVATE PkgConfig::BABELTRACE2 m)
  math(EXPR double_shortest_values "1000000 / ${MARK_TEST_VALUES_SCALE}")
  add_test(NAME cli_double_shortest COMMAND cli_double_shortest ${double_shortest_values})
  set_tests_properties(cli_double_shortest PROPERTIES TIMEOUT 300)
  # How the readers find traces and open them: by descriptor, links not followed.
  add_executable(cli_trace_walk cli/trace_walk.c ${CMAKE_SOURCE_DIR}/cli/trace_native.c ${CMAKE_SOURCE_DIR}/cli/text.c
                 ${CMAKE_SOURCE_DIR}/cli/trace_value.c ${CMAKE_SOURCE_DIR}/src/util/printable.c
                 ${CMAKE_SOURCE_DIR}/src/util/uuid_text.c ${CMAKE_SOURCE_DIR}/src/filter/filter.c)
  target_include_directories(cli_trace_walk PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/cli ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(cli_trace_walk PRIVATE PkgConfig::BABELTRACE2 Threads::Threads m)
  add_test(NAME cli_trace_walk COMMAND cli_trace_walk ${CMAKE_CURRENT_BINARY_DIR}/trace-walk)
  # The native reader of mark's own traces against libbabeltrace2 (cli/trace_native.c).
  foreach(case compare hostile forced progress threads)
    add_test(NAME reader_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_reader.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target> $<TARGET_FILE:tracer_prog>
              ${CMAKE_CURRENT_BINARY_DIR}/reader-work/${case})
    set_tests_properties(reader_${case} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# The costs README.md and docs/tracer.md give are docs/benchmarks.md's (`make bench`).
add_test(NAME docs_numbers
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/docs/test_docs_numbers.py ${CMAKE_SOURCE_DIR})

# Begin/end pairs in `mark stats` and `mark export`, and stats' bounded
# memory (cli/pairs.c, cli/histo.c; tests/cli/test_pairs.py).
if(TARGET mark_cli)
  add_executable(cli_pairs_target cli/pairs_target.c)
  target_link_libraries(cli_pairs_target PRIVATE mark Threads::Threads)
  foreach(case conventions pair_by lost_exact deep export memory memory_by)
    add_test(NAME pairs_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_pairs.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_pairs_target>
              ${CMAKE_CURRENT_BINARY_DIR}/pairs-work/${case})
    set_tests_properties(pairs_${case} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# Hostile files and directories given to the commands (found by an audit):
#   cli_ps_race          root's `mark ps` never removes files through a socket
#                        directory its owner swaps for a link
#   cli_liveline_links   `mark stats`/`view` never follow .mark-stats or pid-P
#                        links planted in a trace directory
#   cli_list_hostile     `mark list` on a FIFO (no hang) and on a file cut
#                        short while it is read (no SIGBUS)
#   cli_record_pid_dirs  `mark record --pid` escapes the directory it prints
#                        and refuses one that holds a trace
#   cli_output_empty     `-o ''` is refused before anything is written
#   cli_follow_foreign   `view --follow` refuses a trace whose metadata it
#                        cannot read, or nested deeper than DIR/*/, and ends
#                        on a finished trace without .mark-stats, instead of
#                        waiting forever
#   cli_bt2_crash        `view`/`stats`/`export` exit 1 with an error when
#                        libbabeltrace2 crashes on a damaged metadata, and
#                        a crash in mark's own code is not blamed on it
#   cli_ctl_connect_*    the control commands reach an agent through its
#                        directory's descriptor, give up on one whose queue
#                        is full (full_queue: no hang in connect(); full_many:
#                        `mark ps` waits for four such at once, not one after
#                        the other), and refuse a listener of another uid
#                        (peer_uid: SO_PEERCRED)
if(TARGET mark_cli)
  add_test(NAME cli_ps_race
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_ps_race.py $<TARGET_FILE:mark_cli>)
  set_tests_properties(cli_ps_race PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
  add_test(NAME cli_liveline_links
    COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_liveline_links.sh
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:tracer_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/cli-work/liveline_links)
  set_tests_properties(cli_liveline_links PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  add_test(NAME cli_list_hostile
    COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_list_hostile.sh
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:agent_target>
            ${CMAKE_CURRENT_BINARY_DIR}/cli-work/list_hostile)
  set_tests_properties(cli_list_hostile PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  add_test(NAME cli_record_pid_dirs
    COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_record_pid_dirs.sh
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:agent_target> $<TARGET_FILE:cli_record_target>
            ${CMAKE_CURRENT_BINARY_DIR}/cli-work/record_pid_dirs)
  set_tests_properties(cli_record_pid_dirs PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  add_test(NAME cli_output_empty
    COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_output_empty.sh
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target>
            ${CMAKE_CURRENT_BINARY_DIR}/cli-work/output_empty)
  set_tests_properties(cli_output_empty PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  add_test(NAME cli_follow_foreign
    COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_follow_foreign.sh
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target>
            ${CMAKE_CURRENT_BINARY_DIR}/cli-work/follow_foreign)
  set_tests_properties(cli_follow_foreign PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  # SIGKILL right after the consumer's N-th packet write.
  add_library(cli_kill_preload MODULE cli/kill_preload.c)
  target_link_libraries(cli_kill_preload PRIVATE ${CMAKE_DL_LIBS})
  add_test(NAME cli_record_kill_writing
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.py record_kill_writing
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target>
            ${CMAKE_CURRENT_BINARY_DIR}/cli-work/record_kill_writing $<TARGET_FILE:cli_kill_preload>)
  set_tests_properties(cli_record_kill_writing PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  add_library(cli_crash_preload MODULE cli/crash_preload.c)
  target_link_libraries(cli_crash_preload PRIVATE ${CMAKE_DL_LIBS})
  add_test(NAME cli_bt2_crash
    COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_bt2_crash.sh
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target>
            ${CMAKE_CURRENT_BINARY_DIR}/cli-work/bt2_crash $<TARGET_FILE:cli_crash_preload>)
  set_tests_properties(cli_bt2_crash PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  foreach(case full_queue full_many peer_uid)
    add_test(NAME cli_ctl_connect_${case}
      COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_ctl_connect.sh ${case}
              $<TARGET_FILE:mark_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli-work/ctl_connect_${case})
    set_tests_properties(cli_ctl_connect_${case} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# `mark stats`/`export` on a trace of 320 processes: each trace's event class
# names are listed once (MARK_PAIRS_DEBUG counts it), output as with
# MARK_READER=bt2 (cli/pairs.c; found by an audit: 80 processes took 15 s).
if(TARGET mark_cli)
  add_test(NAME pairs_many_traces
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_pairs_many_traces.py
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:tracer_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/pairs-work/many_traces)
  set_tests_properties(pairs_many_traces PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()

# `mark stats` remembers each event class's row and pair role (cmd_stats.c,
# a cache keyed by the class's name and trace) and adds most values inline
# (histo.h): two processes whose same-named markers pair differently, 400
# classes sharing the cache's slots, and exact cells past 1024 values.
if(TARGET mark_cli)
  add_test(NAME stats_roles
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_stats_roles.py
            $<TARGET_FILE:mark_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli-work/stats_roles)
  set_tests_properties(stats_roles PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()

# Built-in tracer: real traced programs, real babeltrace2 (Debian) reading
# their CTF traces.  Scenarios are in tests/tracer/run_tracer_test.py.
add_executable(tracer_prog tracer/tracer_prog.c)
target_link_libraries(tracer_prog PRIVATE mark Threads::Threads)
add_executable(tracer_api tracer/tracer_api.c)
target_include_directories(tracer_api PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/../src)
target_link_libraries(tracer_api PRIVATE mark_static Threads::Threads)
add_library(tracer_dso MODULE tracer/tracer_dso.c)
target_link_libraries(tracer_dso PRIVATE mark)

# Each scenario: run the program(s), read the trace with the real
# babeltrace2 (CLI and Python bt2), check every event.
set(MARK_TRACER_SCENARIOS types discard discard_sizes overwrite overwrite_mixed block threads_block threads_discard
    threads_overwrite kill kill_overwrite segv signals fork fork_faults fork_exec many closefds cpu fastpath cpusource pastkick badenv api tickgap snapshot dlopen dlopen_killed noring noring_killed nostream fork_exec_full longjmp exec_at_once exec_chdir cancel)
foreach(s ${MARK_TRACER_SCENARIOS})
  add_test(NAME tracer_${s}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/run_tracer_test.py ${s}
            $<TARGET_FILE:tracer_prog> $<TARGET_FILE:tracer_api> $<TARGET_FILE:tracer_dso>
            ${CMAKE_CURRENT_BINARY_DIR}/tracer-traces)
  set_tests_properties(tracer_${s} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
# %ls and %lc are refused when the marker registers, never recorded as a
# byte of what the program passed (a program of their own: every
# tracer_prog scenario requires an empty stderr).
add_executable(tracer_wide_prog tracer/wide_prog.c)
target_link_libraries(tracer_wide_prog PRIVATE mark)
add_test(NAME tracer_wide
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/run_tracer_test.py wide
          $<TARGET_FILE:tracer_prog> $<TARGET_FILE:tracer_api> $<TARGET_FILE:tracer_dso>
          ${CMAKE_CURRENT_BINARY_DIR}/tracer-traces)
set_tests_properties(tracer_wide PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
                     ENVIRONMENT MARK_WIDE_PROG=$<TARGET_FILE:tracer_wide_prog>)
# Strings read back exactly in babeltrace2, bt2, mark view and mark export.
# Strings, field names, doubles, %c and Chrome slices as the tracer writes
# them and mark view/export show them.
if(TARGET mark_cli)
  foreach(s strings values chrome)
    add_test(NAME tracer_${s}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/run_tracer_test.py ${s}
              $<TARGET_FILE:tracer_prog> $<TARGET_FILE:tracer_api> $<TARGET_FILE:tracer_dso>
              ${CMAKE_CURRENT_BINARY_DIR}/tracer-traces)
    set_tests_properties(tracer_${s} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                         ENVIRONMENT MARK_CLI=$<TARGET_FILE:mark_cli>)
  endforeach()
  # types also checks how `mark view` shows a %o
  set_tests_properties(tracer_types PROPERTIES ENVIRONMENT MARK_CLI=$<TARGET_FILE:mark_cli>)
endif()

# Not a test: `tracer_speed DIR [N]` prints the probe cost and block-mode
# throughput (the numbers of the tracer's report; the bench suite has the
# real benchmarks).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(tracer_speed tracer/tracer_speed.c)
  target_include_directories(tracer_speed PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/../src)
  target_link_libraries(tracer_speed PRIVATE mark_static Threads::Threads)
endif()

# Trace directories under attack (tests/tracer/test_trace_dirs.sh CASE):
# planted links, foreign and writable directories, root recording another
# user's process, snapshots into directories that hold user files.
if(TARGET mark_cli)
  foreach(case record_pid_root tracer_owner tracer_writable tracer_symlinks tracer_modes snapshot_nonempty)
    add_test(NAME tracer_dirs_${case}
      COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/tracer/test_trace_dirs.sh ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:agent_target> $<TARGET_FILE:tracer_prog>
              ${CMAKE_CURRENT_BINARY_DIR}/trace-dirs/${case})
    set_tests_properties(tracer_dirs_${case} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()
# Crash recovery against hostile trace directories (issue 10, defects 2 and
# 3): the real `mark record` path that recovers, with planted symlinks, a
# pid-0 statistics file and crafted .mark-stats / .mark-ring-N fields.  The
# symlink case needs root (it is root's recovery that is attacked) and skips
# otherwise; `ok` is the positive case (every event of a SIGKILLed process).
if(TARGET mark_cli)
  foreach(case ok ok_wrapped ok_large sparse_ring nobody_ok symlink pid0 stats_header_size stats_entry_size stats_max_entries stats_markers_described
          stats_short stats_race stats_truncate ring_capacity ring_head ring_tail ring_stream_index ring_header_size ring_short
          pid_stats_header_size)
    add_test(NAME recover_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/test_recover_attack.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:tracer_prog> ${CMAKE_CURRENT_BINARY_DIR}/recover-work)
    set_tests_properties(recover_${case} PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# The traced program's own statistics writer must not trust max_entries from
# the shared file (a program with more markers than the file's 4096 entries).
add_executable(tracer_many_markers tracer/many_markers.c)
target_compile_options(tracer_many_markers PRIVATE -O0)
target_link_libraries(tracer_many_markers PRIVATE mark)
if(TARGET mark_cli)
  add_test(NAME tracer_stats_max_entries
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/test_recover_attack.py live_max_entries
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:tracer_many_markers> ${CMAKE_CURRENT_BINARY_DIR}/recover-work)
  set_tests_properties(tracer_stats_max_entries PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()

# 15 s of afl++ on crash recovery and the .mark-stats
# reader, seeded with real traces (`make fuzz` runs it for 300 s).  The target
# is built by run_recover.sh with its own compiler and sanitizers (first run:
# ~15 s more): only the default build runs it (MARK_TEST_BUILD_INDEPENDENT).
mark_fuzz_short_test(recover_fuzz_short ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_recover.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz-recover)

# 15 s of afl++ on the native trace reader (cli/trace_native.c), seeded with
# real traces (`make fuzz` runs it for 300 s); built by run_reader.sh with its
# own compiler and sanitizers (first run: ~20 s more): only the default build
# runs it (MARK_TEST_BUILD_INDEPENDENT).
mark_fuzz_short_test(reader_fuzz_short ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_reader.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz-reader)

# Bounded disk (issue 13 §2): chunks, MARK_MAX_SIZE deletes the oldest,
# MARK_ROTATE only cuts; the directory size is checked while the program
# writes ~200 MB (tests/tracer/test_chunks.py).
add_executable(tracer_chunk_prog tracer/chunk_prog.c)
target_link_libraries(tracer_chunk_prog PRIVATE mark)
if(TARGET mark_cli)
  foreach(case max_size max_size_discard max_size_small rotate rotate_time kill record record_pid detach detach_exit controller_killed)
    add_test(NAME tracer_chunks_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/test_chunks.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:tracer_chunk_prog> ${CMAKE_CURRENT_BINARY_DIR}/chunks-work/${case})
    set_tests_properties(tracer_chunks_${case} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# A full disk (found by a review): the losses the trace could not record
# are reported from .mark-stats (tests/tracer/test_diskfull.py; mounts a
# tmpfs, skipped when that is denied).
if(TARGET mark_cli)
  foreach(case full_later full_before full_at_start)
    add_test(NAME tracer_diskfull_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/test_diskfull.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:tracer_chunk_prog> ${CMAKE_CURRENT_BINARY_DIR}/diskfull-work/${case})
    set_tests_properties(tracer_diskfull_${case} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()

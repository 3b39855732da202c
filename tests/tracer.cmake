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
set(MARK_TRACER_SCENARIOS types discard overwrite overwrite_mixed block threads_block threads_discard
    threads_overwrite kill kill_overwrite segv signals fork many closefds cpu badenv api snapshot dlopen)
foreach(s ${MARK_TRACER_SCENARIOS})
  add_test(NAME tracer_${s}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tracer/run_tracer_test.py ${s}
            $<TARGET_FILE:tracer_prog> $<TARGET_FILE:tracer_api> $<TARGET_FILE:tracer_dso>
            ${CMAKE_CURRENT_BINARY_DIR}/tracer-traces)
  set_tests_properties(tracer_${s} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
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
endif()

# Not a test: `tracer_speed DIR [N]` prints the probe cost and block-mode
# throughput (the numbers of the tracer's report; the bench suite has the
# real benchmarks).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(tracer_speed tracer/tracer_speed.c)
  target_include_directories(tracer_speed PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/../src)
  target_link_libraries(tracer_speed PRIVATE mark_static Threads::Threads)
endif()

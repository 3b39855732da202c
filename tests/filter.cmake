# Filters (src/filter, issue 13 section 1): the language itself, then
# filters in the probe, on read, and installed live.
mark_test(test_filter_parse SOURCES filter/test_filter_parse.c)
target_include_directories(test_filter_parse PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(test_filter_parse PRIVATE mark_static)
# record --filter, MARK_FILTER, refusal before the program runs (needs the CLI).
if(TARGET mark_cli)
  foreach(case record refuse meaningless read)
    add_test(NAME filter_cli_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/filter/test_filter_cli.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target>
              ${CMAKE_CURRENT_BINARY_DIR}/filter-work/${case})
    set_tests_properties(filter_cli_${case} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()
# A %s longer than the trace keeps: the probe judges the kept text (tracer_prog).
if(TARGET mark_cli)
  add_test(NAME filter_cli_long_strings
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/filter/test_filter_cli.py long_strings
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:tracer_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/filter-work/long_strings)
  set_tests_properties(filter_cli_long_strings PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
# A filter replaced while threads fire; exact counts after.
mark_test(test_filter_live SOURCES filter/test_filter_live.c)
set_tests_properties(test_filter_live PROPERTIES WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
# 15 s of afl++ on the filter parser/evaluator (`make fuzz`: 300 s); built by
# run_filter.sh with its own compiler and sanitizers, so only the default
# build runs it (MARK_TEST_BUILD_INDEPENDENT).
mark_fuzz_short_test(filter_fuzz_short ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_filter.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz-filter)
# --filter through the control agent (record --pid, enable --filter).
if(TARGET mark_cli)
  add_test(NAME agent_cli_filter
    COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_control.sh filter
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:agent_target>
            ${CMAKE_CURRENT_BINARY_DIR}/agent-work/filter)
  set_tests_properties(agent_cli_filter PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
# Snapshot triggers (issue 13 section 3): --snapshot-on 'GLOB if EXPR' in
# overwrite mode writes DIR/snapshot-N/ ending with the trigger event.
add_executable(trigger_target filter/trigger_target.c)
target_link_libraries(trigger_target PRIVATE mark Threads::Threads)
if(TARGET mark_cli)
  foreach(case record gaps limits env refuse pid)
    add_test(NAME trigger_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/filter/test_trigger.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:trigger_target>
              ${CMAKE_CURRENT_BINARY_DIR}/trigger-work/${case})
    set_tests_properties(trigger_${case} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  endforeach()
endif()

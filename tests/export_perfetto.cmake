# `mark export --format perfetto` (cli/export_perfetto.c), decoded with the
# official Perfetto protos (PyPI `perfetto`, tests/pydeps; skipped when not
# installed) and checked against babeltrace2's reading of the CTF trace
# (tests/cli/test_export_perfetto.py).  perfetto_trace_processor loads the
# file in trace_processor when its binary can be fetched, else skips.
if(TARGET mark_cli)
  foreach(case threads names lossy strings sequences numbers memory trace_processor)
    add_test(NAME perfetto_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_export_perfetto.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_record_target> $<TARGET_FILE:tracer_prog>
              ${CMAKE_CURRENT_BINARY_DIR}/perfetto-work/${case})
    set_tests_properties(perfetto_${case} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
endif()

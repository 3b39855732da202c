# `mark export --format otlp` (cli/export_otlp.c; tests/cli/test_export_otlp.py):
# OTLP/JSON lines parsed strictly with opentelemetry-proto and checked
# against the CTF trace, and the OTLP/HTTP POST path against a local receiver.
if(TARGET mark_cli)
  add_executable(cli_otlp_target cli/otlp_target.c)
  target_link_libraries(cli_otlp_target PRIVATE mark Threads::Threads)
  foreach(case file names fork lossy post post_fail post_stall resolve_stall)
    add_test(NAME export_otlp_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_export_otlp.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:cli_otlp_target>
              ${CMAKE_CURRENT_BINARY_DIR}/export-otlp-work/${case})
    set_tests_properties(export_otlp_${case} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
endif()

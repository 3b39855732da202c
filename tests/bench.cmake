# The benchmark tooling (bench/size/size.py, bench/report.py, gen_sites.py)
# computes what docs/benchmarks.md claims.  No timing is asserted: speed
# goals are checked by `make bench`, never by tests.
add_test(NAME bench_tools
  COMMAND /usr/bin/python3 ${MARK_TEST_DIR}/bench/test_bench_tools.py ${PROJECT_SOURCE_DIR})
set_tests_properties(bench_tools PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "CC=${CMAKE_C_COMPILER}")

# bench/reader/run.sh (table 10) on a 4 MiB trace: every row it reports
# (events/s by wall and CPU time, MB/s, peak RSS) and the trace removed.
add_test(NAME bench_reader_smoke
  COMMAND /bin/bash ${MARK_TEST_DIR}/bench/reader_smoke.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(bench_reader_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

# The benchmark tooling (bench/size/size.py, bench/report.py, gen_sites.py)
# computes what docs/benchmarks.md claims.  No timing is asserted: speed
# goals are checked by `make bench`, never by tests.
add_test(NAME bench_tools
  COMMAND /usr/bin/python3 ${MARK_TEST_DIR}/bench/test_bench_tools.py ${PROJECT_SOURCE_DIR})
set_tests_properties(bench_tools PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "CC=${CMAKE_C_COMPILER}")

# Set-up: every package the CMake files and Python tests use is installed by
# the Makefile target that needs it (a fresh machine has nothing else).
add_test(NAME setup_deps_lists
  COMMAND /usr/bin/python3 ${MARK_TEST_DIR}/setup/check_deps.py ${PROJECT_SOURCE_DIR})
set_tests_properties(setup_deps_lists PROPERTIES TIMEOUT 60)

# The process model (issue 17, defects 4-6): fork, exec, descriptors.
#
#   process_fork_unshare        a forked child can unshare(CLONE_NEWUSER)
#   process_fork_unshare_traced the same with MARK_TRACE tracing on
mark_test(process_fork_unshare SOURCES process/test_fork_unshare.c)
set_tests_properties(process_fork_unshare PROPERTIES TIMEOUT 60)
add_test(NAME process_fork_unshare_traced COMMAND process_fork_unshare)
set_tests_properties(process_fork_unshare_traced PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77
  ENVIRONMENT "MARK_TRACE=${CMAKE_CURRENT_BINARY_DIR}/process-work/unshare-trace")

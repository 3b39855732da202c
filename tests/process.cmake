# The process model (issue 17, defects 4-6): fork, exec, descriptors.
#
#   process_fork_unshare        a forked child can unshare(CLONE_NEWUSER)
#   process_fork_unshare_traced the same with MARK_TRACE tracing on
mark_test(process_fork_unshare SOURCES process/test_fork_unshare.c)
set_tests_properties(process_fork_unshare PROPERTIES TIMEOUT 60)
add_test(NAME process_fork_unshare_traced COMMAND process_fork_unshare)
set_tests_properties(process_fork_unshare_traced PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77
  ENVIRONMENT "MARK_TRACE=${CMAKE_CURRENT_BINARY_DIR}/process-work/unshare-trace")
#   process_agent_fds_*         the agent never touches a descriptor the program
#                               reused (dup2 onto its fds, close_range + reopen,
#                               close_range as the agent starts, exit with
#                               its fds replaced)
add_executable(test_agent_fds process/test_agent_fds.c)
target_link_libraries(test_agent_fds PRIVATE mark)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/process-xdg)
file(CHMOD ${CMAKE_CURRENT_BINARY_DIR}/process-xdg DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
foreach(case dup2 close_range startup exit)
  add_test(NAME process_agent_fds_${case} COMMAND test_agent_fds ${case})
  set_tests_properties(process_agent_fds_${case} PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77
    ENVIRONMENT "XDG_RUNTIME_DIR=${CMAKE_CURRENT_BINARY_DIR}/process-xdg")
endforeach()
#   process_fork_lazy_binding   a forked child resolves none of libmark's
#                               symbols lazily (fork cost: libmark is -z now)
add_executable(fork_exit_children process/fork_exit_children.c)
target_link_libraries(fork_exit_children PRIVATE mark)
add_test(NAME process_fork_lazy_binding COMMAND ${MARK_TEST_DIR}/process/test_fork_lazy_binding.sh
  $<TARGET_FILE:fork_exit_children> ${CMAKE_CURRENT_BINARY_DIR}/process-work/lazy-binding)
set_tests_properties(process_fork_lazy_binding PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
#   process_fork_state_page     the variables libmark's fork handlers write
#                               share one page (one copy-on-write fault per fork)
add_test(NAME process_fork_state_page COMMAND ${MARK_TEST_DIR}/process/test_fork_state_page.sh $<TARGET_FILE:mark>)
set_tests_properties(process_fork_state_page PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
#   process_fork_faults         a single-threaded program with libmark linked
#                               (agent off, nothing armed) takes no more page
#                               faults per fork than compiled out
add_executable(fork_faults_linked process/fork_faults.c)
target_link_libraries(fork_faults_linked PRIVATE mark)
add_executable(fork_faults_out process/fork_faults.c)
target_include_directories(fork_faults_out PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(fork_faults_out PRIVATE MARK_DISABLE)
add_test(NAME process_fork_faults COMMAND ${MARK_TEST_DIR}/process/test_fork_faults.sh
  $<TARGET_FILE:fork_faults_linked> $<TARGET_FILE:fork_faults_out>)
set_tests_properties(process_fork_faults PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
#   process_fork_faults_event_loop  the same with the agent on, served from
#                               the program's event loop (no agent thread)
add_executable(fork_faults_loop process/fork_faults.c)
target_link_libraries(fork_faults_loop PRIVATE mark)
target_compile_definitions(fork_faults_loop PRIVATE FORK_FAULTS_EVENT_LOOP)
add_test(NAME process_fork_faults_event_loop COMMAND ${MARK_TEST_DIR}/process/test_fork_faults.sh
  $<TARGET_FILE:fork_faults_loop> $<TARGET_FILE:fork_faults_out> event_loop)
set_tests_properties(process_fork_faults_event_loop PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77
  ENVIRONMENT "XDG_RUNTIME_DIR=${CMAKE_CURRENT_BINARY_DIR}/process-xdg")

# The control agent (src/agent) and the commands that use it
# (mark ps / list PID / enable / disable / record --pid / snapshot).
#
#   agent_socket      hostile and odd clients on a real agent socket; the
#                     process stays healthy (tests/agent/test_agent_socket.c)
#   agent_disabled    MARK_AGENT=0: no agent, no socket (agent_disabled_off,
#                     _false, _no, _OFF: the other spellings)
#   agent_peercred    a client of another uid is refused by SO_PEERCRED
#   agent_cli_*       the commands against running processes
#                     (tests/agent/test_control.sh CASE)
#   agent_cli_hostile_*, agent_cli_record_stray  the commands against a
#                     hostile agent (tests/agent/fake_agent.py MODE): replies
#                     without end, slow replies, an agent that never reads,
#                     a byte sent unasked; the client stays bounded
#   agent_cli_event_loop*  the same against a program that serves the
#                     agent from its event loop (agent_target.c built as
#                     loop_target)
#   agent_cli_stalled_client, agent_cli_event_loop_stalled_client
#                     controllers that send requests and never read: other
#                     controllers are served at once, the stalled ones are
#                     closed after the send timeout, and in event-loop mode
#                     no mark_agent_dispatch() call takes over 100 ms
#                     (stall_target.c, 1000 markers: replies larger than
#                     the socket buffers)
#   agent_fuzz_short  15 s of libFuzzer on the message parser (make fuzz: 300 s)
mark_test(test_agent_socket SOURCES agent/test_agent_socket.c ${CMAKE_SOURCE_DIR}/src/agent/protocol.c)
target_include_directories(test_agent_socket PRIVATE ${CMAKE_SOURCE_DIR}/src)
# A private socket directory: `mark ps` run by other tests at the same time
# would otherwise connect to this agent and spoil its idle measurement.
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/agent-xdg)
file(CHMOD ${CMAKE_CURRENT_BINARY_DIR}/agent-xdg DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
set_tests_properties(test_agent_socket PROPERTIES TIMEOUT 60
  ENVIRONMENT "XDG_RUNTIME_DIR=${CMAKE_CURRENT_BINARY_DIR}/agent-xdg")
add_test(NAME agent_disabled COMMAND test_agent_socket --disabled)
add_test(NAME agent_peercred COMMAND test_agent_socket --peercred)
set_tests_properties(agent_disabled PROPERTIES ENVIRONMENT "MARK_AGENT=0" TIMEOUT 30)
# The other spellings of "off" turn it off too (they left it on, in silence).
foreach(off off false no OFF)
  add_test(NAME agent_disabled_${off} COMMAND test_agent_socket --disabled)
  set_tests_properties(agent_disabled_${off} PROPERTIES ENVIRONMENT "MARK_AGENT=${off}" TIMEOUT 30)
endforeach()
set_tests_properties(agent_peercred PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 30)

add_executable(agent_target agent/agent_target.c)
target_link_libraries(agent_target PRIVATE mark Threads::Threads)
# Marker name, format, source path and process name full of terminal escapes.
add_executable(evil_target agent/evil_target.c)
# The same program serving the agent from its loop (MARK_AGENT_EVENT_LOOP).
add_executable(loop_target agent/agent_target.c)
target_link_libraries(loop_target PRIVATE mark)
target_compile_definitions(loop_target PRIVATE AGENT_TARGET_EVENT_LOOP)
target_link_libraries(evil_target PRIVATE mark)

if(TARGET mark_cli)
  foreach(case list_enable_disable errors record record_exit record_fork_stop record_exec recover_live record_target_killed record_kill_controller
               second_controller stop_env stop_counts fork other_user snapshot ps_stale ps_many bad_dir closed_fds short_lived
               setuid_env peer_pid planted_socket pidns_socket escape other_user_links list_hits_dir
               hostile_flood hostile_slow hostile_send record_stray)
    add_test(NAME agent_cli_${case}
      COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_control.sh ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:agent_target>
              ${CMAKE_CURRENT_BINARY_DIR}/agent-work/${case})
    set_tests_properties(agent_cli_${case} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
  # Event-loop mode (MARK_AGENT_EVENT_LOOP): the same commands against a
  # program that serves the agent from its poll() loop, with no thread.
  foreach(case event_loop event_loop_fork)
    add_test(NAME agent_cli_${case}
      COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_control.sh ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:loop_target>
              ${CMAKE_CURRENT_BINARY_DIR}/agent-work/${case})
    set_tests_properties(agent_cli_${case} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# A reply larger than the socket buffers, to a client that does not read:
# stall_target serves the agent on its thread, loop_stall_target from its
# loop (timing every mark_agent_dispatch()).
add_executable(stall_target agent/stall_target.c)
target_link_libraries(stall_target PRIVATE mark Threads::Threads)
add_executable(loop_stall_target agent/stall_target.c)
target_link_libraries(loop_stall_target PRIVATE mark)
target_compile_definitions(loop_stall_target PRIVATE STALL_EVENT_LOOP)
if(TARGET mark_cli)
  foreach(case stalled_client event_loop_stalled_client accept_emfile event_loop_accept_emfile)
    if(case STREQUAL "stalled_client" OR case STREQUAL "accept_emfile")
      set(target stall_target)
    else()
      set(target loop_stall_target)
    endif()
    add_test(NAME agent_cli_${case}
      COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_control.sh ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:${target}>
              ${CMAKE_CURRENT_BINARY_DIR}/agent-work/${case})
    set_tests_properties(agent_cli_${case} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# Several processes in one recording (--pid P1 --pid P2, --name COMM) and
# `mark view --follow` (issue 13 §4; tests/agent/test_multi.py).
add_executable(step_target agent/step_target.c)
target_link_libraries(step_target PRIVATE mark)
if(TARGET mark_cli)
  foreach(case pids name follow follow_rotate follow_chunks follow_exec follow_killed follow_damaged follow_nofile controller_killed)
    add_test(NAME agent_multi_${case}
      COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_multi.py ${case}
              $<TARGET_FILE:mark_cli> $<TARGET_FILE:step_target> ${CMAKE_CURRENT_BINARY_DIR}/agent-work/multi_${case})
    set_tests_properties(agent_multi_${case} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# The fuzz target is built by run.sh with its own compiler (clang) and
# sanitizers: running it again in the ASan, TSan, clang or cross builds of
# `make test` would repeat the same work (MARK_TEST_BUILD_INDEPENDENT).
mark_fuzz_short_test(agent_fuzz_short ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz)

# The agent's log line never blocks the program's fork(): stderr a full
# pipe, every descriptor taken (tests/agent/test_stderr_full.py).
add_executable(stderr_full_target agent/stderr_full_target.c)
target_link_libraries(stderr_full_target PRIVATE mark Threads::Threads ${CMAKE_DL_LIBS})
if(TARGET mark_cli)
  add_test(NAME agent_stderr_full
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_stderr_full.py
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:stderr_full_target> ${CMAKE_CURRENT_BINARY_DIR}/agent-work/stderr_full)
  add_library(bad_abi_dso MODULE agent/bad_abi_dso.c)
  target_link_libraries(bad_abi_dso PRIVATE mark)
  add_test(NAME agent_stderr_full_registry
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_stderr_full.py
            $<TARGET_FILE:mark_cli> $<TARGET_FILE:stderr_full_target> ${CMAKE_CURRENT_BINARY_DIR}/agent-work/stderr_full_registry
            dlopen $<TARGET_FILE:bad_abi_dso>)
  set_tests_properties(agent_stderr_full agent_stderr_full_registry PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()

# Event handler lists (include/mark/eventhandler.h, src/eventhandler).
set(EH_DIR ${CMAKE_CURRENT_SOURCE_DIR}/eventhandler)

mark_kind_test(test_eventhandler SOURCES eventhandler/test_eventhandler.c)
mark_kind_test(test_eventhandler_race SOURCES eventhandler/test_eventhandler_race.c)
mark_test(test_eventhandler_cxx SOURCES eventhandler/test_eventhandler_cxx.cc)

# dlopen: a list invoked in one shared object, handlers in the executable
# and in another shared object, plus one that "forgets" to deregister.
foreach(kind jump immediate generic)
  foreach(mod invoker handlers leaky)
    add_library(eh_dl_${mod}_${kind} MODULE eventhandler/eh_dl_${mod}.c)
    target_link_libraries(eh_dl_${mod}_${kind} PRIVATE mark)
    target_compile_definitions(eh_dl_${mod}_${kind} PRIVATE MARK_SITE=${kind})
  endforeach()
  mark_test(test_eventhandler_dl_${kind} SOURCES eventhandler/test_eventhandler_dl.c
    DEFS MARK_SITE=${kind}
         EH_INVOKER="$<TARGET_FILE:eh_dl_invoker_${kind}>"
         EH_HANDLERS="$<TARGET_FILE:eh_dl_handlers_${kind}>"
         EH_LEAKY="$<TARGET_FILE:eh_dl_leaky_${kind}>")
  # The shared objects call eh_dl_record() in the executable.
  set_target_properties(test_eventhandler_dl_${kind} PROPERTIES ENABLE_EXPORTS ON)
  target_include_directories(eh_dl_invoker_${kind} PRIVATE ${EH_DIR})
  target_include_directories(eh_dl_handlers_${kind} PRIVATE ${EH_DIR})
  target_include_directories(eh_dl_leaky_${kind} PRIVATE ${EH_DIR})
  add_dependencies(test_eventhandler_dl_${kind} eh_dl_invoker_${kind} eh_dl_handlers_${kind}
    eh_dl_leaky_${kind})
endforeach()

# Compile-time type check: the wrong handler type must not compile (C and
# C++, REGISTER and DEFINE), and the same snippet with the right type must
# (the positive control that lets these tests fail).
set(EH_CHECK ${EH_DIR}/compile_check.sh)
set(EH_SNIPPET ${EH_DIR}/typecheck_snippet.c)
set(EH_INC ${PROJECT_SOURCE_DIR}/include)
add_test(NAME eventhandler_typecheck_c_good
  COMMAND sh ${EH_CHECK} pass "-" ${CMAKE_C_COMPILER} -Wall -Wextra -Werror -xc -std=gnu11 -I${EH_INC} ${EH_SNIPPET})
add_test(NAME eventhandler_typecheck_c_bad_register
  COMMAND sh ${EH_CHECK} fail "does not have the type declared by EVENTHANDLER_DECLARE.eh_typed"
          ${CMAKE_C_COMPILER} -xc -std=gnu11 -I${EH_INC} -DBAD_REGISTER ${EH_SNIPPET})
add_test(NAME eventhandler_typecheck_c_bad_define
  COMMAND sh ${EH_CHECK} fail "does not have the type declared by EVENTHANDLER_DECLARE.eh_typed"
          ${CMAKE_C_COMPILER} -xc -std=gnu11 -I${EH_INC} -DBAD_DEFINE ${EH_SNIPPET})
add_test(NAME eventhandler_typecheck_c_bad_invoke_args
  COMMAND sh ${EH_CHECK} fail "incompatible|too few arguments|passing argument"
          ${CMAKE_C_COMPILER} -xc -std=gnu11 -I${EH_INC} -Werror -DBAD_INVOKE ${EH_SNIPPET})
add_test(NAME eventhandler_typecheck_cxx_good
  COMMAND sh ${EH_CHECK} pass "-" ${CMAKE_CXX_COMPILER} -Wall -Wextra -Werror -xc++ -std=gnu++11 -I${EH_INC} ${EH_SNIPPET})
add_test(NAME eventhandler_typecheck_cxx_bad_register
  COMMAND sh ${EH_CHECK} fail "cannot convert|cannot initialize|invalid conversion|no known conversion"
          ${CMAKE_CXX_COMPILER} -xc++ -std=gnu++11 -I${EH_INC} -DBAD_REGISTER ${EH_SNIPPET})
add_test(NAME eventhandler_typecheck_cxx_bad_define
  COMMAND sh ${EH_CHECK} fail "cannot convert|cannot initialize|invalid conversion|no known conversion"
          ${CMAKE_CXX_COMPILER} -xc++ -std=gnu++11 -I${EH_INC} -DBAD_DEFINE ${EH_SNIPPET})

# -DMARK_DISABLE: no invoke sites; invocations still reach the handlers.
mark_test(test_eventhandler_cxx_disabled SOURCES eventhandler/test_eventhandler_cxx.cc DEFS MARK_DISABLE)

# Fork (found by a review): event handlers start no thread, so a child (and
# with MARK_AGENT=0 the process itself) may unshare a user namespace, and a
# handler may fork after a NOWAIT deregistration.
mark_test(test_eventhandler_fork SOURCES eventhandler/test_eventhandler_fork.c ENV MARK_AGENT=0)
# The first run of an invoke site in a signal handler that interrupted
# libmark holding the registry lock (found by a review): no lock is taken.
mark_kind_test(test_eventhandler_signal SOURCES eventhandler/test_eventhandler_signal.c)
# exit() while another thread is blocked in a handler of an
# EVENTHANDLER_DEFINE (found by a review): its destructor does not wait.
mark_test(test_eventhandler_exit SOURCES eventhandler/test_eventhandler_exit.c ENV MARK_AGENT=0)
# A C++ handler that throws out of EVENTHANDLER_INVOKE (found by a review):
# the invocation's read-side section ends as the exception leaves it.
mark_test(test_eventhandler_throw SOURCES eventhandler/test_eventhandler_throw.cc ENV MARK_AGENT=0)
# EVENTHANDLER_DEFINE under a W^X policy (found by a review): a registration
# that fails in the constructor is said on stderr, naming the list, the
# handler and the reason.
mark_kind_test(test_eventhandler_define_wx SOURCES eventhandler/test_eventhandler_define_wx.c KINDS jump immediate)
# A tag deregistered twice (found by a review): -ENOENT, never another
# handler registered since at the same address.
mark_test(test_eventhandler_stale_tag SOURCES eventhandler/test_eventhandler_stale_tag.c ENV MARK_AGENT=0)
# Deregistration with memory short (found by a review): the handler is
# removed in place; a dlclose'd object's DEFINE handler is never called.
add_library(eh_oom_plugin MODULE eventhandler/eh_oom_plugin.c)
target_link_libraries(eh_oom_plugin PRIVATE mark)
mark_test(test_eventhandler_oom SOURCES eventhandler/test_eventhandler_oom.c
  DEFS EH_OOM_PLUGIN="$<TARGET_FILE:eh_oom_plugin>" ENV MARK_AGENT=0)
add_dependencies(test_eventhandler_oom eh_oom_plugin)
# dlclose from inside an event handler (found by a review): the warning
# names the object and the list, says what can crash and what to do.
mark_test(test_eventhandler_unload_in_handler SOURCES eventhandler/test_eventhandler_unload_in_handler.c
  DEFS EH_OOM_PLUGIN="$<TARGET_FILE:eh_oom_plugin>" ENV MARK_AGENT=0)
add_dependencies(test_eventhandler_unload_in_handler eh_oom_plugin)
# The debug check against dlclose on another thread (found by a review): no
# dladdr inside a read-side section, which a dlclose's grace period waits for.
mark_test(test_eventhandler_debug_dlclose SOURCES eventhandler/test_eventhandler_debug_dlclose.c
  DEFS EH_OOM_PLUGIN="$<TARGET_FILE:eh_oom_plugin>" ENV MARK_AGENT=0 MARK_EVENTHANDLER_DEBUG=1)
add_dependencies(test_eventhandler_debug_dlclose eh_oom_plugin)
# EVENTHANDLER_REGISTER in C++ initialisers outside functions (found by a
# review): namespace scope, default member initialisers, overloads, lambdas.
add_test(NAME eventhandler_cxx_static_compile
  COMMAND sh ${EH_CHECK} pass "-" ${CMAKE_CXX_COMPILER} -Wall -Wextra -Werror -xc++ -std=gnu++11
          -I${EH_INC} -I${CMAKE_CURRENT_SOURCE_DIR} ${EH_DIR}/test_eventhandler_cxx_static.cc)
mark_test(test_eventhandler_cxx_static SOURCES eventhandler/test_eventhandler_cxx_static.cc ENV MARK_AGENT=0)

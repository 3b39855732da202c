/*
 * The control agent: a thread inside every process that has markers,
 * serving `mark ps/list/enable/disable/record --pid/snapshot` over a Unix
 * socket (protocol.h).  Not installed.
 */
#ifndef MARK_AGENT_AGENT_H
#define MARK_AGENT_AGENT_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Called by the registry after an object with markers was registered.
 * The first call starts the agent thread (unless MARK_AGENT=0); later calls
 * cost one atomic load.  Never blocks on I/O: the socket is created by the
 * agent thread, so program start-up is not delayed.
 */
__attribute__((visibility("hidden"))) void mark_agent_autostart(void);

/*
 * The directory holding the agent sockets of the processes of `uid` when
 * $XDG_RUNTIME_DIR is `xdg` (NULL: unset): "$XDG_RUNTIME_DIR/mark" if that
 * is an absolute path, else "/tmp/mark-<uid>".  Shared with the CLI so both
 * sides agree.  Returns 0 or -ENAMETOOLONG.
 */
__attribute__((visibility("hidden"))) int mark_agent_dir(char *buf, size_t len, uid_t uid, const char *xdg);

#endif

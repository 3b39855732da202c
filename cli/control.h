/*
 * Controlling a running process through its agent (src/agent/): the client
 * side used by `mark ps`, `mark list PID`, `mark enable/disable`,
 * `mark record --pid` and `mark snapshot`.
 */
#ifndef MARK_CLI_CONTROL_H
#define MARK_CLI_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "agent/protocol.h"

/* `mark list PID [GLOB]`: called by cmd_list.c when its argument is a number,
 * given as text: parsed with ctl_parse_pid (as `mark enable` does), so a
 * number beyond the pid range is refused, not truncated.  Returns the exit
 * status (2: not a process ID). */
int cli_list_pid(const char *pid_text, const char *glob);

/* `mark record --pid PID [-e GLOB]... [-o DIR] [--mode M] [--buffer-size N]
 * [--duration SECONDS]`: called by cmd_record.c when it sees --pid; argv is
 * the record command's (argv[0] = "record").  Returns the exit status. */
int cli_record_pid(int argc, char **argv);

/* `mark record -d DURATION -- CMD`: at the end of DURATION, stop the
 * recordings into `dir` (MARK_TRACE) of CMD and the processes it forked,
 * through their agents; they keep running.  Returns how many could not be
 * stopped (each said why). */
int cli_record_stop_dir(const char *dir);

/* The usage lines of `mark record --pid`, for `mark record --help`. */
extern const char cli_record_pid_usage[];

/* ---- client connection ---- */

struct ctl_conn {
	int fd;
	pid_t pid;
	uid_t uid;                     /* the process's euid: its agent's  */
	char comm[64];                 /* the process's name, for messages */
	char path[108];                /* the socket                       */
	struct mark_proto_reader reader;
	struct mark_proto_msg msg;     /* the last reply                   */
	bool have_msg;                 /* msg/reader hold a whole reply    */
	/* The exchange in progress (ctl_request: one request and its
	 * replies), bounded against an agent that never ends it: */
	int64_t deadline_ms;           /* CLOCK_MONOTONIC, for all of it   */
	int timeout_ms;                /* for messages                     */
	size_t reply_bytes;            /* taken so far                     */
	size_t markers;                /* MARKER replies so far            */
};

/* The process has exited (no such process, or a zombie). */
bool ctl_process_gone(pid_t pid);

/*
 * `--name COMM`: append to *pids (cli_array_grow'n, *n of *cap) every
 * process whose /proc/PID/comm is exactly COMM, this one excepted.
 * Returns 0, or -1 after an error message prefixed with `what`.
 */
int ctl_pids_named(const char *what, const char *comm, pid_t **pids, size_t *n, size_t *cap);
/* Parse a PID argument; prints an error and returns false if it is not one. */
bool ctl_parse_pid(const char *text, pid_t *pid);

/*
 * Connect to the agent of `pid`.  On failure prints a message that says
 * what is wrong (no such process, no agent, permission denied, stale
 * socket, refused socket or directory, an agent not answering within
 * CTL_CONNECT_TIMEOUT_MS) and returns the exit status (1); 0 on success.
 * The socket is checked and reached through its directory's descriptor
 * (ctl_socket_dir_open), and the process that answers must be `pid`, with
 * its euid or root's (SO_PEERCRED), before anything is sent.
 */
int ctl_connect(struct ctl_conn *c, pid_t pid);
void ctl_close(struct ctl_conn *c);

/*
 * Start an exchange: send the request in `req` (one whole message) and read
 * one reply into c->msg.  timeout_ms is one deadline for the whole
 * exchange, from now: sending the request, and every reply of it read by
 * ctl_read_reply() after; bytes that come slowly do not extend it, so an
 * agent that never reads, drips its reply or never ends a LIST holds the
 * command timeout_ms at most.  An exchange takes at most CTL_MAX_MARKERS
 * MARKER replies and CTL_MAX_REPLY_BYTES bytes.  Returns 0, or prints why
 * (process exited, deadline passed, a limit crossed, protocol error) and
 * returns 1.  An ERROR reply is returned as 0 with
 * c->msg.type == MARK_MSG_ERROR: see ctl_reply_error().
 */
int ctl_request(struct ctl_conn *c, const struct mark_proto_buf *req, int timeout_ms);
/* Read one more reply message of the exchange (LIST: MARKER* LIST_END),
 * within its deadline and limits (ctl_request). */
int ctl_read_reply(struct ctl_conn *c);
/* If c->msg is an ERROR, print it (prefixed with `what`) and return 1; else 0. */
int ctl_reply_error(struct ctl_conn *c, const char *what);
/* Convenience: a request without fields. */
int ctl_simple_request(struct ctl_conn *c, uint16_t type, int timeout_ms);

/* The candidate socket directories of processes of `uid` (NULL-terminated
 * list of strings in a static buffer); shared with `mark ps`. */
size_t ctl_socket_dirs(uid_t uid, pid_t pid, char dirs[][108], size_t max);

/*
 * Socket directories are reached through one descriptor each (used by
 * ctl_connect and `mark ps`): their owner may swap a directory's name for a
 * link at any moment, so the directory is opened once without following a
 * link, checked with fstat, and everything after (looking at a socket,
 * connecting to it, removing it) goes through that descriptor.
 *
 * ctl_socket_dir_open: open `dir` (O_DIRECTORY | O_NOFOLLOW) and fstat it
 * into *st.  Returns the descriptor, or -errno (-ELOOP or -ENOTDIR: `dir`
 * is a link or not a directory; -ENOENT; -EACCES).
 */
int ctl_socket_dir_open(const char *dir, struct stat *st);
/*
 * Connect a new Unix stream socket to DFD/NAME (DFD from
 * ctl_socket_dir_open), through /proc/self/fd/DFD, never by the
 * directory's path.  Non-blocking: a listener whose queue of pending
 * connections is full makes connect() fail with EAGAIN, tried again until
 * timeout_ms has passed (0: once), so a stopped or wedged process cannot
 * hold the caller.  Returns the connected socket (blocking, close-on-exec)
 * or -errno: -EAGAIN (still full at the timeout), -ECONNREFUSED (nothing
 * listens: a stale socket), -ENOENT...
 */
int ctl_socket_connect_at(int dfd, const char *name, int timeout_ms);

/* The value of `name` in the environment `pid` was started with, when it is
 * readable (same user or root) and an absolute path; the target chose it,
 * so it is only a hint (e.g. where its agent or its trace may be). */
bool ctl_target_env_path(pid_t pid, const char *name, char *out, size_t len);

/* Make `path` absolute (relative to the current directory) without
 * requiring it to exist.  Returns false with a message on failure. */
bool ctl_absolute_path(const char *path, char *out, size_t len);

/* One exchange (ctl_request) of list, enable, disable, stop and record
 * --pid; `mark ps` allows 2000 ms, TRACE_STOP and snapshot 60000 ms. */
#define CTL_TIMEOUT_MS 10000
/* How long ctl_connect waits for an agent whose connection queue is full. */
#define CTL_CONNECT_TIMEOUT_MS 3000
/*
 * The most one exchange takes from an agent: what it sends is the target's
 * word, and a process that listens where its agent would (any user can run
 * one for itself) could otherwise feed the command without end.  mark
 * records at most 65535 markers per process (16-bit ids, MARK_TF_MAX_ID),
 * so a LIST reply has at most 65535 MARKERs; 64 MiB is 1 KiB per marker at
 * that count (a real marker's reply is a few hundred bytes).
 */
#define CTL_MAX_MARKERS 65535
#define CTL_MAX_REPLY_BYTES (64u << 20)

/* Send TRACE_STOP naming the recording's directory `dir` (a recording no
 * controller owns, see the agent's do_trace_stop) and read the reply: as
 * ctl_request. */
int ctl_stop_dir(struct ctl_conn *c, const char *dir);

#endif

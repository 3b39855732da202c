/*
 * The control agent: one thread per instrumented process, serving the
 * `mark` command over a Unix socket.
 *
 * Life cycle.  mark_agent_autostart() runs after the first object with
 * markers registers (a constructor, before main); it only spawns the
 * thread, which creates the socket itself, so start-up is not delayed.
 * MARK_AGENT=0 (off, no, false) turns the agent off, and a setuid/setgid/setcap program
 * (AT_SECURE) never starts one (see mark_agent_autostart).  The socket is
 *     $XDG_RUNTIME_DIR/mark/<pid>.sock   or   /tmp/mark-<uid>/<pid>.sock
 * in a directory that must be a real directory owned by us with no group or
 * other permissions (we refuse to start otherwise), and has mode 0600.  It
 * is bound under a random temporary name and renamed into place once
 * listening, never over a live socket (see create_socket), so a connection
 * refused on <pid>.sock always means a stale socket (which `mark ps`
 * removes).  Event-loop mode (MARK_AGENT_EVENT_LOOP, see "event-loop
 * mode" below): no thread; the program's own loop runs the agent.  fork(): the child closes the parent's descriptors
 * and starts no thread (see atfork_child): it gets an agent when it execs
 * a program with markers, or calls mark_agent_start().  exit()/dlclose: an atexit
 * handler unlinks the socket and stops the thread.  exec: the descriptors
 * are close-on-exec; the socket file is left behind and is removed by the
 * next `mark ps` (or replaced, when the new image has libmark too).
 *
 * Idle cost: the thread sleeps in poll() without a timeout while no
 * connection is open: no timers, no periodic wake-up.  With connections
 * open, the poll timeout is the nearest connection deadline.
 *
 * No client can hold the agent: every socket is non-blocking, a request is
 * read as it comes (at most 4 KiB per connection and round), and a reply
 * the client does not take at once is kept and finished when its socket is
 * writable, or the connection is closed SEND_TIMEOUT_MS after the reply was
 * made (see "Replies never wait" below).  This matters most in event-loop
 * mode, where the agent runs on the program's own thread.
 *
 * Signals: the thread is created with every signal blocked, so it never
 * takes a signal meant for the application's threads.
 *
 * Concurrency.  Everything below is touched by the agent thread only,
 * except:
 *   - the descriptor numbers (listen_fd, wake_fd, conns[].fd), which the
 *     fork handlers read: the agent thread changes them only with fd_lock
 *     held, and the prepare handler takes fd_lock, so the child sees a table
 *     that matches the descriptors it inherited;
 *   - socket_path/agent_pid/agent_thread, which the atexit handler reads:
 *     written with fd_lock held; thread_running likewise, and also read
 *     without the lock (atomically) by the fork prepare handler;
 *   - thread_entered, an atomic flag (release/acquire) telling the fork
 *     prepare handler that the new thread has finished being set up;
 *   - `stopping`, an atomic flag (relaxed: the wake-up pipe write and the
 *     poll() that sees it order the accesses).
 * fd_lock is agent-private and is never held across blocking I/O nor while
 * calling into the registry or the tracer; requests call the public API
 * (mark_arm, mark_list, ...), whose locks are never held while this thread
 * talks to a socket.
 */
#define _GNU_SOURCE
#include "agent.h"
#include "protocol.h"
#include "../core/internal.h"
#include "../tracer/tracer.h"
#include "../util/printable.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define AGENT_HAVE_SINGLE_THREADED 1
#endif
#endif
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define AGENT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AGENT_TSAN 1
#endif
#endif

#define MAX_CONNS 16
#define REQUEST_TIMEOUT_MS 3000   /* a request must arrive whole within this */
#define IDLE_TIMEOUT_MS 30000     /* a silent connection without a session   */
#define SEND_TIMEOUT_MS 3000      /* a reply must be taken within this (never
				   * waited for: the connection is closed)   */
#define AGENT_STACK_SIZE (1024 * 1024)

/*
 * What a descriptor of ours refers to, recorded when we create it.  The
 * program may close our numbers and reuse them (close_range, a daemon
 * closing every fd, dup2 onto them): before every use we check, with
 * fstat, that the number still names the same file (sockets and pipes have
 * inode numbers of their own), and never read, write, accept on or close a
 * descriptor that fails the check.  The record is taken the moment the
 * descriptor exists (the next system call after socket() or pipe2()), long
 * before the socket's name appears, so that a program that closes every
 * descriptor as soon as it sees the agent, while this thread is still
 * setting up, cannot have its own file recorded as ours.  A program that
 * swaps the file between our check and our use, or between the creation
 * and the record (microseconds), is not defended against.
 */
struct fd_id {
	dev_t dev;
	ino_t ino;
};

struct conn {
	int fd;                      /* -1: free slot                           */
	struct fd_id id;
	uid_t uid;
	pid_t pid;
	struct mark_proto_reader reader;
	int64_t partial_since_ms;    /* first byte of the pending request       */
	int64_t last_activity_ms;
	/* The reply not yet taken by the client: out.data[out_off..out.len)
	 * (see "Replies never wait" below). */
	struct mark_proto_buf out;
	size_t out_off;
	int64_t out_since_ms;        /* when it was made: SEND_TIMEOUT_MS runs */
	bool closing;                /* close once `out` is sent (an error)     */
};

/* MARK_FORK_STATE: what the fork handlers write (see core/internal.h). */
static MARK_FORK_STATE pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;
static MARK_FORK_STATE int listen_fd = -1;
static MARK_FORK_STATE int wake_fd[2] = { -1, -1 };
static MARK_FORK_STATE struct fd_id listen_id, wake_id[2];   /* with the numbers, under fd_lock */
static struct conn conns[MAX_CONNS];
static MARK_FORK_STATE char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static MARK_FORK_STATE pid_t agent_pid;              /* the process whose socket_path this is */
static dev_t socket_dev;             /* the file at socket_path we renamed there */
static ino_t socket_ino;
static pthread_t agent_thread;
static MARK_FORK_STATE bool thread_running;
static int thread_entered;           /* atomic: agent_main has begun (see atfork_prepare) */
static MARK_FORK_STATE int stopping;                 /* atomic */

static int autostart_state;          /* atomic: 0 not yet, 1 done            */
static MARK_FORK_STATE int child_may_start;          /* atomic: a forked child of a process with an agent,
				      * which has none yet (mark_agent_start starts it) */
static char xdg_runtime_dir[PATH_MAX];  /* copied before the thread starts  */
static int refusal_logged;           /* atomic: log a refused peer once      */
/* The fork prepare handler took fd_lock (its parent/child handlers read it
 * in the same thread). */
static MARK_FORK_STATE bool fork_locked;

/*
 * Event-loop mode (MARK_AGENT_EVENT_LOOP in the program): no thread; the
 * program polls mark_agent_fd() and calls mark_agent_dispatch(), which runs
 * agent_round() on the program's thread.  loop_mode is written once, in
 * mark_agent_autostart() (a constructor, before any other thread of ours
 * exists and before main), and only read afterwards.  dispatch_lock
 * serialises mark_agent_fd(), mark_agent_dispatch() and the exit handler:
 * whoever holds it plays the agent thread's part, so everything the comment
 * at the top says "the agent thread only" touches is, in this mode, touched
 * under dispatch_lock only.  fd_lock nests inside it.  loop_epoll_fd is the
 * descriptor the program polls: an epoll set of the listening socket, the
 * connections (for reading; for writing while a reply waits for its client)
 * and loop_timer_fd (armed at the nearest connection deadline, a reply's
 * send deadline included), rebuilt after every dispatch (loop_sync).  So
 * mark_agent_dispatch() never waits for a client: what it cannot send now
 * it sends when the program's poll says the client made room.
 */
extern const int mark_agent_event_loop __attribute__((weak, visibility("default")));
static bool loop_mode;
static pthread_mutex_t dispatch_lock = PTHREAD_MUTEX_INITIALIZER;
static MARK_FORK_STATE int loop_epoll_fd = -1;
static MARK_FORK_STATE struct fd_id loop_epoll_id;
static int loop_timer_fd = -1;
static struct fd_id loop_timer_id;
static int loop_registered[1 + MAX_CONNS];   /* in the epoll set besides the timer */
static int loop_nregistered;
static bool loop_stopped;                    /* the agent stopped; the set stays empty */
static void loop_atfork_child(void);

/* Agent-thread only. */
static MARK_FORK_STATE int session_conn = -1;        /* conns[] index owning the tracing session */
static MARK_FORK_STATE pid_t session_owner_pid;
static char session_dir[MARK_PROTO_MAX_STRING];   /* trace directory of that session */
/* The session was started detached (`mark record --pid --detach`): no
 * connection owns it, so no connection's end stops it; `mark stop PID`
 * (TRACE_STOP naming session_dir) or the process's exit does.  Cleared
 * when the tracer says no session is active any more. */
static MARK_FORK_STATE bool session_detached;
static uint64_t session_mode;       /* mode of the session in session_dir */
static struct mark_proto_msg request_msg;   /* large: kept off the stack   */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void agent_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	mark_warn("mark: agent (pid %d): %s\n", (int)getpid(), line);
}

/* Record what `fd` refers to; false if it cannot be inspected. */
static bool fd_id_take(int fd, struct fd_id *id)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		return false;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return true;
}

/* Does `fd` still refer to the file recorded in `id`? */
static bool fd_ours(int fd, const struct fd_id *id)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

/* Close `fd` only if it is still ours; forget the number either way. */
static void close_if_ours(int *fd, const struct fd_id *id)
{
	if (fd_ours(*fd, id))
		close(*fd);
	*fd = -1;
}

/* ---------------- socket directory and socket ---------------- */

int mark_agent_dir(char *buf, size_t len, uid_t uid, const char *xdg)
{
	int n;
	if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/mark", xdg);
	else
		n = snprintf(buf, len, "/tmp/mark-%u", (unsigned)uid);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Create `dir` if needed and check it is ours alone.  0 or -errno (logged). */
static int check_private_dir(const char *dir, uid_t uid)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		int e = errno;
		agent_log("cannot create %s: %s; the agent is off (set XDG_RUNTIME_DIR, or MARK_AGENT=0 "
			  "to silence this)", dir, strerror(e));
		return -e;
	}
	struct stat st;
	if (lstat(dir, &st) != 0) {
		int e = errno;
		agent_log("cannot inspect %s: %s; the agent is off", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0) {
		agent_log("refusing to use %s: it must be a directory owned by uid %u with mode 0700, "
			  "but it is %s owned by uid %u with mode %04o; remove it (or fix it) and restart, "
			  "or set MARK_AGENT=0", dir, (unsigned)uid, S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
			  (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Choose the directory: $XDG_RUNTIME_DIR/mark when XDG_RUNTIME_DIR is ours. */
static int choose_dir(char *dir, size_t len, uid_t uid)
{
	struct stat st;
	if (xdg_runtime_dir[0] == '/' && stat(xdg_runtime_dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == uid && mark_agent_dir(dir, len, uid, xdg_runtime_dir) == 0)
		return check_private_dir(dir, uid);
	if (mark_agent_dir(dir, len, uid, NULL) != 0)
		return -ENAMETOOLONG;
	return check_private_dir(dir, uid);
}

/*
 * Is something listening on the socket at `path`?  1: yes, 0: no (a stale
 * socket: connect() is refused), -errno: cannot tell.  Used before
 * replacing a <pid>.sock that is already there.
 */
static int socket_is_live(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	int r = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	int e = errno;
	close(fd);
	/* EAGAIN: a live listener with a full backlog. */
	if (r == 0 || e == EAGAIN || e == EINPROGRESS)
		return 1;
	return e == ECONNREFUSED ? 0 : -e;
}

/*
 * Bind under a temporary name, listen, then rename into place.  Returns the
 * listening fd, whose identity is in *id, or -errno.
 *
 * Pid namespaces that share /tmp (containers of one user) can hold two
 * processes with the same pid number, so <pid>.sock is not ours just
 * because the number is.  Hence: the temporary name has random bytes
 * (never unlink-before-bind a name another process may be using), and the
 * rename never replaces a socket (RENAME_NOREPLACE).  A <pid>.sock already
 * there is removed only when nothing listens on it (a dead process's); if
 * a live agent answers there, this agent stays off rather than take over
 * another process's name.  The client checks SO_PEERCRED's pid as well,
 * so a socket that answers for another process is refused there too.
 * (Between the liveness check and the unlink, a third agent could rename
 * its socket in; that needs two namespaces to start a pid-N agent in the
 * same instant that a third pid-N died, and costs that agent its socket,
 * never a wrong answer, thanks to the client's check.)
 */
static int create_socket(char *path_out, size_t path_len, struct fd_id *id)
{
	uid_t uid = geteuid();
	char dir[sizeof(socket_path)];
	int r = choose_dir(dir, sizeof(dir), uid);
	if (r)
		return r;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		rnd = (uint32_t)ts.tv_nsec ^ (uint32_t)(uintptr_t)&ts;
	}
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char final_path[sizeof(addr.sun_path)];
	int n1 = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/.%d.%08x.tmp", dir, (int)getpid(), rnd);
	int n2 = snprintf(final_path, sizeof(final_path), "%s/%d.sock", dir, (int)getpid());
	if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof(addr.sun_path) || (size_t)n2 >= sizeof(final_path)) {
		agent_log("socket path under %s is too long for a Unix socket; the agent is off "
			  "(set XDG_RUNTIME_DIR to a shorter directory)", dir);
		return -ENAMETOOLONG;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		int e = errno;
		agent_log("socket: %s; the agent is off", strerror(e));
		return -e;
	}
	if (!fd_id_take(fd, id)) {
		agent_log("cannot inspect the socket just created (the program closed it?); the agent is off");
		return -EBADF;   /* not ours to close any more */
	}
	bool bound = false;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		goto fail;
	bound = true;
	if (chmod(addr.sun_path, 0600) != 0 || listen(fd, 16) != 0)
		goto fail;
	for (int attempt = 0;; attempt++) {
		if (renameat2(AT_FDCWD, addr.sun_path, AT_FDCWD, final_path, RENAME_NOREPLACE) == 0)
			break;
		if (errno != EEXIST || attempt > 0)
			goto fail;
		int live = socket_is_live(final_path);
		if (live != 0) {
			agent_log("another process already listens on %s (the same pid in another pid "
				  "namespace sharing this directory?); the agent is off rather than take "
				  "its socket (set XDG_RUNTIME_DIR to a directory of this namespace)",
				  final_path);
			unlink(addr.sun_path);
			close_if_ours(&fd, id);
			return -EADDRINUSE;
		}
		/* Stale: a dead process's socket (exec or SIGKILL leaves it). */
		if (unlink(final_path) != 0 && errno != ENOENT)
			goto fail;
	}
	snprintf(path_out, path_len, "%s", final_path);
	return fd;
fail: {
	int e = errno;
	agent_log("cannot listen on %s: %s; the agent is off", final_path, strerror(e));
	if (bound)
		unlink(addr.sun_path);
	close_if_ours(&fd, id);
	return -e;
}
}

/* ---------------- connections ---------------- */

/*
 * Replies never wait for the client.  The agent runs on the program's own
 * thread in event-loop mode (mark_agent_dispatch()), and a client that
 * sends a request and then does not read (stopped with Ctrl-Z, hostile,
 * wedged) must not hold that thread, nor the agent thread away from its
 * other clients.  So every socket is non-blocking (accept4 SOCK_NONBLOCK)
 * and a reply is sent as far as the socket takes it at once; the rest is
 * kept in the connection (c->out from c->out_off) and sent when the socket
 * is writable again: the agent then polls that connection for POLLOUT
 * instead of POLLIN (in event-loop mode loop_sync() registers it with
 * EPOLLOUT, so the program's poll of mark_agent_fd() wakes it when the
 * client reads, and loop_timer_fd fires at the deadline below).
 *
 * Bounds: a connection holds at most one unsent reply, because its next
 * request is not read while one is pending (conn_readable() reads no byte
 * past the message it is assembling, so pipelined requests wait in the
 * socket, and the kernel's buffers push back on the client); a reply the
 * client has not taken whole within SEND_TIMEOUT_MS of being made closes
 * the connection.  With MAX_CONNS connections that is MAX_CONNS replies at
 * most, each as large as the program's marker list.
 */

static bool conn_has_output(const struct conn *c)
{
	return c->out_off < c->out.len;
}

static void conn_drop_output(struct conn *c)
{
	mark_proto_buf_free(&c->out);
	c->out_off = 0;
	c->closing = false;
}

/*
 * One attempt to send a whole small message on a socket that has no slot
 * (refused or one too many), then it is closed: a freshly accepted socket's
 * send buffer is empty, so an error message fits; if it did not, it would
 * be dropped, never waited for.
 */
/* An error message (MARK_MSG_ERROR) in b, from printf-style text. */
static void error_message(struct mark_proto_buf *b, int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void error_message(struct mark_proto_buf *b, int err, const char *fmt, va_list ap)
{
	char text[1024];
	vsnprintf(text, sizeof(text), fmt, ap);
	mark_proto_buf_init(b);
	mark_proto_error(b, err, "%s", text);
}

static void send_error_once(int fd, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void send_error_once(int fd, int err, const char *fmt, ...)
{
	struct mark_proto_buf b;
	va_list ap;
	va_start(ap, fmt);
	error_message(&b, err, fmt, ap);
	va_end(ap);
	if (!b.failed) {
		ssize_t w = send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;   /* best effort: the connection is closed next */
	}
	mark_proto_buf_free(&b);
}

static void stop_owned_session(const char *why)
{
	if (session_conn < 0)
		return;
	session_conn = -1;
	struct mark_trace_stats st;
	mark_tracer_get_stats(&st);
	if (st.active && mark_tracer_stop() < 0)
		agent_log("stopping the recording of controller pid %d (%s) failed: %s", (int)session_owner_pid,
			  why, mark_last_error());
	session_owner_pid = 0;
}

static void conn_close(int i)
{
	struct conn *c = &conns[i];
	if (c->fd < 0)
		return;
	/* A controller that goes away (Ctrl-C, SIGKILL, crash) must not leave
	 * the process traced: its session ends with its connection. */
	if (session_conn == i)
		stop_owned_session("its connection closed");
	pthread_mutex_lock(&fd_lock);
	close_if_ours(&c->fd, &c->id);
	pthread_mutex_unlock(&fd_lock);
	mark_proto_reader_free(&c->reader);
	conn_drop_output(c);
}

/* The program closed a connection's descriptor behind our back: forget the
 * number without closing it (it may be reused by now). */
static void conn_forget(int i)
{
	struct conn *c = &conns[i];
	if (session_conn == i)
		stop_owned_session("its descriptor was closed by the program");
	pthread_mutex_lock(&fd_lock);
	c->fd = -1;
	pthread_mutex_unlock(&fd_lock);
	mark_proto_reader_free(&c->reader);
	conn_drop_output(c);
}

/*
 * Send what the socket takes now of connection i's pending reply, without
 * waiting.  All sent: the buffer is given back, and a connection marked
 * `closing` (its last message was an error that ends it) is closed.  A send
 * error (the client is gone) closes it.  EAGAIN: the rest stays for the
 * next POLLOUT, or for expire_connections() at the deadline.
 */
static void conn_flush(int i)
{
	struct conn *c = &conns[i];
	if (c->fd < 0)
		return;
	if (!fd_ours(c->fd, &c->id)) {
		conn_forget(i);   /* the program replaced it: not ours to write */
		return;
	}
	while (conn_has_output(c)) {
		ssize_t w = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			c->out_off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		conn_close(i);   /* EPIPE, ECONNRESET...: the client is gone */
		return;
	}
	bool closing = c->closing;
	conn_drop_output(c);
	c->last_activity_ms = now_ms();
	if (closing)
		conn_close(i);
}

/*
 * Queue `reply` (its buffer is taken over and `reply` emptied) on
 * connection i and send what fits now.  A connection holds one pending
 * reply at a time (see above); should a second message come while one is
 * pending (an error that ends the connection), it is appended.
 */
static void conn_send(int i, struct mark_proto_buf *reply)
{
	struct conn *c = &conns[i];
	if (c->fd < 0 || reply->failed || reply->len == 0) {
		mark_proto_buf_free(reply);
		conn_flush(i);   /* a `closing` connection with nothing left closes */
		return;
	}
	if (!conn_has_output(c)) {
		mark_proto_buf_free(&c->out);
		c->out = *reply;
		c->out_off = 0;
		c->out_since_ms = now_ms();
		mark_proto_buf_init(reply);
	} else {
		uint8_t *d = realloc(c->out.data, c->out.len + reply->len);
		if (d) {
			memcpy(d + c->out.len, reply->data, reply->len);
			c->out.data = d;
			c->out.len += reply->len;
			c->out.cap = c->out.len;
		}
		mark_proto_buf_free(reply);
	}
	conn_flush(i);
}

/*
 * Send an error on connection i and end it: closed as soon as the error is
 * taken, or at the send deadline if the client does not read.  Nothing
 * more is read from it meanwhile.
 */
static void conn_fail(int i, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void conn_fail(int i, int err, const char *fmt, ...)
{
	struct mark_proto_buf b;
	va_list ap;
	va_start(ap, fmt);
	error_message(&b, err, fmt, ap);
	va_end(ap);
	if (b.failed || conns[i].fd < 0) {
		mark_proto_buf_free(&b);
		conn_close(i);
		return;
	}
	conns[i].closing = true;
	conn_send(i, &b);   /* closes it once all is sent */
}

/*
 * Remove our socket file (fd_lock held).  Only the file this agent renamed
 * into place: once our listening socket is gone (the program closed it),
 * the name may have been taken over as stale by a process with the same pid
 * number in another pid namespace (see create_socket), whose socket it is
 * not ours to remove.
 */
static void unlink_our_socket(void)
{
	struct stat st;
	if (socket_path[0] && lstat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == socket_dev &&
	    st.st_ino == socket_ino)
		unlink(socket_path);
}

/* The program closed or replaced the listening socket or the wake-up pipe:
 * forget both (close only what is still ours) and remove the socket path.
 * Connections are checked one by one: those still ours go on being served
 * (a recording owned by one keeps running). */
static void descriptors_lost(void)
{
	pthread_mutex_lock(&fd_lock);
	unlink_our_socket();
	socket_path[0] = '\0';
	close_if_ours(&listen_fd, &listen_id);
	close_if_ours(&wake_fd[0], &wake_id[0]);
	close_if_ours(&wake_fd[1], &wake_id[1]);
	pthread_mutex_unlock(&fd_lock);
}

/*
 * accept4 failing for want of a descriptor or memory leaves the connection
 * in the queue and the listening socket readable: polling it again at once
 * would spin (the agent thread, or in event-loop mode the program's own
 * poll) for as long as the program holds every descriptor.  So the socket
 * is left out of the poll set for ACCEPT_PAUSE_MS, then tried again.
 * Agent thread / dispatching thread only.
 */
#define ACCEPT_PAUSE_MS 100
static int64_t accept_paused_until_ms;
static bool accept_pause_logged;

static bool accept_paused(int64_t now)
{
	return now < accept_paused_until_ms;
}

static void accept_one(void)
{
	pthread_mutex_lock(&fd_lock);
	int fd = fd_ours(listen_fd, &listen_id) ?
		 accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK) : -1;
	int pause_err = 0;
	if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
		accept_paused_until_ms = now_ms() + ACCEPT_PAUSE_MS;
		if (!accept_pause_logged)
			pause_err = errno;   /* logged below, after fd_lock */
		accept_pause_logged = true;
	}
	int slot = -1;
	if (fd >= 0) {
		for (int i = 0; i < MAX_CONNS && slot < 0; i++)
			if (conns[i].fd < 0)
				slot = i;
		if (slot >= 0 && fd_id_take(fd, &conns[slot].id)) {
			conns[slot].fd = fd;
		} else if (slot >= 0) {
			close(fd);   /* cannot record what it is: cannot check it later */
			fd = -1;
		}
	}
	pthread_mutex_unlock(&fd_lock);
	/* Never with fd_lock held: the write to stderr can block (a full pipe
	 * nobody reads), and the program's fork() takes fd_lock in its
	 * prepare handler: it would wait as long as the write. */
	if (pause_err)
		agent_log("cannot accept a control connection: %s; trying again every %d ms (logged once)",
			  strerror(pause_err), ACCEPT_PAUSE_MS);
	if (fd < 0)
		return;   /* EAGAIN (the client gave up), EMFILE...: nothing to serve */

	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool cred_ok = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred);
	uid_t me = geteuid();
	if (!cred_ok || (cred.uid != me && cred.uid != 0)) {
		if (__atomic_exchange_n(&refusal_logged, 1, __ATOMIC_RELAXED) == 0)
			agent_log("refused a control connection from uid %d (pid %d): only uid %u%s may "
				  "control this process (further refusals are not logged)",
				  cred_ok ? (int)cred.uid : -1, cred_ok ? (int)cred.pid : -1, (unsigned)me,
				  me ? " and root" : "");
		send_error_once(fd, EACCES, "permission denied: process %d runs as uid %u; only that user or root "
			   "may control it", (int)getpid(), (unsigned)me);
		if (slot >= 0) {
			conn_close(slot);
		} else {
			pthread_mutex_lock(&fd_lock);
			close(fd);
			pthread_mutex_unlock(&fd_lock);
		}
		return;
	}
	if (slot < 0) {
		send_error_once(fd, EBUSY, "process %d already has %d control connections; try again later",
			   (int)getpid(), MAX_CONNS);
		pthread_mutex_lock(&fd_lock);
		close(fd);
		pthread_mutex_unlock(&fd_lock);
		return;
	}
	struct conn *c = &conns[slot];
	c->uid = cred.uid;
	c->pid = cred.pid;
	mark_proto_reader_init(&c->reader);
	mark_proto_buf_init(&c->out);
	c->out_off = 0;
	c->closing = false;
	c->last_activity_ms = now_ms();
	c->partial_since_ms = 0;
}

/* ---------------- requests ---------------- */

/* Strings from the registry may exceed the protocol's string limit. */
static void add_str_bounded(struct mark_proto_buf *b, uint16_t tag, const char *s)
{
	char tmp[MARK_PROTO_MAX_STRING];
	snprintf(tmp, sizeof(tmp), "%s", s ? s : "");
	mark_proto_add_str(b, tag, tmp);
}

struct marker_summary {
	unsigned nsites, armed;
	unsigned kinds;            /* bit per enum mark_site_kind */
	char file[MARK_PROTO_MAX_STRING];   /* the marker's first site by file, then line */
	unsigned line;
	char location[MARK_PROTO_MAX_STRING];
	char object[MARK_PROTO_MAX_STRING];
};

static int summarize_site(const struct mark_site_info *s, void *arg)
{
	struct marker_summary *sum = arg;
	/* The row names the first site in the order `mark list FILE` sorts
	 * (file, then line), not the first registered: the registration order
	 * follows the compiler's code layout, which differs between compilers. */
	int order = sum->nsites ? strcmp(s->file, sum->file) : -1;
	if (order < 0 || (order == 0 && s->line < sum->line)) {
		snprintf(sum->file, sizeof(sum->file), "%s", s->file);
		sum->line = s->line;
		snprintf(sum->location, sizeof(sum->location), "%s:%u", s->file, s->line);
		snprintf(sum->object, sizeof(sum->object), "%s", s->object);
	}
	sum->nsites++;
	sum->armed += s->armed != 0;
	if (s->kind >= 1 && s->kind <= 3)
		sum->kinds |= 1u << s->kind;
	return 0;
}

struct list_ctx {
	struct mark_proto_buf *out;
	uint64_t markers, sites, armed;
};

static void kinds_text(unsigned kinds, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int k = 1; k <= 3; k++) {
		if (!(kinds & (1u << k)))
			continue;
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s", used ? "," : "", mark_site_kind_name((enum mark_site_kind)k));
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

/* Runs without registry lock (mark_list calls back unlocked). */
static int list_one(const struct mark_marker *m, void *arg)
{
	struct list_ctx *ctx = arg;
	struct marker_summary sum;
	memset(&sum, 0, sizeof(sum));
	mark_marker_sites(m, summarize_site, &sum);
	ctx->markers++;
	ctx->sites += sum.nsites;
	ctx->armed += sum.armed;
	if (!ctx->out)
		return 0;
	char kinds[64];
	kinds_text(sum.kinds, kinds, sizeof(kinds));
	mark_proto_begin(ctx->out, MARK_MSG_MARKER);
	add_str_bounded(ctx->out, MARK_TAG_NAME, mark_marker_name(m));
	add_str_bounded(ctx->out, MARK_TAG_FORMAT, mark_marker_format(m));
	add_str_bounded(ctx->out, MARK_TAG_KIND, kinds);
	add_str_bounded(ctx->out, MARK_TAG_LOCATION, sum.nsites ? sum.location : "-");
	add_str_bounded(ctx->out, MARK_TAG_OBJECT, sum.nsites ? sum.object : "-");
	mark_proto_add_u64(ctx->out, MARK_TAG_SITES, sum.nsites);
	mark_proto_add_u64(ctx->out, MARK_TAG_MORE_SITES, sum.nsites ? sum.nsites - 1 : 0);
	mark_proto_add_u64(ctx->out, MARK_TAG_ARMED, sum.armed);
	mark_proto_add_u64(ctx->out, MARK_TAG_PROBES, mark_marker_probe_count(m));
	mark_proto_end(ctx->out);
	return 0;
}

static void read_cmdline(char *buf, size_t len)
{
	snprintf(buf, len, "?");
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
}

static void do_info(struct mark_proto_buf *out)
{
	struct list_ctx ctx = { 0 };
	mark_list(NULL, list_one, &ctx);
	char cmdline[1024];
	read_cmdline(cmdline, sizeof(cmdline));
	uint64_t tracing = MARK_TRACING_OFF;
	/* A MARK_TRACE recording: its directory, absolute (see below). */
	char env_dir[MARK_PROTO_MAX_STRING];
	enum mark_trace_mode env_mode = MARK_TRACE_DISCARD;
	bool env_session = false;
	if (session_conn >= 0) {
		tracing = MARK_TRACING_CONTROLLER;
	} else {
		struct mark_trace_stats st;
		mark_tracer_get_stats(&st);
		if (!st.active)
			session_detached = false;   /* the program stopped it, or it was stopped */
		if (st.active)
			tracing = session_detached ? MARK_TRACING_DETACHED : MARK_TRACING_OTHER;
		/*
		 * Started by MARK_TRACE: name the directory as the tracer made
		 * it absolute at the start.  The client could read MARK_TRACE
		 * from /proc/PID/environ, but that text may be relative (to a
		 * working directory the program may have left), and then
		 * `mark stop` could not name the recording, and `mark list`
		 * found no hits.  (A session the program started through the
		 * API is not named: `mark stop` leaves it to the program.)
		 */
		if (tracing == MARK_TRACING_OTHER)
			env_session = tracer_env_session(env_dir, sizeof(env_dir), &env_mode);
	}
	mark_proto_begin(out, MARK_MSG_INFO_REPLY);
	mark_proto_add_u64(out, MARK_TAG_PID, (uint64_t)getpid());
	add_str_bounded(out, MARK_TAG_CMDLINE, cmdline);
	mark_proto_add_u64(out, MARK_TAG_MARKERS, ctx.markers);
	mark_proto_add_u64(out, MARK_TAG_SITES, ctx.sites);
	mark_proto_add_u64(out, MARK_TAG_ARMED, ctx.armed);
	mark_proto_add_u64(out, MARK_TAG_TRACING, tracing);
	if (tracing == MARK_TRACING_CONTROLLER)
		mark_proto_add_u64(out, MARK_TAG_OWNER_PID, (uint64_t)session_owner_pid);
	if (tracing == MARK_TRACING_CONTROLLER || tracing == MARK_TRACING_DETACHED) {
		mark_proto_add_str(out, MARK_TAG_DIR, session_dir);
		mark_proto_add_u64(out, MARK_TAG_MODE, session_mode);
	} else if (env_session) {
		mark_proto_add_str(out, MARK_TAG_DIR, env_dir);
		mark_proto_add_u64(out, MARK_TAG_MODE, (uint64_t)env_mode);
	}
	mark_proto_end(out);
}

static void do_list(const struct mark_request *req, struct mark_proto_buf *out)
{
	struct list_ctx ctx = { .out = out };
	mark_list(req->nglobs ? req->globs[0] : NULL, list_one, &ctx);
	mark_proto_begin(out, MARK_MSG_LIST_END);
	mark_proto_add_u64(out, MARK_TAG_MARKERS, ctx.markers);
	mark_proto_end(out);
}

/*
 * A glob that matches no marker changes nothing, not even the rules for
 * objects loaded later: the command reports it as a probable typo.
 */
static void do_arm(const struct mark_request *req, bool arm, struct mark_proto_buf *out)
{
	uint64_t matched[MARK_PROTO_MAX_GLOBS], changed[MARK_PROTO_MAX_GLOBS];
	/* The filter first: a bad one (or no recording to filter) arms nothing. */
	if (req->filter) {
		int r = mark_tracer_set_filter(req->filter);
		if (r < 0) {
			mark_proto_error(out, r, "%s", mark_last_error());
			return;
		}
	}
	for (size_t i = 0; i < req->nglobs; i++) {
		struct list_ctx ctx = { 0 };
		mark_list(req->globs[i], list_one, &ctx);
		matched[i] = ctx.markers;
		changed[i] = 0;
		if (!ctx.markers)
			continue;
		int r = arm ? mark_arm(req->globs[i]) : mark_disarm(req->globs[i]);
		if (r < 0) {
			mark_proto_error(out, r, "%s %s: %s", arm ? "arming" : "disarming", req->globs[i],
					 mark_last_error());
			return;
		}
		changed[i] = (uint64_t)r;
	}
	mark_proto_begin(out, MARK_MSG_OK);
	for (size_t i = 0; i < req->nglobs; i++) {
		mark_proto_add_str(out, MARK_TAG_GLOB, req->globs[i]);
		mark_proto_add_u64(out, MARK_TAG_MATCHED, matched[i]);
		mark_proto_add_u64(out, MARK_TAG_CHANGED, changed[i]);
	}
	mark_proto_end(out);
}

static void add_stats(struct mark_proto_buf *out, const struct mark_trace_stats *st)
{
	mark_proto_begin(out, MARK_MSG_STATS);
	mark_proto_add_u64(out, MARK_TAG_EVENTS, st->events);
	mark_proto_add_u64(out, MARK_TAG_LOST, st->lost);
	mark_proto_add_u64(out, MARK_TAG_BYTES, st->bytes_written);
	mark_proto_add_u64(out, MARK_TAG_ACTIVE, st->active ? 1 : 0);
	mark_proto_end(out);
}

static void do_trace_start(int ci, const struct mark_request *req, struct mark_proto_buf *out)
{
	struct mark_trace_stats st;
	mark_tracer_get_stats(&st);
	if (session_conn >= 0) {
		mark_proto_error(out, EBUSY, "process %d is already being recorded by another controller "
			   "(`mark record --pid`, pid %d); stop that one first", (int)getpid(), (int)session_owner_pid);
		return;
	}
	if (st.active && session_detached) {
		mark_proto_error(out, EBUSY, "process %d is already recording, detached, into %s; `mark stop %d` "
			   "ends that recording", (int)getpid(), session_dir, (int)getpid());
		return;
	}
	if (st.active) {
		mark_proto_error(out, EBUSY, "process %d is already recording (started by MARK_TRACE or the "
			   "tracer API); one recording per process at a time", (int)getpid());
		return;
	}
	struct mark_trace_config cfg = {
		.directory = req->dir,
		.mode = (enum mark_trace_mode)req->mode,
		.buffer_size = (size_t)req->bufsize,
		.globs = req->globs,
	};
	const struct tracer_chunk_limits limits = { .max_size = req->max_size, .rotate_size = req->rotate_size,
						    .rotate_ms = req->rotate_ms };   /* named --rotate, --max-size */
	const struct tracer_trigger_config trigger = { req->snapshot_on, req->max_snapshots,
						       req->snapshot_interval_ms };
	int r = tracer_start_full(&cfg, &limits, req->filter, &trigger);
	if (r < 0) {
		mark_proto_error(out, r, "starting the recording into %s failed: %s", req->dir, mark_last_error());
		return;
	}
	snprintf(session_dir, sizeof(session_dir), "%s", req->dir);
	session_mode = req->mode;
	session_detached = req->detach;
	if (!req->detach) {
		/* The recording lives as long as this connection (stop_owned_session). */
		session_conn = ci;
		session_owner_pid = conns[ci].pid;
	}
	mark_proto_begin(out, MARK_MSG_OK);
	mark_proto_add_str(out, MARK_TAG_DIR, req->dir);
	mark_proto_end(out);
}

static void do_trace_stop(int ci, const struct mark_request *req, struct mark_proto_buf *out)
{
	if (session_conn < 0 && req->dir) {
		/*
		 * No controller owns a recording: a session the environment
		 * (MARK_TRACE) or the program started may be stopped by a
		 * controller that names its directory (`mark record -d`, which
		 * set MARK_TRACE).  Any controller may already arm, disarm and
		 * snapshot; the directory only guards against stopping another
		 * recording by mistake.
		 */
		struct mark_trace_stats final;
		int r = tracer_stop_counted(req->dir, &final);
		if (r < 0) {
			/* The CLI adds its own "mark: " prefix. */
			const char *why = mark_last_error();
			mark_proto_error(out, r, "%s", strncmp(why, "mark: ", 6) == 0 ? why + 6 : why);
			return;
		}
		session_detached = false;
		add_stats(out, &final);
		return;
	}
	if (session_conn != ci) {
		if (session_conn >= 0)
			mark_proto_error(out, EPERM, "the recording of process %d belongs to controller pid %d; "
				   "only it can stop it", (int)getpid(), (int)session_owner_pid);
		else
			mark_proto_error(out, ENOENT, "this connection has no recording running in process %d",
					 (int)getpid());
		return;
	}
	struct mark_trace_stats final;
	session_conn = -1;
	session_owner_pid = 0;
	int r = tracer_stop_counted(NULL, &final);
	if (r < 0) {
		mark_proto_error(out, r, "stopping the recording failed: %s", mark_last_error());
		return;
	}
	add_stats(out, &final);
}

static void do_snapshot(const struct mark_request *req, struct mark_proto_buf *out)
{
	int r = mark_tracer_snapshot_into(req->dir, req->force ? MARK_SNAPSHOT_FORCE : 0);
	if (r < 0) {
		/*
		 * The tracer's message is a whole line ("mark: snapshot: no
		 * tracing session is running"); the CLI prints the reply as
		 * "mark: snapshot: REASON", so send only the reason.
		 */
		const char *why = mark_last_error();
		if (strncmp(why, "mark: ", 6) == 0)
			why += 6;
		if (strncmp(why, "snapshot: ", 10) == 0)
			why += 10;
		mark_proto_error(out, r, "%s", *why ? why : strerror(-r));
		return;
	}
	mark_proto_begin(out, MARK_MSG_OK);
	mark_proto_add_str(out, MARK_TAG_DIR, req->dir);
	mark_proto_end(out);
}

/*
 * Handle one whole message: the reply is queued on the connection (sent as
 * far as the socket takes it now, see conn_send).  A bad request ends the
 * connection (conn_fail).
 */
static void handle_message(int ci, const uint8_t *buf, size_t len)
{
	char err[512];
	int r = mark_proto_parse(buf, len, &request_msg, err, sizeof(err));
	struct mark_request req;
	if (r == 0)
		r = mark_proto_decode_request(&request_msg, &req, err, sizeof(err));
	if (r < 0) {
		conn_fail(ci, r, "bad request: %s; closing the connection", err);
		return;
	}
	struct mark_proto_buf out;
	mark_proto_buf_init(&out);
	switch (req.type) {
	case MARK_MSG_INFO: do_info(&out); break;
	case MARK_MSG_LIST: do_list(&req, &out); break;
	case MARK_MSG_ARM: do_arm(&req, true, &out); break;
	case MARK_MSG_DISARM: do_arm(&req, false, &out); break;
	case MARK_MSG_TRACE_START: do_trace_start(ci, &req, &out); break;
	case MARK_MSG_TRACE_STOP: do_trace_stop(ci, &req, &out); break;
	case MARK_MSG_TRACE_STATS: {
		struct mark_trace_stats st;
		mark_tracer_get_stats(&st);
		add_stats(&out, &st);
		break;
	}
	case MARK_MSG_SNAPSHOT: do_snapshot(&req, &out); break;
	}
	conns[ci].last_activity_ms = now_ms();
	if (out.failed) {
		int e = out.failed;
		mark_proto_buf_free(&out);
		conn_fail(ci, e, "the reply could not be built: %s", strerror(-e));
		return;
	}
	conn_send(ci, &out);
}

/*
 * Read from a connection: at most 4096 bytes per call (the caller's poll is
 * level-triggered and comes back for the rest, so one client cannot keep a
 * round, or mark_agent_dispatch(), going), and never a byte past the
 * message being assembled: once a request is whole it is answered, and if
 * its reply is not all sent the following requests stay unread in the
 * socket until it is (one pending reply per connection).
 */
static void conn_readable(int ci)
{
	struct conn *c = &conns[ci];
	uint8_t buf[4096];
	if (!fd_ours(c->fd, &c->id)) {
		conn_forget(ci);
		return;
	}
	size_t budget = sizeof(buf);
	while (budget > 0 && c->fd >= 0 && !c->closing && !conn_has_output(c)) {
		size_t want = c->reader.need - c->reader.have;
		if (want > budget)
			want = budget;
		ssize_t n = recv(c->fd, buf, want, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_close(ci);   /* EOF or error: the client is gone */
			return;
		}
		budget -= (size_t)n;
		int64_t now = now_ms();
		c->last_activity_ms = now;
		if (!mark_proto_reader_partial(&c->reader))
			c->partial_since_ms = now;
		size_t used;
		char err[512];
		int r = mark_proto_reader_feed(&c->reader, buf, (size_t)n, &used, err, sizeof(err));
		if (r < 0) {
			conn_fail(ci, r, "bad request: %s; closing the connection", err);
			return;
		}
		if (r == 0)
			continue;
		handle_message(ci, c->reader.buf, c->reader.need);
		if (c->fd >= 0)
			mark_proto_reader_next(&c->reader);
	}
}

/* -1: none.  A reply must be taken, a pending request must complete; an
 * idle connection without a session is dropped after a while; a session
 * owner may stay silent. */
static int64_t conn_deadline(const struct conn *c, int ci)
{
	if (conn_has_output(c))
		return c->out_since_ms + SEND_TIMEOUT_MS;
	if (mark_proto_reader_partial(&c->reader))
		return c->partial_since_ms + REQUEST_TIMEOUT_MS;
	if (session_conn == ci)
		return -1;
	return c->last_activity_ms + IDLE_TIMEOUT_MS;
}

static void expire_connections(int64_t now)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &conns[i];
		if (c->fd < 0)
			continue;
		int64_t dl = conn_deadline(c, i);
		if (dl < 0 || dl > now)
			continue;
		if (conn_has_output(c))
			conn_close(i);   /* the client stopped reading: nothing more to say */
		else if (mark_proto_reader_partial(&c->reader))
			conn_fail(i, ETIMEDOUT, "request incomplete after %d ms; closing the connection",
				  REQUEST_TIMEOUT_MS);
		else
			conn_close(i);
	}
}

/* ---------------- the thread ---------------- */

/*
 * One attempt of open_descriptors().  1: created and published; 0: the
 * program closed or replaced one of them before they were published (what
 * is still ours is closed, and the socket's name removed); -1: the agent
 * cannot run (logged).
 */
static int try_open_descriptors(void)
{
	int pipefd[2] = { -1, -1 };
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0) {
		agent_log("pipe: %s; the agent is off", strerror(errno));
		return -1;
	}
	/* Recorded at once (see struct fd_id); both ends of one pipe share
	 * its inode, which a pair of unrelated files would not. */
	struct fd_id pipe_id[2] = { { 0, 0 }, { 0, 0 } }, sock_id = { 0, 0 };
	const bool took[2] = { fd_id_take(pipefd[0], &pipe_id[0]), fd_id_take(pipefd[1], &pipe_id[1]) };
	const bool pipe_known = took[0] && took[1] && pipe_id[0].dev == pipe_id[1].dev &&
				pipe_id[0].ino == pipe_id[1].ino;
	char path[sizeof(socket_path)];
	int fd = -1;
	if (pipe_known && !__atomic_load_n(&stopping, __ATOMIC_RELAXED))
		fd = create_socket(path, sizeof(path), &sock_id);
	pthread_mutex_lock(&fd_lock);
	/* Still ours now that the socket's name is visible (a program may
	 * have closed every descriptor the moment it saw it). */
	bool ok = fd >= 0 && fd_ours(pipefd[0], &pipe_id[0]) && fd_ours(pipefd[1], &pipe_id[1]) &&
		  fd_ours(fd, &sock_id);
	if (ok) {
		wake_fd[0] = pipefd[0];
		wake_fd[1] = pipefd[1];
		wake_id[0] = pipe_id[0];
		wake_id[1] = pipe_id[1];
		listen_fd = fd;
		listen_id = sock_id;
		snprintf(socket_path, sizeof(socket_path), "%s", path);
		struct stat st;
		if (lstat(path, &st) == 0) {
			socket_dev = st.st_dev;
			socket_ino = st.st_ino;
		}
	}
	pthread_mutex_unlock(&fd_lock);
	if (ok)
		return 1;
	const bool socket_made = fd >= 0;
	if (socket_made) {
		unlink(path);   /* the name this call created */
		close_if_ours(&fd, &sock_id);
	}
	for (int i = 0; i < 2; i++)
		if (took[i])
			close_if_ours(&pipefd[i], &pipe_id[i]);
	/* A failure of our own (the socket) was logged; losing the
	 * descriptors to the program is retried. */
	return socket_made || !pipe_known ? 0 : -1;
}

/*
 * Create the wake-up pipe and the listening socket and record what they
 * are.  A program that closes every descriptor while they are being
 * created costs a retry (at most 3).  false: the agent cannot run (logged).
 */
static bool open_descriptors(void)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		int r = try_open_descriptors();
		if (r != 0)
			return r > 0;
	}
	agent_log("the program closed the agent's descriptors as they were created, 3 times; the agent "
		  "is off (the program is not affected)");
	return false;
}

/* How often the agent re-creates descriptors the program took from it
 * before it gives up (a program that keeps closing every descriptor). */
#define MAX_DESCRIPTOR_RECOVERIES 3

/* The first of our descriptors that is no longer ours, or -1. */
static int lost_descriptor(void)
{
	if (!fd_ours(wake_fd[0], &wake_id[0]))
		return wake_fd[0];
	if (!fd_ours(wake_fd[1], &wake_id[1]))
		return wake_fd[1];
	if (!fd_ours(listen_fd, &listen_id))
		return listen_fd;
	return -1;
}

/* The nearest connection deadline (CLOCK_MONOTONIC ms), or -1: none. */
static int64_t next_deadline(void)
{
	int64_t next = accept_paused_until_ms > now_ms() ? accept_paused_until_ms : -1;
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i].fd < 0)
			continue;
		int64_t dl = conn_deadline(&conns[i], i);
		if (dl >= 0 && (next < 0 || dl < next))
			next = dl;
	}
	return next;
}

/* What one round of the agent's loop tells its caller. */
enum agent_round_result {
	ROUND_CONTINUE,
	ROUND_STOP,          /* stop, closing what is still ours (agent_teardown) */
	ROUND_GONE,          /* stopped already: the descriptors are gone */
};

static int descriptor_recoveries;   /* agent thread / dispatching thread only */

/*
 * One round of the agent: check our descriptors, wait for something to do
 * (at most until the nearest connection deadline; not at all unless
 * `block`), and do it.  Run by the agent thread, or in event-loop mode by
 * the program's thread inside mark_agent_dispatch() (dispatch_lock held):
 * one of them, never both, touches the agent's state.
 */
static enum agent_round_result agent_round(bool block)
{
	/*
	 * Before every poll (and so before every read, accept or close
	 * that follows it): are our descriptors still ours?  A daemon
	 * that closed every fd, or a dup2 onto one of ours, would
	 * otherwise have us read, drain and close the program's own
	 * files, and poll a readable regular file in a busy loop.
	 */
	int lost = lost_descriptor();
	if (lost >= 0) {
		descriptors_lost();
		if (descriptor_recoveries++ >= MAX_DESCRIPTOR_RECOVERIES) {
			agent_log("the program closed or replaced the agent's descriptors again "
				  "(%d times); the agent stops (the program is not affected)", descriptor_recoveries);
			stop_owned_session("the agent stops");
			for (int i = 0; i < MAX_CONNS; i++)
				conn_close(i);   /* closes only descriptors still ours */
			return ROUND_GONE;
		}
		agent_log("the program closed or replaced the agent's descriptor %d; the agent leaves it "
			  "alone and re-creates its socket", lost);
		return open_descriptors() ? ROUND_CONTINUE : ROUND_GONE;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0 && !fd_ours(conns[i].fd, &conns[i].id))
			conn_forget(i);
	struct pollfd pfd[2 + MAX_CONNS];
	int idx[2 + MAX_CONNS];
	int n = 0;
	int timeout = -1;   /* idle: sleep until something happens */
	int64_t now = now_ms();
	pfd[n++] = (struct pollfd){ .fd = wake_fd[0], .events = POLLIN };
	pfd[n++] = (struct pollfd){ .fd = listen_fd, .events = accept_paused(now) ? 0 : POLLIN };
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i].fd < 0)
			continue;
		idx[n] = i;
		/* A pending reply: wait until the client takes it; its next
		 * request is not read before (see conn_readable). */
		pfd[n++] = (struct pollfd){ .fd = conns[i].fd,
					    .events = conn_has_output(&conns[i]) ? POLLOUT : POLLIN };
	}
	int64_t dl = next_deadline();
	if (dl >= 0)
		timeout = dl > now ? (int)(dl - now) : 0;
	if (!block)
		timeout = 0;
	int r = poll(pfd, (nfds_t)n, timeout);
	if (r < 0 && errno != EINTR) {
		agent_log("poll: %s; the agent stops", strerror(errno));
		return ROUND_STOP;
	}
	if (r > 0 && ((pfd[0].revents | pfd[1].revents) & POLLNVAL))
		return ROUND_CONTINUE;   /* closed by the program: the check above recovers */
	if (r > 0 && (pfd[0].revents & POLLIN) && fd_ours(wake_fd[0], &wake_id[0])) {
		/* Bounded: should the number be swapped between the check and
		 * the read, a file of the program's loses at most 256 bytes of
		 * its offset, not all of it (the pipe holds a byte per wake-up;
		 * more than this is read at the next round). */
		char drain[16];
		for (int i = 0; i < 16 && read(wake_fd[0], drain, sizeof(drain)) > 0; i++)
			;
	}
	if (__atomic_load_n(&stopping, __ATOMIC_RELAXED))
		return ROUND_STOP;
	for (int k = 2; r > 0 && k < n; k++) {
		if (conns[idx[k]].fd < 0)
			continue;
		if (pfd[k].revents & POLLNVAL)
			conn_forget(idx[k]);
		else if ((pfd[k].events & POLLOUT) && (pfd[k].revents & (POLLOUT | POLLHUP | POLLERR)))
			conn_flush(idx[k]);   /* a send error (the client left) closes it */
		else if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
			conn_readable(idx[k]);
	}
	expire_connections(now_ms());
	if (r > 0 && (pfd[1].revents & POLLIN))
		accept_one();
	return ROUND_CONTINUE;
}

/* Stopping (exit, dlclose) or a fatal error: end our session, close what is
 * ours and remove the socket. */
static void agent_teardown(void)
{
	stop_owned_session("the process is exiting");
	for (int i = 0; i < MAX_CONNS; i++) {
		conn_flush(i);   /* what the socket takes now of a pending reply */
		conn_close(i);
	}
	pthread_mutex_lock(&fd_lock);
	/* The exit handler unlinked it already, unless it ran before this
	 * thread had created the socket (a very short-lived process). */
	if (socket_path[0])
		unlink(socket_path);
	socket_path[0] = '\0';
	close_if_ours(&listen_fd, &listen_id);
	close_if_ours(&wake_fd[0], &wake_id[0]);
	close_if_ours(&wake_fd[1], &wake_id[1]);
	pthread_mutex_unlock(&fd_lock);
}

/* Forget the parent's connections (a forked child; caller holds fd_lock or
 * is the only thread): their buffers are the parent's, and the child has
 * closed or never used their descriptors. */
static void forget_parent_conns(void)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		mark_proto_reader_free(&conns[i].reader);
		conn_drop_output(&conns[i]);
		conns[i].fd = -1;
	}
}

static void *agent_main(void *unused)
{
	(void)unused;
	__atomic_store_n(&thread_entered, 1, __ATOMIC_RELEASE);
	/* Visible in top -H, ps -L and /proc/PID/task/TID/comm. */
	pthread_setname_np(pthread_self(), "mark-agent");
	pthread_mutex_lock(&fd_lock);
	/* In a forked child that calls mark_agent_start(): the parent's
	 * buffers (the child closed the fds). */
	forget_parent_conns();
	pthread_mutex_unlock(&fd_lock);
	if (!open_descriptors())
		return NULL;
	descriptor_recoveries = 0;
	enum agent_round_result r = ROUND_CONTINUE;
	while (r == ROUND_CONTINUE && !__atomic_load_n(&stopping, __ATOMIC_RELAXED))
		r = agent_round(true);
	if (r != ROUND_GONE)
		agent_teardown();
	return NULL;
}

/* Close the agent's descriptors a forked child inherited (only those still
 * ours).  Caller holds fd_lock or is the only thread (fork child). */
static void close_inherited_descriptors(void)
{
	close_if_ours(&listen_fd, &listen_id);
	close_if_ours(&wake_fd[0], &wake_id[0]);
	close_if_ours(&wake_fd[1], &wake_id[1]);
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0)
			close_if_ours(&conns[i].fd, &conns[i].id);
	socket_path[0] = '\0';
}

/* Caller holds fd_lock or is the only thread (fork child). */
static void start_thread_locked(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, AGENT_STACK_SIZE);
	/* The thread inherits this mask: it never receives a signal. */
	sigfillset(&all);
	__atomic_store_n(&thread_entered, 0, __ATOMIC_RELAXED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&agent_thread, &attr, agent_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		agent_log("cannot start the agent thread: %s; the agent is off", strerror(r));
		return;
	}
	__atomic_store_n(&thread_running, true, __ATOMIC_RELAXED);
	agent_pid = getpid();
}

/*
 * A fork() in the first moments of the program can catch the agent thread
 * while the C library or a sanitizer runtime sets it up, with their locks
 * held (AddressSanitizer's allocator is not fork-safe: the child would block
 * in malloc forever).  Once agent_main runs, the thread only takes fd_lock
 * until a client connects, so waiting for that point (briefly, bounded)
 * makes an early fork as safe as any other.
 */
static void atfork_prepare(void)
{
#ifdef AGENT_HAVE_SINGLE_THREADED
	/* Event-loop mode in a process that never had a second thread: nobody
	 * else can hold fd_lock, and a handler that writes nothing costs the
	 * fork no copy-on-write fault (see loop mode below). */
	if (loop_mode && __libc_single_threaded)
		return;
#endif
	for (int i = 0; i < 200 && __atomic_load_n(&thread_running, __ATOMIC_RELAXED) &&
			!__atomic_load_n(&thread_entered, __ATOMIC_ACQUIRE); i++) {
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&fd_lock);
	/* Read by this fork's parent and child handlers, in this thread. */
	fork_locked = true;
}

static void atfork_parent(void)
{
	if (!fork_locked)
		return;
	fork_locked = false;
	pthread_mutex_unlock(&fd_lock);
}

/*
 * The child has one thread; the agent thread of the parent is gone, and its
 * descriptors are duplicates: close them (the parent keeps serving its own
 * socket and connections) and start an agent for this new process.
 */
static void atfork_child(void)
{
	if (loop_mode) {
		loop_atfork_child();
		return;
	}
	fork_locked = false;
	bool had_agent = __atomic_load_n(&thread_running, __ATOMIC_RELAXED);
	close_inherited_descriptors();
	__atomic_store_n(&thread_running, false, __ATOMIC_RELAXED);
	agent_pid = 0;
	session_conn = -1;
	session_owner_pid = 0;
	session_detached = false;
	__atomic_store_n(&stopping, 0, __ATOMIC_RELAXED);
	/* No thread here: a child that unshare(CLONE_NEWUSER)s or setns()s
	 * after fork (sandboxes do) must be single-threaded, and a forking
	 * server must not pay a thread start per connection.  The child gets an
	 * agent when it execs a program with markers (that image's constructor
	 * starts one) or when it calls mark_agent_start(). */
	__atomic_store_n(&child_may_start, had_agent, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fd_lock);
}

int mark_agent_start(void)
{
	mark_agent_autostart();   /* a process whose first call this is */
	if (loop_mode) {
		int fd = mark_agent_fd();
		return fd < 0 ? fd : 0;
	}
	pthread_mutex_lock(&fd_lock);
	int rc = 0;
	if (__atomic_load_n(&thread_running, __ATOMIC_RELAXED) && agent_pid == getpid()) {
		rc = 0;   /* already serving this process */
	} else if (!__atomic_load_n(&child_may_start, __ATOMIC_RELAXED)) {
		rc = mark_error(ENOTSUP, "mark: agent: the agent is off in process %d (MARK_AGENT=0, a setuid/setcap program, or it "
				"could not start: see the message on stderr)", (int)getpid());
	} else {
#ifdef AGENT_TSAN
		/* ThreadSanitizer aborts a child that starts threads after a
		 * multi-threaded fork. */
		rc = mark_error(ENOTSUP, "mark: agent: not started in a forked child under ThreadSanitizer");
#else
		__atomic_store_n(&child_may_start, 0, __ATOMIC_RELAXED);
		start_thread_locked();
		if (!__atomic_load_n(&thread_running, __ATOMIC_RELAXED))
			rc = mark_error(EAGAIN, "mark: agent: cannot start the agent thread in process %d; "
					"see the message on stderr", (int)getpid());
#endif
	}
	pthread_mutex_unlock(&fd_lock);
	return rc;
}

/* ---------------- event-loop mode ---------------- */

/*
 * A forked child in event-loop mode.  Only what must happen at once
 * happens here: the controller's connections to the parent are closed (a
 * child holding them would keep `mark record --pid` from seeing the
 * parent's end).  With no connection open, the usual case, the handler
 * writes nothing, so the fork costs no copy-on-write fault for it.  The
 * rest (the listening socket's copy, the epoll set shared with the parent)
 * is dealt with when the child first calls mark_agent_fd() or
 * mark_agent_dispatch(), which see agent_pid != getpid() (loop_adopt).
 */
static void loop_atfork_child(void)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0)
			close_if_ours(&conns[i].fd, &conns[i].id);
	if (fork_locked) {
		fork_locked = false;
		pthread_mutex_unlock(&fd_lock);
	}
}

/*
 * dispatch_lock held, in a process that has not served its own agent yet
 * (a forked child, or nothing started): drop what was inherited.  The epoll
 * set is shared with the parent (fork copies the descriptor, not the set),
 * so a child polling it would wake for the parent's controllers; it is
 * replaced by a new, empty set on the same number, which the program may
 * already be polling.
 */
static void loop_adopt(void)
{
	pthread_mutex_lock(&fd_lock);
	close_inherited_descriptors();
	forget_parent_conns();
	session_conn = -1;
	session_owner_pid = 0;
	int lost_epoll = -1, lost_err = 0;
	if (loop_epoll_fd >= 0 && fd_ours(loop_epoll_fd, &loop_epoll_id)) {
		int e = epoll_create1(EPOLL_CLOEXEC);
		if (e < 0 || dup3(e, loop_epoll_fd, O_CLOEXEC) < 0 || !fd_id_take(loop_epoll_fd, &loop_epoll_id)) {
			lost_err = errno;   /* logged after fd_lock (see accept_one) */
			lost_epoll = loop_epoll_fd;
			close(loop_epoll_fd);
			loop_epoll_fd = -1;
		}
		if (e >= 0)
			close(e);
	} else {
		loop_epoll_fd = -1;
	}
	close_if_ours(&loop_timer_fd, &loop_timer_id);
	loop_nregistered = 0;
	loop_stopped = false;
	agent_pid = getpid();
	pthread_mutex_unlock(&fd_lock);
	if (lost_epoll >= 0)
		agent_log("cannot replace the event-loop descriptor %d inherited from the parent: %s; it is closed",
			  lost_epoll, strerror(lost_err));
}

/*
 * dispatch_lock held: make the epoll set hold exactly the listening socket
 * and the open connections, and arm the timer at the nearest connection
 * deadline.  Level-triggered: what dispatch left unread wakes the program
 * again.  A descriptor the program took from us is never added (fd_ours);
 * deleting a number that now names another file fails harmlessly (the set
 * holds our files, not numbers).
 */
static void loop_sync(void)
{
	if (loop_epoll_fd < 0 || !fd_ours(loop_epoll_fd, &loop_epoll_id)) {
		if (loop_epoll_fd >= 0)
			agent_log("the program closed or replaced the event-loop descriptor %d; "
				  "call mark_agent_fd() again for a new one", loop_epoll_fd);
		loop_epoll_fd = -1;
		return;
	}
	for (int i = 0; i < loop_nregistered; i++)
		epoll_ctl(loop_epoll_fd, EPOLL_CTL_DEL, loop_registered[i], NULL);
	loop_nregistered = 0;
	if (loop_stopped)
		return;
	uint32_t events[1 + MAX_CONNS];
	if (listen_fd >= 0 && fd_ours(listen_fd, &listen_id)) {
		events[loop_nregistered] = accept_paused(now_ms()) ? 0 : EPOLLIN;   /* the timer ends a pause */
		loop_registered[loop_nregistered++] = listen_fd;
	}
	/* A connection with a pending reply is watched for writing only: the
	 * program is woken (and calls dispatch) when its client makes room,
	 * and its unread next request cannot keep the set readable. */
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0 && fd_ours(conns[i].fd, &conns[i].id)) {
			events[loop_nregistered] = conn_has_output(&conns[i]) ? EPOLLOUT : EPOLLIN;
			loop_registered[loop_nregistered++] = conns[i].fd;
		}
	for (int i = 0; i < loop_nregistered; i++) {
		struct epoll_event ev = { .events = events[i], .data.fd = loop_registered[i] };
		if (epoll_ctl(loop_epoll_fd, EPOLL_CTL_ADD, loop_registered[i], &ev) != 0)
			agent_log("epoll_ctl(ADD %d): %s", loop_registered[i], strerror(errno));
	}
	if (loop_timer_fd >= 0 && fd_ours(loop_timer_fd, &loop_timer_id)) {
		/* Absolute CLOCK_MONOTONIC, as now_ms(); an all-zero value would
		 * disarm, so a deadline already past fires at once (1 ns). */
		struct itimerspec its = { 0 };
		int64_t dl = next_deadline();
		if (dl >= 0) {
			its.it_value.tv_sec = dl / 1000;
			its.it_value.tv_nsec = (long)(dl % 1000) * 1000000;
			if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
				its.it_value.tv_nsec = 1;
		}
		timerfd_settime(loop_timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
	}
}

static int loop_not_available(const char *call)
{
	if (&mark_agent_event_loop == NULL || !mark_agent_event_loop)
		return mark_error(ENOTSUP, "mark: agent: %s() needs MARK_AGENT_EVENT_LOOP in the program "
				  "(otherwise the agent runs on its own thread and needs no dispatching)", call);
	return mark_error(ENOTSUP, "mark: agent: the agent is off in process %d (MARK_AGENT=0 or a "
			  "setuid/setcap program), so %s() has nothing to serve", (int)getpid(), call);
}

int mark_agent_fd(void)
{
	mark_agent_autostart();
	if (!loop_mode)
		return loop_not_available("mark_agent_fd");
	pthread_mutex_lock(&dispatch_lock);
	if (agent_pid != getpid())
		loop_adopt();
	int rc = 0;
	if (loop_epoll_fd < 0) {
		int e = epoll_create1(EPOLL_CLOEXEC);
		pthread_mutex_lock(&fd_lock);
		if (e >= 0 && fd_id_take(e, &loop_epoll_id)) {
			loop_epoll_fd = e;
		} else if (e >= 0) {
			close(e);
			e = -1;
		}
		pthread_mutex_unlock(&fd_lock);
		if (e < 0)
			rc = mark_error(errno ? errno : EMFILE, "mark: agent: epoll_create1: %s; the event-loop "
					"agent cannot start (free a descriptor and call mark_agent_fd() again)",
					strerror(errno));
		loop_nregistered = 0;
	}
	if (rc == 0 && (loop_timer_fd < 0 || !fd_ours(loop_timer_fd, &loop_timer_id))) {
		int t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = t };
		if (t < 0 || !fd_id_take(t, &loop_timer_id) || epoll_ctl(loop_epoll_fd, EPOLL_CTL_ADD, t, &ev) != 0) {
			rc = mark_error(errno ? errno : EMFILE, "mark: agent: cannot create the agent's timer: %s; "
					"the event-loop agent cannot start", strerror(errno));
			if (t >= 0)
				close(t);
			t = -1;
		}
		loop_timer_fd = t;
	}
	if (rc == 0 && listen_fd < 0 && !loop_stopped) {
		pthread_mutex_lock(&fd_lock);
		forget_parent_conns();
		pthread_mutex_unlock(&fd_lock);
		descriptor_recoveries = 0;
		if (!open_descriptors())
			rc = mark_error(EAGAIN, "mark: agent: cannot create the agent's socket in process %d; "
					"see the message on stderr", (int)getpid());
	}
	if (rc == 0) {
		loop_sync();
		rc = loop_epoll_fd;
	}
	pthread_mutex_unlock(&dispatch_lock);
	return rc;
}

int mark_agent_dispatch(void)
{
	if (!loop_mode)
		return loop_not_available("mark_agent_dispatch");
	pthread_mutex_lock(&dispatch_lock);
	if (agent_pid != getpid()) {
		/* A forked child woken by its parent's controllers: it has no
		 * agent of its own until it calls mark_agent_fd(). */
		loop_adopt();
		pthread_mutex_unlock(&dispatch_lock);
		return 0;
	}
	if (loop_timer_fd >= 0 && fd_ours(loop_timer_fd, &loop_timer_id)) {
		uint64_t expirations;
		ssize_t r = read(loop_timer_fd, &expirations, sizeof(expirations));
		(void)r;   /* EAGAIN: the timer had not fired */
	}
	if (!loop_stopped && listen_fd >= 0) {
		enum agent_round_result r = agent_round(false);
		if (r == ROUND_STOP)
			agent_teardown();
		if (r != ROUND_CONTINUE)
			loop_stopped = true;
	}
	loop_sync();
	pthread_mutex_unlock(&dispatch_lock);
	return 0;
}

/*
 * exit() and dlclose(): remove the socket first (no new controller can
 * connect), then let the thread end its session and close its connections.
 * The wait is bounded so a wedged request cannot hang exit.
 */
static void agent_atexit(void)
{
	if (loop_mode) {
		/* No thread to stop: end the session, close our descriptors and
		 * remove the socket here (the program's threads may still call
		 * mark_agent_dispatch(), which then finds nothing to serve).
		 * trylock: exit() may come from a signal handler that interrupted
		 * mark_agent_dispatch() on this very thread, or another thread
		 * may be dispatching; then nothing is done here, and the socket
		 * left behind is removed by the next `mark ps`, as after exec. */
		if (pthread_mutex_trylock(&dispatch_lock) != 0)
			return;
		if (agent_pid == getpid() && !loop_stopped) {
			loop_stopped = true;
			agent_teardown();
			loop_sync();
		}
		pthread_mutex_unlock(&dispatch_lock);
		return;
	}
	pthread_mutex_lock(&fd_lock);
	if (!__atomic_load_n(&thread_running, __ATOMIC_RELAXED) || agent_pid != getpid()) {
		pthread_mutex_unlock(&fd_lock);
		return;
	}
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	if (socket_path[0])
		unlink(socket_path);
	/* The program may have closed or replaced the pipe's write end: then
	 * the thread, asleep in poll(), cannot be woken, and is given only a
	 * moment (the tracer's own exit handler finishes a recording).  A
	 * thread that has not created its pipe yet sees `stopping` by itself
	 * (and must be waited for: it may be creating its socket). */
	bool woken = true;
	if (wake_fd[1] >= 0) {
		if (fd_ours(wake_fd[1], &wake_id[1])) {
			ssize_t w = write(wake_fd[1], "x", 1);
			(void)w;   /* a full pipe is already a pending wake-up */
		} else {
			woken = false;
		}
	}
	pthread_t t = agent_thread;
	__atomic_store_n(&thread_running, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fd_lock);
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	if (woken) {
		deadline.tv_sec += 5;
	} else if ((deadline.tv_nsec += 100000000) >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	if (pthread_timedjoin_np(t, NULL, &deadline) != 0 && woken)
		agent_log("the agent thread did not stop within 5 s; exiting anyway");
}

/*
 * The agent starts itself: the core calls this hook once the process has
 * markers (after each object registers; only the first call does anything).
 * Registered from the agent's own constructor, so the core knows nothing of
 * the agent.
 */
static void __attribute__((constructor)) agent_module_init(void)
{
	mark_core_on_object_registered(mark_agent_autostart);
}

void mark_agent_autostart(void)
{
	if (__atomic_load_n(&autostart_state, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&fd_lock);
	if (__atomic_load_n(&autostart_state, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&fd_lock);
		return;
	}
	__atomic_store_n(&autostart_state, 1, __ATOMIC_RELEASE);
	/*
	 * No agent in a setuid/setgid/setcap program (AT_SECURE): its agent
	 * would serve the caller whenever the uids match (a setcap program runs
	 * with the caller's uid), letting the caller arm markers and make the
	 * privileged process write traces where it chooses.  Such a program is
	 * not controllable; docs/security.md says so.
	 */
	const char *env = secure_getenv("MARK_AGENT");
	/* The spellings every MARK_* switch takes: MARK_AGENT=off, false or
	 * no were taken for "on", in silence.  Any other value turns the
	 * agent off (who wrote it did not ask for a socket in a way we can
	 * read) and says so, after the lock (fork takes it). */
	const int wanted = env && *env ? mark_env_bool(env) : 1;
	if (getauxval(AT_SECURE) || wanted != 1) {
		pthread_mutex_unlock(&fd_lock);
		if (wanted < 0) {
			char value[100];
			mark_printable_brief(value, sizeof(value), env);
			mark_warn("mark: MARK_AGENT=%s is not valid (use " MARK_ENV_BOOL_WORDS "); the agent is off, "
				  "and `mark` cannot control this process\n", value);
		}
		return;
	}
	const char *xdg = secure_getenv("XDG_RUNTIME_DIR");
	if (xdg && strlen(xdg) < sizeof(xdg_runtime_dir))
		snprintf(xdg_runtime_dir, sizeof(xdg_runtime_dir), "%s", xdg);
	for (int i = 0; i < MAX_CONNS; i++) {
		conns[i].fd = -1;
		mark_proto_reader_init(&conns[i].reader);
		mark_proto_buf_init(&conns[i].out);
	}
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atexit(agent_atexit);
	/* The program serves the agent from its event loop: no thread (so
	 * its forks take the C library's single-thread path, docs/markers.md);
	 * the socket is created by its first mark_agent_fd(). */
	if (&mark_agent_event_loop != NULL && mark_agent_event_loop)
		loop_mode = true;
	else
		start_thread_locked();
	pthread_mutex_unlock(&fd_lock);
}

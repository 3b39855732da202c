/*
 * Client side of the control protocol: finding a process's agent socket,
 * connecting, one request and its reply, with clear messages for every way
 * this can fail.
 */
#define _GNU_SOURCE
#include "control.h"
#include <mark/tracer.h>
#include "command.h"
#include "agent/agent.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

bool ctl_parse_pid(const char *text, pid_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (!*text || *end || errno || v <= 0 || v > INT_MAX) {
		cli_error("\"%s\" is not a process ID", text);
		return false;
	}
	*pid = (pid_t)v;
	return true;
}

static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	snprintf(buf, len, "?");
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	/* The process names itself (prctl, its argv[0]): escaped here once for
	 * every message that shows it (cli_error() leaves its escapes as they
	 * are, see text.h). */
	snprintf(buf, len, "%s", cli_text(buf));
}

bool ctl_target_env_path(pid_t pid, const char *name, char *out, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* The heap, not a static buffer: `mark ps` asks agents from several threads. */
	enum { ENV_MAX = 65536 };
	char *env = malloc(ENV_MAX);
	ssize_t n = env ? read(fd, env, ENV_MAX - 1) : -1;
	close(fd);
	bool found = false;
	if (n > 0) {
		env[n] = '\0';
		size_t nl = strlen(name);
		for (char *p = env; p < env + n && !found; p += strlen(p) + 1) {
			if (strncmp(p, name, nl) == 0 && p[nl] == '=' && p[nl + 1] == '/') {
				snprintf(out, len, "%s", p + nl + 1);
				found = true;
			}
		}
	}
	free(env);
	return found;
}

static size_t add_dir(char dirs[][108], size_t n, size_t max, const char *dir)
{
	if (n >= max || !dir[0])
		return n;
	for (size_t i = 0; i < n; i++)
		if (strcmp(dirs[i], dir) == 0)
			return n;
	snprintf(dirs[n], 108, "%s", dir);
	return n + 1;
}

size_t ctl_socket_dirs(uid_t uid, pid_t pid, char dirs[][108], size_t max)
{
	char dir[108], xdg[PATH_MAX], run[64];
	size_t n = 0;
	const char *own = secure_getenv("XDG_RUNTIME_DIR");
	if (own && mark_agent_dir(dir, sizeof(dir), uid, own) == 0)
		n = add_dir(dirs, n, max, dir);
	if (pid > 0 && ctl_target_env_path(pid, "XDG_RUNTIME_DIR", xdg, sizeof(xdg)) && mark_agent_dir(dir, sizeof(dir), uid, xdg) == 0)
		n = add_dir(dirs, n, max, dir);
	snprintf(run, sizeof(run), "/run/user/%u", (unsigned)uid);
	if (mark_agent_dir(dir, sizeof(dir), uid, run) == 0)
		n = add_dir(dirs, n, max, dir);
	if (mark_agent_dir(dir, sizeof(dir), uid, NULL) == 0)
		n = add_dir(dirs, n, max, dir);
	return n;
}

/* The effective uid of `pid` (the uid its agent runs and creates its socket
 * with), from /proc/PID/status; false if it cannot be read. */
static bool target_euid(pid_t pid, uid_t *uid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool found = false;
	unsigned r, e;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
			*uid = (uid_t)e;
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

/* snprintf for the refusal messages below, which may be cut (they quote paths). */
static __attribute__((format(printf, 3, 4))) void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

int ctl_socket_dir_open(const char *dir, struct stat *st)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, st) != 0) {
		int e = errno;
		close(dfd);
		return -e;
	}
	return dfd;
}

int ctl_socket_connect_at(int dfd, const char *name, int timeout_ms)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int len = snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s", dfd, name);
	if (len < 0 || (size_t)len >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/*
	 * A Unix stream connect() never completes later (no EINPROGRESS): it
	 * succeeds at once, or fails with EAGAIN while the listener's queue is
	 * full, and may simply be tried again.  The waits between tries grow
	 * from 1 ms to 50 ms: an agent that drains its queue is reached
	 * quickly, one that never does costs little.
	 */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int delay_ms = 1;
	for (;;) {
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			break;
		int e = errno;
		if (e == EINTR)
			continue;
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long waited = (long)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (e != EAGAIN || waited >= timeout_ms) {
			close(fd);
			return -e;
		}
		long left = timeout_ms - waited;
		poll(NULL, 0, (int)(delay_ms < left ? delay_ms : left));
		if (delay_ms < 50)
			delay_ms *= 2;
	}
	/* The rest of the client (ctl_request, ctl_read_reply) waits with
	 * poll() and expects a blocking socket. */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/*
 * May the socket `st` at `path` (in the directory `dir`, opened as `dst`)
 * speak for process `pid` of uid `uid`?
 * Both must be the target user's alone: the directory a real directory
 * (not a link: ctl_socket_dir_open) owned by uid and writable by nobody
 * else, the socket owned by uid.  Anyone else who could write there could
 * have planted it, and whatever answers on it would be trusted with the
 * controller's requests and believed in its replies.  Root's are trusted
 * too: a process that started as root and dropped privileges keeps its
 * socket in root's directory (only root can reach it, and check_peer()
 * still requires the pid).  Returns NULL or why not (in `why`).
 */
static const char *check_socket_owner(const char *dir, const char *path, const struct stat *dst,
				      const struct stat *st, uid_t uid, pid_t pid, char *why, size_t len)
{
	if (!S_ISDIR(dst->st_mode))
		say(why, len, "refusing %s: %s is not a directory (a symbolic link?); remove it and restart "
			 "process %d", path, dir, (int)pid);
	else if (dst->st_uid != uid && dst->st_uid != 0)
		say(why, len, "refusing %s: its directory %s is owned by uid %u, not by uid %u of process %d, "
			 "so someone else may have planted it; remove %s (as root) and restart process %d",
			 path, dir, (unsigned)dst->st_uid, (unsigned)uid, (int)pid, dir, (int)pid);
	else if (dst->st_mode & 022)
		say(why, len, "refusing %s: its directory %s is writable by others (mode %04o), so anyone "
			 "could have put it there; make it private (chmod 0700 %s) and restart process %d",
			 path, dir, (unsigned)(dst->st_mode & 07777), dir, (int)pid);
	else if (st->st_uid != uid && st->st_uid != 0)
		say(why, len, "refusing %s: it is owned by uid %u, not by uid %u of process %d; remove it "
			 "and restart process %d", path, (unsigned)st->st_uid, (unsigned)uid, (int)pid, (int)pid);
	else
		return NULL;
	return why;
}

/*
 * After connect: the process listening must be the one asked for.  The
 * kernel records the listener's pid (translated into our pid namespace; 0
 * when it is outside it) and euid at listen() time (root's is accepted, as
 * above), so a socket that
 * answers for another process, e.g. one with the same pid number in
 * another pid namespace sharing this directory, is caught here.
 */
static const char *check_peer(int fd, const char *path, uid_t uid, pid_t pid, char *why, size_t len)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cl != sizeof(cred))
		say(why, len, "refusing %s: cannot read its peer credentials: %s", path, strerror(errno));
	else if (cred.pid != pid)
		say(why, len, "refusing %s: it is answered by %s %d, not by process %d (a process of "
			 "another pid namespace that shares this directory, or a planted socket); give the "
			 "processes different XDG_RUNTIME_DIRs, or run mark in the target's pid namespace",
			 path, cred.pid ? "process" : "a process outside this pid namespace, pid", (int)cred.pid,
			 (int)pid);
	else if (cred.uid != uid && cred.uid != 0)
		say(why, len, "refusing %s: it is answered by uid %u, not by uid %u of process %d", path,
			 (unsigned)cred.uid, (unsigned)uid, (int)pid);
	else
		return NULL;
	return why;
}

int ctl_connect(struct ctl_conn *c, pid_t pid)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->pid = pid;
	mark_proto_reader_init(&c->reader);
	struct stat pst;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return cli_error("no process with PID %d", (int)pid);
	if (stat(proc, &pst) != 0)
		return cli_error("no process with PID %d (or /proc is not mounted)", (int)pid);
	read_comm(pid, c->comm, sizeof(c->comm));
	/* The agent runs (and owns its socket) with the process's euid. */
	uid_t uid = pst.st_uid;
	if (!target_euid(pid, &uid) && ctl_process_gone(pid))
		return cli_error("process %d exited", (int)pid);
	c->uid = uid;
	/* The agent serves only its own user and root: say so before looking
	 * for a socket we could not reach anyway. */
	if (geteuid() != 0 && uid != geteuid())
		return cli_error("permission denied: process %d (%s) runs as uid %u; control it as that user or "
				 "as root", (int)pid, c->comm, (unsigned)uid);

	char dirs[6][108];
	size_t nd = ctl_socket_dirs(uid, pid, dirs, 6);
	bool denied = false;
	int last_err = 0;
	char busy[108] = "";   /* a socket whose queue stayed full */
	/* The first refusal, reported if no directory has a socket we trust. */
	char why[1024], refused[1024] = "";
	char name[32];
	snprintf(name, sizeof(name), "%d.sock", (int)pid);
	for (size_t i = 0; i < nd; i++) {
		/* `path` names the socket in messages only: it is never used to
		 * reach it (see ctl_socket_dir_open). */
		char path[108];
		if (snprintf(path, sizeof(path), "%s/%s", dirs[i], name) >= (int)sizeof(path))
			continue;
		struct stat dst, st;
		int dfd = ctl_socket_dir_open(dirs[i], &dst);
		if (dfd == -ELOOP || dfd == -ENOTDIR) {
			/* A link or a file where the directory should be: an
			 * agent never uses one (it refuses to start), so say so
			 * only if a socket for this pid is found through it. */
			if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && !refused[0])
				say(refused, sizeof(refused), "refusing %s: %s is not a directory (a symbolic link?); "
				    "remove it and restart process %d", path, dirs[i], (int)pid);
			continue;
		}
		if (dfd < 0) {
			denied |= dfd == -EACCES;
			continue;
		}
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			denied |= errno == EACCES;
			close(dfd);
			continue;
		}
		if (!S_ISSOCK(st.st_mode)) {
			close(dfd);
			continue;
		}
		if (check_socket_owner(dirs[i], path, &dst, &st, uid, pid, why, sizeof(why))) {
			if (!refused[0])
				snprintf(refused, sizeof(refused), "%s", why);
			close(dfd);
			continue;
		}
		/*
		 * Through the descriptor just checked: the socket reached is
		 * the one in that directory, whatever its name points to now.
		 * Only its owner (the target's user, or root) may replace the
		 * socket inside it meanwhile, and check_peer() below names the
		 * process that answers anyway.
		 */
		int fd = ctl_socket_connect_at(dfd, name, CTL_CONNECT_TIMEOUT_MS);
		close(dfd);
		if (fd >= 0) {
			/* Nothing is sent before the peer is known to be the target. */
			if (check_peer(fd, path, uid, pid, why, sizeof(why))) {
				close(fd);
				if (!refused[0])
					snprintf(refused, sizeof(refused), "%s", why);
				continue;
			}
			c->fd = fd;
			snprintf(c->path, sizeof(c->path), "%s", path);
			return 0;
		}
		last_err = -fd;
		if (last_err == EAGAIN && !busy[0])
			snprintf(busy, sizeof(busy), "%s", path);
		denied |= last_err == EACCES || last_err == EPERM;
	}
	if (refused[0])
		return cli_error("%s", refused);
	if (busy[0])
		return cli_error("process %d (%s) is not answering: its agent's socket %s accepted no connection "
				 "within %d s (its queue of pending connections is full); is it stopped or busy? "
				 "Try again once it runs (`kill -CONT %d` if it was stopped)",
				 (int)pid, c->comm, busy, CTL_CONNECT_TIMEOUT_MS / 1000, (int)pid);
	if (denied)
		return cli_error("permission denied: process %d (%s) runs as uid %u; control it as that user or "
				 "as root", (int)pid, c->comm, (unsigned)uid);
	if (last_err == ECONNREFUSED)
		return cli_error("process %d (%s) has a stale mark socket but no agent listening (it exec'd a "
				 "program without markers, or its agent stopped); `mark ps` removes stale sockets",
				 (int)pid, c->comm);
	if (ctl_process_gone(pid))
		return cli_error("process %d exited", (int)pid);
	return cli_error("process %d (%s) has no mark agent: it has no markers (does not use libmark), or it "
			 "runs with MARK_AGENT=0, or its socket directory is not visible from here "
			 "(looked in %s%s%s)", (int)pid, c->comm, nd > 0 ? dirs[0] : "?", nd > 1 ? " and " : "",
			 nd > 1 ? dirs[nd - 1] : "");
}

void ctl_close(struct ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	mark_proto_reader_free(&c->reader);
}

bool ctl_process_gone(pid_t pid)
{
	return !mark_process_running(pid);
}

static int gone(struct ctl_conn *c)
{
	if (ctl_process_gone(c->pid))
		return cli_error("process %d (%s) exited during the command", (int)c->pid, c->comm);
	return cli_error("the agent of process %d (%s) closed the connection without a reply", (int)c->pid,
			 c->comm);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* What is left of the exchange's time (ms, for poll), 0 once it is over. */
static int time_left(const struct ctl_conn *c)
{
	int64_t left = c->deadline_ms - now_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* The exchange's deadline passed: say at which point, and what to do. */
static int too_late(struct ctl_conn *c, bool sending)
{
	double s = c->timeout_ms / 1000.0;
	if (sending)
		return cli_error("process %d (%s) did not take the request within %g s: its agent reads nothing "
				 "(is the process stopped or busy?); try again once it runs (`kill -CONT %d` if it "
				 "was stopped)", (int)c->pid, c->comm, s, (int)c->pid);
	if (c->reply_bytes == 0 && c->reader.have == 0)
		return cli_error("process %d (%s) did not answer within %g s (is it stopped or busy?); try "
				 "again once it runs (`kill -CONT %d` if it was stopped)", (int)c->pid, c->comm, s,
				 (int)c->pid);
	return cli_error("process %d (%s) did not finish its reply within %g s (%zu bytes came; the whole "
			 "reply must come within that time, however slowly it arrives): its agent is stalled, or "
			 "what answers on %s is not a mark agent; try again, and if it recurs check what process "
			 "%d runs", (int)c->pid, c->comm, s, c->reply_bytes + c->reader.have, c->path, (int)c->pid);
}

int ctl_read_reply(struct ctl_conn *c)
{
	char err[512];
	if (c->have_msg) {
		mark_proto_reader_next(&c->reader);
		c->have_msg = false;
	}
	for (;;) {
		/* One deadline for the exchange (ctl_request): bytes that
		 * trickle in, or MARKERs without end, do not extend it. */
		int left = time_left(c);
		if (left == 0)
			return too_late(c, false);
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int pr = poll(&pfd, 1, left);
		if (pr == 0)
			continue;   /* the deadline, said above */
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			return cli_error("poll: %s", strerror(errno));
		}
		/* Peek, then consume exactly what the reader took: bytes of the
		 * next reply stay in the socket. */
		uint8_t buf[4096];
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_PEEK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return gone(c);
		size_t used;
		int r = mark_proto_reader_feed(&c->reader, buf, (size_t)n, &used, err, sizeof(err));
		if (used > 0 && recv(c->fd, buf, used, 0) != (ssize_t)used)
			return cli_error("read from process %d failed: %s", (int)c->pid, strerror(errno));
		if (r < 0)
			return cli_error("bad reply from process %d: %s", (int)c->pid, err);
		/* reader.have counts the message being read; reply_bytes those before it. */
		if (c->reply_bytes + c->reader.have > CTL_MAX_REPLY_BYTES)
			return cli_error("process %d (%s) sent more than %u MiB in reply to one request, the most "
					 "mark takes (a real agent sends a few hundred bytes for each of at most 65535 "
					 "markers): what answers on %s is not a working mark agent; check what process "
					 "%d runs, or restart it", (int)c->pid, c->comm, CTL_MAX_REPLY_BYTES >> 20,
					 c->path, (int)c->pid);
		if (r == 1)
			break;
	}
	c->have_msg = true;
	c->reply_bytes += c->reader.need;
	int r = mark_proto_parse(c->reader.buf, c->reader.need, &c->msg, err, sizeof(err));
	/* c->msg points into reader.buf: valid until the next read. */
	if (r < 0)
		return cli_error("bad reply from process %d: %s", (int)c->pid, err);
	if (c->msg.type < MARK_MSG_OK)
		return cli_error("bad reply from process %d: a %s request", (int)c->pid,
				 mark_proto_type_name(c->msg.type));
	if (c->msg.type == MARK_MSG_MARKER && ++c->markers > CTL_MAX_MARKERS)
		return cli_error("process %d (%s) sent more than %d MARKER replies to one LIST, the most mark "
				 "takes (it records at most %d markers per process: marker ids are 16-bit): what "
				 "answers on %s is not a working mark agent; check what process %d runs, or restart it",
				 (int)c->pid, c->comm, CTL_MAX_MARKERS, CTL_MAX_MARKERS, c->path, (int)c->pid);
	return 0;
}

int ctl_request(struct ctl_conn *c, const struct mark_proto_buf *req, int timeout_ms)
{
	if (req->failed)
		return cli_error("request too large: %s", strerror(-req->failed));
	/* A new exchange: one deadline and new limits for all of it. */
	c->timeout_ms = timeout_ms;
	c->deadline_ms = now_ms() + timeout_ms;
	c->reply_bytes = 0;
	c->markers = 0;
	/* Without blocking (MSG_DONTWAIT), waiting in poll() until the
	 * deadline: an agent that never reads fills the socket buffer with a
	 * large request (ARM: up to 256 KiB), and a blocking send() would wait
	 * for it for ever. */
	size_t off = 0;
	while (off < req->len) {
		int left = time_left(c);
		if (left == 0)
			return too_late(c, true);
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
		int pr = poll(&pfd, 1, left);
		if (pr < 0 && errno != EINTR)
			return cli_error("poll: %s", strerror(errno));
		if (pr <= 0)
			continue;
		ssize_t w = send(c->fd, req->data + off, req->len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w <= 0)
			return gone(c);
		off += (size_t)w;
	}
	return ctl_read_reply(c);
}

int ctl_simple_request(struct ctl_conn *c, uint16_t type, int timeout_ms)
{
	struct mark_proto_buf b;
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, type);
	mark_proto_end(&b);
	int r = ctl_request(c, &b, timeout_ms);
	mark_proto_buf_free(&b);
	return r;
}

int ctl_reply_error(struct ctl_conn *c, const char *what)
{
	if (c->msg.type != MARK_MSG_ERROR)
		return 0;
	const char *m = mark_proto_str(&c->msg, MARK_TAG_MESSAGE, 0);
	if (what)
		return cli_error("%s: %s", what, m ? m : "error");
	return cli_error("%s", m ? m : "error");
}

bool ctl_absolute_path(const char *path, char *out, size_t len)
{
	if (path[0] == '/') {
		if (snprintf(out, len, "%s", path) >= (int)len)
			goto toolong;
		return true;
	}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd))) {
		cli_error("cannot determine the current directory: %s", strerror(errno));
		return false;
	}
	if (snprintf(out, len, "%s/%s", cwd, path) >= (int)len)
		goto toolong;
	return true;
toolong:
	cli_error("path too long: %s", path);
	return false;
}

int ctl_stop_dir(struct ctl_conn *c, const char *dir)
{
	struct mark_proto_buf req;
	mark_proto_buf_init(&req);
	mark_proto_begin(&req, MARK_MSG_TRACE_STOP);
	mark_proto_add_str(&req, MARK_TAG_DIR, dir);
	mark_proto_end(&req);
	/* Stopping flushes every buffer: allow a minute. */
	int r = ctl_request(c, &req, 60000);
	mark_proto_buf_free(&req);
	return r;
}

/*
 * `--name COMM` (record, stop): every process whose /proc/PID/comm is COMM (this command
 * excepted), appended to *pids.  comm is what the kernel keeps (the first
 * 15 bytes of the program's name, or what the program set with
 * PR_SET_NAME); it is compared byte for byte, never printed unescaped.
 * Returns 0, or -1 (said, prefixed with `what`).
 */
int ctl_pids_named(const char *what, const char *comm, pid_t **pids, size_t *n, size_t *cap)
{
	DIR *d = opendir("/proc");
	if (!d) {
		cli_error("%s: cannot list /proc to find the processes named \"%s\": %s", what, cli_text(comm),
			  strerror(errno));
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (end == de->d_name || *end || pid <= 0 || pid > INT_MAX || pid == (long)getpid())
			continue;
		char path[64], name[64];
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;   /* gone meanwhile, or hidden (hidepid=): not ours to record */
		ssize_t len = read(fd, name, sizeof(name) - 1);
		close(fd);
		if (len <= 0)
			continue;
		name[len] = '\0';
		if (name[len - 1] == '\n')
			name[len - 1] = '\0';
		if (strcmp(name, comm) != 0)
			continue;
		if (*n == *cap && cli_array_grow(pids, cap, sizeof(**pids), 16)) {
			cli_error("%s: out of memory listing the processes named \"%s\"", what, cli_text(comm));
			rc = -1;
			break;
		}
		(*pids)[(*n)++] = (pid_t)pid;
	}
	closedir(d);
	return rc;
}

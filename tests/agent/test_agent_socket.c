/*
 * The agent against hostile and odd clients, on its real socket, inside a
 * process whose markers keep firing on another thread.
 *
 *   test_agent_socket               malformed/truncated/oversized/unknown
 *                                   messages, stalled and vanishing clients,
 *                                   too many connections, valid requests;
 *                                   then checks the process is healthy (its
 *                                   thread still runs, markers fire, no fd
 *                                   leaked, the agent still answers)
 *   test_agent_socket --disabled    MARK_AGENT=0: no socket appears
 *   test_agent_socket --peercred    a client of another uid reaching the
 *                                   socket is refused by SO_PEERCRED (root only)
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include "agent/protocol.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static volatile int stop_worker;
static uint64_t hits;   /* atomic */

static void count_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)priv;
	(void)args;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
	(void)arg;
	unsigned i = 0;
	while (!__atomic_load_n(&stop_worker, __ATOMIC_RELAXED)) {
		MARK(sock_test_tick, "%u", i);
		MARK(sock_test_other, "%u %s", i, "x");
		if ((++i & 1023) == 0)
			usleep(1000);
	}
	return NULL;
}

static char sock_path[108];

static bool find_socket(int wait_ms)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	for (int t = 0; t < wait_ms; t += 10) {
		struct stat st;
		if (xdg && xdg[0] == '/') {
			snprintf(sock_path, sizeof(sock_path), "%s/mark/%d.sock", xdg, (int)getpid());
			if (stat(sock_path, &st) == 0)
				return true;
		}
		snprintf(sock_path, sizeof(sock_path), "/tmp/mark-%u/%d.sock", (unsigned)geteuid(), (int)getpid());
		if (stat(sock_path, &st) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

static int connect_to(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fprintf(stderr, "connect %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void send_bytes(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;   /* the agent may close early: that is allowed */
		b += w;
		n -= (size_t)w;
	}
}

/* Read one message into r/msg within timeout_ms.  1: got one; 0: EOF; -1: timeout/error. */
static int read_msg(int fd, struct mark_proto_reader *r, struct mark_proto_msg *msg, int timeout_ms)
{
	mark_proto_reader_next(r);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return -1;
		uint8_t buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK);
		if (n == 0)
			return 0;
		if (n < 0)
			return errno == ECONNRESET ? 0 : -1;
		size_t used;
		char err[256];
		int fr = mark_proto_reader_feed(r, buf, (size_t)n, &used, err, sizeof(err));
		if (recv(fd, buf, used, 0) != (ssize_t)used)
			return -1;
		if (fr < 0) {
			fprintf(stderr, "bad reply: %s\n", err);
			return -1;
		}
		if (fr == 1) {
			if (mark_proto_parse(r->buf, r->need, msg, err, sizeof(err)) != 0) {
				fprintf(stderr, "bad reply: %s\n", err);
				return -1;
			}
			return 1;
		}
	}
}

static struct mark_proto_msg reply;

/* Expect an ERROR with errno `e` (0: any), then the connection closed. */
static void expect_error_and_close(const char *what, const void *data, size_t n, int e)
{
	int fd = connect_to(sock_path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	send_bytes(fd, data, n);
	struct mark_proto_reader r;
	mark_proto_reader_init(&r);
	int got = read_msg(fd, &r, &reply, 5000);
	if (got != 1 || reply.type != MARK_MSG_ERROR) {
		fprintf(stderr, "%s: expected an ERROR reply, got %d/%s\n", what, got,
			got == 1 ? mark_proto_type_name(reply.type) : "-");
		testutil_failures++;
	} else {
		uint64_t code = 0;
		mark_proto_u64(&reply, MARK_TAG_ERRNO, 0, &code);
		printf("%-28s -> %s\n", what, mark_proto_str(&reply, MARK_TAG_MESSAGE, 0));
		if (e && code != (uint64_t)e) {
			fprintf(stderr, "%s: errno %llu, expected %d\n", what, (unsigned long long)code, e);
			testutil_failures++;
		}
		int eof = read_msg(fd, &r, &reply, 5000);
		if (eof != 0) {
			fprintf(stderr, "%s: the connection was not closed after the error (%d)\n", what, eof);
			testutil_failures++;
		}
	}
	mark_proto_reader_free(&r);
	close(fd);
}

static size_t put_header(uint8_t *p, uint32_t magic, uint16_t version, uint16_t type, uint32_t len)
{
	memcpy(p, &magic, 4);
	memcpy(p + 4, &version, 2);
	memcpy(p + 6, &type, 2);
	memcpy(p + 8, &len, 4);
	return 12;
}

static size_t put_field(uint8_t *p, uint16_t tag, uint32_t size, const void *v)
{
	memcpy(p, &tag, 2);
	memcpy(p + 2, &size, 4);
	if (v)
		memcpy(p + 6, v, size);
	return 6 + size;
}

/* Send a request built with the builder; return the first reply type (or -1). */
static int request(int fd, struct mark_proto_buf *b, struct mark_proto_reader *r)
{
	send_bytes(fd, b->data, b->len);
	mark_proto_buf_free(b);
	return read_msg(fd, r, &reply, 5000) == 1 ? reply.type : -1;
}

static int count_fds(void)
{
	return testutil_count_entries("/proc/self/fd");
}

static void malformed_messages(void)
{
	uint8_t m[1024];
	size_t n;

	n = put_header(m, 0x12345678, 1, MARK_MSG_INFO, 0);
	expect_error_and_close("bad magic", m, n, EPROTO);
	n = put_header(m, MARK_PROTO_MAGIC, 99, MARK_MSG_INFO, 0);
	expect_error_and_close("unknown version", m, n, EPROTONOSUPPORT);
	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_INFO, 0xffffffffu);
	expect_error_and_close("oversized (4 GiB)", m, n, EMSGSIZE);
	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_INFO, MARK_PROTO_MAX_PAYLOAD + 1);
	expect_error_and_close("oversized (limit + 1)", m, n, EMSGSIZE);
	n = put_header(m, MARK_PROTO_MAGIC, 1, 999, 0);
	expect_error_and_close("unknown type", m, n, EBADMSG);
	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_OK, 0);
	expect_error_and_close("reply type as request", m, n, EBADMSG);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_ARM, 10);
	n += put_field(m + n, MARK_TAG_GLOB, 100, NULL);
	n += 4;   /* 10 payload bytes: a field header claiming 100 */
	expect_error_and_close("field overruns payload", m, n, EPROTO);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_ARM, 9);
	n += put_field(m + n, MARK_TAG_GLOB, 3, "abc");   /* no NUL */
	expect_error_and_close("string without NUL", m, n, EPROTO);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_ARM, 10);
	n += put_field(m + n, MARK_TAG_GLOB, 4, "a\0b");  /* embedded NUL */
	expect_error_and_close("string with inner NUL", m, n, EPROTO);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_TRACE_START, 10);
	n += put_field(m + n, MARK_TAG_MODE, 4, "\1\0\0\0");
	expect_error_and_close("u64 of 4 bytes", m, n, EPROTO);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_SNAPSHOT, 2 * 9);
	n += put_field(m + n, MARK_TAG_DIR, 3, "/a");
	n += put_field(m + n, MARK_TAG_DIR, 3, "/b");
	expect_error_and_close("duplicate field", m, n, EPROTO);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_ARM, 0);
	expect_error_and_close("missing required glob", m, n, EPROTO);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_ARM, 7);
	n += put_field(m + n, MARK_TAG_GLOB, 1, "");
	expect_error_and_close("empty glob", m, n, EINVAL);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_INFO, 7);
	n += put_field(m + n, 77, 1, "");
	expect_error_and_close("unknown field", m, n, EPROTO);

	n = put_header(m, MARK_PROTO_MAGIC, 1, MARK_MSG_TRACE_START, 0);
	n += put_field(m + n, MARK_TAG_DIR, 9, "relative");
	n += put_field(m + n, MARK_TAG_MODE, 8, "\0\0\0\0\0\0\0\0");
	n += put_field(m + n, MARK_TAG_GLOB, 2, "*");
	uint32_t plen = (uint32_t)(n - 12);
	memcpy(m + 8, &plen, 4);
	expect_error_and_close("relative trace directory", m, n, EINVAL);

	/* Random bytes (fixed seed): whatever they are, an error and a close. */
	static uint8_t junk[65536];
	unsigned s = 12345;
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 16);
	expect_error_and_close("64 KiB of random bytes", junk, sizeof(junk), 0);
}

static void odd_clients(void)
{
	/* Connect and vanish, repeatedly. */
	for (int i = 0; i < 50; i++) {
		int fd = connect_to(sock_path);
		if (fd >= 0)
			close(fd);
	}
	/* Ask for a large reply and vanish without reading it. */
	for (int i = 0; i < 20; i++) {
		int fd = connect_to(sock_path);
		struct mark_proto_buf b;
		mark_proto_buf_init(&b);
		mark_proto_begin(&b, MARK_MSG_LIST);
		mark_proto_end(&b);
		mark_proto_begin(&b, MARK_MSG_INFO);
		mark_proto_end(&b);
		send_bytes(fd, b.data, b.len);
		mark_proto_buf_free(&b);
		close(fd);
	}
	/* Too many connections: the extra ones are told so; the others work. */
	int fds[24];
	for (int i = 0; i < 24; i++)
		fds[i] = connect_to(sock_path);
	usleep(200000);
	int busy = 0;
	for (int i = 0; i < 24; i++) {
		struct pollfd pfd = { .fd = fds[i], .events = POLLIN };
		if (poll(&pfd, 1, 0) == 1) {
			struct mark_proto_reader r;
			mark_proto_reader_init(&r);
			if (read_msg(fds[i], &r, &reply, 1000) == 1 && reply.type == MARK_MSG_ERROR)
				busy++;
			mark_proto_reader_free(&r);
		}
	}
	printf("%-28s -> %d of 24 refused as busy\n", "24 simultaneous connections", busy);
	CHECK(busy == 24 - 16);
	for (int i = 0; i < 24; i++)
		close(fds[i]);
	usleep(100000);

	/* A stalled client (half a header) does not block others, and is cut off. */
	int stalled = connect_to(sock_path);
	send_bytes(stalled, "MAR", 3);
	int fd = connect_to(sock_path);
	struct mark_proto_reader r;
	mark_proto_reader_init(&r);
	struct mark_proto_buf b;
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_INFO);
	mark_proto_end(&b);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(request(fd, &b, &r), MARK_MSG_INFO_REPLY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 1);
	close(fd);
	struct mark_proto_reader rs;
	mark_proto_reader_init(&rs);
	int got = read_msg(stalled, &rs, &reply, 6000);
	CHECK(got == 1 && reply.type == MARK_MSG_ERROR);
	if (got == 1) {
		uint64_t code = 0;
		mark_proto_u64(&reply, MARK_TAG_ERRNO, 0, &code);
		CHECK_EQ(code, ETIMEDOUT);
		printf("%-28s -> %s\n", "stalled client", mark_proto_str(&reply, MARK_TAG_MESSAGE, 0));
	}
	CHECK_EQ(read_msg(stalled, &rs, &reply, 2000), 0);
	close(stalled);
	mark_proto_reader_free(&rs);
	mark_proto_reader_free(&r);
}

static void valid_requests(void)
{
	int fd = connect_to(sock_path);
	struct mark_proto_reader r;
	mark_proto_reader_init(&r);
	struct mark_proto_buf b;

	/* Two requests in one write: two replies, in order. */
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_INFO);
	mark_proto_end(&b);
	mark_proto_begin(&b, MARK_MSG_INFO);
	mark_proto_end(&b);
	CHECK_EQ(request(fd, &b, &r), MARK_MSG_INFO_REPLY);
	uint64_t pid = 0, markers = 0;
	CHECK(mark_proto_u64(&reply, MARK_TAG_PID, 0, &pid));
	CHECK_EQ(pid, getpid());
	CHECK(mark_proto_u64(&reply, MARK_TAG_MARKERS, 0, &markers));
	CHECK_EQ(markers, 2);
	CHECK(strstr(mark_proto_str(&reply, MARK_TAG_CMDLINE, 0), "test_agent_socket") != NULL);
	CHECK_EQ(read_msg(fd, &r, &reply, 5000), 1);
	CHECK_EQ(reply.type, MARK_MSG_INFO_REPLY);

	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_LIST);
	mark_proto_add_str(&b, MARK_TAG_GLOB, "sock_test_*");
	mark_proto_end(&b);
	int t = request(fd, &b, &r);
	int nmarkers = 0;
	while (t == MARK_MSG_MARKER) {
		nmarkers++;
		t = read_msg(fd, &r, &reply, 5000) == 1 ? reply.type : -1;
	}
	CHECK_EQ(t, MARK_MSG_LIST_END);
	CHECK_EQ(nmarkers, 2);

	/* Arm through the agent: the probe starts counting. */
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_ARM);
	mark_proto_add_str(&b, MARK_TAG_GLOB, "sock_test_tick");
	mark_proto_add_str(&b, MARK_TAG_GLOB, "no_such_marker*");
	mark_proto_end(&b);
	CHECK_EQ(request(fd, &b, &r), MARK_MSG_OK);
	uint64_t matched = 9, changed = 9;
	CHECK(mark_proto_u64(&reply, MARK_TAG_MATCHED, 0, &matched) && matched == 1);
	CHECK(mark_proto_u64(&reply, MARK_TAG_CHANGED, 0, &changed) && changed == 1);
	CHECK(mark_proto_u64(&reply, MARK_TAG_MATCHED, 1, &matched) && matched == 0);
	CHECK(mark_proto_u64(&reply, MARK_TAG_CHANGED, 1, &changed) && changed == 0);
	uint64_t before = __atomic_load_n(&hits, __ATOMIC_RELAXED);
	usleep(100000);
	CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) > before);

	/* Stopping a recording this connection does not own. */
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_TRACE_STOP);
	mark_proto_end(&b);
	CHECK_EQ(request(fd, &b, &r), MARK_MSG_ERROR);
	/* A semantic error keeps the connection usable. */
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_INFO);
	mark_proto_end(&b);
	CHECK_EQ(request(fd, &b, &r), MARK_MSG_INFO_REPLY);
	mark_proto_reader_free(&r);
	close(fd);
}

/* Context switches of the agent thread (found by its name), or -1. */
static long agent_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	long total = -1;
	while (d && (de = readdir(d))) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "mark-agent", 10) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
		f = fopen(path, "re");
		char line[256];
		total = 0;
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "ctxt_switches:"))
				total += atol(strchr(line, ':') + 1);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return total;
}

static int run_disabled(void)
{
	/* MARK_AGENT=0 was set before the constructor ran. */
	usleep(300000);
	CHECK(!find_socket(100));
	TEST_DONE();
}

static int peer_client(const char *path)
{
	int fd = connect_to(path);
	if (fd < 0)
		return 3;
	struct mark_proto_buf b;
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_INFO);
	mark_proto_end(&b);
	send_bytes(fd, b.data, b.len);
	mark_proto_buf_free(&b);
	struct mark_proto_reader r;
	mark_proto_reader_init(&r);
	int got = read_msg(fd, &r, &reply, 5000);
	uint64_t code = 0;
	if (got == 1 && reply.type == MARK_MSG_ERROR && mark_proto_u64(&reply, MARK_TAG_ERRNO, 0, &code) &&
	    code == EACCES) {
		printf("peer of uid %u -> %s\n", (unsigned)getuid(), mark_proto_str(&reply, MARK_TAG_MESSAGE, 0));
		return 0;
	}
	fprintf(stderr, "peer of uid %u was not refused (got %d, type %d)\n", (unsigned)getuid(), got,
		got == 1 ? reply.type : -1);
	return 1;
}

static int run_peercred(const char *self)
{
	if (geteuid() != 0)
		TEST_SKIP("the peer-credential test needs root (to run a client as another uid)");
	if (access("/usr/bin/setpriv", X_OK) != 0)
		TEST_SKIP("setpriv (util-linux) is not installed");
	CHECK(find_socket(5000));
	/* The socket directory is 0700: give the other uid a way in (a hard link
	 * in an open directory, and a 0666 socket inode) so that the agent's own
	 * SO_PEERCRED check is what stands in its way. */
	char dir[] = "/tmp/mark-peer-XXXXXX", link_path[128];
	CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0755);
	snprintf(link_path, sizeof(link_path), "%s/peer.sock", dir);
	CHECK(link(sock_path, link_path) == 0);
	CHECK(chmod(link_path, 0666) == 0);
	char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", (char *)self,
			 "--peer-client", link_path, NULL };
	char *envp[] = { "MARK_AGENT=0", NULL };
	pid_t pid;
	int r = posix_spawn(&pid, "/usr/bin/setpriv", NULL, NULL, argv, envp);
	CHECK_EQ(r, 0);
	int st = -1;
	if (r == 0)
		waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	chmod(sock_path, 0600);
	unlink(link_path);
	rmdir(dir);
	/* Still serving its own user. */
	int fd = connect_to(sock_path);
	struct mark_proto_reader rd;
	mark_proto_reader_init(&rd);
	struct mark_proto_buf b;
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_INFO);
	mark_proto_end(&b);
	CHECK_EQ(request(fd, &b, &rd), MARK_MSG_INFO_REPLY);
	mark_proto_reader_free(&rd);
	close(fd);
	TEST_DONE();
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--peer-client") == 0)
		return peer_client(argv[2]);
	if (argc == 2 && strcmp(argv[1], "--disabled") == 0)
		return run_disabled();
	if (argc == 2 && strcmp(argv[1], "--peercred") == 0) {
		static char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			TEST_SKIP("cannot read /proc/self/exe");
		self[n] = '\0';
		return run_peercred(self);
	}

	struct stat st;
	CHECK(find_socket(5000));
	CHECK(stat(sock_path, &st) == 0 && (st.st_mode & 0777) == 0600 && S_ISSOCK(st.st_mode));
	char dir[108];
	snprintf(dir, sizeof(dir), "%s", sock_path);
	*strrchr(dir, '/') = '\0';
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700 && st.st_uid == geteuid());

	CHECK_EQ(mark_probe_register_fast("sock_test_tick", count_probe, NULL), 0);
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	usleep(50000);
	int fds_before = count_fds();

	malformed_messages();
	odd_clients();
	valid_requests();

	usleep(200000);   /* let the agent close what the clients left */
	int fds_after = count_fds();
	printf("file descriptors: %d before, %d after\n", fds_before, fds_after);
	CHECK_EQ(fds_after, fds_before);
	/* Idle means asleep: no wake-up at all while no client is connected. */
	long sw0 = agent_switches();
	usleep(1500000);
	long sw1 = agent_switches();
	printf("agent thread context switches over 1.5 s idle: %ld -> %ld\n", sw0, sw1);
	CHECK(sw0 >= 0);
	CHECK_EQ(sw1, sw0);
	uint64_t h0 = __atomic_load_n(&hits, __ATOMIC_RELAXED);
	usleep(50000);
	CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) > h0);   /* the program still runs */
	__atomic_store_n(&stop_worker, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	mark_disarm("*");
	mark_probe_unregister_fast("sock_test_tick", count_probe, NULL);
	mark_synchronize();
	TEST_DONE();
}

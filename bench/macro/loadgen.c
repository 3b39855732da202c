/*
 * bench/macro/loadgen.c - a bounded loopback load generator for memcached's
 * text protocol (table 7).
 *
 *   loadgen PORT REQUESTS [BATCH [KEYS]]
 *
 * Connects to 127.0.0.1:PORT only (retrying for up to 10 s while the
 * server starts), stores KEYS keys, then sends REQUESTS requests in
 * pipelined batches of BATCH (one write per batch): every 4th a
 * "set key:N 0 0 32" with a 32-byte value, the others "get key:N".  Each
 * batch's replies are read completely before the next batch goes out,
 * counting "STORED\r\n" (set) and "END\r\n" (get) terminators; any other
 * count is an error.  Prints the rate (requests/s) of the timed part.
 *
 * Bounded by construction: REQUESTS requests and a 60 s deadline.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "loadgen: %s: %s\n", what, errno ? strerror(errno) : "protocol error");
	exit(1);
}

static int connect_local(int port)
{
	struct sockaddr_in sa = { 0 };
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	double deadline = now() + 10;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		close(fd);
		if (now() > deadline)
			die("connect to 127.0.0.1");
		usleep(20000);
	}
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Read until `expected` reply terminators were seen.  A terminator may be
 * split across reads: the last 7 bytes are kept and scanned again, and only
 * matches ending in new bytes count. */
static void read_replies(int fd, long expected, double deadline)
{
	static char buf[1 << 16];
	char win[sizeof(buf) + 8];
	size_t tail = 0;
	long seen = 0;
	while (seen < expected) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			die("read (server closed?)");
		}
		memcpy(win + tail, buf, (size_t)r);
		size_t len = tail + (size_t)r;
		for (size_t i = 0; i < len; i++) {
			if (win[i] == 'E' && i + 5 <= len && memcmp(win + i, "END\r\n", 5) == 0 && i + 5 > tail)
				seen++;
			else if (win[i] == 'S' && i + 8 <= len && memcmp(win + i, "STORED\r\n", 8) == 0 && i + 8 > tail)
				seen++;
			else if (win[i] == 'E' && i + 7 <= len && memcmp(win + i, "ERROR\r\n", 7) == 0 && i + 7 > tail) {
				errno = 0;
				die("server answered ERROR");
			}
		}
		tail = len < 7 ? len : 7;
		memmove(win, win + len - tail, tail);
		if (now() > deadline) {
			errno = 0;
			die("60 s deadline passed");
		}
	}
	if (seen != expected) {
		errno = 0;
		die("more replies than requests");
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: loadgen PORT REQUESTS [BATCH [KEYS]]\n");
		return 2;
	}
	int port = atoi(argv[1]);
	long requests = atol(argv[2]);
	long batch = argc > 3 ? atol(argv[3]) : 100;
	long keys = argc > 4 ? atol(argv[4]) : 10000;
	if (port <= 0 || requests <= 0 || batch <= 0 || batch > 1000 || keys <= 0) {
		fprintf(stderr, "loadgen: bad arguments\n");
		return 2;
	}
	const char *value = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";   /* 32 bytes */
	size_t cap = (size_t)batch * 96 + 64;
	char *out = malloc(cap);
	int fd = connect_local(port);
	double deadline = now() + 60;

	/* Fill every key so the gets hit. */
	for (long k = 0; k < keys;) {
		size_t n = 0;
		long b = 0;
		for (; b < batch && k < keys; b++, k++)
			n += (size_t)snprintf(out + n, cap - n, "set key:%ld 0 0 32\r\n%s\r\n", k, value);
		write_all(fd, out, n);
		read_replies(fd, b, deadline);
	}

	unsigned long long x = 88172645463325252ull;   /* xorshift: key choice */
	double t0 = now();
	for (long done = 0; done < requests;) {
		size_t n = 0;
		long b = 0;
		for (; b < batch && done < requests; b++, done++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			long k = (long)(x % (unsigned long long)keys);
			if (done % 4 == 0)
				n += (size_t)snprintf(out + n, cap - n, "set key:%ld 0 0 32\r\n%s\r\n", k, value);
			else
				n += (size_t)snprintf(out + n, cap - n, "get key:%ld\r\n", k);
		}
		write_all(fd, out, n);
		read_replies(fd, b, deadline);
	}
	double t1 = now();
	close(fd);
	free(out);
	double rate = (double)requests / (t1 - t0);
	printf("%.1f\n", rate);
	return 0;
}

/*
 * A toy request handler instrumented with markers, used by `make demo`.
 *
 *   demo            list the markers, then show them disarmed, armed, hit and disarmed
 *   demo --serve S  handle requests for S seconds (for `mark record`, `mark ps`, ...)
 */
#include <mark/mark.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct request {
	int id;
	const char *path;
	size_t len;
};

static const char *const paths[] = { "/", "/index.html", "/api/users", "/static/app.js" };

__attribute__((noinline)) static int handle_request(struct request *req)
{
	MARK(http_request, "%d %s %zu", req->id, req->path, req->len);
	int status = strcmp(req->path, "/api/users") == 0 ? 201 : 200;
	if (MARK_ENABLED(http_debug)) {
		/* Work done only while someone traces http_debug. */
		char dump[64];
		snprintf(dump, sizeof(dump), "request %d: %s", req->id, req->path);
		MARK(http_debug, "%s", dump);
	}
	MARK(http_response, "%d %d", req->id, status);
	return status;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double run(int n)
{
	double start = now_ns();
	for (int i = 0; i < n; i++) {
		struct request req = { i, paths[i & 3], (size_t)(100 + i % 900) };
		handle_request(&req);
	}
	return (now_ns() - start) / n;
}

static void print_probe(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)priv;
	printf("    probe: %-14s ", mark_marker_name(m));
	vprintf(fmt, *args);
	printf("\n");
}

static unsigned long counted;
static void count_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)priv;
	(void)args;
	counted++;
}

static int show_site(const struct mark_site_info *s, void *arg)
{
	(void)arg;
	printf("      %s site at %s:%u%s\n", mark_site_kind_name(s->kind), s->file, s->line,
	       s->is_enabled_test ? " (MARK_ENABLED)" : "");
	return 0;
}

static int show_marker(const struct mark_marker *m, void *arg)
{
	(void)arg;
	printf("  %-14s format \"%s\"\n", mark_marker_name(m), mark_marker_format(m));
	return mark_marker_sites(m, show_site, NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--serve") == 0) {
		double end = now_ns() + atof(argv[2]) * 1e9;
		long n = 0;
		while (now_ns() < end) {
			run(1000);
			n += 1000;
			struct timespec pause = { 0, 1000000 };
			nanosleep(&pause, NULL);
		}
		printf("demo: served %ld requests\n", n);
		return 0;
	}

	printf("1. The markers compiled into this program:\n");
	mark_list(NULL, show_marker, NULL);

	printf("\n2. Disarmed: each site is a 5-byte NOP.\n");
	double off = run(1000000);
	printf("   1,000,000 requests, %.1f ns per request\n", off);

	printf("\n3. Arm \"http_*\" and connect a probe that prints each event:\n");
	mark_probe_register("http_*", NULL, print_probe, NULL);
	printf("   mark_arm(\"http_*\") changed %d sites\n", mark_arm("http_*"));
	run(3);

	printf("\n4. Disarm \"http_debug\" only:\n");
	printf("   mark_disarm(\"http_debug\") changed %d sites\n", mark_disarm("http_debug"));
	run(2);

	printf("\n5. Disarm everything: the probe stays connected but nothing fires.\n");
	printf("   mark_disarm(\"*\") changed %d sites\n", mark_disarm("*"));
	run(3);
	mark_probe_unregister("http_*", print_probe, NULL);
	mark_synchronize();

	printf("\n6. The cost, with a counting probe on http_request and http_response:\n");
	mark_probe_register_fast("http_*", count_probe, NULL);
	double disarmed = run(1000000);
	mark_arm("http_request");
	mark_arm("http_response");
	double armed = run(1000000);
	mark_disarm("*");
	printf("   disarmed %.1f ns/request, armed %.1f ns/request (%lu probe calls)\n", disarmed, armed,
	       counted);
	return 0;
}

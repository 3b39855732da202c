/*
 * Fuzz target for the native trace reader (cli/trace_native.c): the code
 * `mark view/stats/export` run, often as root, on trace files whoever
 * traced the program wrote.
 *
 * The input is one trace directory:
 *
 *     u32 n     bytes of `metadata` that follow (little endian)
 *     n bytes   metadata
 *     u32 m     bytes of `stream-0` that follow (fewer if the input ends)
 *     m bytes   stream-0
 *     the rest  stream-1 (absent if empty)
 *
 * The harness writes those files into a scratch directory, reads it with
 * trace_native_read() and formats every event's arguments as text and as
 * JSON (what view and export do), and checks that the reader returns 0
 * (read), -1 (an error it printed) or TRACE_NATIVE_NOT_MINE (left to
 * libbabeltrace2); anything else aborts.  ASan/UBSan catch every
 * out-of-bounds or undefined access.
 *
 * A libFuzzer-style target (LLVMFuzzerTestOneInput): afl++'s
 * afl-clang-fast -fsanitize=fuzzer links it with afl's persistent-mode
 * driver, clang -fsanitize=fuzzer with libFuzzer.  Seeds are real traces
 * packed by tests/fuzz/run_reader.sh.
 */
#define _GNU_SOURCE
#include "trace_native.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[512];
static struct strbuf text;

static void put(const char *name, const uint8_t *data, size_t len)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	if (!data)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);
		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	close(fd);
}

static uint32_t take_len(const uint8_t **p, size_t *left)
{
	uint32_t v = 0;
	if (*left >= 4) {
		memcpy(&v, *p, 4);
		*p += 4;
		*left -= 4;
	} else {
		*left = 0;
	}
	return v > *left ? (uint32_t)*left : v;
}

static int on_event(const struct trace_event *ev, void *arg)
{
	(void)arg;
	strbuf_reset(&text);
	strbuf_add(&text, ev->name, strlen(ev->name));
	trace_native_payload_append(&text, ev->native, TRACE_VALUE_TEXT);
	trace_native_payload_append(&text, ev->native, TRACE_VALUE_JSON);
	if (ev->procname)
		strbuf_add(&text, ev->procname, strlen(ev->procname));
	return 0;
}

static void on_loss(const struct trace_loss *loss, void *arg)
{
	(void)loss;
	(void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		const char *base = getenv("MARK_FUZZ_SCRATCH");
		snprintf(dir, sizeof(dir), "%s/reader-%d", base && *base ? base : "/tmp", (int)getpid());
		mkdir(base && *base ? base : "/tmp", 0700);
		if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0)
			abort();
	}
	const uint8_t *p = data;
	size_t left = size;
	uint32_t n = take_len(&p, &left);
	put("metadata", p, n);
	p += n;
	left -= n;
	uint32_t m = take_len(&p, &left);
	put("stream-0", m ? p : NULL, m);
	p += m;
	left -= m;
	put("stream-1", left ? p : NULL, left);

	char *paths[1] = { dir };
	struct trace_reader_ops ops = { .native_ok = true, .event = on_event, .discarded = on_loss };
	int rc = trace_native_read(paths, 1, dir, &ops, NULL);
	if (rc != 0 && rc != -1 && rc != TRACE_NATIVE_NOT_MINE) {
		fprintf(stderr, "trace_native_read returned %d\n", rc);
		abort();
	}
	return 0;
}

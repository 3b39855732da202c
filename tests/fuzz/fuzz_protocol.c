/*
 * libFuzzer target for the control protocol (src/agent/protocol.c): the
 * code the agent runs on every byte a client sends.
 *
 * The input is a byte stream cut into chunks of pseudo-random sizes (seeded
 * by the first byte) and fed through the incremental reader exactly as the
 * agent's connection loop does; every complete message is parsed, decoded
 * as a request and read through the accessors.  Invariants checked (abort
 * on violation, which libFuzzer reports as a crash):
 *   - the reader never returns a message longer than the limit;
 *   - a message that parses re-encodes, through the builder, to the very
 *     same bytes (the encoding is canonical), and parses again;
 *   - a decoded request has only non-empty globs and an absolute directory.
 *
 * Built with -DMARK_FUZZ_GEN_SEEDS instead, it is a small program writing a
 * seed corpus of valid messages into the directory given as argument.
 */
#include "agent/protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct mark_proto_msg msg, again;

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "invariant violated: %s\n", what);
		abort();
	}
}

static void exercise(const uint8_t *buf, size_t len)
{
	char err[256];
	check(len >= MARK_PROTO_HEADER_SIZE && len <= MARK_PROTO_HEADER_SIZE + MARK_PROTO_MAX_PAYLOAD,
	      "reader message size within limits");
	if (mark_proto_parse(buf, len, &msg, err, sizeof(err)) != 0) {
		check(err[0] != '\0', "a parse error has a message");
		return;
	}
	/* Re-encode: same bytes. */
	struct mark_proto_buf b;
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, msg.type);
	for (size_t i = 0; i < msg.nfields; i++) {
		const struct mark_proto_field *f = &msg.fields[i];
		/* An 8-byte value re-encodes byte for byte as a u64 whether the
		 * schema calls it a u64 or a 7-character string; any other size is
		 * a string (the parser checked its single trailing NUL). */
		if (f->size == 8)
			mark_proto_add_u64(&b, f->tag, mark_proto_field_u64(f));
		else
			mark_proto_add_str(&b, f->tag, (const char *)f->value);
	}
	mark_proto_end(&b);
	check(!b.failed, "a parsed message re-encodes");
	check(b.len == len && memcmp(b.data, buf, len) == 0, "the encoding is canonical");
	check(mark_proto_parse(b.data, b.len, &again, err, sizeof(err)) == 0, "a re-encoded message parses");
	check(again.nfields == msg.nfields && again.type == msg.type, "same fields after re-encoding");
	mark_proto_buf_free(&b);

	struct mark_request req;
	if (mark_proto_decode_request(&msg, &req, err, sizeof(err)) == 0) {
		check(req.nglobs <= MARK_PROTO_MAX_GLOBS && req.globs[req.nglobs] == NULL, "globs bounded");
		for (size_t i = 0; i < req.nglobs; i++)
			check(req.globs[i][0] != '\0', "globs non-empty");
		check(!req.dir || req.dir[0] == '/', "directory absolute");
		check(req.mode <= MARK_PROTO_MODE_MAX, "mode known");
	}
	for (uint16_t tag = 0; tag <= MARK_TAG_MAX_ + 1; tag++) {
		size_t n = mark_proto_count(&msg, tag);
		for (size_t i = 0; i <= n; i++) {
			uint64_t v;
			const char *s = mark_proto_str(&msg, tag, i);
			if (s)
				check(strlen(s) < MARK_PROTO_MAX_STRING, "string bounded");
			(void)mark_proto_u64(&msg, tag, i, &v);
		}
	}
}

#ifndef MARK_FUZZ_GEN_SEEDS
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	unsigned seed = data[0];
	data++;
	size--;
	struct mark_proto_reader r;
	mark_proto_reader_init(&r);
	size_t off = 0;
	char err[256];
	while (off < size) {
		seed = seed * 1103515245u + 12345u;
		size_t chunk = 1 + (seed >> 16) % 64;
		if (chunk > size - off)
			chunk = size - off;
		size_t used_total = 0;
		while (used_total < chunk) {
			size_t used;
			int fr = mark_proto_reader_feed(&r, data + off + used_total, chunk - used_total, &used, err,
							sizeof(err));
			check(used <= chunk - used_total, "reader consumes at most what it is given");
			used_total += used;
			if (fr < 0) {
				/* The agent sends an error and closes: stop here. */
				mark_proto_reader_free(&r);
				return 0;
			}
			if (fr == 0) {
				check(used_total == chunk, "reader wants more only when the chunk is used up");
				break;
			}
			exercise(r.buf, r.need);
			mark_proto_reader_next(&r);
		}
		off += chunk;
	}
	mark_proto_reader_free(&r);
	return 0;
}
#else
static void write_seed(const char *dir, const char *name, struct mark_proto_buf *b)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputc(7, f);   /* chunking seed */
	fwrite(b->data, 1, b->len, f);
	fclose(f);
	mark_proto_buf_free(b);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	struct mark_proto_buf b;
	static const uint16_t simple[] = { MARK_MSG_INFO, MARK_MSG_TRACE_STOP, MARK_MSG_TRACE_STATS };
	for (size_t i = 0; i < 3; i++) {
		char name[32];
		mark_proto_buf_init(&b);
		mark_proto_begin(&b, simple[i]);
		mark_proto_end(&b);
		snprintf(name, sizeof(name), "simple-%u", simple[i]);
		write_seed(argv[1], name, &b);
	}
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_LIST);
	mark_proto_add_str(&b, MARK_TAG_GLOB, "net_*");
	mark_proto_end(&b);
	mark_proto_begin(&b, MARK_MSG_ARM);
	mark_proto_add_str(&b, MARK_TAG_GLOB, "a*");
	mark_proto_add_str(&b, MARK_TAG_GLOB, "app:b?");
	mark_proto_end(&b);
	write_seed(argv[1], "list-arm", &b);
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_TRACE_START);
	mark_proto_add_str(&b, MARK_TAG_DIR, "/tmp/trace");
	mark_proto_add_u64(&b, MARK_TAG_MODE, 1);
	mark_proto_add_u64(&b, MARK_TAG_BUFSIZE, 65536);
	mark_proto_add_str(&b, MARK_TAG_GLOB, "*");
	mark_proto_end(&b);
	mark_proto_begin(&b, MARK_MSG_SNAPSHOT);
	mark_proto_add_str(&b, MARK_TAG_DIR, "/tmp/snap");
	mark_proto_end(&b);
	write_seed(argv[1], "trace", &b);
	mark_proto_buf_init(&b);
	mark_proto_begin(&b, MARK_MSG_MARKER);
	mark_proto_add_str(&b, MARK_TAG_NAME, "x");
	mark_proto_add_str(&b, MARK_TAG_FORMAT, "%d");
	mark_proto_add_str(&b, MARK_TAG_KIND, "jump");
	mark_proto_add_str(&b, MARK_TAG_LOCATION, "a.c:1");
	mark_proto_add_str(&b, MARK_TAG_OBJECT, "/bin/x");
	mark_proto_add_u64(&b, MARK_TAG_SITES, 1);
	mark_proto_add_u64(&b, MARK_TAG_MORE_SITES, 0);
	mark_proto_add_u64(&b, MARK_TAG_ARMED, 1);
	mark_proto_add_u64(&b, MARK_TAG_PROBES, 0);
	mark_proto_end(&b);
	mark_proto_error(&b, 22, "bad %s", "thing");
	write_seed(argv[1], "replies", &b);
	return 0;
}
#endif

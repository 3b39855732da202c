/*
 * The control protocol: parsing, validation and building of messages.
 *
 * Everything here treats its input as hostile: lengths are checked before
 * every read, nothing is trusted to be NUL-terminated until checked, and
 * every allocation is bounded by MARK_PROTO_MAX_PAYLOAD.  The functions keep
 * no global state and take no locks, so they are safe on any thread and in
 * the fuzz harness (tests/fuzz/fuzz_protocol.c), which drives this file on
 * its own.
 */
#define _GNU_SOURCE
#include "protocol.h"
#include "filter/filter.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hidden inside libmark: the protocol is not part of libmark's ABI. */
#pragma GCC visibility push(hidden)

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int fail(int e, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(int e, char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -e;
}

/* ---------------- schema ---------------- */

enum value_kind { V_U64 = 1, V_STR = 2 };

struct schema_row {
	uint16_t type;
	uint16_t tag;
	uint8_t kind;
	uint16_t min, max;
};

static const struct schema_row schema[] = {
	/* requests */
	{ MARK_MSG_LIST, MARK_TAG_GLOB, V_STR, 0, 1 },
	{ MARK_MSG_ARM, MARK_TAG_GLOB, V_STR, 1, MARK_PROTO_MAX_GLOBS },
	/* ARM FILTER: `mark enable PID GLOB --filter EXPR` replaces the session's filter */
	{ MARK_MSG_ARM, MARK_TAG_FILTER, V_STR, 0, 1 },
	{ MARK_MSG_DISARM, MARK_TAG_GLOB, V_STR, 1, MARK_PROTO_MAX_GLOBS },
	{ MARK_MSG_TRACE_START, MARK_TAG_DIR, V_STR, 1, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_MODE, V_U64, 1, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_BUFSIZE, V_U64, 0, 1 },
	/* chunks; the tracer checks the values (mark_tracer_start) */
	{ MARK_MSG_TRACE_START, MARK_TAG_MAX_SIZE, V_U64, 0, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_ROTATE_SIZE, V_U64, 0, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_ROTATE_MS, V_U64, 0, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_DETACH, V_U64, 0, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_FILTER, V_STR, 0, 1 },
	/* snapshot triggers; the tracer parses and checks them */
	{ MARK_MSG_TRACE_START, MARK_TAG_SNAPSHOT_ON, V_STR, 0, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_MAX_SNAPSHOTS, V_U64, 0, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_SNAPSHOT_INTERVAL_MS, V_U64, 0, 1 },
	{ MARK_MSG_TRACE_START, MARK_TAG_GLOB, V_STR, 1, MARK_PROTO_MAX_GLOBS },
	/* TRACE_STOP DIR: stop a session no controller owns if it writes into DIR (`mark record -d`) */
	{ MARK_MSG_TRACE_STOP, MARK_TAG_DIR, V_STR, 0, 1 },
	{ MARK_MSG_SNAPSHOT, MARK_TAG_DIR, V_STR, 1, 1 },
	{ MARK_MSG_SNAPSHOT, MARK_TAG_FORCE, V_U64, 0, 1 },
	/* replies */
	{ MARK_MSG_OK, MARK_TAG_GLOB, V_STR, 0, MARK_PROTO_MAX_GLOBS },
	{ MARK_MSG_OK, MARK_TAG_MATCHED, V_U64, 0, MARK_PROTO_MAX_GLOBS },
	{ MARK_MSG_OK, MARK_TAG_CHANGED, V_U64, 0, MARK_PROTO_MAX_GLOBS },
	{ MARK_MSG_OK, MARK_TAG_DIR, V_STR, 0, 1 },
	{ MARK_MSG_OK, MARK_TAG_MESSAGE, V_STR, 0, 1 },
	{ MARK_MSG_ERROR, MARK_TAG_ERRNO, V_U64, 1, 1 },
	{ MARK_MSG_ERROR, MARK_TAG_MESSAGE, V_STR, 1, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_PID, V_U64, 1, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_CMDLINE, V_STR, 1, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_MARKERS, V_U64, 1, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_SITES, V_U64, 1, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_ARMED, V_U64, 1, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_TRACING, V_U64, 1, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_OWNER_PID, V_U64, 0, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_DIR, V_STR, 0, 1 },
	{ MARK_MSG_INFO_REPLY, MARK_TAG_MODE, V_U64, 0, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_NAME, V_STR, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_FORMAT, V_STR, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_KIND, V_STR, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_LOCATION, V_STR, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_OBJECT, V_STR, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_SITES, V_U64, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_MORE_SITES, V_U64, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_ARMED, V_U64, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_PROBES, V_U64, 1, 1 },
	{ MARK_MSG_MARKER, MARK_TAG_HITS, V_U64, 0, 1 },
	{ MARK_MSG_LIST_END, MARK_TAG_MARKERS, V_U64, 1, 1 },
	{ MARK_MSG_STATS, MARK_TAG_EVENTS, V_U64, 1, 1 },
	{ MARK_MSG_STATS, MARK_TAG_LOST, V_U64, 1, 1 },
	{ MARK_MSG_STATS, MARK_TAG_BYTES, V_U64, 1, 1 },
	{ MARK_MSG_STATS, MARK_TAG_ACTIVE, V_U64, 1, 1 },
};

static bool type_known(uint16_t type)
{
	return (type >= MARK_MSG_INFO && type <= MARK_MSG_SNAPSHOT) ||
	       (type >= MARK_MSG_OK && type <= MARK_MSG_STATS);
}

const char *mark_proto_type_name(uint16_t type)
{
	switch (type) {
	case MARK_MSG_INFO: return "INFO";
	case MARK_MSG_LIST: return "LIST";
	case MARK_MSG_ARM: return "ARM";
	case MARK_MSG_DISARM: return "DISARM";
	case MARK_MSG_TRACE_START: return "TRACE_START";
	case MARK_MSG_TRACE_STOP: return "TRACE_STOP";
	case MARK_MSG_TRACE_STATS: return "TRACE_STATS";
	case MARK_MSG_SNAPSHOT: return "SNAPSHOT";
	case MARK_MSG_OK: return "OK";
	case MARK_MSG_ERROR: return "ERROR";
	case MARK_MSG_INFO_REPLY: return "INFO_REPLY";
	case MARK_MSG_MARKER: return "MARKER";
	case MARK_MSG_LIST_END: return "LIST_END";
	case MARK_MSG_STATS: return "STATS";
	}
	return "unknown";
}

/* ---------------- parsing ---------------- */

int mark_proto_header_parse(const uint8_t *buf, size_t len, struct mark_proto_header *h,
			    char *err, size_t errlen)
{
	if (len < MARK_PROTO_HEADER_SIZE)
		return fail(EPROTO, err, errlen, "truncated header: %zu of %d bytes", len,
			    MARK_PROTO_HEADER_SIZE);
	if (get32(buf) != MARK_PROTO_MAGIC)
		return fail(EPROTO, err, errlen, "not a mark control message (bad magic 0x%08x)", get32(buf));
	h->version = get16(buf + 4);
	h->type = get16(buf + 6);
	h->length = get32(buf + 8);
	if (h->version != MARK_PROTO_VERSION)
		return fail(EPROTONOSUPPORT, err, errlen,
			    "protocol version %u is not supported; this side speaks version %d "
			    "(use a `mark` command from the same mark release as the program's libmark)",
			    h->version, MARK_PROTO_VERSION);
	if (h->length > MARK_PROTO_MAX_PAYLOAD)
		return fail(EMSGSIZE, err, errlen, "message of %u bytes exceeds the limit of %u bytes",
			    h->length, MARK_PROTO_MAX_PAYLOAD);
	return 0;
}

int mark_proto_parse(const uint8_t *buf, size_t len, struct mark_proto_msg *msg, char *err, size_t errlen)
{
	struct mark_proto_header h;
	int r = mark_proto_header_parse(buf, len, &h, err, errlen);
	if (r)
		return r;
	if (len != (size_t)MARK_PROTO_HEADER_SIZE + h.length)
		return fail(EPROTO, err, errlen, "message length mismatch: header says %u payload bytes, got %zu",
			    h.length, len - MARK_PROTO_HEADER_SIZE);
	if (!type_known(h.type))
		return fail(EBADMSG, err, errlen, "unknown message type %u", h.type);
	msg->type = h.type;
	msg->nfields = 0;

	const uint8_t *p = buf + MARK_PROTO_HEADER_SIZE;
	size_t left = h.length;
	uint16_t seen[MARK_TAG_MAX_ + 1] = { 0 };
	while (left > 0) {
		if (left < MARK_PROTO_FIELD_HEADER_SIZE)
			return fail(EPROTO, err, errlen, "%s: truncated field header (%zu bytes left)",
				    mark_proto_type_name(h.type), left);
		uint16_t tag = get16(p);
		uint32_t size = get32(p + 2);
		p += MARK_PROTO_FIELD_HEADER_SIZE;
		left -= MARK_PROTO_FIELD_HEADER_SIZE;
		if (size > left)
			return fail(EPROTO, err, errlen, "%s: field %u claims %u bytes, only %zu remain",
				    mark_proto_type_name(h.type), tag, size, left);
		const struct schema_row *row = NULL;
		for (size_t i = 0; i < sizeof(schema) / sizeof(schema[0]); i++)
			if (schema[i].type == h.type && schema[i].tag == tag)
				row = &schema[i];
		if (!row)
			return fail(EPROTO, err, errlen, "%s: unexpected field %u", mark_proto_type_name(h.type), tag);
		if (row->kind == V_U64 && size != 8)
			return fail(EPROTO, err, errlen, "%s: field %u must be 8 bytes, is %u",
				    mark_proto_type_name(h.type), tag, size);
		if (row->kind == V_STR) {
			if (size == 0 || size > MARK_PROTO_MAX_STRING)
				return fail(EPROTO, err, errlen, "%s: string field %u has bad size %u (1..%d)",
					    mark_proto_type_name(h.type), tag, size, MARK_PROTO_MAX_STRING);
			if (p[size - 1] != 0 || memchr(p, 0, size - 1) != NULL)
				return fail(EPROTO, err, errlen, "%s: string field %u is not one NUL-terminated string",
					    mark_proto_type_name(h.type), tag);
		}
		if (++seen[tag] > row->max)
			return fail(EPROTO, err, errlen, "%s: field %u occurs more than %u times",
				    mark_proto_type_name(h.type), tag, row->max);
		if (msg->nfields == MARK_PROTO_MAX_FIELDS)
			return fail(EPROTO, err, errlen, "%s: more than %d fields", mark_proto_type_name(h.type),
				    MARK_PROTO_MAX_FIELDS);
		msg->fields[msg->nfields].tag = tag;
		msg->fields[msg->nfields].size = size;
		msg->fields[msg->nfields].value = p;
		msg->nfields++;
		p += size;
		left -= size;
	}
	for (size_t i = 0; i < sizeof(schema) / sizeof(schema[0]); i++)
		if (schema[i].type == h.type && seen[schema[i].tag] < schema[i].min)
			return fail(EPROTO, err, errlen, "%s: required field %u is missing",
				    mark_proto_type_name(h.type), schema[i].tag);
	return 0;
}

size_t mark_proto_count(const struct mark_proto_msg *msg, uint16_t tag)
{
	size_t n = 0;
	for (size_t i = 0; i < msg->nfields; i++)
		n += msg->fields[i].tag == tag;
	return n;
}

static const struct mark_proto_field *find(const struct mark_proto_msg *msg, uint16_t tag, size_t idx)
{
	for (size_t i = 0; i < msg->nfields; i++)
		if (msg->fields[i].tag == tag && idx-- == 0)
			return &msg->fields[i];
	return NULL;
}

/* The parser checked the kind of every field against the schema. */
const char *mark_proto_str(const struct mark_proto_msg *msg, uint16_t tag, size_t idx)
{
	const struct mark_proto_field *f = find(msg, tag, idx);
	return f && f->size >= 1 && f->value[f->size - 1] == 0 ? (const char *)f->value : NULL;
}

bool mark_proto_u64(const struct mark_proto_msg *msg, uint16_t tag, size_t idx, uint64_t *value)
{
	const struct mark_proto_field *f = find(msg, tag, idx);
	if (!f || f->size != 8)
		return false;
	*value = get64(f->value);
	return true;
}

uint64_t mark_proto_field_u64(const struct mark_proto_field *f)
{
	return f->size == 8 ? get64(f->value) : 0;
}

/* ---------------- incremental reader ---------------- */

void mark_proto_reader_init(struct mark_proto_reader *r)
{
	memset(r, 0, sizeof(*r));
	r->need = MARK_PROTO_HEADER_SIZE;
}

void mark_proto_reader_free(struct mark_proto_reader *r)
{
	free(r->buf);
	mark_proto_reader_init(r);
}

int mark_proto_reader_feed(struct mark_proto_reader *r, const uint8_t *data, size_t len,
			   size_t *consumed, char *err, size_t errlen)
{
	*consumed = 0;
	for (;;) {
		if (r->have == r->need && r->need > MARK_PROTO_HEADER_SIZE)
			return 1;
		if (r->cap < r->need) {
			/* need <= 12 + MARK_PROTO_MAX_PAYLOAD: the header was checked. */
			uint8_t *n = realloc(r->buf, r->need);
			if (!n)
				return fail(ENOMEM, err, errlen, "out of memory for a %zu-byte message", r->need);
			r->buf = n;
			r->cap = r->need;
		}
		size_t take = r->need - r->have;
		if (take > len - *consumed)
			take = len - *consumed;
		if (take)
			memcpy(r->buf + r->have, data + *consumed, take);
		r->have += take;
		*consumed += take;
		if (r->have < r->need)
			return 0;
		if (r->need == MARK_PROTO_HEADER_SIZE) {
			struct mark_proto_header h;
			int e = mark_proto_header_parse(r->buf, r->have, &h, err, errlen);
			if (e)
				return e;
			r->need = MARK_PROTO_HEADER_SIZE + (size_t)h.length;
			if (h.length == 0)
				return 1;
		}
	}
}

void mark_proto_reader_next(struct mark_proto_reader *r)
{
	r->have = 0;
	r->need = MARK_PROTO_HEADER_SIZE;
	/* Give back a large buffer: an idle connection should hold little. */
	if (r->cap > 64 * 1024) {
		free(r->buf);
		r->buf = NULL;
		r->cap = 0;
	}
}

/* ---------------- builder ---------------- */

void mark_proto_buf_init(struct mark_proto_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void mark_proto_buf_free(struct mark_proto_buf *b)
{
	free(b->data);
	mark_proto_buf_init(b);
}

static uint8_t *reserve(struct mark_proto_buf *b, size_t n)
{
	if (b->failed)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d) {
			b->failed = -ENOMEM;
			return NULL;
		}
		b->data = d;
		b->cap = cap;
	}
	uint8_t *p = b->data + b->len;
	b->len += n;
	return p;
}

void mark_proto_begin(struct mark_proto_buf *b, uint16_t type)
{
	b->msg_start = b->len;
	uint8_t *p = reserve(b, MARK_PROTO_HEADER_SIZE);
	if (!p)
		return;
	put32(p, MARK_PROTO_MAGIC);
	put16(p + 4, MARK_PROTO_VERSION);
	put16(p + 6, type);
	put32(p + 8, 0);
}

void mark_proto_add_str(struct mark_proto_buf *b, uint16_t tag, const char *s)
{
	size_t n = strlen(s) + 1;
	if (n > MARK_PROTO_MAX_STRING) {
		b->failed = -ENAMETOOLONG;
		return;
	}
	uint8_t *p = reserve(b, MARK_PROTO_FIELD_HEADER_SIZE + n);
	if (!p)
		return;
	put16(p, tag);
	put32(p + 2, (uint32_t)n);
	memcpy(p + MARK_PROTO_FIELD_HEADER_SIZE, s, n);
}

void mark_proto_add_u64(struct mark_proto_buf *b, uint16_t tag, uint64_t v)
{
	uint8_t *p = reserve(b, MARK_PROTO_FIELD_HEADER_SIZE + 8);
	if (!p)
		return;
	put16(p, tag);
	put32(p + 2, 8);
	put64(p + MARK_PROTO_FIELD_HEADER_SIZE, v);
}

void mark_proto_end(struct mark_proto_buf *b)
{
	if (b->failed)
		return;
	size_t payload = b->len - b->msg_start - MARK_PROTO_HEADER_SIZE;
	if (payload > MARK_PROTO_MAX_PAYLOAD) {
		b->failed = -EMSGSIZE;
		return;
	}
	put32(b->data + b->msg_start + 8, (uint32_t)payload);
}

/* Cut a message to fit a string field: whole UTF-8 characters are not
 * guaranteed, but the result is always one valid NUL-terminated string. */
void mark_proto_error(struct mark_proto_buf *b, int e, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	mark_proto_begin(b, MARK_MSG_ERROR);
	mark_proto_add_u64(b, MARK_TAG_ERRNO, (uint64_t)(e < 0 ? -e : e));
	mark_proto_add_str(b, MARK_TAG_MESSAGE, text);
	mark_proto_end(b);
}

/* ---------------- requests ---------------- */

int mark_proto_decode_request(const struct mark_proto_msg *msg, struct mark_request *req,
			      char *err, size_t errlen)
{
	memset(req, 0, sizeof(*req));
	req->type = msg->type;
	if (msg->type < MARK_MSG_INFO || msg->type > MARK_MSG_SNAPSHOT)
		return fail(EBADMSG, err, errlen, "%s (type %u) is not a request",
			    mark_proto_type_name(msg->type), msg->type);
	/* The schema bounded GLOB to MARK_PROTO_MAX_GLOBS occurrences. */
	for (size_t i = 0; i < msg->nfields; i++) {
		const struct mark_proto_field *f = &msg->fields[i];
		const char *s = (const char *)f->value;
		switch (f->tag) {
		case MARK_TAG_GLOB:
			if (s[0] == '\0')
				return fail(EINVAL, err, errlen, "%s: empty glob", mark_proto_type_name(msg->type));
			if (req->nglobs == MARK_PROTO_MAX_GLOBS)
				return fail(EINVAL, err, errlen, "%s: more than %d globs",
					    mark_proto_type_name(msg->type), MARK_PROTO_MAX_GLOBS);
			req->globs[req->nglobs++] = s;
			break;
		case MARK_TAG_DIR:
			if (s[0] != '/')
				return fail(EINVAL, err, errlen, "%s: directory \"%s\" is not an absolute path",
					    mark_proto_type_name(msg->type), s);
			req->dir = s;
			break;
		case MARK_TAG_MODE:
			req->mode = mark_proto_field_u64(f);
			if (req->mode > MARK_PROTO_MODE_MAX)
				return fail(EINVAL, err, errlen, "%s: unknown trace mode %llu",
					    mark_proto_type_name(msg->type), (unsigned long long)req->mode);
			break;
		case MARK_TAG_BUFSIZE:
			req->bufsize = mark_proto_field_u64(f);
			if (req->bufsize > (1ull << 32))
				return fail(EINVAL, err, errlen, "%s: buffer size %llu is larger than 4 GiB",
					    mark_proto_type_name(msg->type), (unsigned long long)req->bufsize);
			break;
		case MARK_TAG_MAX_SIZE: req->max_size = mark_proto_field_u64(f); break;
		case MARK_TAG_ROTATE_SIZE: req->rotate_size = mark_proto_field_u64(f); break;
		case MARK_TAG_ROTATE_MS: req->rotate_ms = mark_proto_field_u64(f); break;
		case MARK_TAG_DETACH:
			if (mark_proto_field_u64(f) > 1)
				return fail(EINVAL, err, errlen, "%s: detach must be 0 or 1",
					    mark_proto_type_name(msg->type));
			req->detach = mark_proto_field_u64(f) == 1;
			break;
		case MARK_TAG_FILTER:
			/* Bounded here; parsed (and refused with its column) by the
			 * tracer, which owns the language. */
			if (strlen(s) > MARK_FILTER_MAX_TEXT)
				return fail(EINVAL, err, errlen, "%s: filter longer than %d bytes",
					    mark_proto_type_name(msg->type), MARK_FILTER_MAX_TEXT);
			req->filter = s;
			break;
		case MARK_TAG_SNAPSHOT_ON:
			if (strlen(s) > MARK_FILTER_MAX_TEXT)
				return fail(EINVAL, err, errlen, "%s: snapshot trigger longer than %d bytes",
					    mark_proto_type_name(msg->type), MARK_FILTER_MAX_TEXT);
			req->snapshot_on = s;
			break;
		case MARK_TAG_MAX_SNAPSHOTS: req->max_snapshots = mark_proto_field_u64(f); break;
		case MARK_TAG_SNAPSHOT_INTERVAL_MS: req->snapshot_interval_ms = mark_proto_field_u64(f); break;
		case MARK_TAG_FORCE:
			if (mark_proto_field_u64(f) > 1)
				return fail(EINVAL, err, errlen, "%s: force must be 0 or 1",
					    mark_proto_type_name(msg->type));
			req->force = mark_proto_field_u64(f) == 1;
			break;
		default:
			return fail(EPROTO, err, errlen, "%s: unexpected field %u", mark_proto_type_name(msg->type),
				    f->tag);
		}
	}
	req->globs[req->nglobs] = NULL;
	return 0;
}

#pragma GCC visibility pop

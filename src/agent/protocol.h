/*
 * The control protocol between the `mark` command and the agent inside an
 * instrumented process.  Not installed; compiled into libmark (agent side)
 * and used by the CLI (client side).  This module has no dependency on the
 * rest of libmark, so the fuzz harness (tests/fuzz/) builds it alone.
 *
 * Wire format (all integers little endian):
 *
 *   message = header payload
 *   header  = magic:u32 ("MARK")  version:u16  type:u16  length:u32
 *   payload = field*              (exactly `length` bytes)
 *   field   = tag:u16  size:u32  value[size]
 *
 * A value is either a u64 (size 8) or a string (size >= 1, the last byte is
 * NUL and no other byte is).  Which tags a message type accepts, their value
 * type and how often each may occur is fixed by a schema (protocol.c);
 * anything else is rejected.  A connection carries requests from the client
 * and, for each request, one reply (LIST: MARKER* LIST_END).
 *
 * Limits: a payload is at most MARK_PROTO_MAX_PAYLOAD bytes and has at most
 * MARK_PROTO_MAX_FIELDS fields.  The version is checked on every message: a
 * peer speaking another version gets an ERROR naming the version spoken here.
 */
#ifndef MARK_AGENT_PROTOCOL_H
#define MARK_AGENT_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MARK_PROTO_MAGIC 0x4b52414du        /* bytes 'M' 'A' 'R' 'K' */
#define MARK_PROTO_VERSION 1
#define MARK_PROTO_HEADER_SIZE 12
#define MARK_PROTO_FIELD_HEADER_SIZE 6
#define MARK_PROTO_MAX_PAYLOAD (256u * 1024u)
#define MARK_PROTO_MAX_FIELDS 256
#define MARK_PROTO_MAX_GLOBS 64             /* per ARM/DISARM/TRACE_START    */
#define MARK_PROTO_MAX_STRING 4096          /* bytes, including the NUL      */
#define MARK_PROTO_MODE_MAX 2               /* discard, overwrite, block     */

enum mark_proto_type {
	/* requests */
	MARK_MSG_INFO = 1,          /* -> INFO_REPLY (PID CMDLINE MARKERS SITES ARMED
				       TRACING [OWNER_PID] [DIR MODE]): DIR MODE for a
				       controller's, a detached or a MARK_TRACE
				       recording (not one the API started)      */
	MARK_MSG_LIST = 2,          /* [GLOB] -> MARKER* LIST_END                  */
	MARK_MSG_ARM = 3,           /* GLOB+ [FILTER] -> OK (GLOB MATCHED CHANGED)+ */
	MARK_MSG_DISARM = 4,        /* GLOB+ -> OK (GLOB MATCHED CHANGED)+         */
	MARK_MSG_TRACE_START = 5,   /* DIR MODE [BUFSIZE] [MAX_SIZE] [ROTATE_*] [DETACH]
				       [FILTER] GLOB+ -> OK                      */
	MARK_MSG_TRACE_STOP = 6,    /* [DIR] -> STATS                              */
	MARK_MSG_TRACE_STATS = 7,   /* -> STATS                                    */
	MARK_MSG_SNAPSHOT = 8,      /* DIR -> OK                                   */
	/* replies */
	MARK_MSG_OK = 64,
	MARK_MSG_ERROR = 65,        /* ERRNO MESSAGE                               */
	MARK_MSG_INFO_REPLY = 66,
	MARK_MSG_MARKER = 67,
	MARK_MSG_LIST_END = 68,     /* MARKERS                                     */
	MARK_MSG_STATS = 69,
};

enum mark_proto_tag {
	MARK_TAG_GLOB = 1,          /* str */
	MARK_TAG_DIR = 2,           /* str: absolute path */
	MARK_TAG_MODE = 3,          /* u64: enum mark_trace_mode */
	MARK_TAG_BUFSIZE = 4,       /* u64: bytes per buffer, 0 = default */
	MARK_TAG_MESSAGE = 5,       /* str */
	MARK_TAG_ERRNO = 6,         /* u64: positive errno */
	MARK_TAG_PID = 7,           /* u64 */
	MARK_TAG_CMDLINE = 8,       /* str */
	MARK_TAG_MARKERS = 9,       /* u64: marker count */
	MARK_TAG_SITES = 10,        /* u64: site count */
	MARK_TAG_ARMED = 11,        /* u64: armed sites */
	MARK_TAG_TRACING = 12,      /* u64: enum mark_proto_tracing */
	MARK_TAG_OWNER_PID = 13,    /* u64: pid of the controller owning the session */
	MARK_TAG_NAME = 14,         /* str */
	MARK_TAG_FORMAT = 15,       /* str */
	MARK_TAG_KIND = 16,         /* str: "jump", "generic", "jump,immediate", ... */
	MARK_TAG_LOCATION = 17,     /* str: "file:line" of the first site */
	MARK_TAG_PROBES = 18,       /* u64 */
	MARK_TAG_HITS = 19,         /* u64: only when known */
	MARK_TAG_MATCHED = 20,      /* u64: markers matched by the GLOB before it */
	MARK_TAG_CHANGED = 21,      /* u64: sites changed by the GLOB before it */
	MARK_TAG_EVENTS = 22,       /* u64 */
	MARK_TAG_LOST = 23,         /* u64 */
	MARK_TAG_BYTES = 24,        /* u64 */
	MARK_TAG_ACTIVE = 25,       /* u64: 0/1 */
	/* 26: reserved */
	MARK_TAG_OBJECT = 27,       /* str: executable or library of the first site */
	MARK_TAG_MORE_SITES = 28,   /* u64: sites beyond the first */
	MARK_TAG_FORCE = 29,        /* u64: 1 = snapshot into a non-empty directory (replace mark's files) */
	MARK_TAG_MAX_SIZE = 30,     /* u64: TRACE_START: bytes, 0 = no limit (chunks, docs/tracer.md) */
	MARK_TAG_ROTATE_SIZE = 31,  /* u64: TRACE_START: cut a chunk after these many bytes */
	MARK_TAG_ROTATE_MS = 32,    /* u64: TRACE_START: cut a chunk after these many ms */
	MARK_TAG_DETACH = 33,       /* u64: TRACE_START: 1 = no controller owns the recording */
	MARK_TAG_FILTER = 34,       /* str: --filter expression (src/filter), at most MARK_FILTER_MAX_TEXT bytes */
	MARK_TAG_SNAPSHOT_ON = 35,  /* str: TRACE_START: --snapshot-on "GLOB[ if EXPR]", at most MARK_FILTER_MAX_TEXT bytes */
	MARK_TAG_MAX_SNAPSHOTS = 36, /* u64: TRACE_START: --max-snapshots, 0 = the default */
	MARK_TAG_SNAPSHOT_INTERVAL_MS = 37, /* u64: TRACE_START: --snapshot-interval in ms */
	MARK_TAG_MAX_ = 37,
};

/* The tracing state reported by INFO. */
enum mark_proto_tracing {
	MARK_TRACING_OFF = 0,
	MARK_TRACING_CONTROLLER = 1, /* started by a `mark record --pid` (OWNER_PID) */
	MARK_TRACING_OTHER = 2,      /* started otherwise (MARK_TRACE=..., the API)  */
	MARK_TRACING_DETACHED = 3,   /* `mark record --pid --detach`: no controller (DIR, MODE) */
};

struct mark_proto_header {
	uint16_t version;
	uint16_t type;
	uint32_t length;
};

struct mark_proto_field {
	uint16_t tag;
	uint32_t size;
	const uint8_t *value;   /* points into the parsed buffer */
};

/* A parsed message.  Fields point into the buffer given to the parser. */
struct mark_proto_msg {
	uint16_t type;
	size_t nfields;
	struct mark_proto_field fields[MARK_PROTO_MAX_FIELDS];
};

/*
 * Check the first MARK_PROTO_HEADER_SIZE bytes.  0 on success; -EPROTO (bad
 * magic), -EPROTONOSUPPORT (other version), -EMSGSIZE (payload too big).
 * `err` receives a one-line explanation.
 */
int mark_proto_header_parse(const uint8_t *buf, size_t len, struct mark_proto_header *h,
			    char *err, size_t errlen);

/*
 * Parse one complete message (header + payload, len == 12 + length) and
 * check it against the schema of its type.  0 or -errno (-EPROTO malformed,
 * -EBADMSG unknown type) with `err` set.
 */
int mark_proto_parse(const uint8_t *buf, size_t len, struct mark_proto_msg *msg, char *err, size_t errlen);

/* Accessors on a parsed message.  idx counts occurrences of the tag. */
size_t mark_proto_count(const struct mark_proto_msg *msg, uint16_t tag);
const char *mark_proto_str(const struct mark_proto_msg *msg, uint16_t tag, size_t idx);
bool mark_proto_u64(const struct mark_proto_msg *msg, uint16_t tag, size_t idx, uint64_t *value);
/* The value of a u64 field (ordered groups are read by walking msg->fields). */
uint64_t mark_proto_field_u64(const struct mark_proto_field *f);

const char *mark_proto_type_name(uint16_t type);

/*
 * Incremental reader: reassembles messages from a byte stream of any
 * chunking.  The header is checked as soon as it is complete, so an
 * oversized message is refused before its payload is read.
 */
struct mark_proto_reader {
	uint8_t *buf;          /* header + payload of the message being read */
	size_t have;           /* bytes received of it                        */
	size_t need;           /* 12 until the header is known, then 12+length */
	size_t cap;
};

void mark_proto_reader_init(struct mark_proto_reader *r);
void mark_proto_reader_free(struct mark_proto_reader *r);
/*
 * Consume up to `len` bytes (sets *consumed).  Returns 1 when a whole
 * message is in r->buf[0..r->need) (call mark_proto_reader_next() after
 * handling it), 0 when more bytes are needed, or -errno on a bad header.
 */
int mark_proto_reader_feed(struct mark_proto_reader *r, const uint8_t *data, size_t len,
			   size_t *consumed, char *err, size_t errlen);
void mark_proto_reader_next(struct mark_proto_reader *r);
/* Bytes of a message started but not finished. */
static inline bool mark_proto_reader_partial(const struct mark_proto_reader *r)
{
	return r->have > 0;
}

/*
 * Builder: appends messages to a growing buffer.  Errors (out of memory, a
 * message over the limit, a string over MARK_PROTO_MAX_STRING) are sticky
 * in `failed`; check it once at the end.
 */
struct mark_proto_buf {
	uint8_t *data;
	size_t len, cap;
	size_t msg_start;      /* offset of the message being built */
	int failed;            /* 0 or -errno */
};

void mark_proto_buf_init(struct mark_proto_buf *b);
void mark_proto_buf_free(struct mark_proto_buf *b);
void mark_proto_begin(struct mark_proto_buf *b, uint16_t type);
void mark_proto_add_str(struct mark_proto_buf *b, uint16_t tag, const char *s);
void mark_proto_add_u64(struct mark_proto_buf *b, uint16_t tag, uint64_t v);
void mark_proto_end(struct mark_proto_buf *b);
/* A whole ERROR message. */
void mark_proto_error(struct mark_proto_buf *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A decoded request: what the agent acts on.  Strings point into the
 * message buffer.
 */
struct mark_request {
	uint16_t type;
	const char *globs[MARK_PROTO_MAX_GLOBS + 1];   /* NULL-terminated */
	size_t nglobs;
	const char *dir;
	uint64_t mode;
	uint64_t bufsize;
	bool force;                 /* SNAPSHOT: MARK_TAG_FORCE was 1 */
	uint64_t max_size, rotate_size, rotate_ms;   /* TRACE_START chunks; 0 = off */
	bool detach;                /* TRACE_START: MARK_TAG_DETACH was 1 */
	const char *filter;         /* ARM, TRACE_START: MARK_TAG_FILTER, or NULL */
	const char *snapshot_on;    /* TRACE_START: MARK_TAG_SNAPSHOT_ON, or NULL */
	uint64_t max_snapshots, snapshot_interval_ms;   /* TRACE_START; 0 = default / none */
};

/*
 * Turn a parsed request into a struct mark_request, checking the values
 * (non-empty globs, absolute directory, known mode).  0 or -errno with `err`.
 */
int mark_proto_decode_request(const struct mark_proto_msg *msg, struct mark_request *req,
			      char *err, size_t errlen);

#endif

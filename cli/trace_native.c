/*
 * The native reader of mark's own traces (see trace_native.h).
 *
 * Why: libbabeltrace2 decodes a record field by field through generic
 * field objects, about 1 M events/s; mark knows the exact layout it wrote
 * (src/tracer/metadata.c, src/tracer/trace_format.h), so this reader
 * checks that the metadata is exactly that layout, compiles one small
 * field list per event id, and walks the stream files packet by packet.
 *
 * What it reproduces of the libbabeltrace2 path (trace_reader.c), so that
 * the commands print the same bytes:
 *   - src.ctf.fs: every regular file of a trace directory except `metadata`
 *     and dot files is a stream file, empty files are skipped; a packet's
 *     events are decoded while the position is below content_size; the
 *     next packet starts packet_size bits after this one.
 *   - discarded events: before a packet whose events_discarded differs from
 *     the previous packet's, the difference; before a stream's first
 *     packet when it is not 0, a report without count.  trace_reader.c
 *     reports a loss when the stream's next packet begins, so here the
 *     loss is reported with the packet's beginning.
 *   - clock: ns from origin computed as bt_clock_snapshot_get_ns_from_origin
 *     does (offset normalised to offset cycles < freq, then
 *     offset_s * 1e9 + ns(offset) + ns(value), ns(v) = (uint64)(1e9 * v / freq)
 *     in double unless freq is 1 GHz).
 *   - flt.utils.muxer: messages in time order across all streams (packet
 *     beginnings at timestamp_begin, events at their timestamp); equal
 *     times by trace, then stream id.
 *
 * Memory: the packets that messages not yet delivered point into (see
 * packet_buffer: a bound whatever the trace's length), a packet per
 * stream (packets are at most the tracer's buffer size; a packet claiming
 * more than the file holds is an error), the compiled metadata, and
 * nothing per event.  Stream files are read with pread, not mapped: a file
 * truncated under us (or by someone hostile) is a short read and an
 * error, never SIGBUS.
 *
 * Everything in the trace is untrusted: every size and offset is checked
 * against what was read, and each error names the file and offset.
 *
 * Threads: trace_native_read() reads and merges on a thread of its own
 * while the caller's thread runs the callbacks (see "Two threads" below);
 * --follow, and MARK_READER_THREADS=1, use the calling thread alone.
 */
#define _GNU_SOURCE
#include "trace_native.h"
#include "filter/filter.h"

#include "text.h"
#include "tracer/trace_format.h"
#include "util/printable.h"
#include "util/uuid_text.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FIELDS 64                /* more than MARK_MAX_MARKER_ARGS           */
#define METADATA_MAX (64u << 20)     /* a larger `metadata` is not mark's         */
#define NAME_MAX_LEN 256

enum tn_kind { TN_SINT, TN_UINT, TN_REAL, TN_CHAR, TN_STRING };

/* The tags of a %s as src/tracer/metadata.c writes them. */
#define STRING_TAGS "{ empty = 0, text = 1 ... 253, null = 254, truncated = 255 } "
_Static_assert(MARK_TF_STRING_TEXT_MAX == 253 && MARK_TF_STRING_NULL == 254 && MARK_TF_STRING_CUT == 255,
	       "STRING_TAGS is the text metadata.c writes");

struct tn_field {
	char *name;
	size_t name_len;             /* strlen(name): appended once per event     */
	char *text_key;              /* " name=" (mark view's text; NULL: no memory) */
	uint8_t kind;                /* enum tn_kind                             */
	uint8_t bytes;               /* integers: 1, 2, 4 or 8                   */
	uint8_t base;                /* integers: 8, 10 or 16                    */
	bool tagged;                 /* a %s whose byte before it tags NULL and cut
					strings (trace_format.h, MARK_TF_STRING_*);
					false: an older mark's, a length only      */
};

struct tn_class {
	char *name;
	unsigned nfields;
	bool has_string;
	uint32_t fixed_end;          /* without strings: the event's end, from its start */
	struct tn_field fields[];
};

/* struct mark_tf_packet up to thread_name; the first event starts at the
 * next 8-byte boundary (104), and a packet without events may end at 100.
 * Traces of earlier tracers have no thread_name: up to tid, 84 (and 88). */
#define PKT_HEADER 100
#define PKT_HEADER_OLD 84

struct tn_trace {
	char *path;
	size_t index;                /* order of the directory in the listing    */
	char *procname;              /* NULL if the env has none                 */
	char *hostname;              /* babeltrace2's trace name; NULL if none   */
	int64_t vpid;                /* -1 if none                               */
	uint8_t uuid[16];
	uint64_t freq;
	int64_t base_ns;             /* offset_s * 1e9 + ns(offset cycles)        */
	bool base_overflows;
	struct tn_class **classes;   /* indexed by event id, MARK_TF_MAX_ID + 1  */
	unsigned pkt_header;         /* bytes of packet header + context: PKT_HEADER_OLD
					(no thread_name) or PKT_HEADER            */
};

/*
 * One packet's bytes (header, context and events, up to content_size) and
 * what its header says of the stream's thread.  A stream reads each packet
 * into a buffer; the messages handed out point into it (struct tn_rec), so
 * a buffer that a batch of messages not yet delivered points into is never
 * overwritten: the stream takes another one (packet_buffer) and the old one
 * waits on r->retired until every batch that used it has been delivered.
 */
struct tn_buf {
	/* The reading side's bookkeeping, on a cache line of its own: the
	 * delivering side reads the rest for every message, and a line that
	 * both write and read moves between the cores each time. */
	uint64_t used_until;         /* batches [0, used_until) may point here; 0: none */
	struct tn_buf *next;         /* on r->retired or r->spare                */
	size_t cap;
	/* The packet it holds (set when it is loaded). */
	_Alignas(64) uint8_t *data;
	const struct tn_trace *trace;
	uint64_t stream_index;       /* the stream's (set at its first packet's beginning) */
	int64_t tid;                 /* -1 if none                               */
	char thread_name[16];        /* cleaned; "" if none                      */
};

struct tn_stream {
	struct tn_trace *trace;
	char *name;                  /* file name in the trace directory         */
	int fd;
	uint64_t file_size;
	uint64_t instance_id;
	uint64_t pkt_off;            /* file offset of the current packet        */
	uint64_t pkt_bytes;          /* packet_size / 8                          */
	uint64_t content_bytes;      /* content_size / 8                         */
	struct tn_buf *cur;          /* the current packet; NULL before the first */
	uint64_t pos;                /* packet offset of the next event          */
	uint64_t prev_discarded;
	bool first_packet_done;
	/* the stream's next message */
	bool at_packet;              /* a packet beginning, else an event        */
	int64_t ns;
	uint64_t ev_off, ev_end;     /* the event: packet offsets                 */
	const struct tn_class *cls;
	/* what trace_reader.c keeps per stream */
	bool indexed;
	uint64_t index;
	/* --follow: no byte will be added to the file (fl_retire_streams) */
	bool sealed;
};

struct trace_native_event {
	const struct tn_trace *trace;
	const struct tn_class *cls;
	const uint8_t *payload;      /* the first argument's bytes               */
	const uint8_t *end;          /* end of the event                         */
	/* The arguments' text in style text_style, written ahead by the
	 * reading thread (write_payload_texts), or NULL: text_len bytes. */
	const char *text;
	uint32_t text_len;
	enum trace_value_style text_style;
	/* The --filter the reading thread evaluated ahead (NULL: none) and
	 * whether the event passed it (write_payload_texts). */
	const struct mark_filter *filtered;
	bool passed;
};

/*
 * A message handed to the callbacks: an event (cls set), whose bytes are
 * in its packet's buffer, or the loss reported as a packet begins (cls
 * NULL).  Messages go in batches from the side that reads and merges the
 * streams to the side that runs the callbacks (see "two threads" below).
 */
struct tn_rec {
	const struct tn_buf *buf;
	const struct tn_class *cls;  /* NULL: a loss                             */
	union {
		int64_t ns;          /* an event's time                          */
		uint64_t lost;       /* a loss: how many (0, > TRACE_LOSS_MAX: unknown) */
	};
	/* An event's bytes in buf->data (a packet's content is below 4 GiB:
	 * load_packet), and its cpu, copied so that delivering an event
	 * whose fields the callback does not read touches no byte of it. */
	uint32_t off, end, cpu;
	/* Where its arguments' text starts in its batch's `text` (a 4-byte
	 * length, then the bytes; then it passed ops->filter, if any), or
	 * TN_NO_TEXT, or TN_FILTERED_OUT. */
	uint32_t text;
};
#define TN_NO_TEXT UINT32_MAX
#define TN_FILTERED_OUT (UINT32_MAX - 1)   /* no text: it fails ops->filter (evaluated ahead) */

#define TN_BATCH 4096               /* messages per batch                              */
#define TN_BATCH_BYTES (512u << 10) /* a batch is handed over once the packets loaded
				       since it began hold this much (this bounds the
				       buffers in flight whatever the packets' sizes)  */
#define TN_SPARE_BYTES (2u << 20)   /* packet buffers kept for reuse, at most        */
#define TN_PIPE_DEPTH 4             /* batches between the two threads, at most        */
_Static_assert(TN_BATCH * sizeof(struct tn_rec) % 64 == 0, "a batch's records fill whole cache lines");

struct tn_batch {
	/* A cache line each: the reading side counts n up for every message
	 * while the other side reads its neighbour's. */
	_Alignas(64) struct tn_rec *recs;   /* TN_BATCH of them                  */
	size_t n;
	uint64_t done_bytes;         /* progress: stream bytes read when it was handed over */
	struct strbuf text;          /* arguments' text written ahead (tn_rec.text) */
};
/* A batch's text written ahead stops growing past this (the rest is
 * written by the callbacks): memory stays bounded whatever the strings. */
#define TN_TEXT_BYTES (1u << 20)

struct tn_pipe;

/*
 * A stream in the merge's heap, with its next message's time beside it:
 * the comparisons read the slots alone (one cache line for a few streams)
 * instead of a stream structure each.  `ns` is s->ns, updated with it.
 */
struct tn_heap_slot {
	int64_t ns;
	struct tn_stream *s;
};

struct tn_reader {
	const char *directory;
	struct tn_trace *traces;
	size_t ntraces;
	struct tn_stream **streams;  /* all streams                              */
	size_t nstreams, cap;
	struct tn_heap_slot *heap;   /* streams with a next message, min-heap    */
	size_t nheap;
	uint64_t next_index;
	int64_t last_ns;
	bool have_last;
	/* --follow (trace_native_follow): a stream's end is "nothing complete yet" */
	bool follow;
	/*
	 * The reading side.  Errors (tn_error) go to `err`: stderr, or while
	 * reading ahead of the callbacks a buffer printed once every message
	 * before the error has been delivered (so the output and the error
	 * come in the order one thread gives).
	 */
	FILE *err;
	struct tn_batch *batch;      /* being filled                             */
	uint64_t batch_seq;          /* its number (batches count from 0)        */
	uint64_t delivered;          /* batches [0, delivered) are delivered, as this side last saw */
	uint64_t batch_bytes;        /* packet bytes loaded since it was started */
	struct tn_buf *retired;      /* buffers a batch in flight may point into */
	struct tn_buf *spare;        /* buffers free for a packet                */
	uint64_t spare_bytes;        /* their capacity, at most TN_SPARE_BYTES    */
	struct tn_pipe *pipe;        /* NULL: this thread delivers what it reads  */
	enum { TEXT_AHEAD_BALANCED, TEXT_AHEAD_ALWAYS, TEXT_AHEAD_NEVER } text_ahead;   /* MARK_READER_TEXT_AHEAD */
	bool read_failed;            /* bad input ended the reading (said on err) */
	/* What both sides read and neither writes once reading starts. */
	_Alignas(64) const struct trace_reader_ops *ops;
	void *arg;
	size_t shown_traces;         /* ntraces as the callbacks see it          */
	bool progress, tty;
	/* The delivering side's, on a cache line of its own (it writes
	 * `events` for every event, which would slow the reading side's
	 * loads from a shared line). */
	_Alignas(64) uint64_t events;
	uint64_t direct_messages;    /* one thread: messages delivered (progress) */
	uint64_t total_bytes, progress_bytes;
	int64_t start_ns, drawn_ns;
};

/* ---------------- errors ---------------- */

static void tn_error(const struct tn_reader *r, const struct tn_trace *t, const char *file, uint64_t off,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void tn_error(const struct tn_reader *r, const struct tn_trace *t, const char *file, uint64_t off,
		     const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	FILE *out = r->err ? r->err : stderr;
	if (out == stderr && r->progress && r->tty)
		fputs("\r\033[K", stderr);   /* not after the progress line */
	fprintf(out, "mark: cannot read trace %s: %s/%s at offset %" PRIu64 ": ", cli_text(r->directory),
		cli_text(t->path), cli_text(file), off);
	fprintf(out, "%s\n", cli_text(what));
	fprintf(out, "  (the file is truncated or corrupt; `mark view` shows the events before it)\n");
}

/* ---------------- clock: as bt_clock_snapshot_get_ns_from_origin ---------------- */

static uint64_t ns_from_value(uint64_t freq, uint64_t value)
{
	if (freq == UINT64_C(1000000000))
		return value;
	double d = 1e9 * (double)value / (double)freq;
	return d >= (double)UINT64_MAX ? UINT64_MAX : (uint64_t)d;
}

static bool ns_from_origin(const struct tn_trace *t, uint64_t value, int64_t *out)
{
	if (t->base_overflows)
		return false;
	uint64_t v = ns_from_value(t->freq, value);
	if (v >= (uint64_t)INT64_MAX)
		return false;
	if (t->base_ns > 0 && (int64_t)v > INT64_MAX - t->base_ns)
		return false;
	*out = t->base_ns + (int64_t)v;
	return true;
}

/* ---------------- metadata ---------------- */

/* A cursor over the metadata text; `ok` turns false at the first mismatch. */
struct cur {
	const char *p, *end;
	bool ok;
};

/* Skip `s` if the text continues with it. */
static bool try_lit(struct cur *c, const char *s)
{
	size_t n = strlen(s);
	if (c->ok && (size_t)(c->end - c->p) >= n && memcmp(c->p, s, n) == 0) {
		c->p += n;
		return true;
	}
	return false;
}

/* Skip `s`, which must come next (else the cursor fails). */
static bool lit(struct cur *c, const char *s)
{
	if (try_lit(c, s))
		return true;
	c->ok = false;
	return false;
}

static int64_t number(struct cur *c)
{
	bool neg = c->p < c->end && *c->p == '-';
	if (neg)
		c->p++;
	uint64_t v = 0;
	const char *start = c->p;
	/* at most 18 digits: no overflow here, nor in what callers add to it */
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && c->p - start < 18)
		v = v * 10 + (uint64_t)(*c->p++ - '0');
	if (c->p == start || (c->p < c->end && *c->p >= '0' && *c->p <= '9'))
		c->ok = false;
	return neg ? -(int64_t)v : (int64_t)v;
}

/* A field name: [A-Za-z0-9_]+ not starting with '_' (babeltrace2 would strip it). */
static char *ident(struct cur *c)
{
	const char *s = c->p;
	while (c->p < c->end && (*c->p == '_' || (*c->p >= '0' && *c->p <= '9') || (*c->p >= 'a' && *c->p <= 'z') ||
				 (*c->p >= 'A' && *c->p <= 'Z')))
		c->p++;
	if (!c->ok || c->p == s || *s == '_' || c->p - s > NAME_MAX_LEN) {
		c->ok = false;
		return NULL;
	}
	char *n = strndup(s, (size_t)(c->p - s));
	if (!n)
		c->ok = false;
	return n;
}

/*
 * A string literal as put_quoted writes it: printable ASCII and UTF-8
 * bytes as they are, \" and \\ the only escapes, no control byte.
 */
static char *quoted(struct cur *c)
{
	if (!lit(c, "\""))
		return NULL;
	char *out = malloc((size_t)(c->end - c->p) + 1);
	size_t n = 0;
	if (!out) {
		c->ok = false;
		return NULL;
	}
	while (c->p < c->end && *c->p != '"') {
		unsigned char ch = (unsigned char)*c->p++;
		if (ch == '\\') {
			if (c->p >= c->end || (*c->p != '"' && *c->p != '\\'))
				break;
			ch = (unsigned char)*c->p++;
		} else if (ch < 0x20 || ch == 0x7f) {
			break;
		}
		out[n++] = (char)ch;
	}
	if (!lit(c, "\"")) {
		free(out);
		return NULL;
	}
	out[n] = '\0';
	return out;
}

static void free_class(struct tn_class *k)
{
	if (!k)
		return;
	free(k->name);
	for (unsigned i = 0; i < k->nfields; i++) {
		free(k->fields[i].name);
		free(k->fields[i].text_key);
	}
	free(k);
}

/* One `event { ... };` block as metadata.c writes it; NULL if it is not. */
/* What a trace owns besides its path (which is the caller's). */
static void free_trace_contents(struct tn_trace *t)
{
	if (t->classes)
		for (size_t j = 0; j <= MARK_TF_MAX_ID; j++)
			free_class(t->classes[j]);
	free(t->classes);
	free(t->procname);
	free(t->hostname);
}

static struct tn_class *parse_event(struct cur *c, unsigned *id)
{
	struct tn_class *k = calloc(1, sizeof(*k) + MAX_FIELDS * sizeof(struct tn_field));
	if (!k) {
		c->ok = false;
		return NULL;
	}
	lit(c, "event {\n\tname = ");
	k->name = quoted(c);
	lit(c, ";\n\tid = ");
	int64_t n = number(c);
	lit(c, ";\n\tstream_id = 0;\n\tfields := struct {\n");
	if (n < 0 || n > MARK_TF_MAX_ID)
		c->ok = false;
	*id = (unsigned)n;
	char *pending_len = NULL;   /* the length (or tag) byte of the next string */
	bool pending_tagged = false;
	while (c->ok && !try_lit(c, "\t};\n};\n")) {
		if (k->nfields == MAX_FIELDS) {
			c->ok = false;
			break;
		}
		struct tn_field *f = &k->fields[k->nfields];
		lit(c, "\t\t");
		if (pending_len) {
			lit(c, "variant <");
			char *sel = ident(c);
			if (c->ok && strcmp(sel, pending_len) != 0)
				c->ok = false;
			free(sel);
			free(pending_len);
			pending_len = NULL;
			lit(c, "> { string { encoding = UTF8; } empty; string { encoding = UTF8; } text; ");
			if (pending_tagged)
				lit(c, "string { encoding = UTF8; } null; string { encoding = UTF8; } truncated; ");
			lit(c, "} ");
			f->kind = TN_STRING;
			f->tagged = pending_tagged;
			k->has_string = true;
		} else if (try_lit(c, "integer { size = ")) {
			int64_t bits = number(c);
			lit(c, "; align = 64; signed = ");
			bool sign = try_lit(c, "true");
			if (!sign)
				lit(c, "false");
			lit(c, "; base = ");
			int64_t base = number(c);
			lit(c, "; } ");
			if ((bits != 8 && bits != 16 && bits != 32 && bits != 64) ||
			    (base != 8 && base != 10 && base != 16))
				c->ok = false;
			f->kind = sign ? TN_SINT : TN_UINT;
			f->bytes = (uint8_t)(bits / 8);
			f->base = (uint8_t)base;
		} else if (try_lit(c, "enum : integer { size = 8; align = 8; signed = false; } ")) {
			/* this mark's tags, or an older mark's length byte */
			pending_tagged = try_lit(c, STRING_TAGS);
			if (!pending_tagged)
				lit(c, "{ empty = 0, text = 1 ... 255 } ");
			pending_len = ident(c);
			lit(c, ";\n");
			continue;   /* the selector is not shown: no field of its own */
		} else if (try_lit(c, "floating_point { exp_dig = 11; mant_dig = 53; byte_order = le; align = 64; } ")) {
			f->kind = TN_REAL;
			f->bytes = 8;
		} else if (try_lit(c, "mark_char_t ")) {
			f->kind = TN_CHAR;
			f->bytes = 1;
		} else {
			c->ok = false;
			break;
		}
		f->name = ident(c);
		f->name_len = f->name ? strlen(f->name) : 0;
		/* The text a view line puts before the value, made once per class:
		 * one copy per field and event instead of three. */
		f->text_key = NULL;
		if (f->name && (f->text_key = calloc(1, f->name_len + 3 + STRBUF_PAD))) {   /* padded */
			f->text_key[0] = ' ';
			memcpy(f->text_key + 1, f->name, f->name_len);
			memcpy(f->text_key + 1 + f->name_len, "=", 2);
		}
		lit(c, ";\n");
		if (c->ok) {
			k->nfields++;
		} else {
			free(f->name);
			free(f->text_key);
		}
	}
	if (pending_len)
		c->ok = false;
	free(pending_len);
	/* Without strings every field is at a fixed offset: 16, 24, ... */
	k->fixed_end = 16;
	for (unsigned i = 0; i < k->nfields; i++)
		k->fixed_end = ((k->fixed_end + 7) & ~UINT32_C(7)) + k->fields[i].bytes;
	if (!c->ok) {
		free_class(k);
		return NULL;
	}
	return k;
}

/* A uuid in quotes, then `after`. */
static void quoted_uuid(struct cur *c, uint8_t out[16], const char *after)
{
	lit(c, "\"");
	const char *e = c->ok ? mark_uuid_parse(c->p, out) : NULL;
	/* put_uuid's form only: 8-4-4-4-12 */
	if (!e || e > c->end || e - c->p != 36 || c->p[8] != '-' || c->p[13] != '-' || c->p[18] != '-' ||
	    c->p[23] != '-')
		c->ok = false;
	else
		c->p = e;
	lit(c, "\"");
	lit(c, after);
}

/* A quoted string then `after`; kept in *out if out, else freed. */
static void quoted_then(struct cur *c, char **out, const char *after)
{
	char *s = c->ok ? quoted(c) : NULL;
	if (!s)
		c->ok = false;
	if (out)
		*out = s;
	else
		free(s);
	lit(c, after);
}

/* A number then `after`. */
static int64_t number_then(struct cur *c, const char *after)
{
	int64_t v = c->ok ? number(c) : 0;
	lit(c, after);
	return v;
}

/* The mark_char_t type, label by label as put_char_type writes it. */
static void char_type(struct cur *c)
{
	lit(c, "typealias enum : integer { size = 8; align = 64; signed = false; base = 10; } {");
	for (unsigned ch = 0; ch < 256 && c->ok; ch++) {
		char raw[8], label[8], piece[32];
		mark_tf_char_label(ch, raw);
		/* quoted as put_quoted writes it: '"' and '\\' escaped */
		snprintf(label, sizeof(label), "%s%s", ch == '"' || ch == '\\' ? "\\" : "", raw);
		snprintf(piece, sizeof(piece), "%s\"%s\" = %u%s", ch % 8 ? " " : "\n\t", label, ch,
			 ch < 255 ? "," : "\n");
		lit(c, piece);
	}
	lit(c, "} := mark_char_t;\n\n");
}

/*
 * The header: everything before the first event class, read line by line
 * exactly as put_header (src/tracer/metadata.c) writes it; only the uuids,
 * the env strings, the vpid and the clock's numbers vary.  Anything else
 * (a comment, another order, a layout line that differs) is not mark's
 * text, and libbabeltrace2 reads it: a search for pieces of the layout
 * would find them inside a comment, and read a trace with the values
 * babeltrace2 ignores (found by a review: a comment with another freq).
 * The clock's freq, offset_s and offset go to clk[0..2].
 */
static void parse_header(struct cur *c, struct tn_trace *t, int64_t clk[3])
{
	uint8_t clock_uuid[16];
	lit(c, "/* CTF 1.8 */\n\n"
	       "/* Written by libmark's tracer; layout in docs/tracer.md. */\n\n"
	       "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	       "typealias integer { size = 16; align = 16; signed = false; } := uint16_t;\n"
	       "typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n"
	       "typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n\n"
	       "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = ");
	quoted_uuid(c, t->uuid, ";\n\tbyte_order = le;\n"
				"\tpacket.header := struct {\n"
				"\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n\t\tuint32_t stream_id;\n"
				"\t\tuint64_t stream_instance_id;\n\t};\n};\n\n"
				"env {\n\tdomain = \"mark\";\n\ttracer_name = \"mark\";\n\ttracer_major = 0;\n"
				"\ttracer_minor = 1;\n\thostname = ");
	quoted_then(c, &t->hostname, ";\n\tprocname = ");
	quoted_then(c, &t->procname, ";\n\tvpid = ");
	t->vpid = number_then(c, ";\n\tclock_source = ");
	quoted_then(c, NULL, ";\n};\n\nclock {\n\tname = \"mark_clock\";\n\tuuid = ");
	quoted_uuid(c, clock_uuid, ";\n\tdescription = ");
	quoted_then(c, NULL, ";\n\tfreq = ");
	clk[0] = number_then(c, ";\n\tprecision = ");
	number_then(c, ";\n\toffset_s = ");
	clk[1] = number_then(c, ";\n\toffset = ");
	clk[2] = number_then(c, ";\n\tabsolute = TRUE;\n};\n\n"
				"typealias integer { size = 64; align = 64; signed = false; map = clock.mark_clock.value; } "
				":= uint64_clock_t;\n\n");
	char_type(c);
	lit(c, "stream {\n\tid = 0;\n"
	       "\tpacket.context := struct {\n"
	       "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
	       "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
	       "\t\tuint64_t events_discarded;\n\t\tuint32_t tid;\n");
	/* The thread name: tracers since ring version 2; earlier ones end here. */
	t->pkt_header = try_lit(c, "\t\tinteger { size = 8; align = 8; signed = false; encoding = UTF8; } "
				   "thread_name[16];\n")
				? PKT_HEADER
				: PKT_HEADER_OLD;
	lit(c, "\t};\n"
	       "\tevent.header := struct {\n\t\tuint64_clock_t timestamp;\n\t\tuint16_t id;\n\t};\n"
	       "\tevent.context := struct {\n\t\tuint32_t cpu_id;\n\t};\n};\n\n");
}

/* 0: parsed; TRACE_NATIVE_NOT_MINE; -1: error printed. */
static int parse_metadata(const struct tn_reader *r, struct tn_trace *t, const char *text, size_t len)
{
	const char *end = text + len;
	if (memchr(text, '\0', len))
		return TRACE_NATIVE_NOT_MINE;
	struct cur h = { text, end, true };
	int64_t clk[3] = { 0, 0, 0 };
	parse_header(&h, t, clk);
	int64_t freq = clk[0], offset_s = clk[1], offset = clk[2];
	if (!h.ok || freq <= 0 || offset < 0)
		return TRACE_NATIVE_NOT_MINE;
	const char *hend = h.p;
	t->freq = (uint64_t)freq;
	uint64_t cycles = (uint64_t)offset;
	if (cycles >= t->freq) {   /* babeltrace2 normalises the offset so */
		offset_s += (int64_t)(cycles / t->freq);
		cycles %= t->freq;
	}
	if (offset_s <= INT64_MIN / INT64_C(1000000000) - 1 || offset_s >= INT64_MAX / INT64_C(1000000000) - 1)
		t->base_overflows = true;
	else
		t->base_ns = offset_s * INT64_C(1000000000) + (int64_t)ns_from_value(t->freq, cycles);

	/* events */
	t->classes = calloc(MARK_TF_MAX_ID + 1, sizeof(*t->classes));
	if (!t->classes) {
		fprintf(stderr, "mark: out of memory reading %s/metadata\n", cli_text(t->path));
		return -1;
	}
	struct cur c = { hend, end, true };
	while (c.ok && c.p < c.end) {
		if (try_lit(&c, "\n"))
			continue;
		unsigned id = 0;
		struct tn_class *k = parse_event(&c, &id);
		if (!k)
			break;
		if (t->classes[id]) {   /* babeltrace2 refuses a duplicate id */
			free_class(k);
			return TRACE_NATIVE_NOT_MINE;
		}
		t->classes[id] = k;
	}
	(void)r;
	return c.ok ? 0 : TRACE_NATIVE_NOT_MINE;
}

/*
 * 0, TRACE_NATIVE_NOT_MINE or -1 (printed).  *open_err (if not NULL): the
 * errno of an open of the trace's directory or metadata that failed, else 0
 * (follow tells a file that is gone from one it could not open).
 */
static int load_metadata_opened(struct tn_reader *r, struct tn_trace *t, int *open_err)
{
	int fd = trace_dir_open(r->directory, t->path);
	int err = errno;
	int mfd = fd < 0 ? -1 : openat(fd, MARK_TF_METADATA, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		err = errno;
		close(fd);
	}
	if (open_err)
		*open_err = mfd < 0 ? err : 0;
	if (mfd < 0)
		return TRACE_NATIVE_NOT_MINE;   /* let babeltrace2 say why */
	struct stat st;
	if (fstat(mfd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > METADATA_MAX) {
		close(mfd);
		return TRACE_NATIVE_NOT_MINE;
	}
	size_t len = (size_t)st.st_size;
	char *text = malloc(len + 1);
	size_t got = 0;
	while (text && got < len) {
		ssize_t n = pread(mfd, text + got, len - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(mfd);
	if (!text || got != len) {
		free(text);
		return TRACE_NATIVE_NOT_MINE;
	}
	text[len] = '\0';
	int rc = parse_metadata(r, t, text, len);
	free(text);
	return rc;
}

static int load_metadata(struct tn_reader *r, struct tn_trace *t)
{
	return load_metadata_opened(r, t, NULL);
}

/* ---------------- stream files ---------------- */

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;   /* x86-64 and aarch64 are little endian, as the trace */
}

static uint32_t le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t le16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static bool read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}


/*
 * The buffer for the stream's next packet, of `bytes`: its current one
 * unless a batch not yet delivered points into it (then that one is
 * retired), else a spare one (retired buffers that no batch in flight
 * points into any more are spare again, up to TN_SPARE_BYTES of them; the
 * rest are freed), else a new one.  So the memory is what the batches in
 * flight point into (at most TN_PIPE_DEPTH + 1 batches, each handed over
 * once TN_BATCH_BYTES of packets were loaded, plus one packet per stream)
 * and the spares, whatever the trace's length.  NULL when memory runs out.
 * The reading side only; r->delivered orders it after the delivering side
 * is done with a buffer (read under the pipe's lock: see hand_over).
 */
static struct tn_buf *packet_buffer(struct tn_reader *r, struct tn_stream *s, uint64_t bytes)
{
	struct tn_buf *b = s->cur;
	if (b && b->used_until > r->delivered) {
		b->next = r->retired;
		r->retired = b;
		b = s->cur = NULL;
	}
	if (!b) {
		for (struct tn_buf **pp = &r->retired; *pp;) {
			struct tn_buf *f = *pp;
			if (f->used_until > r->delivered) {
				pp = &f->next;
			} else if (r->spare_bytes + f->cap > TN_SPARE_BYTES) {
				*pp = f->next;   /* enough spares: give it back */
				free(f->data);
				free(f);
			} else {
				*pp = f->next;
				f->next = r->spare;
				r->spare = f;
				r->spare_bytes += f->cap;
			}
		}
		/* The smallest spare that holds the packet, so that the large
		 * ones stay for large packets (packets of 4 KiB and of 1 MiB
		 * mix in one trace); none: a new one of the packet's size. */
		struct tn_buf **pick = NULL;
		for (struct tn_buf **pp = &r->spare; *pp; pp = &(*pp)->next)
			if ((*pp)->cap >= bytes && (!pick || (*pp)->cap < (*pick)->cap))
				pick = pp;
		if (pick) {
			b = *pick;
			*pick = b->next;
			r->spare_bytes -= b->cap;
		} else if (!(b = calloc(1, sizeof(*b)))) {
			return NULL;
		}
		b->next = NULL;
		s->cur = b;
	}
	if (bytes > b->cap) {
		size_t cap = (bytes + 4095) & ~(size_t)4095;   /* whole pages */
		uint8_t *grown = realloc(b->data, cap);
		if (!grown)
			return NULL;
		b->data = grown;
		b->cap = cap;
	}
	return b;
}

static void free_buffers(struct tn_buf *b)
{
	while (b) {
		struct tn_buf *next = b->next;
		free(b->data);
		free(b);
		b = next;
	}
}

/* Load the packet at s->pkt_off.  0, or -1 after printing the error. */
static int load_packet(struct tn_reader *r, struct tn_stream *s)
{
	struct tn_trace *t = s->trace;
	const unsigned hb = t->pkt_header;
	uint8_t h[PKT_HEADER];
	if (s->file_size - s->pkt_off < hb || !read_at(s->fd, h, hb, s->pkt_off)) {
		tn_error(r, t, s->name, s->pkt_off, "truncated packet header (%" PRIu64 " bytes left)",
			 s->file_size - s->pkt_off);
		return -1;
	}
	if (le32(h) != MARK_TF_CTF_MAGIC) {
		tn_error(r, t, s->name, s->pkt_off, "bad packet magic 0x%08" PRIx32, le32(h));
		return -1;
	}
	if (memcmp(h + 4, t->uuid, 16) != 0) {
		tn_error(r, t, s->name, s->pkt_off, "packet of another trace (its UUID differs from the metadata's)");
		return -1;
	}
	if (le32(h + 20) != 0 || le64(h + 24) != s->instance_id) {
		tn_error(r, t, s->name, s->pkt_off, "stream id %" PRIu32 " instance %" PRIu64 " where stream 0 instance %" PRIu64
			 " was expected", le32(h + 20), le64(h + 24), s->instance_id);
		return -1;
	}
	uint64_t content = le64(h + 48), size = le64(h + 56);
	if (size % 8 || content % 8 || content > size || size < hb * 8 || content < hb * 8 ||
	    size / 8 > s->file_size - s->pkt_off || content / 8 > UINT32_MAX) {
		tn_error(r, t, s->name, s->pkt_off,
			 "bad packet size (content_size %" PRIu64 " bits, packet_size %" PRIu64 " bits, %" PRIu64
			 " bytes left in the file)", content, size, s->file_size - s->pkt_off);
		return -1;
	}
	s->pkt_bytes = size / 8;
	s->content_bytes = content / 8;
	struct tn_buf *b = packet_buffer(r, s, s->content_bytes);
	if (!b) {
		tn_error(r, t, s->name, s->pkt_off, "out of memory for a packet of %" PRIu64 " bytes",
			 s->content_bytes);
		return -1;
	}
	r->batch_bytes += s->content_bytes;
	b->trace = t;
	b->stream_index = s->index;
	b->tid = le32(h + 80);
	/* Set by the traced program, stored cleaned; a hostile file may hold
	 * anything there: cleaned again. */
	if (hb >= PKT_HEADER)
		mark_thread_name_clean(b->thread_name, (const char *)h + 84, 16);
	else
		b->thread_name[0] = '\0';
	memcpy(b->data, h, hb);
	if (!read_at(s->fd, b->data + hb, s->content_bytes - hb, s->pkt_off + hb)) {
		tn_error(r, t, s->name, s->pkt_off, "cannot read the packet (%s)", errno ? strerror(errno) : "short read");
		return -1;
	}
	s->pos = hb;   /* next_message aligns it */
	s->at_packet = true;
	if (!ns_from_origin(t, le64(h + 32), &s->ns)) {
		tn_error(r, t, s->name, s->pkt_off + 32, "timestamp_begin out of range of the clock");
		return -1;
	}
	return 0;
}

/*
 * Following a recording, the tracer describes markers as they appear
 * (metadata is replaced whole, by rename, before any packet holds their
 * events: src/tracer/consumer.c ensure_metadata).  Read it again and adopt
 * the classes of ids we did not have; classes already in use are kept (an
 * id's class never changes within a trace, and streams point at them).
 * The clock is kept too, so that times read so far and from now on compare.
 */
static bool reload_classes(struct tn_reader *r, struct tn_trace *t)
{
	struct tn_trace fresh = { .path = t->path, .index = t->index };
	bool adopted = false;
	if (load_metadata(r, &fresh) == 0 && memcmp(fresh.uuid, t->uuid, sizeof(t->uuid)) == 0) {
		for (size_t j = 0; j <= MARK_TF_MAX_ID; j++)
			if (!t->classes[j] && fresh.classes[j]) {
				t->classes[j] = fresh.classes[j];
				fresh.classes[j] = NULL;
				adopted = true;
			}
	}
	free_trace_contents(&fresh);
	return adopted;
}

/*
 * Decode the event at the stream's position (or move to the next packet).
 * Returns 1 when s has a next message, 0 at the end of the stream, -1 on
 * error (printed).
 */
static int next_message(struct tn_reader *r, struct tn_stream *s)
{
	struct tn_trace *t = s->trace;
	for (;;) {
		uint64_t pos = (s->pos + 7) & ~(uint64_t)7;
		if (pos >= s->content_bytes) {
			s->pkt_off += s->pkt_bytes;
			s->pkt_bytes = s->content_bytes = s->pos = 0;
			/* Following, the next packet may still be being written: follow_poll() loads it once whole. */
			if (r->follow || s->pkt_off >= s->file_size)
				return 0;
			return load_packet(r, s) == 0 ? 1 : -1;
		}
		const uint8_t *p = s->cur->data;
		uint64_t end = s->content_bytes;
		if (end - pos < 16) {
			tn_error(r, t, s->name, s->pkt_off + pos, "truncated event header");
			return -1;
		}
		unsigned id = le16(p + pos + 8);
		const struct tn_class *k = id <= MARK_TF_MAX_ID ? t->classes[id] : NULL;
		if (!k && r->follow && id <= MARK_TF_MAX_ID && reload_classes(r, t))
			k = t->classes[id];   /* a marker described after we read the metadata */
		if (!k) {
			tn_error(r, t, s->name, s->pkt_off + pos, "event id %u is not in the metadata", id);
			return -1;
		}
		uint64_t off = pos + 16;
		if (!k->has_string) {
			/* the loop below, done once per class (parse_event) */
			off = pos + k->fixed_end;
			if (off > end) {
				tn_error(r, t, s->name, s->pkt_off + pos, "event of %s runs past the packet's content",
					 k->name);
				return -1;
			}
		}
		for (unsigned i = 0; k->has_string && i < k->nfields; i++) {
			const struct tn_field *f = &k->fields[i];
			if (f->kind == TN_STRING) {
				/* length byte (only selects the variant), then the text to its NUL */
				const uint8_t *nul = off + 1 < end ? memchr(p + off + 1, 0, end - off - 1) : NULL;
				if (!nul) {
					tn_error(r, t, s->name, s->pkt_off + off, "string of %s runs past the packet's content",
						 k->name);
					return -1;
				}
				off = (uint64_t)(nul - p) + 1;
			} else {
				off = (off + 7) & ~(uint64_t)7;
				if (off > end || end - off < f->bytes) {
					tn_error(r, t, s->name, s->pkt_off + off, "field of %s runs past the packet's content",
						 k->name);
					return -1;
				}
				off += f->bytes;
			}
		}
		if (!ns_from_origin(t, le64(p + pos), &s->ns)) {
			tn_error(r, t, s->name, s->pkt_off + pos, "event timestamp out of range of the clock");
			return -1;
		}
		s->at_packet = false;
		s->ev_off = pos;
		s->ev_end = off;
		s->cls = k;
		s->pos = off;
		return 1;
	}
}

/* ---------------- merging ---------------- */

/*
 * Equal times from two traces: babeltrace2's muxer (2.0,
 * plugins/common/muxing common_muxing_compare_messages) orders them by
 * trace UUID (bytes), then by trace name, then by stream class and stream
 * id.  src.ctf.fs names a trace after its env's hostname; every mark trace
 * has its own random UUID, so the UUID decides, not the hostname (found by
 * a review: hostnames compared first put traces of several machines in
 * another order than babeltrace2's), nor the listing order.  A named
 * trace goes before one without a name, as in the muxer.  The listing
 * order is the last resort.
 */
static int compare_traces(const struct tn_trace *x, const struct tn_trace *y)
{
	if (x == y)
		return 0;
	int c = memcmp(x->uuid, y->uuid, sizeof(x->uuid));
	if (c == 0 && !x->hostname != !y->hostname)
		c = x->hostname ? -1 : 1;
	if (c == 0 && x->hostname)
		c = strcmp(x->hostname, y->hostname);
	if (c == 0 && x->index != y->index)
		c = x->index < y->index ? -1 : 1;
	return c;
}

static bool before(const struct tn_stream *a, const struct tn_stream *b)
{
	if (a->ns != b->ns)
		return a->ns < b->ns;
	int c = compare_traces(a->trace, b->trace);
	if (c != 0)
		return c < 0;
	return a->instance_id < b->instance_id;
}

static inline bool slot_before(const struct tn_heap_slot *a, const struct tn_heap_slot *b)
{
	return a->ns != b->ns ? a->ns < b->ns : before(a->s, b->s);   /* equal times are rare */
}

/* The slot at i has moved later (its stream's next message): restore the heap below it. */
static void heap_down(struct tn_reader *r, size_t i)
{
	struct tn_heap_slot *h = r->heap;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < r->nheap && slot_before(&h[l], &h[m]))
			m = l;
		if (l + 1 < r->nheap && slot_before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		struct tn_heap_slot tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

/* The stream at the top of the heap moved to its next message (more: 1), or ended (0). */
static void heap_top_moved(struct tn_reader *r, int more)
{
	if (more > 0)
		r->heap[0].ns = r->heap[0].s->ns;
	else
		r->heap[0] = r->heap[--r->nheap];
	heap_down(r, 0);
}

static void heap_build(struct tn_reader *r)
{
	for (size_t i = r->nheap / 2; i-- > 0;)
		heap_down(r, i);
}

/* ---------------- opening ---------------- */

static int cmp_stream(const void *a, const void *b)
{
	const struct tn_stream *x = *(struct tn_stream *const *)a, *y = *(struct tn_stream *const *)b;
	if (x->trace->index != y->trace->index)
		return x->trace->index < y->trace->index ? -1 : 1;
	return x->instance_id < y->instance_id ? -1 : x->instance_id > y->instance_id;
}

/* A listing of the directory dfd (a descriptor of its own: dfd stays usable), or NULL. */
static DIR *dir_listing(int dfd)
{
	int lfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);   /* close-on-exec, as every descriptor of the reader */
	DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
	if (!d && lfd >= 0)
		close(lfd);
	return d;
}

/*
 * What to do about a trace file that could not be opened (errno err), into
 * todo: `holding` says what holds the descriptors, for EMFILE.
 */
static void open_remedy(int err, const char *holding, char *todo, size_t len)
{
	struct rlimit nofile;
	if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
		snprintf(todo, len, "%s and may have %llu; raise the limit (ulimit -n) and run it again", holding,
			 (unsigned long long)nofile.rlim_cur);
	else if (err == EMFILE)
		snprintf(todo, len, "raise the limit of open files (ulimit -n) and run it again");
	else if (err == ENFILE)
		snprintf(todo, len, "the system's table of open files is full: close files, or raise fs.file-max, "
				    "and run it again");
	else if (err == ENOMEM)
		snprintf(todo, len, "free some memory and run it again");
	else if (err == EACCES || err == EPERM)
		snprintf(todo, len, "run it as the user who recorded the trace (or root)");
	else
		snprintf(todo, len, "run it again once that is mended");
}

/* Open the stream files of t.  0, TRACE_NATIVE_NOT_MINE or -1 (printed). */
static int open_streams(struct tn_reader *r, struct tn_trace *t)
{
	int dfd = trace_dir_open(r->directory, t->path);
	if (dfd < 0)
		return TRACE_NATIVE_NOT_MINE;
	DIR *d = dir_listing(dfd);
	if (!d) {
		close(dfd);
		return TRACE_NATIVE_NOT_MINE;
	}
	int rc = 0;
	size_t first = r->nstreams;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		/* src.ctf.fs: every file but `metadata` and dot files is a stream file */
		if (de->d_name[0] == '.' || strcmp(de->d_name, MARK_TF_METADATA) == 0)
			continue;
		int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		struct stat st;
		if (fd < 0 && errno == ELOOP) {
			rc = TRACE_NATIVE_NOT_MINE;   /* babeltrace2 follows links; let it */
		} else if (fd < 0 && errno != ENOENT) {
			/*
			 * Gone since the listing (renamed into a chunk of a
			 * recording in progress) is passed over; any other
			 * failure leaves the file's events unread.  It was
			 * passed over in silence too: with too few descriptors
			 * (one per stream file) `mark view` showed part of the
			 * trace, exit status 0, and blamed the missing events on
			 * a full disk.  babeltrace2 fails on it as well.
			 */
			const int err = errno;
			char todo[160];
			open_remedy(err, "mark reads every stream file at once", todo, sizeof(todo));
			fprintf(stderr, "mark: cannot open %s/%s: %s; the trace cannot be read whole: %s\n",
				cli_text(t->path), cli_text(de->d_name), strerror(err), todo);
			rc = -1;
		}
		if (fd < 0)
			continue;   /* a directory (pid-P/) opens, and is passed over below */
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
			close(fd);
			continue;
		}
		struct tn_stream *s = calloc(1, sizeof(*s));
		if (!s || !(s->name = strdup(de->d_name)) ||
		    (r->nstreams == r->cap && cli_array_grow(&r->streams, &r->cap, sizeof(*r->streams), 16))) {
			fprintf(stderr, "mark: out of memory opening the streams of %s\n", cli_text(t->path));
			if (s)
				free(s->name);
			free(s);
			close(fd);
			rc = -1;
			break;
		}
		s->trace = t;
		s->fd = fd;
		s->file_size = (uint64_t)st.st_size;
		uint8_t h[32];
		if (s->file_size >= sizeof(h) && read_at(fd, h, sizeof(h), 0))
			s->instance_id = le64(h + 24);
		r->streams[r->nstreams++] = s;
	}
	closedir(d);
	close(dfd);
	if (rc != 0)
		return rc;
	/* Two files of one stream: babeltrace2 merges them; leave that to it.
	 * (A trace without streams, e.g. every event rejected by --filter, has
	 * r->streams still NULL: qsort() must not see it, even for 0 items.) */
	if (r->nstreams > first)
		qsort(r->streams + first, r->nstreams - first, sizeof(*r->streams), cmp_stream);
	for (size_t i = first + 1; i < r->nstreams; i++)
		if (r->streams[i]->instance_id == r->streams[i - 1]->instance_id)
			return TRACE_NATIVE_NOT_MINE;
	return 0;
}

/* Close an open stream and free it with the messages it still holds. */
static void free_stream(struct tn_stream *s)
{
	close(s->fd);
	free_buffers(s->cur);
	free(s->name);
	free(s);
}

static void free_reader(struct tn_reader *r)
{
	for (size_t i = 0; i < r->nstreams; i++)
		free_stream(r->streams[i]);
	free(r->streams);
	free(r->heap);
	free_buffers(r->retired);
	free_buffers(r->spare);
	for (size_t i = 0; i < r->ntraces; i++) {
		free_trace_contents(&r->traces[i]);
	}
	free(r->traces);
}

/* ---------------- progress ---------------- */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void append_bytes(char *out, size_t len, uint64_t n)
{
	if (n >= 1000000000)
		snprintf(out, len, "%.1f GB", (double)n / 1e9);
	else if (n >= 1000000)
		snprintf(out, len, "%.1f MB", (double)n / 1e6);
	else if (n >= 1000)
		snprintf(out, len, "%.1f kB", (double)n / 1e3);
	else
		snprintf(out, len, "%" PRIu64 " B", n);
}

/*
 * "mark: 1234567 events read, 45% of 1.2 GB, ETA 3 s": \r-redrawn on the
 * same line; at the end erased on a terminal, ended by a newline
 * otherwise (--progress into a file or pipe keeps the final state).
 * The delivering side: r->progress_bytes is what the reading side had read
 * when it handed over the batch being delivered.
 */
static void progress_draw(struct tn_reader *r, bool final, bool complete)
{
	uint64_t done = complete ? r->total_bytes : r->progress_bytes;
	int64_t t = now_ns();
	unsigned pct = r->total_bytes ? (unsigned)(done * 100 / r->total_bytes) : 100;
	char size[32], eta[48] = "";
	append_bytes(size, sizeof(size), r->total_bytes);
	if (!final && done > 0 && done < r->total_bytes) {
		double left = (double)(t - r->start_ns) / 1e9 * (double)(r->total_bytes - done) / (double)done;
		snprintf(eta, sizeof(eta), ", ETA %.0f s", left);
	}
	if (final && r->tty) {
		fputs("\r\033[K", stderr);
	} else {
		fprintf(stderr, "\rmark: %" PRIu64 " events read, %u%% of %s%s%s", r->events, pct, size, eta,
			r->tty ? "\033[K" : "");
		if (final)
			fputc('\n', stderr);
	}
	fflush(stderr);
	r->drawn_ns = t;
}

static void progress_tick(struct tn_reader *r)
{
	/* the clock only every 64Ki events: reading the time per event would cost */
	if ((++r->events & 0xffff) == 0 && r->progress && now_ns() - r->drawn_ns >= 250000000)
		progress_draw(r, false, false);
}

/* The reading side: the stream bytes read so far (whole packets). */
static uint64_t bytes_read(const struct tn_reader *r)
{
	uint64_t done = 0;
	for (size_t i = 0; i < r->nstreams; i++)
		done += r->streams[i]->pkt_off < r->streams[i]->file_size ? r->streams[i]->pkt_off
									    : r->streams[i]->file_size;
	return done;
}

/* ---------------- reading: messages into batches ---------------- */

/* A message of the batch being filled points into b. */
static inline void mark_buffer_used(struct tn_reader *r, struct tn_buf *b)
{
	if (b->used_until != r->batch_seq + 1)   /* a store only once per batch (see struct tn_buf) */
		b->used_until = r->batch_seq + 1;
}

/*
 * The stream's current message for the callbacks, in *m: an event, or for
 * a packet beginning the loss before it, if any.  false: none to deliver.
 */
static inline bool message_of(struct tn_reader *r, struct tn_stream *s, struct tn_rec *m)
{
	struct tn_buf *b = s->cur;
	if (!s->at_packet) {
		*m = (struct tn_rec){ .buf = b, .cls = s->cls, .ns = s->ns, .off = (uint32_t)s->ev_off,
				      .end = (uint32_t)s->ev_end, .cpu = le32(b->data + s->ev_off + 12),
				      .text = TN_NO_TEXT };
		return r->ops->event != NULL;
	}
	/* The stream's packet begins: its thread from now on, and the loss before it. */
	if (!s->indexed) {
		s->indexed = true;
		s->index = r->next_index++;
	}
	b->stream_index = s->index;
	uint64_t discarded = le64(b->data + 72);
	bool report = s->first_packet_done ? discarded != s->prev_discarded : discarded != 0;
	/* modulo 2^64 as babeltrace2 computes it; above TRACE_LOSS_MAX it went
	 * backwards, and stays so in .lost (deliver_rec reports no count) */
	uint64_t count = s->first_packet_done ? discarded - s->prev_discarded : 0;
	s->first_packet_done = true;
	s->prev_discarded = discarded;
	*m = (struct tn_rec){ .buf = b, .lost = count };
	return report && r->ops->discarded;
}

/*
 * Add the stream's current message, if any, to the batch being filled.
 * The buffer it points into is then in use until that batch is delivered.
 */
static void add_message(struct tn_reader *r, struct tn_stream *s)
{
	struct tn_rec m;
	if (message_of(r, s, &m)) {
		r->batch->recs[r->batch->n++] = m;
		mark_buffer_used(r, s->cur);
	}
}

/*
 * Run the callbacks on one message; its arguments' text written ahead, if
 * any, is in `text_ahead` (NULL: none).  Returns 0, or the event
 * callback's non-zero value.
 */
static inline int deliver_rec(struct tn_reader *r, const struct tn_rec *m, const struct strbuf *text_ahead)
{
	const struct trace_reader_ops *ops = r->ops;
	const struct tn_buf *b = m->buf;
	const struct tn_trace *t = b->trace;
	if (!m->cls) {
		struct trace_loss loss = {
			.count = m->lost > TRACE_LOSS_MAX ? 0 : m->lost,
			.backwards = m->lost > TRACE_LOSS_MAX,
			.stream_index = b->stream_index,
			.pid = t->vpid > 0 ? t->vpid : -1,
			.tid = b->tid >= 0 ? b->tid : -1,   /* 0: the tracer's stream of events without a buffer */
			.procname = t->procname,
			.ntraces = r->shown_traces,
		};
		ops->discarded(&loss, r->arg);
		return 0;
	}
	const uint8_t *p = b->data + m->off;
	struct trace_native_event nev = { .trace = t, .cls = m->cls, .payload = p + 16, .end = b->data + m->end };
	if (m->text == TN_FILTERED_OUT) {
		nev.filtered = ops->filter;
		nev.passed = false;
	} else if (m->text != TN_NO_TEXT) {
		const char *text = text_ahead->data + m->text;
		memcpy(&nev.text_len, text, sizeof(nev.text_len));
		nev.text = text + sizeof(nev.text_len);
		nev.text_style = ops->payload_style;
		nev.filtered = ops->filter;   /* written ahead only for an event that passes it */
		nev.passed = true;
	}
	/* Every member assigned, none zeroed: an initialiser would clear
	 * the whole struct first (a `rep stos`, a seventh of `mark stats`). */
	struct trace_event ev;
	ev.name = m->cls->name;
	ev.has_time = true;
	ev.ns = m->ns;
	ev.clock_is_epoch = true;
	ev.cpu = m->cpu;
	ev.pid = t->vpid > 0 ? t->vpid : -1;
	ev.tid = b->tid > 0 ? b->tid : -1;
	ev.stream_index = b->stream_index;
	ev.procname = t->procname;
	ev.thread_name = b->thread_name[0] ? b->thread_name : NULL;
	ev.trace = t;
	ev.payload = NULL;
	ev.event = NULL;
	ev.native = &nev;
	ev.ntraces = r->shown_traces;
	int rc = ops->event(&ev, r->arg);
	if (rc == 0)
		progress_tick(r);
	return rc;
}

/*
 * Run the callbacks on a batch's messages, in order.  Returns 0, or the
 * event callback's non-zero value (the rest is not delivered).
 */
static int deliver(struct tn_reader *r, const struct tn_batch *batch)
{
	r->progress_bytes = batch->done_bytes;
	for (size_t i = 0; i < batch->n; i++) {
		int rc = deliver_rec(r, &batch->recs[i], &batch->text);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * Hand the stream's current message to the callbacks now: one thread
 * (--follow, MARK_READER_THREADS=1, one CPU), which has no reason to
 * stage it in a batch.  Its packet's buffer is not overwritten before the
 * stream's next packet (packet_buffer), so the callbacks read it in place.
 */
static int emit_message(struct tn_reader *r, struct tn_stream *s)
{
	struct tn_rec m;
	return message_of(r, s, &m) ? deliver_rec(r, &m, NULL) : 0;
}

/*
 * The reading side, two threads, the callbacks behind: write the text of
 * the batch's events' arguments (ops->payload_text) now, so that the
 * callbacks copy it instead of writing it.  Up to TN_TEXT_BYTES; an event
 * without text (none written, no memory) is written by the callback.
 * With a --filter (ops->filter), it is evaluated here first: an event that
 * fails it gets no text (the callback drops it), and the callback takes
 * the result instead of evaluating it again.  Measured on the 31 M-event
 * bench trace, `view --filter "i & 1 == 0"` (5 of 8 events dropped):
 * writing text for every event cost 1.7 CPU-seconds more than writing
 * none, for 11 % less time.
 */
static void write_payload_texts(struct tn_reader *r, struct tn_batch *batch)
{
	struct strbuf *t = &batch->text;
	if (t->failed)
		strbuf_release(t);   /* out of memory last time: try afresh */
	strbuf_reset(t);
	const struct mark_filter *filter = r->ops->filter;
	for (size_t i = 0; i < batch->n && t->len < TN_TEXT_BYTES; i++) {
		struct tn_rec *m = &batch->recs[i];
		if (!m->cls)
			continue;
		const uint8_t *p = m->buf->data + m->off;
		const struct trace_native_event nev = { .trace = m->buf->trace, .cls = m->cls, .payload = p + 16,
							.end = m->buf->data + m->end };
		if (filter && !trace_native_filter_pass(&nev, filter)) {
			m->text = TN_FILTERED_OUT;
			continue;
		}
		if (m->cls->nfields == 0)
			continue;   /* no text; the callback evaluates the filter again (no field: cheap) */
		const size_t at = t->len;
		const uint32_t unknown = 0;
		strbuf_add(t, (const char *)&unknown, sizeof(unknown));
		trace_native_payload_append(t, &nev, r->ops->payload_style);
		if (t->failed)
			break;
		const size_t len = t->len - at - sizeof(unknown);
		if (len > UINT32_MAX || at > UINT32_MAX - 1)
			break;
		const uint32_t len32 = (uint32_t)len;
		memcpy(t->data + at, &len32, sizeof(len32));
		m->text = (uint32_t)at;
	}
}

/*
 * Two threads.  With two CPUs or more (and not MARK_READER_THREADS=1), one
 * thread reads and merges the streams into batches of messages while the
 * calling thread runs the callbacks on the batches already handed over:
 * decoding and merging cost about what the commands' own work costs, so
 * the two overlap.  The callbacks run on the calling thread, in the same
 * order, with the same messages as with one thread.
 *
 * Concurrency: the slots, `handed`, `delivered`, `stop` and `finished` are
 * under `lock`.  The reading side fills slot handed % TN_PIPE_DEPTH only
 * while handed - delivered < TN_PIPE_DEPTH, so never a slot being
 * delivered; it hands it over by raising `handed` under the lock, which
 * orders its writes to the slot and to the packet buffers the slot points
 * into before the delivering side's reads.  The delivering side raises
 * `delivered` under the lock when done with a batch; the reading side
 * copies it into r->delivered under the lock, so it overwrites a buffer
 * (packet_buffer) only after every read of it.  Stream and trace state
 * the messages point at (classes, names, a buffer's thread) is written
 * before the message is handed over and not after.
 */
struct tn_pipe {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct tn_batch slots[TN_PIPE_DEPTH];   /* their records: one allocation */
	uint64_t handed;             /* batches [0, handed) are filled           */
	uint64_t delivered;          /* batches [0, delivered) are delivered     */
	bool stop;                   /* a callback stopped the reading           */
	bool finished;               /* the reading side is done: read_rc        */
	int read_rc;
};

/*
 * The reading side of two threads: the batch being filled is complete.
 * Hand it over and wait for a free slot.  Returns 0 to read on, else 1:
 * the callbacks stopped the reading (the delivering side holds their
 * value).
 */
static int hand_over(struct tn_reader *r)
{
	if (r->progress)
		r->batch->done_bytes = bytes_read(r);
	struct tn_pipe *p = r->pipe;
	if (r->ops->payload_text && r->ops->event && r->text_ahead != TEXT_AHEAD_NEVER) {
		/* The callbacks are behind when two batches or more wait for
		 * them (the pipe holds TN_PIPE_DEPTH): this thread would wait,
		 * so it writes the arguments' text, the callbacks' dearest
		 * part, meanwhile.  When it is the slower side the batches
		 * waiting drop below two and it stops: the work balances
		 * itself between the two threads. */
		bool behind = r->text_ahead == TEXT_AHEAD_ALWAYS;
		if (!behind) {
			pthread_mutex_lock(&p->lock);
			behind = r->batch_seq - p->delivered >= 2;
			pthread_mutex_unlock(&p->lock);
		}
		if (behind)
			write_payload_texts(r, r->batch);
	}
	pthread_mutex_lock(&p->lock);
	p->handed = ++r->batch_seq;
	pthread_cond_broadcast(&p->changed);
	while (p->handed - p->delivered >= TN_PIPE_DEPTH && !p->stop)
		pthread_cond_wait(&p->changed, &p->lock);
	bool stop = p->stop;
	r->delivered = p->delivered;
	pthread_mutex_unlock(&p->lock);
	r->batch = &p->slots[r->batch_seq % TN_PIPE_DEPTH];
	r->batch->n = 0;
	r->batch_bytes = 0;
	return stop ? 1 : 0;
}

/*
 * The reading side found bad input (said on r->err): the messages before
 * it are handed over first (they are shown), then -1; or the callbacks'
 * value if they stop before the error is reached.
 */
static int read_failed(struct tn_reader *r)
{
	int rc = r->batch && r->batch->n > 0 ? hand_over(r) : 0;
	if (rc != 0)
		return rc;
	r->read_failed = true;
	return -1;
}

/*
 * The reading side: merge the streams' messages in time order until every
 * stream ends, into batches for the other thread (r->pipe), else straight
 * to the callbacks.  Returns 0 at the end (the last batch handed over), -1
 * on bad input (said on r->err), or non-zero from the callbacks (one
 * thread) or hand_over when they stopped the reading.
 */
static int read_merged(struct tn_reader *r)
{
	/* Every stream's first packet is checked before any output, as babeltrace2 does. */
	for (size_t i = 0; i < r->nstreams; i++) {
		if (load_packet(r, r->streams[i]) != 0)
			return read_failed(r);
		r->heap[r->nheap++] = (struct tn_heap_slot){ .ns = r->streams[i]->ns, .s = r->streams[i] };
	}
	heap_build(r);
	while (r->nheap > 0) {
		struct tn_stream *s = r->heap[0].s;
		if (r->have_last && s->ns < r->last_ns) {
			tn_error(r, s->trace, s->name, s->pkt_off + (s->at_packet ? 32 : s->ev_off),
				 "time goes backwards (%" PRId64 " ns after %" PRId64 " ns)", s->ns, r->last_ns);
			return read_failed(r);
		}
		r->last_ns = s->ns;
		r->have_last = true;
		if (!r->pipe) {
			int rc = emit_message(r, s);
			if (rc != 0)
				return rc;
			if (r->progress && (++r->direct_messages & (TN_BATCH - 1)) == 0)
				r->progress_bytes = bytes_read(r);   /* as often as a batch's */
		} else {
			add_message(r, s);
			if (r->batch->n == TN_BATCH || r->batch_bytes >= TN_BATCH_BYTES) {
				int rc = hand_over(r);
				if (rc != 0)
					return rc;
			}
		}
		int more = next_message(r, s);
		if (more < 0)
			return read_failed(r);
		heap_top_moved(r, more);
	}
	return r->batch && r->batch->n > 0 ? hand_over(r) : 0;
}

static void *reading_thread(void *arg)
{
	struct tn_reader *r = arg;
	int rc = read_merged(r);
	struct tn_pipe *p = r->pipe;
	pthread_mutex_lock(&p->lock);
	p->finished = true;
	p->read_rc = rc;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	cli_text_thread_done();   /* its error messages' text (r->err holds the copy) */
	return NULL;
}

/* The delivering side of two threads: every batch handed over, in order.  0, or the callbacks' value. */
static int deliver_handed(struct tn_reader *r)
{
	struct tn_pipe *p = r->pipe;
	int rc = 0;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (p->delivered == p->handed && !p->finished)
			pthread_cond_wait(&p->changed, &p->lock);
		if (p->delivered == p->handed)
			break;   /* finished, and all of it delivered */
		const struct tn_batch *b = &p->slots[p->delivered % TN_PIPE_DEPTH];
		pthread_mutex_unlock(&p->lock);
		rc = deliver(r, b);
		pthread_mutex_lock(&p->lock);
		p->delivered++;
		p->stop = rc != 0;
		pthread_cond_broadcast(&p->changed);
		if (rc != 0)
			break;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/*
 * MARK_READER_TEXT_AHEAD: whether the reading thread writes the arguments'
 * text ahead (write_payload_texts): "always", "never", or by default when
 * the callbacks are behind.  For tests and measurements: the output is the
 * same bytes in every case.
 */
static void read_text_ahead(struct tn_reader *r)
{
	const char *v = secure_getenv("MARK_READER_TEXT_AHEAD");
	r->text_ahead = !v ? TEXT_AHEAD_BALANCED
		: strcmp(v, "always") == 0 ? TEXT_AHEAD_ALWAYS
		: strcmp(v, "never") == 0 ? TEXT_AHEAD_NEVER : TEXT_AHEAD_BALANCED;
}

/* Two threads unless MARK_READER_THREADS=1 or this process may run on one CPU only. */
static bool want_two_threads(void)
{
	const char *v = secure_getenv("MARK_READER_THREADS");
	if (v && *v)
		return strcmp(v, "1") != 0;
	cpu_set_t cpus;
	return sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) >= 2;
}

/*
 * Read and deliver everything, on two threads if wanted and possible.
 * Returns 0, the callbacks' value, or -1 (the error on r->err).
 */
static int read_and_deliver(struct tn_reader *r)
{
	struct tn_pipe *p = NULL;
	struct tn_rec *recs = NULL;
	if (want_two_threads() && (p = calloc(1, sizeof(*p))) &&
	    /* slot boundaries (TN_BATCH records, a multiple of 64 bytes) on cache-line boundaries */
	    !(recs = aligned_alloc(64, TN_PIPE_DEPTH * TN_BATCH * sizeof(*recs)))) {
		free(p);
		p = NULL;
	}
	if (p) {
		for (size_t i = 0; i < TN_PIPE_DEPTH; i++)
			p->slots[i].recs = recs + i * TN_BATCH;
		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->changed, NULL);
		r->pipe = p;
		r->batch = &p->slots[0];
		read_text_ahead(r);
		/* The reading thread takes no signal: they stay the program's main thread's. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_t thread;
		bool started = pthread_create(&thread, NULL, reading_thread, r) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		int rc = 0;
		if (started) {
			rc = deliver_handed(r);
			pthread_join(thread, NULL);
			if (rc != 0)
				r->read_failed = false;   /* stopped before that point: never reached */
			else
				rc = p->read_rc;
		}
		for (size_t i = 0; i < TN_PIPE_DEPTH; i++)
			strbuf_release(&p->slots[i].text);
		pthread_cond_destroy(&p->changed);
		pthread_mutex_destroy(&p->lock);
		free(recs);
		free(p);
		r->pipe = NULL;
		r->batch = NULL;
		if (started)
			return rc;
		/* no thread: read on this one (nothing was read yet) */
	}
	return read_merged(r);   /* no batches: the callbacks run as it reads */
}

int trace_native_read(char *const *paths, size_t n, const char *directory, const struct trace_reader_ops *ops,
		      void *arg)
{
	struct tn_reader r = { .directory = directory, .ntraces = n, .shown_traces = n, .ops = ops, .arg = arg };
	int rc = 0;
	if (!(r.traces = calloc(n ? n : 1, sizeof(*r.traces)))) {
		fprintf(stderr, "mark: out of memory reading %s\n", cli_text(directory));
		return -1;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		r.traces[i].path = paths[i];
		r.traces[i].index = i;
		rc = load_metadata(&r, &r.traces[i]);
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = open_streams(&r, &r.traces[i]);
	if (rc == 0 && !(r.heap = calloc(r.nstreams ? r.nstreams : 1, sizeof(*r.heap)))) {
		fprintf(stderr, "mark: out of memory reading %s\n", cli_text(directory));
		rc = -1;
	}
	if (rc != 0) {
		free_reader(&r);
		return rc;
	}
	if (ops->progress) {
		r.progress = true;
		r.tty = isatty(STDERR_FILENO);
		for (size_t i = 0; i < r.nstreams; i++)
			r.total_bytes += r.streams[i]->file_size;
		r.start_ns = r.drawn_ns = now_ns();
	}
	/* An error found while reading ahead is said after the messages before it (see tn_reader). */
	char *held = NULL;
	size_t held_len = 0;
	r.err = open_memstream(&held, &held_len);
	rc = read_and_deliver(&r);
	if (r.err)
		fclose(r.err);
	r.err = NULL;
	if (r.read_failed && held_len > 0) {
		if (r.progress && r.tty)
			fputs("\r\033[K", stderr);   /* not after the progress line */
		fwrite(held, 1, held_len, stderr);
	}
	free(held);
	if (r.progress)
		progress_draw(&r, true, rc == 0);
	free_reader(&r);
	return rc;
}

/* ---------------- following a recording in progress ---------------- */

/*
 * trace_native_follow(): `mark view --follow DIR`.
 *
 * What is safe to read: the consumer appends whole packets to a stream
 * file with one writev (header first, src/tracer/consumer.c emit_packet),
 * and the kernel extends a file's size only over bytes already copied in,
 * so a packet whose header we can read and whose packet_size bytes all lie
 * below the file's size is complete.  A shorter tail is a packet still
 * being written (or, after a crash, one recovery will cut off): we wait.
 * Every packet is then checked as load_packet() always does; one that is
 * bad ends that stream (said on stderr), never the others.
 *
 * Files and directories: DIR itself and every sub-directory of DIR (not
 * deeper, no dot names) that holds a `metadata` file is a trace: pid-P/ of
 * each process, pid-P.chunk-K/ of chunks.  A stream file is known by device
 * and inode, so one renamed from pid-P/ into a sealed chunk while we read
 * it is the same stream (our descriptor keeps reading it, even if
 * --max-size deletes the chunk later), never read twice.
 *
 * Metadata we refuse: the tracer writes `.metadata.tmp` and renames it over
 * `metadata` (src/tracer/metadata.c), so a `metadata` that is there is
 * whole.  No `metadata` yet is a process starting: looked for again next
 * round.  One there that load_metadata() refuses (a foreign CTF trace, or
 * a mark trace altered or damaged) never becomes readable, and waiting for
 * it hung follow for good (no trace loaded: the recording never "ends"),
 * so it ends the whole run, with exit status 1 and what to use instead.
 * Following the other traces without it was the alternative; it is not
 * done because the output would then lack that trace's events and look
 * complete.  Found in the first round (a finished trace, or one started
 * before follow), nothing is printed; found later (a process that starts
 * meanwhile), what was printed stays and follow stops there.
 *
 * Order: within a stream, as written.  Across streams, the message with
 * the least time is handed out once it is older than `holdback` before the
 * wall clock (the trace's clock is wall-clock time, docs/tracer.md
 * "Clock"): a live stream's next packet is written within about 10 ms of
 * its events (the consumer's period), so any event recorded before it has
 * reached a file by then, unless its process was not scheduled for longer
 * than the hold-back.  Such a late event is printed when it arrives, out of
 * order, and counted (*fo->late).  When the recording has ended, the rest
 * is handed out in order at once.
 *
 * The end: every process's trace (DIR/pid-P/, its .mark-stats) says stopped
 * or recovered, or its process is gone (killed: `mark recover` completes
 * it); or *fo->stop (SIGINT).
 */
struct fl_state {
	struct tn_trace **traces;    /* each malloc'd: streams point at them     */
	size_t cap;
	struct fl_dir { dev_t dev; ino_t ino; } *tdirs;   /* per trace            */
	struct fl_file { dev_t dev; ino_t ino; } *files;  /* per stream           */
	size_t files_cap;
	bool *dead;                  /* per stream: bad input, not read any more */
	size_t dead_cap;
	/* Stream files read to their end and closed (fl_retire_streams) that
	 * are still linked somewhere below DIR (a kept chunk): not read again
	 * when a listing finds them.  Size and mtime tell a new file that was
	 * given the inode of one since deleted from the one we read. */
	struct fl_gone { dev_t dev; ino_t ino; off_t size; struct timespec mtime; } *gone;
	size_t ngone, gone_cap;
	bool failed;
	bool link_warned;            /* a stream file that is a link: said once  */
};

/* Larger than any packet the tracer writes (at most a buffer, <= 4 GiB). */
#define FOLLOW_MAX_PACKET (UINT64_C(4) << 30)

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * An open (or listing) of follow's failed with err, for `path` (a trace's
 * directory, DIR, or a directory of DIR) and `name` in it (NULL: the
 * directory itself).  True: the caller goes on without it; false: said,
 * f->failed set (follow stops, exit status 1).
 *
 * Gone is what the recording does while we read: ENOENT (a stream file
 * renamed into a sealed chunk, found there by the next listing; a chunk
 * --max-size deleted; a metadata not written yet), and ENOTDIR or ELOOP,
 * the name no longer being what the listing found (a directory or file
 * replaced by another kind of file or by a link, which the next listing
 * sees as such: a link inside a trace is said there).  Every other error
 * says nothing about the file and leaves its events unread: EMFILE
 * (follow holds a descriptor per stream file being written), ENFILE,
 * ENOMEM, EACCES.  Taking those for "renamed meanwhile" left that file's
 * events out in silence, and follow ended "the recording ended" with exit
 * status 0.  Follow stops instead, as for a trace it cannot read (see
 * fl_state): going on would print a merge that lacks those events and
 * looks complete.
 *
 * `known`: path is a trace (or DIR itself).  A directory of DIR that
 * cannot be opened for want of permission is not known to be a trace and
 * is passed over, as `mark view` passes it over (lost+found, someone
 * else's directory); for want of resources it may be one, and is said.
 */
static bool fl_open_gone(struct fl_state *f, const char *path, const char *name, int err, bool known)
{
	if (err == ENOENT || err == ENOTDIR || err == ELOOP)
		return true;
	const bool resources = err == EMFILE || err == ENFILE || err == ENOMEM;
	if (!known && !resources)
		return true;
	char todo[160];
	open_remedy(err, "follow holds a descriptor for each stream file being written", todo, sizeof(todo));
	fprintf(stderr, "mark: view --follow: cannot open %s%s%s: %s; its events are not shown, and follow stops "
			"here rather than go on without them (what it printed is whole and in order up to this "
			"point): %s\n",
		cli_text(path), name ? "/" : "", name ? cli_text(name) : "", strerror(err), todo);
	f->failed = true;
	return false;
}

/* Is there an entry `metadata` in the trace directory at path (not through a link)? */
static bool fl_metadata_present(const char *directory, const char *path)
{
	int fd = trace_dir_open(directory, path);
	if (fd < 0)
		return false;   /* the directory is gone (a deleted chunk) */
	struct stat st;
	bool present = fstatat(fd, MARK_TF_METADATA, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(fd);
	return present;
}

/*
 * A directory of DIR holding a mark trace: add it if we do not know it yet.
 * One we know found under another name was renamed: the image of a process
 * that executes itself sets its unfinished DIR/pid-P/ aside as
 * DIR/pid-P.K/ (src/tracer/session.c keep_unfinished_trace), completes it
 * there, and starts a new DIR/pid-P/.  The trace keeps its identity (the
 * directory's device and inode) and takes the new name, which its later
 * looks for streams and metadata use; the old name is another trace now.
 */
static void fl_add_trace(struct tn_reader *r, struct fl_state *f, const char *directory, const char *name,
			 const struct stat *st)
{
	for (size_t i = 0; i < r->ntraces; i++) {
		if (f->tdirs[i].dev != st->st_dev || f->tdirs[i].ino != st->st_ino)
			continue;
		struct tn_trace *t = f->traces[i];
		char *path;
		if (asprintf(&path, "%s%s%s", directory, *name ? "/" : "", name) < 0)
			return;   /* kept under its old name, which fl_add_streams checks */
		if (strcmp(path, t->path) == 0) {
			free(path);
		} else {
			free(t->path);
			t->path = path;
		}
		return;
	}
	struct tn_trace *t = calloc(1, sizeof(*t));
	if (!t || asprintf(&t->path, "%s%s%s", directory, *name ? "/" : "", name) < 0) {
		free(t);
		return;
	}
	t->index = r->ntraces;
	int open_err;
	int lr = load_metadata_opened(r, t, &open_err);
	if (lr != 0) {
		/* No `metadata` any more (a chunk --max-size deletes): not an error; see fl_state's comment. */
		if (lr == TRACE_NATIVE_NOT_MINE && open_err) {
			fl_open_gone(f, t->path, MARK_TF_METADATA, open_err, true);
		} else if (lr == TRACE_NATIVE_NOT_MINE && fl_metadata_present(directory, t->path)) {
			fprintf(stderr,
				"mark: view --follow: %s/%s: not a trace mark wrote, or its metadata is damaged; "
				"--follow reads only mark's own traces: use `mark view %s`\n",
				cli_text(t->path), MARK_TF_METADATA, cli_text(directory));
			f->failed = true;
		} else if (lr != TRACE_NATIVE_NOT_MINE) {
			f->failed = true;   /* said (out of memory): retrying would say it every round */
		}
		free_trace_contents(t);
		free(t->path);
		free(t);
		return;
	}
	if (r->ntraces == f->cap) {
		size_t cap = f->cap;
		if (cli_array_grow(&f->traces, &cap, sizeof(*f->traces), 8) ||
		    cli_array_grow(&f->tdirs, &f->cap, sizeof(*f->tdirs), 8)) {
			fprintf(stderr, "mark: out of memory following %s\n", cli_text(directory));
			f->failed = true;
			return;   /* t leaks: we are about to stop */
		}
	}
	f->traces[r->ntraces] = t;
	f->tdirs[r->ntraces] = (struct fl_dir){ st->st_dev, st->st_ino };
	r->ntraces++;
}

/* Is the trace at path a sealed chunk, DIR/pid-P.chunk-K (src/tracer/chunks.c)? */
static bool fl_is_chunk(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const size_t np = strlen(MARK_TF_CHILD_PREFIX), ni = strlen(MARK_TF_CHUNK_INFIX);
	if (strncmp(base, MARK_TF_CHILD_PREFIX, np) != 0)
		return false;
	const char *p = base + np;
	size_t digits = strspn(p, "0123456789");
	if (!digits || strncmp(p + digits, MARK_TF_CHUNK_INFIX, ni) != 0)
		return false;
	p += digits + ni;
	digits = strspn(p, "0123456789");
	return digits > 0 && !p[digits];
}

/* New stream files of trace t (opened relative to its directory, never through a link). */
static void fl_add_streams(struct tn_reader *r, struct fl_state *f, struct tn_trace *t)
{
	int dfd = trace_dir_open(r->directory, t->path);
	/*
	 * Only t's own directory: the one at t's path may be another trace's
	 * now (DIR/pid-P/ of a process's next image, fl_add_trace), whose
	 * stream files read with t's metadata were "packets of another
	 * trace": an error, and that image's events never shown.  Looked for
	 * again next round, under the name discovery finds it by.
	 */
	if (dfd < 0) {
		fl_open_gone(f, t->path, NULL, errno, true);
		return;   /* deleted (--max-size) or moved: its streams we opened read on */
	}
	struct stat ds;
	if (fstat(dfd, &ds) != 0 || ds.st_dev != f->tdirs[t->index].dev || ds.st_ino != f->tdirs[t->index].ino) {
		close(dfd);
		return;
	}
	DIR *d = dir_listing(dfd);
	if (!d) {
		fl_open_gone(f, t->path, NULL, errno, true);
		close(dfd);
		return;
	}
	/*
	 * Which of t's open streams the tracer will not write any more
	 * (fl_retire_streams): every file of a sealed chunk (cut_chunk renames
	 * a stream file into it once written, and never writes it again), and
	 * a file no longer in t's directory under its name: renamed into a
	 * chunk, after the consumer's last write to it (the same thread, in
	 * that order), or deleted.  What the file holds now is then all it
	 * will ever hold.
	 */
	const bool sealed_dir = fl_is_chunk(t->path);
	for (size_t i = 0; i < r->nstreams; i++) {
		struct tn_stream *s = r->streams[i];
		struct stat ss;
		if (s->trace == t && !s->sealed &&
		    (sealed_dir || fstatat(dfd, s->name, &ss, AT_SYMLINK_NOFOLLOW) != 0 ||
		     ss.st_dev != f->files[i].dev || ss.st_ino != f->files[i].ino))
			s->sealed = true;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, MARK_TF_METADATA) == 0)
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISLNK(st.st_mode) && !f->link_warned) {
			/* Not read through (it could point at any file), and not in silence. */
			f->link_warned = true;
			fprintf(stderr, "mark: view --follow: %s/%s is a symbolic link: not read (mark reads no link "
					"inside a trace); its events are not shown\n",
				cli_text(t->path), cli_text(de->d_name));
		}
		if (!S_ISREG(st.st_mode))
			continue;
		bool known = false;
		for (size_t i = 0; i < r->nstreams && !known; i++)
			known = f->files[i].dev == st.st_dev && f->files[i].ino == st.st_ino;
		for (size_t i = 0; i < f->ngone && !known; i++)
			known = f->gone[i].dev == st.st_dev && f->gone[i].ino == st.st_ino &&
				f->gone[i].size == st.st_size && f->gone[i].mtime.tv_sec == st.st_mtim.tv_sec &&
				f->gone[i].mtime.tv_nsec == st.st_mtim.tv_nsec;
		if (known)
			continue;
		int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		struct stat fst;
		if (fd < 0) {
			if (fl_open_gone(f, t->path, de->d_name, errno, true))
				continue;   /* renamed into a chunk meanwhile: found there */
			break;
		}
		if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
			close(fd);
			continue;
		}
		struct tn_stream *s = calloc(1, sizeof(*s));
		if (!s || !(s->name = strdup(de->d_name)) ||
		    (r->nstreams == r->cap && (cli_array_grow(&r->heap, &(size_t){ r->cap }, sizeof(*r->heap), 16) ||
					      cli_array_grow(&f->files, &(size_t){ r->cap }, sizeof(*f->files), 16) ||
					      cli_array_grow(&f->dead, &(size_t){ r->cap }, sizeof(*f->dead), 16) ||
					      cli_array_grow(&r->streams, &r->cap, sizeof(*r->streams), 16)))) {
			fprintf(stderr, "mark: out of memory following %s\n", cli_text(r->directory));
			if (s)
				free(s->name);
			free(s);
			close(fd);
			f->failed = true;
			break;
		}
		s->trace = t;
		s->fd = fd;
		s->sealed = sealed_dir;
		f->files[r->nstreams] = (struct fl_file){ st.st_dev, st.st_ino };
		f->dead[r->nstreams] = false;
		r->streams[r->nstreams++] = s;
	}
	closedir(d);
	close(dfd);
}

bool trace_is_snapshot_dir(const char *name)
{
	size_t n = strlen(MARK_TF_SNAPSHOT_PREFIX);
	if (strncmp(name, MARK_TF_SNAPSHOT_PREFIX, n) != 0 || !name[n])
		return false;
	return strspn(name + n, "0123456789") == strlen(name + n);
}

bool trace_walk(int dfd, bool self, int levels, char *rel, size_t cap, size_t used,
		bool (*found)(void *ctx, const char *rel), void *ctx)
{
	struct stat st;
	if (self && fstatat(dfd, MARK_TF_METADATA, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		rel[used] = '\0';
		if (found(ctx, rel))
			return true;
	}
	if (levels <= 0)
		return false;
	DIR *d = dir_listing(dfd);
	if (!d)
		return false;
	bool stopped = false;
	struct dirent *de;
	while (!stopped && (de = readdir(d))) {
		if (de->d_name[0] == '.' || trace_is_snapshot_dir(de->d_name))
			continue;
		/* Whatever the entry is now: a directory opened without following
		 * a link, or nothing (ENOTDIR, ELOOP). */
		int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		size_t n = strlen(de->d_name);
		size_t at = used ? used + 1 : 0;
		if (at + n < cap) {   /* room for the name and the terminator */
			if (used)
				rel[used] = '/';
			memcpy(rel + at, de->d_name, n);
			stopped = trace_walk(sub, true, levels - 1, rel, cap, at + n, found, ctx);
		}
		close(sub);
	}
	closedir(d);
	rel[used] = '\0';
	return stopped;
}

int trace_dir_open(const char *directory, const char *path)
{
	size_t n = strlen(directory);
	if (strncmp(path, directory, n) != 0 || (path[n] != '\0' && path[n] != '/' && (n == 0 || path[n - 1] != '/'))) {
		errno = EINVAL;
		return -1;
	}
	int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (const char *p = path + n; fd >= 0 && *p;) {
		if (*p == '/') {
			p++;
			continue;
		}
		size_t len = strcspn(p, "/");
		char name[NAME_MAX + 1];
		if (len > NAME_MAX || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
			close(fd);
			errno = EINVAL;
			return -1;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int err = errno;
		close(fd);
		errno = err;
		fd = sub;
		p += len;
	}
	return fd;
}

/* Follow's trace_walk(): the first nested trace's `metadata`, into ctx. */
struct fl_nested {
	char *at;
	size_t len;
};

static bool fl_nested_found(void *ctx, const char *rel)
{
	struct fl_nested *n = ctx;
	snprintf(n->at, n->len, "%s/%s", rel, MARK_TF_METADATA);
	return true;
}

/*
 * A trace below the directory dfd other than dfd itself, at most `depth`
 * levels down: the path of its `metadata` relative to dfd goes to `at`.
 * Follow reads DIR and DIR/<name>/ only, where mark records; a trace
 * nested deeper (babeltrace2 and `mark view` read those) must not make it
 * wait for ever in silence.
 */
static bool fl_nested_metadata(int dfd, int depth, char *at, size_t len)
{
	char rel[PATH_MAX];
	struct fl_nested n = { at, len };
	return trace_walk(dfd, false, depth, rel, sizeof(rel), 0, fl_nested_found, &n);
}

static void fl_discover(struct tn_reader *r, struct fl_state *f, const char *directory)
{
	int dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : dir_listing(dfd);
	if (!d) {
		fl_open_gone(f, directory, NULL, errno, true);
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct stat st;
	if (faccessat(dfd, MARK_TF_METADATA, F_OK, AT_SYMLINK_NOFOLLOW) == 0 && fstat(dfd, &st) == 0)
		fl_add_trace(r, f, directory, "", &st);
	struct dirent *de;
	while ((de = readdir(d)) && !f->failed) {
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
			continue;
		int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			fl_open_gone(f, directory, de->d_name, errno, false);
			continue;
		}
		char nested[1024];
		if (faccessat(sub, MARK_TF_METADATA, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			fl_add_trace(r, f, directory, de->d_name, &st);
		} else if (!trace_is_snapshot_dir(de->d_name) && fl_nested_metadata(sub, 7, nested, sizeof(nested))) {
			/* 8 levels in all, as the other readers look (trace_reader.c find_traces) */
			fprintf(stderr,
				"mark: view --follow: %s/%s/%s: a trace nested below %s/*/; --follow reads only the "
				"traces in the directory and its sub-directories, where mark records: use `mark view %s`\n",
				cli_text(directory), cli_text(de->d_name), cli_text(nested), cli_text(directory),
				cli_text(directory));
			f->failed = true;
		}
		close(sub);
	}
	closedir(d);
	close(dfd);
	for (size_t i = 0; i < r->ntraces && !f->failed; i++)
		fl_add_streams(r, f, f->traces[i]);
}

/*
 * Load the stream's next packet if it is whole in the file.  1: s has a
 * next message; 0: nothing complete yet; -1: bad input (printed).
 */
static int fl_poll_stream(struct tn_reader *r, struct tn_stream *s)
{
	struct stat st;
	if (fstat(s->fd, &st) != 0)
		return 0;
	uint64_t size = (uint64_t)st.st_size;
	const unsigned hb = s->trace->pkt_header;
	uint8_t h[PKT_HEADER];
	if (size < s->pkt_off || size - s->pkt_off < hb || !read_at(s->fd, h, hb, s->pkt_off))
		return 0;
	if (s->pkt_off == 0)
		s->instance_id = le64(h + 24);   /* load_packet checks every later packet against it */
	uint64_t bytes = le64(h + 56) / 8;
	/*
	 * The header is written first, whole: a bad magic or an impossible
	 * size is bad data now, not a packet in progress (load_packet says
	 * which).  Otherwise a packet not yet all in the file is in progress.
	 */
	bool sane = le32(h) == MARK_TF_CTF_MAGIC && bytes >= hb && bytes <= FOLLOW_MAX_PACKET;
	if (sane && size - s->pkt_off < bytes)
		return 0;
	s->file_size = size;
	return load_packet(r, s) == 0 ? 1 : -1;   /* a packet beginning: its events follow from next_message() */
}

/*
 * Close the streams that are read to their end and will not grow (sealed,
 * and not in the merge: every whole packet was handed out), and those whose
 * bad input ended them once they are sealed.  Follow otherwise held a
 * descriptor for every stream file it ever read: under --rotate a new one
 * per thread and chunk, until the open of the next failed (EMFILE) and
 * that file's events were left out in silence; and the files of chunks
 * --max-size deleted kept their disk space while follow ran.  A closed
 * file still linked (a kept chunk) is remembered in f->gone so that the
 * chunk's listing does not read it again.
 */
static void fl_retire_streams(struct tn_reader *r, struct fl_state *f)
{
	for (size_t i = r->nstreams; i-- > 0;) {
		struct tn_stream *s = r->streams[i];
		bool queued = false;
		for (size_t k = 0; k < r->nheap && !queued; k++)
			queued = r->heap[k].s == s;
		struct stat st;
		if (queued || fstat(s->fd, &st) != 0)
			continue;
		if (st.st_nlink == 0)
			s->sealed = true;   /* deleted: nobody can write it again */
		if (!s->sealed || (!f->dead[i] && (uint64_t)st.st_size != s->pkt_off))
			continue;   /* may grow, or holds more than was read (a partial packet: said at the end) */
		if (st.st_nlink > 0) {
			size_t g = 0;
			while (g < f->ngone && (f->gone[g].dev != st.st_dev || f->gone[g].ino != st.st_ino))
				g++;
			if (g == f->ngone && f->ngone == f->gone_cap &&
			    cli_array_grow(&f->gone, &f->gone_cap, sizeof(*f->gone), 16))
				continue;   /* out of memory: kept open, as before */
			if (g == f->ngone)
				f->ngone++;
			f->gone[g] = (struct fl_gone){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
		}
		free_stream(s);   /* one thread: every message of it was delivered (emit_message) */
		r->nstreams--;
		r->streams[i] = r->streams[r->nstreams];
		f->files[i] = f->files[r->nstreams];
		f->dead[i] = f->dead[r->nstreams];
	}
}

/* Insert s into the heap of streams with a next message. */
static void heap_push(struct tn_reader *r, struct tn_stream *s)
{
	size_t i = r->nheap++;
	r->heap[i] = (struct tn_heap_slot){ .ns = s->ns, .s = s };
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!slot_before(&r->heap[i], &r->heap[up]))
			break;
		struct tn_heap_slot tmp = r->heap[i];
		r->heap[i] = r->heap[up];
		r->heap[up] = tmp;
		i = up;
	}
}

/* Has every process's recording ended?  (At least one trace must exist.) */
static bool fl_recording_ended(const struct tn_reader *r, const struct fl_state *f,
			       const struct trace_follow_opts *fo)
{
	size_t live = 0;
	for (size_t i = 0; i < r->ntraces; i++) {
		const struct tn_trace *t = f->traces[i];
		const char *base = strrchr(t->path, '/');
		base = base ? base + 1 : t->path;
		/* Sealed chunks (pid-P.chunk-K) and exec'd images (pid-P.K) are finished by definition. */
		char *end;
		if (strncmp(base, MARK_TF_CHILD_PREFIX, strlen(MARK_TF_CHILD_PREFIX)) != 0)
			continue;
		long pid = strtol(base + strlen(MARK_TF_CHILD_PREFIX), &end, 10);
		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		live++;
		int done = fo->finished(t->path);
		if (done > 0)
			continue;   /* stopped or recovered */
		/*
		 * Running, or no statistics (done < 0): a process whose recording
		 * is starting, if it runs.  One that is gone will never write them
		 * (a finished trace copied without its dot files, or a process
		 * killed before its first statistics): waiting for them hung
		 * follow for good.
		 */
		if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
			return false;   /* still running (a reused pid reads as running: we wait) */
	}
	return live > 0 || r->ntraces > 0;
}

int trace_native_follow(const char *directory, const struct trace_reader_ops *ops, void *arg,
			const struct trace_follow_opts *fo)
{
	struct tn_reader r = { .directory = directory, .follow = true, .shown_traces = 2, .ops = ops, .arg = arg };
	struct fl_state f = { 0 };
	int rc = 0;
	bool ending = false;
	int64_t last_shown = INT64_MIN;
	for (;;) {
		bool stop = fo->stop && *fo->stop;
		/* Read the end state before the last look at the files: what was written before it is then seen. */
		bool ended = stop || fl_recording_ended(&r, &f, fo);
		fl_discover(&r, &f, directory);
		if (f.failed) {
			rc = -1;
			break;
		}
		for (size_t i = 0; i < r.nstreams; i++) {
			struct tn_stream *s = r.streams[i];
			bool queued = false;
			for (size_t k = 0; k < r.nheap && !queued; k++)
				queued = r.heap[k].s == s;
			if (queued || f.dead[i])
				continue;
			int got = fl_poll_stream(&r, s);
			if (got < 0) {
				f.dead[i] = true;
				rc = 1;
			} else if (got > 0) {
				heap_push(&r, s);
			}
		}
		const int64_t release = ended ? INT64_MAX : realtime_ns() - fo->holdback_ns;
		while (r.nheap > 0 && r.heap[0].ns <= release) {
			struct tn_stream *s = r.heap[0].s;
			if (!s->at_packet && s->ns < last_shown && fo->late)
				(*fo->late)++;
			if (!s->at_packet && s->ns > last_shown)
				last_shown = s->ns;
			int e = emit_message(&r, s);
			if (e != 0) {
				rc = e;
				goto done;
			}
			int more = next_message(&r, s);
			/* The packet is done: its next one, if whole already, keeps the stream in the merge. */
			if (more == 0)
				more = fl_poll_stream(&r, s);
			if (more <= 0) {
				if (more < 0) {
					for (size_t i = 0; i < r.nstreams; i++)
						if (r.streams[i] == s)
							f.dead[i] = true;
					rc = 1;
				}
			}
			heap_top_moved(&r, more);
		}
		fl_retire_streams(&r, &f);
		if (fo->flush && fo->flush(arg) != 0)
			break;   /* stdout closed */
		if (ended && ending)
			break;   /* a whole round after the end was seen: nothing more can come */
		ending = ended;
		if (!ended) {
			struct timespec nap = { 0, 100 * 1000000 };   /* a poll period, not synchronisation */
			nanosleep(&nap, NULL);
		}
	}
	/* What a stream still holds beyond its last whole packet was never shown: say so. */
	for (size_t i = 0; rc == 0 && i < r.nstreams; i++) {
		struct tn_stream *s = r.streams[i];
		struct stat st;
		if (!f.dead[i] && fstat(s->fd, &st) == 0 && (uint64_t)st.st_size > s->pkt_off)
			fprintf(stderr, "mark: follow: %s/%s ends in %" PRIu64 " bytes of a packet that was not "
				"finished; its events are not shown\n", cli_text(s->trace->path), cli_text(s->name),
				(uint64_t)st.st_size - s->pkt_off);
	}
done:
	if (fo->traces)
		*fo->traces = r.ntraces;
	free(f.files);
	free(f.dead);
	free(f.gone);
	free(f.tdirs);
	/* free_reader frees an array of traces: ours are separate allocations. */
	for (size_t i = 0; i < r.ntraces; i++) {
		struct tn_trace *t = f.traces[i];
		free_trace_contents(t);
		free(t->path);
		free(t);
	}
	free(f.traces);
	r.ntraces = 0;
	free_reader(&r);
	return rc;
}

/* ---------------- values ---------------- */

size_t trace_native_payload_count(const struct trace_native_event *ev)
{
	return ev->cls->nfields;
}

bool trace_native_has_field(const struct trace_native_event *ev, const char *name)
{
	for (unsigned i = 0; i < ev->cls->nfields; i++)
		if (strcmp(ev->cls->fields[i].name, name) == 0)
			return true;
	return false;
}

const char **trace_native_class_names(const struct trace_native_event *ev, size_t *count)
{
	size_t n = 0;
	for (size_t id = 0; id <= MARK_TF_MAX_ID; id++)
		n += ev->trace->classes[id] != NULL;
	const char **names = malloc((n ? n : 1) * sizeof(*names));
	*count = 0;
	if (!names)
		return NULL;
	for (size_t id = 0; id <= MARK_TF_MAX_ID; id++)
		if (ev->trace->classes[id])
			names[(*count)++] = ev->trace->classes[id]->name;
	return names;
}

/* p rounded up to the next 8-byte boundary from the event's start, base:
 * where an integer or double field starts. */
static inline const uint8_t *align8(const uint8_t *base, const uint8_t *p)
{
	return base + (((uint64_t)(p - base) + 7) & ~(uint64_t)7);
}

/* The integer or double field f whose bytes start at p (aligned), as 64
 * bits: a signed integer sign-extended, a double's bits as they are. */
static uint64_t number_at(const struct tn_field *f, const uint8_t *p)
{
	/* A load of the field's own size: a memcpy of f->bytes into a
	 * uint64_t went through the stack, and reading the whole word back
	 * after a narrower store stalled store-to-load forwarding (a third of
	 * this function's time in `mark view`).  bytes is 1, 2, 4 or 8. */
	uint64_t v;
	switch (f->bytes) {
	case 1: v = p[0]; break;
	case 2: v = le16(p); break;
	case 4: v = le32(p); break;
	default: v = le64(p); break;
	}
	if (f->kind == TN_SINT && f->bytes < 8 && (v >> (f->bytes * 8 - 1)) & 1)
		v |= ~UINT64_C(0) << (f->bytes * 8);
	return v;
}

/*
 * Append the value of field k->fields[i], which starts at or after p (an
 * integer or double at the next 8-byte boundary from the event's start,
 * base); returns the position after it.  Offsets as next_message() checked
 * them: every field is inside the event.
 */
static const uint8_t *append_field_value(struct strbuf *sb, const struct tn_field *f, const uint8_t *base,
					 const uint8_t *p, enum trace_value_style style)
{
	if (f->kind == TN_STRING) {
		const char *text = (const char *)p + 1;
		if (f->tagged && p[0] == MARK_TF_STRING_NULL)
			trace_value_append_null(sb, style);
		else if (f->tagged && p[0] == MARK_TF_STRING_CUT)
			trace_value_append_cut_string(sb, text, style);
		else
			trace_value_append_string(sb, text, style);
		return p + 1 + strlen(text) + 1;
	}
	p = align8(base, p);
	const uint64_t v = number_at(f, p);
	switch (f->kind) {
	case TN_REAL: {
		double d;
		memcpy(&d, &v, sizeof(d));
		trace_value_append_real(sb, d, style);
		break;
	}
	case TN_CHAR:
		trace_value_append_char(sb, (unsigned char)v, style);
		break;
	case TN_SINT:
		trace_value_append_integer(sb, v, true, f->base, style);
		break;
	default:
		trace_value_append_integer(sb, v, false, f->base, style);
		break;
	}
	return p + f->bytes;
}

/* The position after field f, which starts at or after p (as append_field_value). */
static const uint8_t *skip_field(const struct tn_field *f, const uint8_t *base, const uint8_t *p)
{
	if (f->kind == TN_STRING)
		return p + 1 + strlen((const char *)p + 1) + 1;
	return align8(base, p) + f->bytes;
}

/*
 * The event's field called `name`, or NULL; *at is where its value starts
 * (a string's length byte, a number's first byte, aligned).  The walk of
 * trace_native_payload_append(): offsets as next_message() checked them.
 */
static const struct tn_field *find_field(const struct trace_native_event *ev, const char *name, const uint8_t **at)
{
	const struct tn_class *k = ev->cls;
	const uint8_t *base = ev->payload - 16, *p = ev->payload;
	for (unsigned i = 0; i < k->nfields; i++) {
		const struct tn_field *f = &k->fields[i];
		if (strcmp(f->name, name) == 0) {
			*at = f->kind == TN_STRING ? p : align8(base, p);
			return f;
		}
		p = skip_field(f, base, p);
	}
	return NULL;
}

bool trace_native_field_append(struct strbuf *sb, const struct trace_native_event *ev, const char *name,
			       enum trace_value_style style)
{
	const uint8_t *at;
	const struct tn_field *f = find_field(ev, name, &at);
	if (f)
		append_field_value(sb, f, ev->payload - 16, at, style);
	return f != NULL;
}

bool trace_native_field_key(struct strbuf *sb, const struct trace_native_event *ev, const char *name)
{
	const uint8_t *at;
	const struct tn_field *f = find_field(ev, name, &at);
	if (!f)
		return false;
	/* the kind first, so a string never equals a number's bytes */
	char tag = (char)('a' + f->kind);
	strbuf_add(sb, &tag, 1);
	if (f->kind == TN_STRING) {
		/* NULL and a cut string: a NUL and a letter after the text,
		 * which no text holds (so NULL is not "", nor "(null)") */
		strbuf_add(sb, (const char *)at + 1, strlen((const char *)at + 1));
		if (f->tagged && at[0] == MARK_TF_STRING_NULL)
			strbuf_add(sb, "\0n", 2);
		else if (f->tagged && at[0] == MARK_TF_STRING_CUT)
			strbuf_add(sb, "\0c", 2);
	} else
		strbuf_add(sb, (const char *)at, f->bytes);
	return true;
}

bool trace_native_filter_pass(const struct trace_native_event *ev, const struct mark_filter *f)
{
	if (ev->filtered == f)
		return ev->passed;
	struct mark_filter_value vals[MARK_FILTER_MAX_FIELDS];
	for (unsigned k = 0; k < mark_filter_nfields(f); k++)
		if (!trace_native_field_value(ev, mark_filter_field(f, k), &vals[k]))
			return false;   /* as in the probe: no such field, not shown */
	return mark_filter_eval(f, vals);
}

bool trace_native_field_value(const struct trace_native_event *ev, const char *name,
			      struct mark_filter_value *out)
{
	const uint8_t *at;
	const struct tn_field *f = find_field(ev, name, &at);
	if (!f)
		return false;
	if (f->kind == TN_STRING) {
		/* a NULL as the probe's filter judges it (filter_probe.c) */
		out->type = MARK_FILTER_STRING;
		out->str.s = f->tagged && at[0] == MARK_TF_STRING_NULL ? "(null)" : (const char *)at + 1;
		out->str.len = strlen(out->str.s);
		return true;
	}
	const uint64_t v = number_at(f, at);
	if (f->kind == TN_REAL) {
		out->type = MARK_FILTER_DOUBLE;
		memcpy(&out->d, &v, sizeof(out->d));
	} else if (f->kind == TN_SINT) {
		out->type = MARK_FILTER_INT;
		out->i = (int64_t)v;
	} else {
		out->type = MARK_FILTER_UINT;
		out->u = v;
	}
	return true;
}

void trace_native_payload_append(struct strbuf *sb, const struct trace_native_event *ev,
				 enum trace_value_style style)
{
	if (ev->text && style == ev->text_style) {
		strbuf_add(sb, ev->text, ev->text_len);   /* written ahead: write_payload_texts() */
		return;
	}
	const bool json = style == TRACE_VALUE_JSON, otlp = style == TRACE_VALUE_OTLP;
	const struct tn_class *k = ev->cls;
	const uint8_t *base = ev->payload - 16, *p = ev->payload;
	if (json)
		strbuf_add_lit(sb, "{");
	else if (otlp)
		strbuf_add_lit(sb, "[");
	for (unsigned i = 0; i < k->nfields; i++) {
		const struct tn_field *f = &k->fields[i];
		if (otlp) {
			/* a KeyValue; names are [A-Za-z0-9_]+ (ident()): a JSON string as they are */
			if (i)
				strbuf_add_lit(sb, ", ");
			strbuf_add_lit(sb, "{\"key\": \"");
			strbuf_add(sb, f->name, f->name_len);
			strbuf_add_lit(sb, "\", \"value\": ");
		} else if (json) {
			/* names are [A-Za-z0-9_]+ (ident()): a JSON string as they are */
			if (i)
				strbuf_add_lit(sb, ", ");
			strbuf_add_lit(sb, "\"");
			strbuf_add(sb, f->name, f->name_len);
			strbuf_add_lit(sb, "\": ");
		} else if (f->text_key) {
			/* names are [A-Za-z0-9_]+ (ident()): nothing to escape */
			strbuf_add_padded(sb, f->text_key + (i == 0), f->name_len + 2 - (i == 0));
		} else {
			if (i)
				strbuf_add_lit(sb, " ");
			strbuf_add(sb, f->name, f->name_len);
			strbuf_add_lit(sb, "=");
		}
		p = append_field_value(sb, f, base, p, style);
		if (otlp)
			strbuf_add_lit(sb, "}");
	}
	if (json)
		strbuf_add_lit(sb, "}");
	else if (otlp)
		strbuf_add_lit(sb, "]");
}

void trace_native_args_each(const struct trace_native_event *ev, void (*fn)(const struct trace_arg *a, void *ctx),
			    void *ctx)
{
	const struct tn_class *k = ev->cls;
	const uint8_t *base = ev->payload - 16, *p = ev->payload;
	for (unsigned i = 0; i < k->nfields; i++) {
		const struct tn_field *f = &k->fields[i];
		struct trace_arg a = { .name = f->name };
		if (f->kind == TN_STRING && f->tagged && p[0] == MARK_TF_STRING_NULL) {
			a.type = TRACE_ARG_TEXT;   /* JSON null, as the libbabeltrace2 reader gives it */
			a.s = "null";
		} else if (f->kind == TN_STRING) {
			a.type = TRACE_ARG_STRING;
			a.s = (const char *)p + 1;
		} else {
			const uint64_t v = number_at(f, align8(base, p));
			a.u = v;
			switch (f->kind) {
			case TN_REAL:
				a.type = TRACE_ARG_DOUBLE;
				memcpy(&a.d, &v, sizeof(a.d));
				break;
			case TN_CHAR: a.type = TRACE_ARG_CHAR; break;
			case TN_SINT:
				a.type = TRACE_ARG_INT;
				a.i = (int64_t)v;
				break;
			default: a.type = f->base != 10 ? TRACE_ARG_HEX : TRACE_ARG_UINT; break;
			}
		}
		fn(&a, ctx);
		p = skip_field(f, base, p);
	}
}

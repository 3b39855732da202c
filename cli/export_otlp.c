/*
 * `mark export --format otlp`: OpenTelemetry spans and log records in
 * OTLP/JSON (the protobuf JSON mapping with OTLP's exceptions: trace and
 * span ids as lowercase hex, enums as integers, 64-bit integers as
 * decimal strings, lowerCamelCase names).  See docs/export.md for the
 * mapping; in short:
 *
 *   - a begin/end pair (cli/pairs.h) is a span named after the pair, its
 *     parent the pair open around it on the same thread; the begin's
 *     arguments are its attributes, the end's (if any) one span event;
 *   - every other event is a log record (body: the marker name,
 *     attributes: its arguments) carrying the trace and span id of the
 *     innermost span open on its thread;
 *   - one resource per traced process (service.name, process.pid), and
 *     thread.id on every span and log record, and thread.name when the
 *     trace records it (the thread's name at its latest event).
 *
 * Ids are deterministic: a span's id hashes its process (pid, name, first
 * event time), its thread, its start time and its position among the
 * thread's begins; a root span starts a trace whose id hashes its span id,
 * and the spans nested in it share that trace.  Exporting a trace twice
 * gives the same bytes.
 *
 * Output is by batches: per process at most OTLP_BATCH spans and as many
 * log records (or OTLP_BATCH_BYTES of JSON) wait, then go out as one
 * ExportTraceServiceRequest or ExportLogsServiceRequest: one line of the
 * file, or one POST to ENDPOINT/v1/traces or /v1/logs.  Memory: those
 * buffers per process, and per thread its open spans (at most
 * PAIRS_MAX_DEPTH); nothing per event.
 *
 * Single-threaded: everything runs in trace_read()'s callbacks and after.
 */
#define _GNU_SOURCE   /* strcasestr */
#include "export_otlp.h"
#include "liveline.h"
#include "output.h"

#include "command.h"
#include "pairs.h"
#include "trace_reader.h"
#include "trace_value.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define OTLP_BATCH 512                         /* spans or log records per request */
#define OTLP_BATCH_BYTES (4u << 20)            /* below the Collector's 20 MiB default body limit */
#define OTLP_NAME_SLOTS 256
#define HTTP_ATTEMPTS 6                        /* the first try and 5 retries */
#define HTTP_CONNECT_MS 10000                  /* per address, within the attempt's deadline */
#define HTTP_ATTEMPT_SECONDS 30                /* one attempt: connect, send, the whole answer (--timeout) */
#define HTTP_TOTAL_ATTEMPTS 4                  /* one request, all its attempts and the waits between:
						  this many attempts' time */
#define HTTP_RETRY_AFTER_MAX 30                /* seconds: a longer Retry-After is cut to this */

enum otlp_kind { OTLP_TRACES, OTLP_LOGS };

/* An OTLP/HTTP endpoint (--endpoint). */
struct otlp_http {
	const char *url;                       /* as given, for messages */
	char host[256];                        /* for getaddrinfo (no brackets) */
	char hostport[300];                    /* the Host header */
	char port[6];
	char prefix[1024];                     /* the URL's path, without a trailing '/' */
	unsigned requests;
	unsigned attempt_s;                    /* seconds per attempt (--timeout)     */
	unsigned total_s;                      /* seconds per request, attempts and waits */
};

/* A span open on a thread: its begin was seen, its end not yet. */
struct otlp_open {
	uint64_t span_id;
	uint64_t trace_hi, trace_lo;
	/* the begin's arguments: OTLP attributes "[...]" (len 0: none); the
	 * memory stays with the stack slot for the next span opened there,
	 * not a malloc and free per span */
	struct strbuf attrs;
	/* `"traceId": "<32 hex>", "spanId": "<16 hex>"`, made when the span
	 * opens: every log record inside it repeats it (add_span_ids()). */
	char ids[80];
	uint8_t ids_len;
};

struct otlp_proc {
	const void *trace;                     /* trace_event.trace */
	int64_t pid;
	uint64_t seed;                         /* of the ids: pid, name, first event time */
	char *resource;                        /* its "resource" object, JSON */
	struct strbuf items[2];                /* spans, log records waiting (comma-separated) */
	size_t nitems[2];
};

struct otlp_thread {
	int64_t pid, tid;                      /* as pairs.h reports them */
	struct otlp_proc *proc;
	struct otlp_open *stack;
	size_t depth, cap;
	size_t used;                           /* stack slots initialised (attrs): the deepest reached */
	uint64_t begins;                       /* begins seen: a span id's position */
	int64_t last_ns;
	char name[16];                         /* the thread's name ("": unknown) */
	/* `"attributes": [{thread.id}, {thread.name}`, without the closing
	 * bracket, made once per thread and name (thread_attributes()). */
	char *attr_text;
	size_t attr_len;
};

struct otlp_name {
	const void *trace, *name;              /* compared by address; name NULL: empty */
	char *json;
	size_t len;                            /* strlen(json) */
};

/* A pair's name as a JSON string, for every span of the pair. */
#define OTLP_PAIR_SLOTS 64
struct otlp_pair_name {
	uint32_t pair;
	char *json;                            /* NULL: the slot is empty */
	size_t len;
};

/*
 * The decimal text of a time's milliseconds (ns / 10^6): the times of
 * consecutive events mostly share them, so a time is this copied and 6
 * digits, where the whole 19-digit number through strbuf_add_uint was a
 * seventh of the export's instructions.
 */
struct otlp_time_text {
	uint64_t ms;                           /* 0: none made (a time below 1 ms is written whole) */
	uint8_t len;
	char text[20];
};

struct otlp_export {
	FILE *out;                             /* file output, or NULL */
	struct otlp_http *http;                /* endpoint output, or NULL */
	struct pairs *pairs;
	const struct trace_event *ev;          /* the event being read (pairs callbacks) */
	struct otlp_proc **procs;
	size_t nprocs, procs_cap;
	struct otlp_proc *last_proc;
	struct otlp_thread **threads;          /* hash table by (pid, tid), open addressing */
	size_t nthreads, table_size;
	struct otlp_thread *last_thread;
	struct otlp_name names[OTLP_NAME_SLOTS];
	struct otlp_pair_name pair_names[OTLP_PAIR_SLOTS];
	struct otlp_time_text time_text;
	struct strbuf tmp;
	uint64_t spans, logs, lost, ended_by_export, orphans;
	uint64_t events;                       /* every event read */
	bool warned_clock;
	bool failed;                           /* an error was printed: stop */
};

/* ---------------- ids ---------------- */

/* One step of a 64-bit hash chain (the splitmix64 finaliser over h ^ v). */
static uint64_t mix(uint64_t h, uint64_t v)
{
	uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The two hex digits of each byte value: an id is 8 copies of 2 bytes, not
 * 16 table lookups in a chain of shifts (3 ids made per span). */
static const char hex_pairs[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

static char *put_hex_id(char *out, uint64_t v)
{
	for (int i = 14; i >= 0; i -= 2, v >>= 8)
		memcpy(out + i, hex_pairs + 2 * (v & 0xff), 2);
	return out + 16;
}

/* Make o->ids from its three ids. */
static void span_ids_text(struct otlp_open *o)
{
	static const char a[] = "\"traceId\": \"", b[] = "\", \"spanId\": \"";
	char *p = o->ids;
	memcpy(p, a, sizeof(a) - 1);
	p = put_hex_id(p + sizeof(a) - 1, o->trace_hi);
	p = put_hex_id(p, o->trace_lo);
	memcpy(p, b, sizeof(b) - 1);
	p = put_hex_id(p + sizeof(b) - 1, o->span_id);
	*p++ = '"';
	o->ids_len = (uint8_t)(p - o->ids);
}

/* `"traceId": "<32 hex>", "spanId": "<16 hex>"` of an open span. */
static void add_span_ids(struct strbuf *sb, const struct otlp_open *o)
{
	strbuf_add(sb, o->ids, o->ids_len);
}

/*
 * Each span's and log record's fixed fields are written at a local
 * pointer into room reserved once (out_room, out_commit): appended piece
 * by piece, every write through the strbuf may alias the strbuf itself,
 * so the compiler reloads its members after each byte stored.
 */
#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

static inline char *put_mem(char *p, const void *src, size_t n)
{
	memcpy(p, src, n);
	return p + n;
}

/* Room for n bytes (and the NUL) at the end of sb: where they go; NULL
 * when out of memory (sb->failed). */
static inline char *out_room(struct strbuf *sb, size_t n)
{
	if (strbuf_reserve(sb, n))
		return NULL;
	return sb->data + sb->len;
}

/* What was written at out_room()'s pointer ends at p. */
static inline void out_commit(struct strbuf *sb, char *p)
{
	*p = '\0';
	sb->len = (size_t)(p - sb->data);
}

#define TIME_TEXT_MAX 20   /* the digits of a uint64_t */

/* A time's digits, as strbuf_add_uint(sb, ns, 1) writes them (a time
 * before the epoch is 0: fixed64); at most TIME_TEXT_MAX bytes. */
static inline char *put_time(struct otlp_time_text *c, char *p, int64_t ns)
{
	uint64_t v = ns > 0 ? (uint64_t)ns : 0, ms = v / 1000000;
	if (ms == 0) {
		unsigned n = text_count_digits(v);
		text_put_digits(p + n, v, n);
		return p + n;
	}
	if (ms != c->ms) {
		unsigned n = text_count_digits(ms);
		text_put_digits(c->text + n, ms, n);
		c->ms = ms;
		c->len = (uint8_t)n;
	}
	p = put_mem(p, c->text, c->len);
	text_put_digits(p + 6, v - ms * 1000000, 6);
	return p + 6;
}

/* ---------------- output ---------------- */

static int http_post(struct otlp_http *h, enum otlp_kind kind, const struct iovec *body, int nbody);

/* The waiting items of one kind of a process as one request. */
static int flush_items(struct otlp_export *x, struct otlp_proc *p, enum otlp_kind kind)
{
	struct strbuf *items = &p->items[kind];
	if (p->nitems[kind] == 0 || x->failed)
		return x->failed ? -1 : 0;
	if (items->failed) {
		cli_error("export: out of memory gathering a batch of %s", kind == OTLP_TRACES ? "spans" : "log records");
		x->failed = true;
		return -1;
	}
	static const char *const head[2] = { "{\"resourceSpans\": [{\"resource\": ",
					     "{\"resourceLogs\": [{\"resource\": " };
	static const char *const scope[2] = { ", \"scopeSpans\": [{\"scope\": {\"name\": \"mark\"}, \"spans\": [",
					      ", \"scopeLogs\": [{\"scope\": {\"name\": \"mark\"}, \"logRecords\": [" };
	static const char tail[] = "]}]}]}";
	struct iovec iov[5] = {
		{ (void *)head[kind], strlen(head[kind]) },
		{ p->resource, strlen(p->resource) },
		{ (void *)scope[kind], strlen(scope[kind]) },
		{ items->data, items->len },
		{ (void *)tail, sizeof(tail) - 1 },
	};
	int rc = 0;
	if (x->http) {
		rc = http_post(x->http, kind, iov, 5);
	} else {
		for (int i = 0; i < 5 && rc == 0; i++)
			if (fwrite(iov[i].iov_base, 1, iov[i].iov_len, x->out) != iov[i].iov_len)
				rc = -1;
		if (rc == 0 && putc('\n', x->out) == EOF)
			rc = -1;
		if (rc != 0 && x->out == stdout)
			cli_output_failed(errno);   /* said by main (cli_output_finish) */
		else if (rc != 0)
			cli_error("export: writing the output failed: %s (check the space left where -o points)",
				  strerror(errno));
	}
	if (rc != 0)
		x->failed = true;
	strbuf_reset(items);
	p->nitems[kind] = 0;
	return rc;
}

/* Start one more item of a kind in the process's batch (the comma). */
static struct strbuf *item_begin(struct otlp_proc *p, enum otlp_kind kind)
{
	struct strbuf *sb = &p->items[kind];
	if (p->nitems[kind]++)
		strbuf_add_lit(sb, ", ");
	return sb;
}

static int item_end(struct otlp_export *x, struct otlp_proc *p, enum otlp_kind kind)
{
	if (p->nitems[kind] >= OTLP_BATCH || p->items[kind].len >= OTLP_BATCH_BYTES || p->items[kind].failed)
		return flush_items(x, p, kind);
	return 0;
}

/* ---------------- processes and threads ---------------- */

static struct otlp_proc *proc_of(struct otlp_export *x, const struct trace_event *ev)
{
	if (x->last_proc && x->last_proc->trace == ev->trace)
		return x->last_proc;
	for (size_t i = 0; i < x->nprocs; i++)
		if (x->procs[i]->trace == ev->trace)
			return x->last_proc = x->procs[i];
	if (x->nprocs == x->procs_cap && cli_array_grow(&x->procs, &x->procs_cap, sizeof(*x->procs), 8) != 0)
		return NULL;
	struct otlp_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->trace = ev->trace;
	p->pid = ev->pid >= 0 ? ev->pid : 0;
	uint64_t h = mix(0x6d61726b, (uint64_t)p->pid);
	for (const char *c = ev->procname ? ev->procname : ""; *c; c++)
		h = mix(h, (unsigned char)*c);
	p->seed = mix(h, (uint64_t)(ev->has_time ? ev->ns : 0));
	/* service.name: the process name, or the spec's "unknown_service" */
	struct strbuf sb = { 0 };
	strbuf_add_lit(&sb, "{\"attributes\": [{\"key\": \"service.name\", \"value\": {\"stringValue\": ");
	strbuf_add_json_string(&sb, ev->procname && *ev->procname ? ev->procname : "unknown_service");
	strbuf_add_lit(&sb, "}}");
	if (ev->pid >= 0) {
		strbuf_add_lit(&sb, ", {\"key\": \"process.pid\", \"value\": {\"intValue\": \"");
		strbuf_add_int(&sb, ev->pid);
		strbuf_add_lit(&sb, "\"}}");
	}
	strbuf_add_lit(&sb, "]}");
	if (sb.failed) {
		strbuf_release(&sb);
		free(p);
		return NULL;
	}
	p->resource = sb.data;
	x->procs[x->nprocs++] = p;
	return x->last_proc = p;
}

static size_t thread_slot(const struct otlp_export *x, int64_t pid, int64_t tid)
{
	size_t i = (size_t)mix((uint64_t)pid, (uint64_t)tid) & (x->table_size - 1);
	while (x->threads[i] && (x->threads[i]->pid != pid || x->threads[i]->tid != tid))
		i = (i + 1) & (x->table_size - 1);
	return i;
}

/* The thread (pid, tid), made for process p if new (p NULL: only look). */
static struct otlp_thread *thread_of(struct otlp_export *x, int64_t pid, int64_t tid, struct otlp_proc *p)
{
	struct otlp_thread *t = x->last_thread;
	if (t && t->pid == pid && t->tid == tid)
		return t;
	if (x->table_size) {
		t = x->threads[thread_slot(x, pid, tid)];
		if (t)
			return x->last_thread = t;
	}
	if (!p)
		return NULL;
	if (2 * (x->nthreads + 1) > x->table_size) {
		/* keep the table at most half full: rehash into twice the slots */
		size_t old_size = x->table_size, size = old_size ? 2 * old_size : 64;
		struct otlp_thread **old = x->threads, **grown = calloc(size, sizeof(*grown));
		if (!grown)
			return NULL;
		x->threads = grown;
		x->table_size = size;
		for (size_t i = 0; i < old_size; i++)
			if (old[i])
				x->threads[thread_slot(x, old[i]->pid, old[i]->tid)] = old[i];
		free(old);
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	*t = (struct otlp_thread){ .pid = pid, .tid = tid, .proc = p };
	x->threads[thread_slot(x, pid, tid)] = t;
	x->nthreads++;
	return x->last_thread = t;
}

/* ---------------- spans and log records ---------------- */

/* The marker name as a JSON string, remembered per (trace, name pointer)
 * as the Chrome export does (one reader hands one pointer per class). */
static const char *name_json(struct otlp_export *x, const struct trace_event *ev, size_t *len)
{
	struct otlp_name *n = &x->names[(((uintptr_t)ev->name >> 4) ^ ((uintptr_t)ev->trace >> 6)) % OTLP_NAME_SLOTS];
	*len = n->len;
	if (n->name == ev->name && n->trace == ev->trace)
		return n->json;
	free(n->json);
	*n = (struct otlp_name){ 0 };
	struct strbuf sb = { 0 };
	strbuf_add_json_string(&sb, ev->name);
	if (sb.failed) {
		strbuf_release(&sb);
		return NULL;
	}
	*n = (struct otlp_name){ .trace = ev->trace, .name = ev->name, .json = sb.data, .len = sb.len };
	*len = n->len;
	return n->json;
}

/* pairs_name() of a pair as a JSON string, remembered by the pair's
 * number (its name does not change); NULL when out of memory. */
static const char *pair_name_json(struct otlp_export *x, uint32_t pair, size_t *len)
{
	struct otlp_pair_name *n = &x->pair_names[pair % OTLP_PAIR_SLOTS];
	if (!n->json || n->pair != pair) {
		struct strbuf sb = { 0 };
		strbuf_add_json_string(&sb, pairs_name(x->pairs, pair));
		if (sb.failed) {
			strbuf_release(&sb);
			return NULL;
		}
		free(n->json);
		*n = (struct otlp_pair_name){ .pair = pair, .json = sb.data, .len = sb.len };
	}
	*len = n->len;
	return n->json;
}


/* Make t->attr_text for the thread's id and current name; -1 when out of memory. */
static int thread_attributes(struct otlp_thread *t)
{
	struct strbuf a = { 0 };
	strbuf_add_lit(&a, "\"attributes\": [{\"key\": \"thread.id\", \"value\": {\"intValue\": \"");
	strbuf_add_int(&a, t->tid);
	strbuf_add_lit(&a, "\"}}");
	if (t->name[0]) {
		strbuf_add_lit(&a, ", {\"key\": \"thread.name\", \"value\": {\"stringValue\": ");
		strbuf_add_json_string(&a, t->name);
		strbuf_add_lit(&a, "}}");
	}
	if (a.failed) {
		strbuf_release(&a);
		return -1;
	}
	free(t->attr_text);
	t->attr_text = a.data;
	t->attr_len = a.len;
	return 0;
}

/* `"attributes": [thread.id, thread.name, ARGS...]`, ARGS an OTLP payload "[...]". */
static void add_attributes(struct strbuf *sb, const struct otlp_thread *t, const char *args, size_t args_len)
{
	if (!t->attr_text) {
		sb->failed = 1;   /* not made: out of memory, reported by the batch's flush */
		return;
	}
	strbuf_add(sb, t->attr_text, t->attr_len);
	if (args_len > 2) {
		strbuf_add_lit(sb, ", ");
		strbuf_add(sb, args + 1, args_len - 2);
	}
	strbuf_add_lit(sb, "]");
}

static const char *const given_up_reason[] = {
	[PAIR_GIVEN_UP_INNER] = "its end event was lost; ended by an outer span's end",
	[PAIR_GIVEN_UP_AT_END] = "no end event in the trace; ended at the thread's last event",
	[PAIR_GIVEN_UP_TOO_DEEP] = "more than 256 spans open on the thread; all ended here",
};

/* A span ends (why < 0: by its end event, x->ev): the top of its thread's stack. */
static void span_done(struct otlp_export *x, const struct pair_span *span, int why)
{
	if (x->failed)
		return;
	struct otlp_thread *t = thread_of(x, span->pid, span->tid, NULL);
	if (!t || t->depth == 0) {
		/* pairs.c pushed a begin this file did not (cannot happen: both
		 * follow the same PAIR_BEGIN); counted, never a crash */
		x->orphans++;
		return;
	}
	struct otlp_open *o = &t->stack[--t->depth];
	struct otlp_proc *p = t->proc;
	struct strbuf *sb = item_begin(p, OTLP_TRACES);
	size_t name_len;
	const char *name = pair_name_json(x, span->pair, &name_len);
	if (!name) {
		name = "\"\"";
		name_len = 2;
		sb->failed = 1;   /* reported by the batch's flush */
	}
	char *w = out_room(sb, sizeof(o->ids) + name_len + 2 * TIME_TEXT_MAX + 160);
	if (w) {
		w = PUT_LIT(w, "{");
		w = put_mem(w, o->ids, o->ids_len);
		if (t->depth) {
			w = PUT_LIT(w, ", \"parentSpanId\": \"");
			w = put_hex_id(w, t->stack[t->depth - 1].span_id);
			w = PUT_LIT(w, "\"");
		}
		w = PUT_LIT(w, ", \"name\": ");
		w = put_mem(w, name, name_len);
		w = PUT_LIT(w, ", \"kind\": 1, \"startTimeUnixNano\": \"");   /* kind: SPAN_KIND_INTERNAL */
		w = put_time(&x->time_text, w, span->begin_ns);
		w = PUT_LIT(w, "\", \"endTimeUnixNano\": \"");
		w = put_time(&x->time_text, w, span->end_ns);
		w = PUT_LIT(w, "\", ");
		out_commit(sb, w);
	}
	const char *attrs = o->attrs.len ? o->attrs.data : NULL;
	size_t alen = o->attrs.len;
	if (why >= 0 || span->spans_loss) {
		/* the export's own attributes after the begin's arguments: "[a, b" + ", c]" */
		strbuf_reset(&x->tmp);
		if (attrs)
			strbuf_add(&x->tmp, attrs, alen - 1);
		else
			strbuf_add_lit(&x->tmp, "[");
		if (why >= 0) {
			if (x->tmp.len > 1)
				strbuf_add_lit(&x->tmp, ", ");
			strbuf_add_lit(&x->tmp, "{\"key\": \"mark.end_missing\", \"value\": {\"stringValue\": \"");
			strbuf_add(&x->tmp, given_up_reason[why], strlen(given_up_reason[why]));
			strbuf_add_lit(&x->tmp, "\"}}");
			x->ended_by_export++;
		}
		if (span->spans_loss) {
			if (x->tmp.len > 1)
				strbuf_add_lit(&x->tmp, ", ");
			strbuf_add_lit(&x->tmp, "{\"key\": \"mark.spans_lost_events\", \"value\": {\"boolValue\": true}}");
		}
		strbuf_add_lit(&x->tmp, "]");
		if (x->tmp.failed)
			sb->failed = 1;   /* reported by the batch's flush */
		add_attributes(sb, t, x->tmp.data ? x->tmp.data : "[]", x->tmp.data ? x->tmp.len : 2);
	} else {
		add_attributes(sb, t, attrs ? attrs : "[]", attrs ? alen : 2);
	}
	if (why < 0 && x->ev && trace_event_payload_count(x->ev) > 0) {
		/* the end's arguments: one span event at the end */
		size_t ename_len;
		const char *ename = name_json(x, x->ev, &ename_len);
		if (!ename) {
			ename = "\"\"";
			ename_len = 2;
			sb->failed = 1;
		}
		w = out_room(sb, ename_len + TIME_TEXT_MAX + 64);
		if (w) {
			w = PUT_LIT(w, ", \"events\": [{\"timeUnixNano\": \"");
			w = put_time(&x->time_text, w, span->end_ns);
			w = PUT_LIT(w, "\", \"name\": ");
			w = put_mem(w, ename, ename_len);
			w = PUT_LIT(w, ", \"attributes\": ");
			out_commit(sb, w);
		}
		trace_event_payload_append(sb, x->ev, TRACE_VALUE_OTLP);
		strbuf_add_lit(sb, "}]");
	}
	strbuf_add_lit(sb, "}");
	strbuf_reset(&o->attrs);
	x->spans++;
	item_end(x, p, OTLP_TRACES);
}

static void otlp_span(const struct pair_span *span, void *arg)
{
	span_done(arg, span, -1);
}

static void otlp_given_up(const struct pair_span *span, enum pair_given_up why, void *arg)
{
	span_done(arg, span, (int)why);
}

static int oom(struct otlp_export *x)
{
	cli_error("export: out of memory converting an event");
	x->failed = true;
	return 1;
}

static int otlp_event(const struct trace_event *ev, void *arg)
{
	struct otlp_export *x = arg;
	if (x->failed)
		return 1;
	x->events++;
	if (ev->has_time && !ev->clock_is_epoch && !x->warned_clock) {
		x->warned_clock = true;
		fprintf(stderr, "mark export: warning: the trace's clock has no offset from the Unix epoch; "
				"OTLP times are its raw times (ns from the clock's origin)\n");
	}
	struct otlp_proc *p = proc_of(x, ev);
	/* the ids pairs.h reports: pid 0 and one "thread" per stream when unknown */
	int64_t pid = ev->pid >= 0 ? ev->pid : 0;
	int64_t tid = ev->tid >= 0 ? ev->tid : (int64_t)ev->stream_index;
	struct otlp_thread *t = p ? thread_of(x, pid, tid, p) : NULL;
	if (!t)
		return oom(x);
	if (text_name_changed(t->name, sizeof(t->name), ev->thread_name) || !t->attr_text) {
		if (ev->thread_name)
			snprintf(t->name, sizeof(t->name), "%s", ev->thread_name);
		if (thread_attributes(t) != 0)
			return oom(x);
	}
	int64_t ns = ev->has_time ? ev->ns : t->last_ns;   /* untimed: the thread's last time, as pairs.c */
	t->last_ns = ns;
	x->ev = ev;
	uint32_t pair;
	enum pair_role role = pairs_event(x->pairs, ev, &pair);   /* ends spans: span_done() */
	x->ev = NULL;
	if (x->failed)
		return 1;
	if (role == PAIR_END)
		return 0;
	if (role == PAIR_BEGIN) {
		if (t->depth == t->cap && cli_array_grow(&t->stack, &t->cap, sizeof(*t->stack), 8) != 0)
			return oom(x);
		struct otlp_open *o = &t->stack[t->depth];
		if (t->depth == t->used) {
			o->attrs = (struct strbuf){ 0 };   /* a slot not used before (cli_array_grow leaves it as it is) */
			t->used++;
		}
		strbuf_reset(&o->attrs);
		o->trace_hi = o->trace_lo = 0;
		o->span_id = mix(mix(mix(p->seed, (uint64_t)tid), (uint64_t)ns), t->begins++);
		if (o->span_id == 0)
			o->span_id = 1;   /* an all-zero id is invalid */
		if (t->depth) {
			o->trace_hi = t->stack[t->depth - 1].trace_hi;
			o->trace_lo = t->stack[t->depth - 1].trace_lo;
		} else {
			o->trace_hi = mix(o->span_id, 1);
			o->trace_lo = mix(o->span_id, 2) | 1;
		}
		span_ids_text(o);
		trace_event_payload_append(&o->attrs, ev, TRACE_VALUE_OTLP);
		if (o->attrs.failed)
			return oom(x);
		t->depth++;
		return 0;
	}
	size_t name_len;
	const char *name = name_json(x, ev, &name_len);
	if (!name)
		return oom(x);
	struct strbuf *sb = item_begin(p, OTLP_LOGS);
	/* add_attributes() without the copy: the payload "[a, b]" goes in
	 * straight after ", ", its '[' made a space: ", {..}, {..} a, b]". */
	char *w = out_room(sb, TIME_TEXT_MAX + name_len + t->attr_len + 64);
	if (!w)
		return oom(x);
	w = PUT_LIT(w, "{\"timeUnixNano\": \"");
	w = put_time(&x->time_text, w, ns);
	w = PUT_LIT(w, "\", \"body\": {\"stringValue\": ");
	w = put_mem(w, name, name_len);
	w = PUT_LIT(w, "}, ");
	w = put_mem(w, t->attr_text, t->attr_len);
	w = PUT_LIT(w, ",");
	out_commit(sb, w);
	const size_t open = sb->len;
	trace_event_payload_append(sb, ev, TRACE_VALUE_OTLP);
	if (sb->failed)
		return oom(x);
	if (sb->len - open <= 2) {
		sb->len = open - 1;   /* no arguments: "..}}]" */
		strbuf_add_lit(sb, "]");
	} else {
		sb->data[open] = ' ';
	}
	if (t->depth) {
		strbuf_add_lit(sb, ", ");
		add_span_ids(sb, &t->stack[t->depth - 1]);
	}
	strbuf_add_lit(sb, "}");
	x->logs++;
	return item_end(x, p, OTLP_LOGS) != 0;
}

static void otlp_discarded(const struct trace_loss *loss, void *arg)
{
	struct otlp_export *x = arg;
	x->lost = trace_add_sat(x->lost, loss->count);
	pairs_loss(x->pairs, loss);
}

/* ---------------- OTLP/HTTP ---------------- */

/* Parse http://HOST[:PORT][/PATH]; 0, or -1 after printing why (usage). */
static int parse_endpoint(struct otlp_http *h, const char *url)
{
	h->url = url;
	if (strncasecmp(url, "https://", 8) == 0) {
		cli_error("export: --endpoint %s: https is not supported; run an OpenTelemetry Collector with an "
			  "otlp receiver on plain http (on this machine or a trusted network) and let it forward "
			  "over TLS, then give its http://HOST:4318",
			  url);
		return -1;
	}
	const char *why = NULL;
	const char *s = url + 7, *host = s, *host_end;
	if (strncasecmp(url, "http://", 7) != 0) {
		why = "it does not start with http://";
	} else if (*s == '[') {
		host = s + 1;
		host_end = strchr(host, ']');
		if (!host_end)
			why = "the IPv6 address has no closing ]";
		else
			s = host_end + 1;
	} else {
		host_end = s + strcspn(s, ":/?#");
		s = host_end;
	}
	if (!why && host_end == host)
		why = "no host";
	if (!why && (size_t)(host_end - host) >= sizeof(h->host))
		why = "the host name is too long";
	long port = 4318;
	if (!why && *s == ':') {
		char *end;
		errno = 0;
		port = strtol(s + 1, &end, 10);
		if (end == s + 1 || errno || port < 1 || port > 65535 || (*end && *end != '/'))
			why = "the port is not a number from 1 to 65535";
		s = end;
	}
	if (!why && *s && *s != '/')
		why = "a query or fragment is not expected";
	if (!why && strlen(s) >= sizeof(h->prefix))
		why = "the path is too long";
	for (const char *c = url; !why && *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '?' || *c == '#')
			why = "it holds a space, a control character, ? or #";
	if (why) {
		cli_error("export: --endpoint %s: %s; give http://HOST:PORT, e.g. http://localhost:4318", url, why);
		return -1;
	}
	memcpy(h->host, host, (size_t)(host_end - host));
	h->host[host_end - host] = '\0';
	snprintf(h->port, sizeof(h->port), "%ld", port);
	snprintf(h->hostport, sizeof(h->hostport), "%s%s%s:%ld", host[-1] == '[' ? "[" : "", h->host,
		 host[-1] == '[' ? "]" : "", port);
	snprintf(h->prefix, sizeof(h->prefix), "%s", s);
	size_t n = strlen(h->prefix);
	while (n && h->prefix[n - 1] == '/')
		h->prefix[--n] = '\0';
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Wait until fd is ready for events or the deadline passes: 1 ready, 0 the
 * deadline passed, -1 an error (errno).  Every wait of an attempt goes
 * through here with the attempt's one deadline: per-call socket timeouts
 * (SO_RCVTIMEO) restart with each byte, and a peer that trickles one byte
 * every few seconds held an attempt for days.
 */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd pfd = { .fd = fd, .events = events };
		int r = poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/*
 * The endpoint's addresses, resolved before the attempt's deadline: 0 with
 * *out (freeaddrinfo), or a getaddrinfo error (EAI_AGAIN with *timed_out
 * when the deadline passed first).  getaddrinfo() waits as long as the
 * resolver's own timeouts say (resolv.conf: 5 s times attempts times name
 * servers, per address family), which --timeout could not shorten.  So a
 * thread of ours looks the name up and the attempt waits for it with its
 * deadline.  (Not getaddrinfo_a(): the C library starts its thread behind
 * ThreadSanitizer's back, which crashed every --endpoint export of the
 * TSan build.)  A lookup cannot be stopped: one still running when an
 * attempt gives up is left to finish, detached, and the next attempt
 * waits for the same lookup instead of starting another.  Its state lives
 * in static storage, which the lookup thread may still write after the
 * export has given up; `lookup` is guarded by lookup.lock.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;    /* CLOCK_MONOTONIC */
	bool cond_ready;
	bool running;                /* a lookup thread is at work */
	bool done;                   /* its answer is in rc/result */
	int rc;
	struct addrinfo *result;
	char host[256], port[8];   /* as struct otlp_http */
} lookup = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *lookup_thread(void *unused)
{
	(void)unused;
	const struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	/* host and port are not written while `running`. */
	int rc = getaddrinfo(lookup.host, lookup.port, &hints, &res);
	pthread_mutex_lock(&lookup.lock);
	lookup.rc = rc;
	lookup.result = rc == 0 ? res : NULL;
	lookup.running = false;
	lookup.done = true;
	pthread_cond_broadcast(&lookup.done_cond);
	pthread_mutex_unlock(&lookup.lock);
	return NULL;
}

static int resolve(const struct otlp_http *h, int64_t deadline, struct addrinfo **out, bool *timed_out)
{
	*out = NULL;
	*timed_out = false;
	pthread_mutex_lock(&lookup.lock);
	if (!lookup.cond_ready) {
		pthread_condattr_t attr;
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&lookup.done_cond, &attr);
		pthread_condattr_destroy(&attr);
		lookup.cond_ready = true;
	}
	if (!lookup.running && !lookup.done) {
		snprintf(lookup.host, sizeof(lookup.host), "%s", h->host);
		snprintf(lookup.port, sizeof(lookup.port), "%s", h->port);
		pthread_attr_t attr;
		pthread_t th;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		int e = pthread_create(&th, &attr, lookup_thread, NULL);
		pthread_attr_destroy(&attr);
		if (e != 0) {
			pthread_mutex_unlock(&lookup.lock);
			errno = e;
			return EAI_SYSTEM;
		}
		lookup.running = true;
	}
	while (!lookup.done) {
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			pthread_mutex_unlock(&lookup.lock);
			*timed_out = true;
			return EAI_AGAIN;
		}
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(left / 1000);
		until.tv_nsec += (long)(left % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&lookup.done_cond, &lookup.lock, &until);
	}
	/* Taken: the next attempt looks up afresh. */
	int rc = lookup.rc;
	*out = lookup.result;
	lookup.result = NULL;
	lookup.done = false;
	pthread_mutex_unlock(&lookup.lock);
	return rc;
}

/*
 * A connected, non-blocking TCP socket to the endpoint, or -1 (errno; what
 * says which step).  The name is resolved, and each address gets
 * HTTP_CONNECT_MS, within the attempt's deadline.
 */
static int http_connect(const struct otlp_http *h, int64_t deadline, char *what, size_t what_len)
{
	struct addrinfo *ai = NULL;
	bool timed_out;
	int gai = resolve(h, deadline, &ai, &timed_out);
	if (gai != 0) {
		if (timed_out)
			snprintf(what, what_len, "the name %s was not resolved in time (is the resolver of "
				 "/etc/resolv.conf slow or unreachable?)", cli_text(h->host));
		else
			snprintf(what, what_len, "%s", gai_strerror(gai));
		errno = timed_out ? ETIMEDOUT : 0;
		return -1;
	}
	int fd = -1, err = ECONNREFUSED;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
			err = errno;
			if (err == EINPROGRESS) {
				int64_t until = now_ms() + HTTP_CONNECT_MS;
				int r = wait_fd(fd, POLLOUT, until < deadline ? until : deadline);
				socklen_t len = sizeof(err);
				if (r == 0)
					err = ETIMEDOUT;
				else if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
					err = errno;
			}
			if (err != 0) {
				close(fd);
				fd = -1;
			}
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		snprintf(what, what_len, "cannot connect");
		errno = err;
	}
	return fd;
}

/* Send every byte of iov[0..n) (modified) before the deadline; 0, or -1
 * (errno, ETIMEDOUT when the deadline passed); *sent counts the bytes sent. */
static int send_all(int fd, struct iovec *iov, int n, int64_t deadline, size_t *sent)
{
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);   /* a closed peer is an error, not SIGPIPE */
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(fd, POLLOUT, deadline);
			if (r <= 0) {
				if (r == 0)
					errno = ETIMEDOUT;
				return -1;
			}
			continue;
		}
		if (w <= 0)
			return -1;
		*sent += (size_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * One POST, all of it (connecting, sending, the answer) before the
 * deadline.  Returns the HTTP status, or -1 when no answer came (errno;
 * what[] says what happened; *late when the deadline passed while sending
 * or reading, what[] then with the bytes and seconds); *retry_after the
 * Retry-After seconds (-1 if none); reply[] the start of the answer's body,
 * for messages.
 */
static int http_once(struct otlp_http *h, const char *path, const struct iovec *body, int nbody, int64_t deadline,
		     char *what, size_t what_len, bool *late, long *retry_after, char *reply, size_t reply_len)
{
	*late = false;
	*retry_after = -1;
	reply[0] = '\0';
	int64_t t0 = now_ms();
	size_t len = 0;
	for (int i = 0; i < nbody; i++)
		len += body[i].iov_len;
	int fd = http_connect(h, deadline, what, what_len);
	if (fd < 0) {
		*late = errno == ETIMEDOUT && now_ms() >= deadline;   /* the resolver's answer did not come */
		return -1;
	}
	char head[2048];
	int hl = snprintf(head, sizeof(head),
			  "POST %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: mark-export\r\n"
			  "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			  h->prefix, path, h->hostport, len);
	struct iovec iov[8];
	iov[0] = (struct iovec){ head, (size_t)hl };
	for (int i = 0; i < nbody && i < 7; i++)
		iov[i + 1] = body[i];
	size_t sent = 0;
	if (send_all(fd, iov, nbody + 1, deadline, &sent) != 0) {
		int e = errno;
		*late = e == ETIMEDOUT;
		if (*late)
			snprintf(what, what_len, "sending the request took too long: %zu of %zu bytes went in %" PRId64 " s",
				 sent, (size_t)hl + len, (now_ms() - t0 + 500) / 1000);
		else
			snprintf(what, what_len, "sending the request failed");
		close(fd);
		errno = e;
		return -1;
	}
	/* the answer: status line and headers, and as much body as fits */
	char buf[16384];
	size_t got = 0;
	buf[0] = '\0';
	for (;;) {
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		int w = 1;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			w = wait_fd(fd, POLLIN, deadline);
			if (w > 0)
				continue;
		}
		if (r < 0) {
			*late = w == 0;
			if (*late) {
				snprintf(what, what_len, "no complete answer in time: %zu byte%s came in %" PRId64 " s", got,
					 got == 1 ? "" : "s", (now_ms() - t0 + 500) / 1000);
				errno = ETIMEDOUT;
			} else {
				snprintf(what, what_len, "reading the answer failed");
			}
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		got += (size_t)r;
		buf[got] = '\0';
		if (r == 0 || got == sizeof(buf) - 1)
			break;
		/* Connection: close asked for; a server may still keep it open:
		 * stop once the headers and Content-Length bytes are in */
		char *end = strstr(buf, "\r\n\r\n");
		if (end) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			if (cl && cl < end && got - (size_t)(end + 4 - buf) >= strtoul(cl + 17, NULL, 10))
				break;
		}
	}
	close(fd);
	int status = 0;
	if (sscanf(buf, "HTTP/1.%*[01] %3d", &status) != 1 || status < 100) {
		snprintf(what, what_len, "the answer is not HTTP");
		errno = EPROTO;
		return -1;
	}
	char *end = strstr(buf, "\r\n\r\n");
	if (end) {
		*end = '\0';
		const char *ra = strcasestr(buf, "\r\nRetry-After:");
		if (ra) {
			char *e;
			long v = strtol(ra + 14, &e, 10);
			if (e != ra + 14 && v >= 0)
				*retry_after = v;   /* an HTTP date is not honoured: the backoff applies */
		}
		snprintf(reply, reply_len, "%s", end + 4);
	}
	return status;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * POST a request to ENDPOINT/v1/traces or /v1/logs, retrying what may pass
 * later.  Bounded in time: each attempt ends h->attempt_s after it starts
 * (--timeout, HTTP_ATTEMPT_SECONDS by default), and the request (attempts
 * and the waits between them) is given up h->total_s after its first
 * attempt started, or after HTTP_ATTEMPTS attempts.
 */
static int http_post(struct otlp_http *h, enum otlp_kind kind, const struct iovec *body, int nbody)
{
	const char *path = kind == OTLP_TRACES ? "/v1/traces" : "/v1/logs";
	long backoff_ms = 500;
	int64_t start = now_ms(), end = start + (int64_t)h->total_s * 1000;
	for (int attempt = 1;; attempt++) {
		char what[512] = "";
		long retry_after;
		bool late;
		char reply[256];
		struct iovec copy[8];
		memcpy(copy, body, (size_t)nbody * sizeof(*copy));
		int64_t deadline = now_ms() + (int64_t)h->attempt_s * 1000;
		if (deadline > end)
			deadline = end;
		int status = http_once(h, path, copy, nbody, deadline, what, sizeof(what), &late, &retry_after, reply,
				       sizeof(reply));
		int err = errno;
		h->requests++;
		if (status >= 200 && status < 300)
			return 0;
		bool again = status < 0 || status == 429 || status == 502 || status == 503 || status == 504;
		long ms = retry_after >= 0 ? (retry_after > HTTP_RETRY_AFTER_MAX ? HTTP_RETRY_AFTER_MAX : retry_after) * 1000
					   : backoff_ms;
		/* no attempt starts past the total limit */
		bool out_of_time = now_ms() + ms >= end;
		if (!again || attempt == HTTP_ATTEMPTS || out_of_time) {
			char gave_up[96] = "";
			if (again)
				snprintf(gave_up, sizeof(gave_up), " (gave up after %d attempt%s in %" PRId64 " s)", attempt,
					 attempt == 1 ? "" : "s", (now_ms() - start + 500) / 1000);
			if (status < 0 && late)
				cli_error("export: POST http://%s%s%s: %s%s; the endpoint, or something on the way to it, is "
					  "too slow or stalls (each attempt may take %u s, all of them %u s): check it, or "
					  "give a longer --timeout, and export again",
					  h->hostport, h->prefix, path, what, gave_up, h->attempt_s, h->total_s);
			else if (status < 0)
				cli_error("export: POST http://%s%s%s: %s: %s%s; is an OpenTelemetry Collector (otlp receiver, "
					  "protocols: http) listening there?",
					  h->hostport, h->prefix, path, what, err ? strerror(err) : "", gave_up);
			else
				cli_error("export: POST http://%s%s%s: HTTP status %d%s%s%s%s; %s", h->hostport, h->prefix, path,
					  status,
					  reply[0] ? " (" : "", reply, reply[0] ? ")" : "", gave_up,
					  again ? "the endpoint still refused; try again later"
						: "the endpoint refused the data; check its logs");
			return -1;
		}
		sleep_ms(ms);
		if (backoff_ms < 8000)
			backoff_ms *= 2;
	}
}

/* ---------------- the command ---------------- */

int export_otlp(const struct export_otlp_options *o, int nargs, char **args)
{
	if (nargs != 1) {
		cli_error("export: %s; usage: mark export --format otlp (-o FILE.jsonl | --endpoint URL) DIR",
			  nargs < 1 ? "give the trace directory" : "give exactly one trace directory");
		return 2;
	}
	if (!o->output == !o->endpoint) {
		cli_error("export: --format otlp: give either -o FILE.jsonl (\"-\" for standard output) or "
			  "--endpoint http://HOST:4318, not %s",
			  o->output ? "both" : "neither");
		return 2;
	}
	struct otlp_http http = { 0 };
	http.attempt_s = o->timeout_s ? o->timeout_s : HTTP_ATTEMPT_SECONDS;
	http.total_s = http.attempt_s * HTTP_TOTAL_ATTEMPTS;
	if (o->endpoint && parse_endpoint(&http, o->endpoint) != 0)
		return 2;
	const char *dir = args[0];
	if (trace_check_directory(dir) != 0)
		return 1;

	struct otlp_export x = { .http = o->endpoint ? &http : NULL };
	char why[512];
	struct pairs_config pc = { .pairs = o->pairs, .npairs = o->npairs, .every_event = true };
	struct pairs_ops pops = { .span = otlp_span, .given_up = otlp_given_up };
	x.pairs = pairs_new(&pc, &pops, &x, why, sizeof(why));
	if (!x.pairs) {
		cli_error("export: %s", why);
		return strncmp(why, "out of memory", 13) != 0 ? 2 : 1;
	}
	/* Written whole or not at all (output.h). */
	struct output_file file = { 0 };
	bool to_stdout = o->output && strcmp(o->output, "-") == 0;
	int status = 0;
	if (to_stdout) {
		x.out = stdout;
	} else if (o->output) {
		if (output_file_open(&file, "export", o->output, 0600) != 0) {
			pairs_free(x.pairs);
			return 1;
		}
		x.out = file.f;
	}
	struct trace_reader_ops ops = { .native_ok = true, .progress = trace_progress_wanted(o->progress, to_stdout),
					.payload_text = true, .payload_style = TRACE_VALUE_OTLP,
					.event = otlp_event, .discarded = otlp_discarded };
	int r = trace_read(dir, &ops, &x);
	if (r == 0 && !x.failed) {
		/* spans still open end at their thread's last event */
		pairs_finish(x.pairs);
		if (pairs_oom(x.pairs)) {
			cli_error("export: out of memory pairing begins and ends");
			x.failed = true;
		}
		for (size_t i = 0; i < x.nprocs && !x.failed; i++) {
			flush_items(&x, x.procs[i], OTLP_TRACES);
			flush_items(&x, x.procs[i], OTLP_LOGS);
		}
	}
	if (r != 0 || x.failed)
		status = 1;
	if (x.out && x.out != stdout) {
		if (output_file_close(&file, "export", status == 0) != 0)
			status = 1;
	} else if (x.out && cli_flush_stdout() != 0) {
		status = 1;   /* said by main (cli_output_finish) */
	}
	if (status == 0 && !to_stdout)
		fprintf(stderr,
			"mark export: %" PRIu64 " spans (%" PRIu64 " ended by the export), %" PRIu64
			" log records (%" PRIu64 " events lost by the tracer) %s %s%s\n",
			x.spans, x.ended_by_export, x.logs, x.lost, o->output ? "written to" : "sent to",
			cli_text(o->output ? o->output : o->endpoint), o->output ? "" : " (ENDPOINT/v1/traces, /v1/logs)");
	if (x.orphans)
		fprintf(stderr, "mark export: warning: %" PRIu64 " span ends matched no begin this export saw "
				"(left out); please report it with the trace\n", x.orphans);
	/* What the export cannot show (see cmd_export.c). */
	if (status == 0) {
		live_warn_incomplete(stderr, dir, false);
		live_warn_unrecorded_after_read(dir, x.events, x.lost);
	}
	for (size_t i = 0; i < x.table_size; i++) {
		struct otlp_thread *t = x.threads[i];
		if (!t)
			continue;
		for (size_t d = 0; d < t->used; d++)
			strbuf_release(&t->stack[d].attrs);
		free(t->stack);
		free(t->attr_text);
		free(t);
	}
	free(x.threads);
	for (size_t i = 0; i < x.nprocs; i++) {
		strbuf_release(&x.procs[i]->items[0]);
		strbuf_release(&x.procs[i]->items[1]);
		free(x.procs[i]->resource);
		free(x.procs[i]);
	}
	free(x.procs);
	for (size_t i = 0; i < OTLP_NAME_SLOTS; i++)
		free(x.names[i].json);
	for (size_t i = 0; i < OTLP_PAIR_SLOTS; i++)
		free(x.pair_names[i].json);
	strbuf_release(&x.tmp);
	pairs_free(x.pairs);
	return status;
}

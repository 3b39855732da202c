/*
 * `mark export --format perfetto DIR -o FILE.pftrace`: a native Perfetto
 * trace (a protobuf `Trace`: a sequence of TracePacket, field 1), written
 * with the protobuf wire encoding by hand (varints, fixed64 doubles,
 * length-delimited fields).  Field numbers are those of perfetto's
 * protos/perfetto/trace/ (trace_packet.proto, track_event/ protos,
 * interned_data.proto, clock_snapshot.proto); docs/export.md has the
 * mapping for users.
 *
 * What is written, in the order events are read (time order):
 *   - per packet sequence (trusted_packet_sequence_id), a first packet with
 *     SEQ_INCREMENTAL_STATE_CLEARED: a ClockSnapshot that defines the
 *     sequence-scoped clock 64 ("mark's clock": the trace's ns from its
 *     clock origin) as equal to BOOTTIME (and REALTIME when the origin is
 *     the Unix epoch) at the first timestamp, the sequence's default clock
 *     (TracePacketDefaults.timestamp_clock_id = 64), and the interned
 *     category "mark".  trace_processor converts clock 64 to its trace
 *     clock (BOOTTIME) by that snapshot's offset, which is 0: it shows the
 *     exact ns values written.  No builtin clock is claimed for the events
 *     themselves: mark's clock is a calibrated TSC, neither BOOTTIME nor
 *     CLOCK_REALTIME.
 *   - a TrackDescriptor per process (ProcessDescriptor: pid, process_name
 *     from the trace's env.procname) and per thread (ThreadDescriptor: pid,
 *     tid, thread_name: the packet context's thread_name mark's tracer
 *     records, else, for the main thread of a trace without it, the
 *     process name), before the thread's first event; written again with
 *     the new name when a thread's name changes (trace_processor keeps the
 *     latest).
 *   - one TrackEvent per event on its thread's track: TYPE_SLICE_BEGIN /
 *     TYPE_SLICE_END for begin/end pairs (cli/pairs.h, the same pairing as
 *     the Chrome export and `mark stats`), TYPE_INSTANT otherwise; names
 *     and debug annotation names interned (InternedData event_names,
 *     debug_annotation_names; name_iid, category_iids); arguments as
 *     debug annotations of their own type (trace_event_args_each).
 *   - an instant "mark_lost_events" with the count on the thread's track
 *     for every loss report.
 *
 * Strings: protobuf strings must be valid UTF-8 and a mark string is any
 * bytes.  Every string written (names and values) keeps its valid UTF-8
 * as it is (control characters included) except the backslash, written
 * "\\", and writes each byte that does not start a valid UTF-8 sequence as
 * the four characters "\xNN".  The rule is the same for every string, so
 * the bytes can always be recovered ("\\" -> '\', "\xNN" -> byte).
 *
 * Memory: bounded independent of the trace's size.  The output is
 * buffered 64 KiB at a time; the interning tables hold the distinct names
 * of the current sequence, at most INTERN_MAX per table: one more starts a
 * new sequence (new id, tables cleared), so a hostile trace with millions
 * of names costs packets, not memory; the tracks are one entry per thread
 * and process of the trace (as cli/pairs.c keeps per thread); loss reports
 * that come before the first event (they have no time yet) wait in a list
 * as long as the number of such reports.
 *
 * Single-threaded: trace_read() calls back on the calling thread.
 */
#include "export_perfetto.h"
#include "output.h"
#include "util/printable.h"

#include "command.h"
#include "pairs.h"
#include "text.h"
#include "trace_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field numbers (perfetto/protos/perfetto/trace/...). */
enum {
	TRACE_PACKET = 1,                         /* Trace.packet                       */
	PKT_TIMESTAMP = 8, PKT_CLOCK_ID = 58, PKT_SEQ_ID = 10, PKT_SEQ_FLAGS = 13,
	PKT_INTERNED = 12, PKT_DEFAULTS = 59, PKT_TRACK_EVENT = 11, PKT_TRACK_DESC = 60,
	PKT_CLOCK_SNAPSHOT = 6,
	DEFAULTS_CLOCK_ID = 58,                   /* TracePacketDefaults.timestamp_clock_id */
	SNAP_CLOCKS = 1, CLOCK_ID = 1, CLOCK_TS = 2,   /* ClockSnapshot, .Clock        */
	INTERNED_CATEGORIES = 1, INTERNED_NAMES = 2, INTERNED_ANN_NAMES = 3,
	IID = 1, IID_NAME = 2,                    /* EventName, EventCategory, DebugAnnotationName */
	TE_TYPE = 9, TE_TRACK = 11, TE_CATEGORY_IIDS = 3, TE_NAME_IID = 10, TE_NAME = 23, TE_ANNOTATIONS = 4,
	ANN_NAME_IID = 1, ANN_NAME = 10, ANN_BOOL = 2, ANN_UINT = 3, ANN_INT = 4, ANN_DOUBLE = 5, ANN_STRING = 6,
	ANN_POINTER = 7, ANN_JSON = 9,
	TD_UUID = 1, TD_PARENT = 5, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4,
	PD_PID = 1, PD_NAME = 6,
	THD_PID = 1, THD_TID = 2, THD_NAME = 5,
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3 };
enum { CLOCK_REALTIME = 1, CLOCK_BOOTTIME = 6, CLOCK_MARK = 64 };

#define FLUSH_AT (64 * 1024)
#define INTERN_MAX 4096          /* names per table and sequence              */
#define INTERN_SLOTS (2 * INTERN_MAX)
#define CATEGORY_IID 1           /* "mark", in every sequence's first packet  */

/* ---------------- protobuf wire encoding into a strbuf ---------------- */

/*
 * Two layers.  The put_* functions write at a pointer the caller holds in
 * a local and return the end: every event's fixed fields are written that
 * way into room reserved once (pb_room), because a write through the
 * strbuf (check failed and cap, store a byte, store len) may alias the
 * strbuf itself, so the compiler reloads its members after every byte and
 * the fields of an event become one long chain of loads and stores (the
 * top of the profile).  The pb_* functions on the strbuf are for the rest:
 * strings, descriptors, the rare packets.
 */
static inline unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v > 0x7f) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* At most 2 + 10 bytes (every field number here is below 2^11). */
static inline unsigned char *put_uint(unsigned char *p, unsigned field, uint64_t v)
{
	p = put_varint(p, (uint64_t)field << 3);
	return put_varint(p, v);
}

/* 1 + 8 bytes: a fixed64, little-endian whatever the host. */
static inline unsigned char *put_double(unsigned char *p, unsigned field, double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	p = put_varint(p, (uint64_t)field << 3 | 1);
	for (int i = 0; i < 8; i++)
		*p++ = (unsigned char)(bits >> (8 * i));
	return p;
}

/* Room for n bytes (and the NUL) at the end of sb: where they go; NULL
 * when out of memory (sb->failed: nothing more is written). */
static inline unsigned char *pb_room(struct strbuf *sb, size_t n)
{
	if (strbuf_reserve(sb, n))
		return NULL;
	return (unsigned char *)sb->data + sb->len;
}

/* What was written at pb_room()'s pointer ends at p. */
static inline void pb_commit(struct strbuf *sb, unsigned char *p)
{
	*p = '\0';
	sb->len = (size_t)((char *)p - sb->data);
}

static inline void pb_varint(struct strbuf *sb, uint64_t v)
{
	unsigned char *p = pb_room(sb, 10);
	if (p)
		pb_commit(sb, put_varint(p, v));
}

static inline void pb_tag(struct strbuf *sb, unsigned field, unsigned wire)
{
	pb_varint(sb, (uint64_t)field << 3 | wire);
}

static inline void pb_uint(struct strbuf *sb, unsigned field, uint64_t v)
{
	unsigned char *p = pb_room(sb, 12);
	if (p)
		pb_commit(sb, put_uint(p, field, v));
}

static void pb_double(struct strbuf *sb, unsigned field, double d)
{
	unsigned char *p = pb_room(sb, 9);
	if (p)
		pb_commit(sb, put_double(p, field, d));
}

/*
 * A length-delimited field whose length is not known yet: the tag and one
 * byte for the length now, the length at pb_end().  Returns where the
 * length goes.  Nearly every message of an event is shorter than 128
 * bytes, whose length is that one byte: reserving more and moving the
 * contents back at the end was a tenth of the export's time.
 */
static inline size_t pb_begin(struct strbuf *sb, unsigned field)
{
	unsigned char *p = pb_room(sb, 3);   /* field numbers below 2^11: a tag of 2 bytes at most */
	if (!p)
		return sb->len;   /* failed: pb_end() does nothing */
	p = put_varint(p, (uint64_t)field << 3 | 2);
	size_t at = (size_t)((char *)p - sb->data);
	*p++ = 0;
	pb_commit(sb, p);
	return at;
}

/* pb_end() of a length of 128 or more: the contents move forward to make
 * room for the length's further bytes. */
static void pb_end_long(struct strbuf *sb, size_t at, size_t len)
{
	unsigned char b[10];
	size_t n = 0;
	for (uint64_t v = len; v; v >>= 7)
		b[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
	static const char room[10];
	strbuf_add(sb, room, n - 1);
	if (sb->failed)
		return;
	memmove(sb->data + at + n, sb->data + at + 1, len);
	memcpy(sb->data + at, b, n);
}

/* The length's varint at `at`. */
static inline void pb_end(struct strbuf *sb, size_t at)
{
	if (sb->failed)
		return;
	size_t len = sb->len - at - 1;
	if (len < 0x80)
		sb->data[at] = (char)len;
	else
		pb_end_long(sb, at, len);
}

static void pb_bytes(struct strbuf *sb, unsigned field, const void *data, size_t len)
{
	pb_tag(sb, field, 2);
	pb_varint(sb, len);
	strbuf_add(sb, data, len);
}

/* A string field, as the header comment says: valid UTF-8, the bytes recoverable. */
static void pb_text(struct strbuf *sb, unsigned field, const char *text)
{
	size_t at = pb_begin(sb, field);
	for (const unsigned char *p = (const unsigned char *)text; *p;) {
		const unsigned char *run = p;
		while (*p && *p < 0x80 && *p != '\\')
			p++;
		if (p > run)
			strbuf_add(sb, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		uint32_t code;
		size_t n;
		if (*p == '\\') {
			strbuf_add_lit(sb, "\\\\");
			p++;
		} else if ((n = mark_utf8_len(p, &code)) > 0) {
			strbuf_add(sb, (const char *)p, n);
			p += n;
		} else {
			char esc[5] = { '\\', 'x', "0123456789abcdef"[*p >> 4], "0123456789abcdef"[*p & 15], 0 };
			strbuf_add(sb, esc, 4);
			p++;
		}
	}
	pb_end(sb, at);
}

/* ---------------- interning ---------------- */

struct intern_slot {
	char *name;                  /* NULL: empty                               */
	uint64_t hash;
	uint64_t iid;
};

/*
 * The iid last found for a name pointer, in sequence `seq`: the readers
 * hand the same name pointers (event class and field names, which live
 * while trace_read runs; pairs_name(); literals) for every event, so most
 * lookups are one compare instead of a hash and a strcmp.  A slot of
 * another sequence or pointer is a miss.
 */
#define INTERN_CACHE 256   /* intern() takes 8 bits for the slot */
struct intern_cached {
	const char *name;
	uint32_t seq;
	uint64_t iid;
};

/* Names of one kind (event names, annotation names) of the current sequence. */
struct intern {
	struct intern_slot *slots;   /* INTERN_SLOTS, open addressing             */
	size_t count;
	unsigned field;              /* its InternedData field                    */
	struct intern_cached cache[INTERN_CACHE];
};

/* ---------------- tracks ---------------- */

struct track {
	int64_t pid, tid;            /* as the Chrome export shows them; tid INT64_MIN: the process */
	uint64_t uuid;               /* 0: empty slot                             */
	char name[256];              /* the thread name last written ("" none)    */
};

/* A loss reported before the first event (its procname copied). */
struct pending_loss {
	struct trace_loss loss;
	char *procname;
};

struct pf {
	FILE *out;
	struct strbuf buf;           /* packets not yet written                   */
	struct strbuf interned;      /* the event's new InternedData entries       */
	size_t pkt_at, te_tag, te_at;   /* the event's packet in buf (begin_event)  */
	struct strbuf scratch;       /* trace_event_args_each's composite values  */
	struct pairs *pairs;
	struct intern names, ann_names;
	uint32_t seq;                /* 0 until the first sequence starts         */
	uint64_t next_uuid;
	struct track *tracks;
	size_t ntracks, trackcap;    /* trackcap: a power of two, or 0            */
	size_t last_track;           /* the slot of the last one found + 1 (0: none) */
	bool started;
	int64_t last_ns;             /* the time of the latest event              */
	bool clock_is_epoch;
	bool saw_cpu;                /* the event has an argument called "cpu"    */
	struct pending_loss *pending;   /* losses before the first event           */
	size_t npending, pendingcap;
	struct export_perfetto_counts *counts;
	uint64_t negative_times;
	int failed;
};

static void intern_clear(struct intern *t)
{
	for (size_t i = 0; t->slots && i < INTERN_SLOTS; i++) {
		free(t->slots[i].name);
		t->slots[i] = (struct intern_slot){ 0 };
	}
	t->count = 0;
}

/*
 * The iid of `name` in this sequence; a new one is added to pf->interned
 * (the InternedData of the packet being built).  0 when the table is full
 * or memory ran out: the caller then writes the name itself (TrackEvent
 * and DebugAnnotation have a plain `name` too).  begin_event() starts a new
 * sequence when an event's names may not fit, so a full table only
 * happens for one event with more arguments than INTERN_MAX (a hostile
 * trace): without the limit its names would fill every slot and the probe
 * below would never end.
 */
static uint64_t intern_lookup(struct pf *pf, struct intern *t, const char *name);

/*
 * The cache's slot of a name: the top bits of a multiplication.  Bits 3-10
 * of the address alone put names a multiple of 2 KiB apart in one slot
 * (the argument names "i" and "arg2" of the benchmark trace, 6 KiB apart,
 * took it from each other: a hash and strcmp for 2 events in 5).
 */
static inline struct intern_cached *intern_slot_of(struct intern *t, const char *name)
{
	return &t->cache[(uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15u >> 56];
}

/* intern() when the cache has the name, else 0: no call, for the fast paths. */
static inline uint64_t intern_cached(const struct pf *pf, struct intern *t, const char *name)
{
	const struct intern_cached *c = intern_slot_of(t, name);
	return c->name == name && c->seq == pf->seq ? c->iid : 0;
}

static inline uint64_t intern(struct pf *pf, struct intern *t, const char *name)
{
	uint64_t iid = intern_cached(pf, t, name);
	if (iid)
		return iid;
	iid = intern_lookup(pf, t, name);
	if (iid)
		*intern_slot_of(t, name) = (struct intern_cached){ .name = name, .seq = pf->seq, .iid = iid };
	return iid;
}

static uint64_t intern_lookup(struct pf *pf, struct intern *t, const char *name)
{
	size_t len = strlen(name);
	uint64_t h = text_hash(name, len, TEXT_HASH_INIT);
	size_t j = h & (INTERN_SLOTS - 1);
	for (; t->slots[j].name; j = (j + 1) & (INTERN_SLOTS - 1))
		if (t->slots[j].hash == h && strcmp(t->slots[j].name, name) == 0)
			return t->slots[j].iid;
	if (t->count >= INTERN_MAX)   /* at most half the slots: the probe ends */
		return 0;
	char *copy = malloc(len + 1);
	if (!copy)
		return 0;
	memcpy(copy, name, len + 1);
	t->slots[j] = (struct intern_slot){ .name = copy, .hash = h, .iid = ++t->count };
	size_t at = pb_begin(&pf->interned, t->field);
	pb_uint(&pf->interned, IID, t->slots[j].iid);
	pb_text(&pf->interned, IID_NAME, name);
	pb_end(&pf->interned, at);
	return t->slots[j].iid;
}

/* ---------------- packets ---------------- */

static int flush(struct pf *pf)
{
	if (pf->buf.failed || pf->interned.failed) {
		if (!pf->failed)
			cli_error("export: out of memory writing the Perfetto trace");
		pf->failed = 1;
	} else if (pf->buf.len && fwrite(pf->buf.data, 1, pf->buf.len, pf->out) != pf->buf.len) {
		if (pf->out == stdout)
			cli_output_failed(errno);   /* said by main (cli_output_finish) */
		else if (!pf->failed)
			cli_error("export: writing the output failed: %s", strerror(errno));
		pf->failed = 1;
	}
	strbuf_reset(&pf->buf);
	return pf->failed;
}

static uint64_t time_of(struct pf *pf, int64_t ns)
{
	if (ns >= 0)
		return (uint64_t)ns;
	pf->negative_times++;   /* before the clock's origin: no uint64 for it */
	return 0;
}

/*
 * A new packet sequence from time ns: a new id, the interning tables
 * cleared, and its first packet (the clock, the default clock, the
 * category).  See the header comment.
 */
static void start_sequence(struct pf *pf, int64_t ns)
{
	struct strbuf *b = &pf->buf;
	intern_clear(&pf->names);
	intern_clear(&pf->ann_names);
	pf->seq++;
	uint64_t t = time_of(pf, ns);
	size_t pkt = pb_begin(b, TRACE_PACKET);
	pb_uint(b, PKT_TIMESTAMP, t);
	pb_uint(b, PKT_CLOCK_ID, CLOCK_BOOTTIME);
	pb_uint(b, PKT_SEQ_ID, pf->seq);
	pb_uint(b, PKT_SEQ_FLAGS, SEQ_CLEARED);
	size_t snap = pb_begin(b, PKT_CLOCK_SNAPSHOT);
	static const unsigned clocks[] = { CLOCK_MARK, CLOCK_BOOTTIME, CLOCK_REALTIME };
	for (size_t i = 0; i < (pf->clock_is_epoch ? 3u : 2u); i++) {
		size_t c = pb_begin(b, SNAP_CLOCKS);
		pb_uint(b, CLOCK_ID, clocks[i]);
		pb_uint(b, CLOCK_TS, t);
		pb_end(b, c);
	}
	pb_end(b, snap);
	size_t def = pb_begin(b, PKT_DEFAULTS);
	pb_uint(b, DEFAULTS_CLOCK_ID, CLOCK_MARK);
	pb_end(b, def);
	size_t in = pb_begin(b, PKT_INTERNED);
	size_t cat = pb_begin(b, INTERNED_CATEGORIES);
	pb_uint(b, IID, CATEGORY_IID);
	pb_text(b, IID_NAME, "mark");
	pb_end(b, cat);
	pb_end(b, in);
	pb_end(b, pkt);
}

/* A TrackDescriptor packet. */
static void write_descriptor(struct pf *pf, const struct track *tr, uint64_t parent, const char *procname,
			     bool tid_known)
{
	struct strbuf *b = &pf->buf;
	size_t pkt = pb_begin(b, TRACE_PACKET);
	pb_uint(b, PKT_SEQ_ID, pf->seq);
	size_t td = pb_begin(b, PKT_TRACK_DESC);
	pb_uint(b, TD_UUID, tr->uuid);
	if (tr->tid == INT64_MIN) {
		size_t pd = pb_begin(b, TD_PROCESS);
		pb_uint(b, PD_PID, (uint64_t)tr->pid);   /* int32 on the wire: a varint of the value */
		if (procname)
			pb_text(b, PD_NAME, procname);
		pb_end(b, pd);
	} else if (tid_known && tr->pid > 0) {
		size_t thd = pb_begin(b, TD_THREAD);
		pb_uint(b, THD_PID, (uint64_t)tr->pid);
		pb_uint(b, THD_TID, (uint64_t)tr->tid);
		if (tr->name[0])
			pb_text(b, THD_NAME, tr->name);
		pb_end(b, thd);
	} else {
		/* No thread id in the trace: a track per stream, under its process if known. */
		char name[48];
		snprintf(name, sizeof(name), "%s %" PRId64, tid_known ? "thread" : "stream", tr->tid);
		if (parent)
			pb_uint(b, TD_PARENT, parent);
		pb_text(b, TD_NAME, name);
	}
	pb_end(b, td);
	pb_end(b, pkt);
}

/*
 * Threads alternate in a trace of several (events come in time order), so
 * most events look their track up here: a multiply-xorshift of the two ids
 * costs a few cycles where text_hash's byte-by-byte FNV of 16 bytes was 16
 * multiplications in a chain.  Which slot a track takes changes nothing
 * written (uuids are given in order of first use).
 */
static uint64_t track_hash(int64_t pid, int64_t tid)
{
	uint64_t h = ((uint64_t)pid * 0x9e3779b97f4a7c15u) ^ (uint64_t)tid;
	h *= 0xff51afd7ed558ccdu;
	return h ^ (h >> 32);
}

/* The track of (pid, tid) (tid INT64_MIN: the process), or NULL if new; *slot where it goes. */
static struct track *track_find(struct pf *pf, int64_t pid, int64_t tid, size_t *slot)
{
	size_t j = track_hash(pid, tid) & (pf->trackcap - 1);
	for (; pf->tracks[j].uuid; j = (j + 1) & (pf->trackcap - 1))
		if (pf->tracks[j].pid == pid && pf->tracks[j].tid == tid)
			break;
	*slot = j;   /* also when found: callers and compilers need not guess */
	return pf->tracks[j].uuid ? &pf->tracks[j] : NULL;
}

/* Room for one more track; -1 when out of memory. */
static int tracks_reserve(struct pf *pf)
{
	if (2 * (pf->ntracks + 1) <= pf->trackcap)
		return 0;
	size_t cap = pf->trackcap ? 2 * pf->trackcap : 64;
	struct track *old = pf->tracks, *t = calloc(cap, sizeof(*t));
	if (!t)
		return -1;
	size_t oldcap = pf->trackcap;
	pf->last_track = 0;   /* its slot changes */
	pf->tracks = t;
	pf->trackcap = cap;
	for (size_t i = 0; i < oldcap; i++) {
		if (!old[i].uuid)
			continue;
		size_t j;
		track_find(pf, old[i].pid, old[i].tid, &j);
		pf->tracks[j] = old[i];
	}
	free(old);
	return 0;
}

/* Does the track's name differ from thread_name (NULL: keep what it has)? */
static inline bool renamed(const struct track *t, const char *thread_name)
{
	return text_name_changed(t->name, sizeof(t->name), thread_name);
}

/*
 * The uuid of the thread track (pid, tid), shown as the Chrome export does
 * (pid 0 if unknown, the stream index as tid if unknown), its process's
 * and its own descriptor written on first use, and again when the
 * thread's name (NULL: not known here) changes.  0 when out of memory.
 */
static uint64_t thread_track_find(struct pf *pf, int64_t pid, int64_t tid, bool pid_known, bool tid_known,
				  const char *procname, const char *thread_name)
{
	size_t slot;
	struct track *t = pf->trackcap ? track_find(pf, pid, tid, &slot) : NULL;
	if (t) {
		if (renamed(t, thread_name)) {
			snprintf(t->name, sizeof(t->name), "%s", thread_name);
			struct track *p = pid_known ? track_find(pf, pid, INT64_MIN, &slot) : NULL;
			write_descriptor(pf, t, p ? p->uuid : 0, procname, tid_known);
		}
		pf->last_track = (size_t)(t - pf->tracks) + 1;
		return t->uuid;
	}
	uint64_t parent = 0;
	if (pid_known) {
		if (tracks_reserve(pf))
			return 0;
		struct track *p = track_find(pf, pid, INT64_MIN, &slot);
		if (!p) {
			p = &pf->tracks[slot];
			*p = (struct track){ .pid = pid, .tid = INT64_MIN, .uuid = ++pf->next_uuid };
			pf->ntracks++;
			write_descriptor(pf, p, 0, procname, false);
		}
		parent = p->uuid;
	}
	if (tracks_reserve(pf))
		return 0;
	track_find(pf, pid, tid, &slot);
	t = &pf->tracks[slot];
	*t = (struct track){ .pid = pid, .tid = tid, .uuid = ++pf->next_uuid };
	if (thread_name)
		snprintf(t->name, sizeof(t->name), "%s", thread_name);
	else if (procname && tid_known && tid == pid)
		snprintf(t->name, sizeof(t->name), "%s", procname);   /* no recorded name: the main thread's is the process's */
	pf->ntracks++;
	write_descriptor(pf, t, parent, procname, tid_known);
	return t->uuid;
}

/* Consecutive events are mostly of one thread: its track without a call. */
static inline uint64_t thread_track(struct pf *pf, int64_t pid, int64_t tid, bool pid_known, bool tid_known,
				    const char *procname, const char *thread_name)
{
	const struct track *last = pf->last_track ? &pf->tracks[pf->last_track - 1] : NULL;
	if (last && last->pid == pid && last->tid == tid && !renamed(last, thread_name))
		return last->uuid;
	return thread_track_find(pf, pid, tid, pid_known, tid_known, procname, thread_name);
}

/*
 * Start an event's packet in pf->buf: a new sequence first when the
 * interning tables may not hold this event's names (1 + its arguments + a
 * few of ours), then the packet's fields, the opening of its TrackEvent
 * and the TrackEvent's type, track, category and name (NULL: none, a
 * slice end), which the caller follows with the annotations.  The fixed
 * part, at most 64 bytes, is written in one piece.
 */
static void begin_event(struct pf *pf, int64_t ns, size_t nnames, unsigned type, uint64_t track, const char *name)
{
	if (!pf->seq || pf->names.count + nnames + 4 > INTERN_MAX || pf->ann_names.count + nnames + 4 > INTERN_MAX)
		start_sequence(pf, ns);
	if (pf->interned.len)
		strbuf_reset(&pf->interned);
	uint64_t t = time_of(pf, ns);
	/* interned before writing: a new name goes to pf->interned, not to pf->buf */
	uint64_t iid = name ? intern(pf, &pf->names, name) : 0;
	struct strbuf *b = &pf->buf;
	unsigned char *p = pb_room(b, 64), *base = (unsigned char *)b->data;
	if (!p)
		return;   /* failed: end_event() and the flush see it */
	*p++ = TRACE_PACKET << 3 | 2;
	pf->pkt_at = (size_t)(p - base);
	*p++ = 0;   /* the packet's length, at end_event() */
	p = put_uint(p, PKT_TIMESTAMP, t);
	p = put_uint(p, PKT_SEQ_ID, pf->seq);
	p = put_uint(p, PKT_SEQ_FLAGS, SEQ_NEEDS_STATE);
	pf->te_tag = (size_t)(p - base);
	*p++ = PKT_TRACK_EVENT << 3 | 2;
	pf->te_at = (size_t)(p - base);
	*p++ = 0;
	p = put_uint(p, TE_TYPE, type);
	p = put_uint(p, TE_TRACK, track);
	if (name) {
		p = put_uint(p, TE_CATEGORY_IIDS, CATEGORY_IID);
		if (iid)
			p = put_uint(p, TE_NAME_IID, iid);
	}
	pb_commit(b, p);
	if (name && !iid)
		pb_text(b, TE_NAME, name);
}

/*
 * The names an event used for the first time in this sequence
 * (pf->interned) go in an InternedData before its TrackEvent: rare (a
 * name's first event), so the TrackEvent is moved for them rather than
 * built apart for every event.
 */
static void insert_interned(struct pf *pf)
{
	struct strbuf *b = &pf->buf;
	struct strbuf head = { 0 };
	pb_tag(&head, PKT_INTERNED, 2);
	pb_varint(&head, pf->interned.len);
	size_t ins = head.len + pf->interned.len, tail = b->len - pf->te_tag;
	/* room for ins more bytes (their contents are written below) */
	strbuf_add(b, pf->interned.data, pf->interned.len);
	strbuf_add(b, head.data ? head.data : "", head.len);
	if (!b->failed && !head.failed) {
		char *at = b->data + pf->te_tag;
		memmove(at + ins, at, tail);
		memcpy(at, head.data, head.len);
		memcpy(at + head.len, pf->interned.data, pf->interned.len);
	} else {
		b->failed = 1;
	}
	strbuf_release(&head);
}

/* Close the TrackEvent and its packet. */
static inline void end_event(struct pf *pf)
{
	struct strbuf *b = &pf->buf;
	pb_end(b, pf->te_at);
	if (pf->interned.len && !b->failed)
		insert_interned(pf);
	pb_end(b, pf->pkt_at);
}

/* Opens a debug annotation named `name` of iid `iid` (intern(); 0: the
 * name written out); pb_end() it after its value. */
static size_t ann_begin(struct pf *pf, const char *name, uint64_t iid)
{
	size_t at = pb_begin(&pf->buf, TE_ANNOTATIONS);
	if (iid)
		pb_uint(&pf->buf, ANN_NAME_IID, iid);
	else
		pb_text(&pf->buf, ANN_NAME, name);
	return at;
}

/* ann_number() through the strbuf: the same bytes. */
static __attribute__((noinline)) void ann_number_slow(struct pf *pf, const char *name, unsigned field, uint64_t v,
						      double d)
{
	size_t at = ann_begin(pf, name, intern(pf, &pf->ann_names, name));
	if (field == ANN_DOUBLE)
		pb_double(&pf->buf, field, d);
	else
		pb_uint(&pf->buf, field, v);
	pb_end(&pf->buf, at);
}

/*
 * A debug annotation of a number: a varint in `field`, or a double when
 * field is ANN_DOUBLE.  Nearly every annotation is one of these with an
 * interned name, at most 1 + 1 + 3 + 11 bytes: written in one piece, its
 * length one byte known at the end.  Every call (a name not in the cache,
 * a buffer to grow) is in the slow path: with one in this function, the
 * saving and restoring of the registers it needed across it was a third
 * of its instructions.
 */
static inline void ann_number(struct pf *pf, const char *name, unsigned field, uint64_t v, double d)
{
	uint64_t iid = intern_cached(pf, &pf->ann_names, name);
	struct strbuf *b = &pf->buf;
	if (iid && !b->failed && b->cap - b->len > 24) {
		unsigned char *p = (unsigned char *)b->data + b->len;
		*p++ = TE_ANNOTATIONS << 3 | 2;
		unsigned char *len = p++;
		p = put_uint(p, ANN_NAME_IID, iid);   /* iid <= INTERN_MAX: 2 bytes */
		p = field == ANN_DOUBLE ? put_double(p, field, d) : put_uint(p, field, v);
		*len = (unsigned char)(p - len - 1);
		pb_commit(b, p);
		return;
	}
	ann_number_slow(pf, name, field, v, d);
}

static void ann_uint(struct pf *pf, const char *name, unsigned field, uint64_t v)
{
	ann_number(pf, name, field, v, 0);
}

static void ann_text(struct pf *pf, const char *name, const char *text)
{
	size_t at = ann_begin(pf, name, intern(pf, &pf->ann_names, name));
	pb_text(&pf->buf, ANN_STRING, text);
	pb_end(&pf->buf, at);
}

/* One argument as a debug annotation of its type (trace_event_args_each). */
static void add_arg(const struct trace_arg *a, void *ctx)
{
	struct pf *pf = ctx;
	if (a->name[0] == 'c' && strcmp(a->name, "cpu") == 0)
		pf->saw_cpu = true;
	switch (a->type) {
	case TRACE_ARG_INT: ann_number(pf, a->name, ANN_INT, (uint64_t)a->i, 0); return;   /* int64: two's complement varint */
	case TRACE_ARG_UINT: ann_number(pf, a->name, ANN_UINT, a->u, 0); return;
	case TRACE_ARG_HEX: ann_number(pf, a->name, ANN_POINTER, a->u, 0); return;   /* shown in hex, as the marker did */
	case TRACE_ARG_DOUBLE: ann_number(pf, a->name, ANN_DOUBLE, 0, a->d); return;
	case TRACE_ARG_BOOL: ann_number(pf, a->name, ANN_BOOL, a->u != 0, 0); return;
	default: break;
	}
	size_t at = ann_begin(pf, a->name, intern(pf, &pf->ann_names, a->name));
	struct strbuf *e = &pf->buf;
	switch (a->type) {
	case TRACE_ARG_CHAR: {
		/* a %c: a string of its one byte (the NUL byte as "\x00") */
		char one[2] = { (char)a->u, 0 };
		if (a->u == 0)
			pb_bytes(e, ANN_STRING, "\\x00", 4);
		else
			pb_text(e, ANN_STRING, one);
		break;
	}
	case TRACE_ARG_STRING: pb_text(e, ANN_STRING, a->s); break;
	case TRACE_ARG_TEXT: pb_text(e, ANN_JSON, a->s); break;
	default: break;
	}
	pb_end(e, at);
}

static inline int finish_event(struct pf *pf)
{
	end_event(pf);
	if ((pf->buf.failed || pf->interned.failed || pf->buf.len >= FLUSH_AT) && flush(pf))
		return 1;
	return 0;
}

/* ---------------- callbacks ---------------- */

/* A slice end the trace does not have (pairs.h): its begin was given up. */
static void pf_given_up(const struct pair_span *span, enum pair_given_up why, void *arg)
{
	struct pf *pf = arg;
	if (pf->failed)
		return;
	/* the begin's thread: made by its event, so its descriptor is out */
	uint64_t track = thread_track(pf, span->pid, span->tid, true, true, NULL, NULL);
	begin_event(pf, span->end_ns, 2, TYPE_SLICE_END, track, NULL);
	ann_text(pf, "closed_by", "mark export");
	ann_text(pf, "reason", why == PAIR_GIVEN_UP_INNER     ? "its end event was lost; ended by an outer slice's end"
			       : why == PAIR_GIVEN_UP_AT_END ? "no end event in the trace; ended at the thread's last event"
							     : "more than 256 slices open on the thread; all ended here");
	if (!track)
		pf->buf.failed = 1;
	finish_event(pf);
}

static void write_loss(struct pf *pf, const struct trace_loss *loss, const char *procname)
{
	int64_t pid = loss->pid >= 0 ? loss->pid : 0;
	int64_t tid = loss->tid > 0 ? loss->tid : (int64_t)loss->stream_index;
	uint64_t track = thread_track(pf, pid, tid, loss->pid >= 0, loss->tid > 0, procname, NULL);
	begin_event(pf, pf->last_ns, 2, TYPE_INSTANT, track, "mark_lost_events");
	if (loss->count)
		ann_uint(pf, "count", ANN_UINT, loss->count);
	else
		ann_uint(pf, "count_unknown", ANN_BOOL, 1);
	if (!track)
		pf->buf.failed = 1;
	finish_event(pf);
}

static void pf_discarded(const struct trace_loss *loss, void *arg)
{
	struct pf *pf = arg;
	pf->counts->lost = trace_add_sat(pf->counts->lost, loss->count);
	pairs_loss(pf->pairs, loss);
	if (pf->failed)
		return;
	if (pf->started) {
		/* at the time of the latest event: the loss is reported when the
		 * stream's next packet begins, after the events read so far */
		write_loss(pf, loss, loss->procname);
		return;
	}
	/* no time yet: written at the first event's */
	if (pf->npending == pf->pendingcap && cli_array_grow(&pf->pending, &pf->pendingcap, sizeof(*pf->pending), 8)) {
		pf->buf.failed = 1;   /* reported by the next flush */
		return;
	}
	struct pending_loss *pl = &pf->pending[pf->npending++];
	pl->loss = *loss;
	pl->procname = loss->procname ? strdup(loss->procname) : NULL;
	if (loss->procname && !pl->procname)
		pf->buf.failed = 1;
	pl->loss.procname = NULL;
}

static int pf_event(const struct trace_event *ev, void *arg)
{
	struct pf *pf = arg;
	int64_t ns = ev->has_time ? ev->ns : pf->last_ns;
	if (!pf->started) {
		pf->started = true;
		pf->clock_is_epoch = ev->clock_is_epoch;
		start_sequence(pf, ns);
	}
	pf->last_ns = ns;
	for (size_t i = 0; i < pf->npending; i++) {
		write_loss(pf, &pf->pending[i].loss, pf->pending[i].procname);
		free(pf->pending[i].procname);
	}
	pf->npending = 0;
	int64_t pid = ev->pid >= 0 ? ev->pid : 0;
	int64_t tid = ev->tid >= 0 ? ev->tid : (int64_t)ev->stream_index;
	uint64_t track = thread_track(pf, pid, tid, ev->pid >= 0, ev->tid >= 0, ev->procname, ev->thread_name);
	/* the slice ends given up by this event are written (pf_given_up) before it */
	uint32_t pair;
	enum pair_role role = pairs_event(pf->pairs, ev, &pair);
	begin_event(pf, ns, trace_event_payload_count(ev) + 2,
		    role == PAIR_BEGIN ? TYPE_SLICE_BEGIN : role == PAIR_END ? TYPE_SLICE_END : TYPE_INSTANT, track,
		    role == PAIR_END ? NULL : role == PAIR_BEGIN ? pairs_name(pf->pairs, pair) : ev->name);
	pf->saw_cpu = false;
	trace_event_args_each(ev, add_arg, pf, &pf->scratch);
	/* The CPU is a property of the event, not an argument: added as the
	 * Chrome export does, unless an argument has that name. */
	if (ev->cpu >= 0 && !pf->saw_cpu)
		ann_uint(pf, "cpu", ANN_UINT, (uint64_t)ev->cpu);
	if (!track)
		pf->buf.failed = 1;
	pf->counts->events++;
	return finish_event(pf);
}

int export_perfetto(const char *dir, FILE *out, struct pairs *pairs, bool progress,
		    struct export_perfetto_counts *counts)
{
	struct pf pf = { .out = out, .pairs = pairs, .counts = counts };
	pf.names = (struct intern){ .slots = calloc(INTERN_SLOTS, sizeof(struct intern_slot)), .field = INTERNED_NAMES };
	pf.ann_names = (struct intern){ .slots = calloc(INTERN_SLOTS, sizeof(struct intern_slot)),
					.field = INTERNED_ANN_NAMES };
	int status = 0;
	if (!pf.names.slots || !pf.ann_names.slots) {
		status = cli_error("export: out of memory");
	} else if (isatty(fileno(out))) {
		/* Binary, and its strings keep the trace's control characters (valid
		 * UTF-8): escape sequences a trace holds must not reach a terminal. */
		status = cli_error("export: not writing a binary Perfetto trace to a terminal; "
				   "give a file with -o FILE.pftrace, or redirect standard output");
	} else {
		struct pairs_ops pops = { .given_up = pf_given_up };
		pairs_set_ops(pairs, &pops, &pf);
		struct trace_reader_ops ops = { .native_ok = true, .progress = progress, .event = pf_event,
						.discarded = pf_discarded };
		int r = trace_read(dir, &ops, &pf);
		if (r == 0 && !pf.failed) {
			/* Slices still open end at their thread's last event (pf_given_up);
			 * losses of a trace without events get the time 0. */
			pairs_finish(pairs);
			if (pairs_oom(pairs))
				pf.buf.failed = 1;
			for (size_t i = 0; i < pf.npending; i++) {
				if (!pf.seq)
					start_sequence(&pf, 0);
				write_loss(&pf, &pf.pending[i].loss, pf.pending[i].procname);
			}
			flush(&pf);
		}
		status = r != 0 || pf.failed;
		if (status == 0 && pf.negative_times)
			fprintf(stderr, "mark export: %" PRIu64 " events are before the trace clock's origin and were "
				"written at time 0 (a Perfetto timestamp is unsigned)\n", pf.negative_times);
	}
	for (size_t i = 0; i < pf.npending; i++)
		free(pf.pending[i].procname);
	free(pf.pending);
	intern_clear(&pf.names);
	intern_clear(&pf.ann_names);
	free(pf.names.slots);
	free(pf.ann_names.slots);
	free(pf.tracks);
	strbuf_release(&pf.buf);
	strbuf_release(&pf.interned);
	strbuf_release(&pf.scratch);
	return status;
}

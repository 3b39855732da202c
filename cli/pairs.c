/* Begin/end pairs of markers, per thread: see pairs.h. */
#define _GNU_SOURCE   /* secure_getenv */
#include "pairs.h"

#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Name conventions, tried in this order (a begin with several ends repeats). */
static const struct {
	const char *begin, *end;
} conventions[] = {
	{ "__start", "__done" },
	{ "-start", "-done" },
	{ "-start", "-end" },
	{ "_begin", "_end" },
	{ "_entry", "_exit" },
	{ "_start", "_stop" },
};
#define NCONVENTIONS (sizeof(conventions) / sizeof(conventions[0]))

/*
 * What one event class (name pointer of one trace) is, remembered, in an
 * open-addressing table that grows: a fixed direct-mapped cache thrashed
 * once a trace of many processes (one trace each) held more (trace, name)
 * combinations than it had slots, and each miss on another trace rebuilt
 * that trace's class-name list (a scan of every class id and a malloc).
 */
struct name_slot {
	const void *trace;           /* compared by address only                 */
	const char *name;            /* compared by address only                 */
	enum pair_role role;
	uint32_t pair;
	bool used;                   /* the pointers may be NULL: not a marker   */
};

/*
 * The event class names of one trace, listed once (trace_event_class_names)
 * and kept until pairs_free: a new marker of that trace may first show up
 * at any time, and classifying it needs the list.
 */
struct trace_names {
	const void *trace;
	const char **known;          /* NULL: not listed (yet, or out of memory) */
	size_t nknown;
	bool used;
};

struct open_begin {
	uint32_t pair;
	uint32_t row;                /* NO_ROW: the end's --by value decides     */
	int64_t ns;
	bool spans_loss;
};

#define NO_ROW UINT32_MAX

struct thread {
	const void *trace;
	int64_t key;                 /* tid, or -1 - stream index                */
	int64_t pid, tid;            /* as export shows them                     */
	int64_t last_ns;             /* the thread's last event                  */
	struct open_begin *stack;
	size_t depth, cap;
};

struct explicit_pair {
	char *begin, *end;
};

struct key_slot {
	uint32_t row;
	uint32_t len;                /* of raw                                   */
	uint64_t hash;
	char *raw;                   /* trace_event_field_key()'s bytes          */
};

struct pair_def {
	char *name;
	uint32_t row;                /* without --by: its only row               */
	uint32_t other;              /* with --by: the "(other)" row, or NO_ROW  */
	size_t nkeys;
	struct key_slot *keys;       /* open addressing, NO_ROW: empty           */
	size_t keycap;
};

struct pairs {
	struct pairs_ops ops;
	void *arg;
	char *by;
	struct explicit_pair *explicit;
	size_t nexplicit;
	struct name_slot *names;     /* open addressing, power-of-two capacity  */
	size_t nnames, namecap;
	size_t last_name;            /* the previous event's slot (namecap: none) */
	struct name_slot spare;      /* when the table cannot grow               */
	struct trace_names *traces;  /* open addressing, power-of-two capacity  */
	size_t ntraces, tracecap;
	size_t class_lists;          /* trace_event_class_names calls (debug)    */
	/* the class names classify() checks against: the event's trace's */
	const char **known;
	size_t nknown;
	struct pair_def *defs;
	size_t ndefs, defcap;
	struct pair_row *rows;
	size_t nrows, rowcap;
	struct thread *threads;
	size_t nthreads, threadcap;
	uint32_t *thash;             /* indices into threads + 1; 0: empty        */
	size_t thashcap;
	struct thread *last;         /* the previous event's thread               */
	bool every_event;            /* pairs_config.every_event                  */
	size_t nkeyed;               /* --by values with a row, all pairs      */
	bool folded;                 /* a --by value went to an "(other)" row  */
	struct strbuf sb;
	bool oom;
};

static bool ends_with(const char *s, const char *suffix, size_t *stem)
{
	size_t ls = strlen(s), lf = strlen(suffix);
	if (ls <= lf || memcmp(s + ls - lf, suffix, lf) != 0)
		return false;
	*stem = ls - lf;
	return true;
}

/* A trace name matches a --pair name exactly or after its "provider:". */
static bool name_matches(const char *trace_name, const char *user)
{
	if (strcmp(trace_name, user) == 0)
		return true;
	const char *colon = strchr(trace_name, ':');
	return colon && strcmp(colon + 1, user) == 0;
}

/* Whether the known names hold stem + suffix. */
static bool declared(const struct pairs *p, const char *name, size_t stem, const char *suffix)
{
	size_t ls = strlen(suffix);
	for (size_t i = 0; i < p->nknown; i++)
		if (strlen(p->known[i]) == stem + ls && memcmp(p->known[i], name, stem) == 0 &&
		    strcmp(p->known[i] + stem, suffix) == 0)
			return true;
	return false;
}

static uint32_t new_row(struct pairs *p, uint32_t pair, char *key)
{
	if (p->nrows == p->rowcap && cli_array_grow(&p->rows, &p->rowcap, sizeof(*p->rows), 16)) {
		p->oom = true;
		free(key);
		return NO_ROW;
	}
	p->rows[p->nrows] = (struct pair_row){ .pair = pair, .key = key };
	return (uint32_t)p->nrows++;
}

/* The pair called name[0..len), created on first use; NO_ROW when out of memory. */
static uint32_t pair_of(struct pairs *p, const char *name, size_t len)
{
	for (size_t i = 0; i < p->ndefs; i++)
		if (strlen(p->defs[i].name) == len && memcmp(p->defs[i].name, name, len) == 0)
			return (uint32_t)i;
	char *copy = strndup(name, len);
	if (!copy || (p->ndefs == p->defcap && cli_array_grow(&p->defs, &p->defcap, sizeof(*p->defs), 16))) {
		free(copy);
		p->oom = true;
		return NO_ROW;
	}
	uint32_t id = (uint32_t)p->ndefs;
	struct pair_def *d = &p->defs[p->ndefs++];
	*d = (struct pair_def){ .name = copy, .row = NO_ROW, .other = NO_ROW };
	if (!p->by)
		d->row = new_row(p, id, NULL);
	return id;
}

/* The role of event class `name` of the known trace. */
static enum pair_role classify(struct pairs *p, const char *name, uint32_t *pair)
{
	for (size_t i = 0; i < p->nexplicit; i++) {
		bool b = name_matches(name, p->explicit[i].begin), e = name_matches(name, p->explicit[i].end);
		if (!b && !e)
			continue;
		struct strbuf sb = { 0 };
		strbuf_addf(&sb, "%s..%s", p->explicit[i].begin, p->explicit[i].end);
		*pair = sb.failed ? NO_ROW : pair_of(p, sb.data, sb.len);
		strbuf_release(&sb);
		if (*pair == NO_ROW)
			return PAIR_NONE;
		return b ? PAIR_BEGIN : PAIR_END;
	}
	for (size_t k = 0; k < NCONVENTIONS; k++) {
		size_t stem;
		enum pair_role role = PAIR_NONE;
		if (ends_with(name, conventions[k].begin, &stem) && declared(p, name, stem, conventions[k].end))
			role = PAIR_BEGIN;
		else if (ends_with(name, conventions[k].end, &stem) && declared(p, name, stem, conventions[k].begin))
			role = PAIR_END;
		if (role == PAIR_NONE)
			continue;
		*pair = pair_of(p, name, stem);
		return *pair == NO_ROW ? PAIR_NONE : role;
	}
	return PAIR_NONE;
}

/* Pointers are aligned, so their low bits alone would crowd a few buckets:
 * mix every bit into the low ones. */
static uint64_t ptr_hash(const void *a, const void *b)
{
	uint64_t h = (uint64_t)(uintptr_t)a * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)b * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* The class-name list of ev's trace, made on its first use; NULL (and
 * nothing declared) when out of memory. */
static const char **trace_known(struct pairs *p, const struct trace_event *ev, size_t *count)
{
	*count = 0;
	if (2 * (p->ntraces + 1) > p->tracecap) {
		size_t cap = p->tracecap ? p->tracecap * 2 : 16;
		struct trace_names *grown = calloc(cap, sizeof(*grown));
		if (!grown) {
			p->oom = true;
			return NULL;
		}
		for (size_t i = 0; i < p->tracecap; i++) {
			if (!p->traces[i].used)
				continue;
			size_t j = ptr_hash(p->traces[i].trace, NULL) & (cap - 1);
			while (grown[j].used)
				j = (j + 1) & (cap - 1);
			grown[j] = p->traces[i];
		}
		free(p->traces);
		p->traces = grown;
		p->tracecap = cap;
	}
	size_t j = ptr_hash(ev->trace, NULL) & (p->tracecap - 1);
	while (p->traces[j].used && p->traces[j].trace != ev->trace)
		j = (j + 1) & (p->tracecap - 1);
	struct trace_names *t = &p->traces[j];
	if (!t->used) {
		*t = (struct trace_names){ .trace = ev->trace, .used = true };
		p->ntraces++;
	}
	/* Both readers declare every event class of a trace up front. */
	if (!t->known) {
		p->class_lists++;
		t->known = trace_event_class_names(ev, &t->nknown);
		if (!t->known) {
			t->nknown = 0;
			p->oom = true;   /* tried again at the trace's next new marker */
		}
	}
	*count = t->nknown;
	return t->known;
}

/* Room for one more name slot; -1 when out of memory. */
static int names_grow(struct pairs *p)
{
	size_t cap = p->namecap ? p->namecap * 2 : 256;
	struct name_slot *grown = calloc(cap, sizeof(*grown));
	if (!grown)
		return -1;
	for (size_t i = 0; i < p->namecap; i++) {
		if (!p->names[i].used)
			continue;
		size_t j = ptr_hash(p->names[i].trace, p->names[i].name) & (cap - 1);
		while (grown[j].used)
			j = (j + 1) & (cap - 1);
		grown[j] = p->names[i];
	}
	free(p->names);
	p->names = grown;
	p->namecap = cap;
	p->last_name = cap;   /* the slots moved */
	return 0;
}

static struct name_slot *name_slot(struct pairs *p, const struct trace_event *ev)
{
	/* Most events are of the previous event's marker and trace: no hashing. */
	if (p->last_name < p->namecap) {
		struct name_slot *s = &p->names[p->last_name];
		if (s->name == ev->name && s->trace == ev->trace)
			return s;
	}
	size_t j = 0;
	if (p->namecap) {
		for (j = ptr_hash(ev->trace, ev->name) & (p->namecap - 1); p->names[j].used;
		     j = (j + 1) & (p->namecap - 1))
			if (p->names[j].name == ev->name && p->names[j].trace == ev->trace) {
				p->last_name = j;
				return &p->names[j];
			}
	}
	/* A new (trace, marker): classified once, as it first shows up, so the
	 * pairs are numbered in the same order as always. */
	struct name_slot *s = &p->spare;
	if (2 * (p->nnames + 1) <= p->namecap || !names_grow(p)) {
		j = ptr_hash(ev->trace, ev->name) & (p->namecap - 1);
		while (p->names[j].used)
			j = (j + 1) & (p->namecap - 1);
		s = &p->names[j];
		p->nnames++;
		p->last_name = j;
	}
	/* else: classified again each time, in the spare slot: slower, still exact */
	p->known = trace_known(p, ev, &p->nknown);
	*s = (struct name_slot){ .trace = ev->trace, .name = ev->name, .used = true };
	s->role = classify(p, ev->name, &s->pair);
	return s;
}

/* ---------------- threads ---------------- */

static uint64_t thread_hash(const void *trace, int64_t key)
{
	return ((uint64_t)(uintptr_t)trace * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)key * 0xff51afd7ed558ccdull);
}

static int thash_grow(struct pairs *p)
{
	size_t cap = p->thashcap ? p->thashcap * 2 : 64;
	uint32_t *h = calloc(cap, sizeof(*h));
	if (!h)
		return -1;
	for (size_t i = 0; i < p->nthreads; i++) {
		size_t j = thread_hash(p->threads[i].trace, p->threads[i].key) & (cap - 1);
		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (uint32_t)i + 1;
	}
	free(p->thash);
	p->thash = h;
	p->thashcap = cap;
	return 0;
}

/* The thread of (trace, key), created on first use; NULL when out of memory. */
static struct thread *thread_of(struct pairs *p, const void *trace, int64_t key, int64_t pid, int64_t tid)
{
	if (p->last && p->last->trace == trace && p->last->key == key)
		return p->last;
	size_t j = p->thashcap ? thread_hash(trace, key) & (p->thashcap - 1) : 0;
	for (; p->thashcap && p->thash[j]; j = (j + 1) & (p->thashcap - 1)) {
		struct thread *t = &p->threads[p->thash[j] - 1];
		if (t->trace == trace && t->key == key)
			return p->last = t;
	}
	if (2 * (p->nthreads + 1) > p->thashcap) {
		if (thash_grow(p))
			return NULL;
		j = thread_hash(trace, key) & (p->thashcap - 1);
		while (p->thash[j])
			j = (j + 1) & (p->thashcap - 1);
	}
	if (p->nthreads == p->threadcap && cli_array_grow(&p->threads, &p->threadcap, sizeof(*p->threads), 16))
		return NULL;
	/* the array may have moved: p->last is found again by the next lookup */
	struct thread *t = &p->threads[p->nthreads];
	*t = (struct thread){ .trace = trace, .key = key, .pid = pid, .tid = tid };
	p->thash[j] = (uint32_t)++p->nthreads;
	return p->last = t;
}

/* ---------------- rows (--by) ---------------- */

/*
 * The row of `pair` for the --by value whose key bytes (trace_event_field_key)
 * are key[0..len); `ev` gives its text for a new row (NULL: the text is the
 * key).  NO_ROW when out of memory.
 */
static uint32_t row_for_key(struct pairs *p, uint32_t pair, const char *key, size_t len, const struct trace_event *ev)
{
	struct pair_def *d = &p->defs[pair];
	uint64_t h = text_hash_words(key, len);
	if (d->keycap) {
		for (size_t j = h & (d->keycap - 1); d->keys[j].row != NO_ROW; j = (j + 1) & (d->keycap - 1))
			if (d->keys[j].hash == h && d->keys[j].len == len && memcmp(d->keys[j].raw, key, len) == 0)
				return d->keys[j].row;
	}
	/* Both limits: per pair, and over all pairs, as a trace may hold
	 * tens of thousands of pairs (each row costs about 2.5 KiB in stats). */
	if (d->nkeys >= PAIRS_MAX_KEYS || p->nkeyed >= PAIRS_MAX_KEYED_ROWS) {
		p->folded = true;
		if (d->other == NO_ROW)
			d->other = new_row(p, pair, strdup("(other)"));   /* NULL when out of memory: no key shown */
		return d->other;
	}
	if (2 * (d->nkeys + 1) > d->keycap) {
		size_t cap = d->keycap ? d->keycap * 2 : 16;
		struct key_slot *grown = malloc(cap * sizeof(*grown));
		if (!grown) {
			p->oom = true;
			return NO_ROW;
		}
		for (size_t j = 0; j < cap; j++)
			grown[j].row = NO_ROW;
		for (size_t i = 0; i < d->keycap; i++) {
			if (d->keys[i].row == NO_ROW)
				continue;
			size_t j = d->keys[i].hash & (cap - 1);
			while (grown[j].row != NO_ROW)
				j = (j + 1) & (cap - 1);
			grown[j] = d->keys[i];
		}
		free(d->keys);
		d->keys = grown;
		d->keycap = cap;
	}
	/* a new value: its text, once */
	struct strbuf text = { 0 };
	if (ev)
		trace_event_field_append(&text, ev, p->by, TRACE_VALUE_TEXT);
	else
		strbuf_add(&text, key, len);
	char *raw = malloc(len ? len : 1);
	if (text.failed || !text.data || !raw) {
		strbuf_release(&text);
		free(raw);
		p->oom = true;
		return NO_ROW;
	}
	memcpy(raw, key, len);
	uint32_t row = new_row(p, pair, text.data);
	if (row == NO_ROW) {
		free(raw);
		return NO_ROW;
	}
	size_t j = h & (d->keycap - 1);
	while (d->keys[j].row != NO_ROW)
		j = (j + 1) & (d->keycap - 1);
	d->keys[j] = (struct key_slot){ .row = row, .len = (uint32_t)len, .hash = h, .raw = raw };
	d->nkeys++;
	p->nkeyed++;
	return row;
}

/* The row of the event's --by value; NO_ROW when the event has no such field. */
static uint32_t row_of_event(struct pairs *p, uint32_t pair, const struct trace_event *ev)
{
	if (!p->by)
		return p->defs[pair].row;
	strbuf_reset(&p->sb);
	if (!trace_event_field_key(&p->sb, ev, p->by))
		return NO_ROW;
	if (p->sb.failed) {
		p->oom = true;
		return NO_ROW;
	}
	return row_for_key(p, pair, p->sb.data, p->sb.len, ev);
}

/* The row of a begin whose value was not known: the end's, else "-". */
static uint32_t settle_row(struct pairs *p, uint32_t pair, uint32_t row, const struct trace_event *end)
{
	if (row == NO_ROW && end)
		row = row_of_event(p, pair, end);
	if (row == NO_ROW && !p->oom)
		row = row_for_key(p, pair, "-", 1, NULL);   /* no tag: no value's key */
	return row;
}

static void give_up(struct pairs *p, struct thread *t, const struct open_begin *b, int64_t ns,
		    enum pair_given_up why)
{
	uint32_t row = settle_row(p, b->pair, b->row, NULL);
	if (row != NO_ROW)
		p->rows[row].no_end++;
	struct pair_span s = { .pair = b->pair, .row = row, .begin_ns = b->ns, .end_ns = ns, .pid = t->pid,
			       .tid = t->tid, .spans_loss = b->spans_loss };
	if (p->ops.given_up)
		p->ops.given_up(&s, why, p->arg);
}

/* ---------------- events ---------------- */

struct pairs_class pairs_class(struct pairs *p, const struct trace_event *ev)
{
	const struct name_slot *s = name_slot(p, ev);
	/* A slot of the table keeps its class until pairs_free (the table only
	 * grows, moving slots but not changing them); the spare is reused. */
	return (struct pairs_class){ .role = s->role, .pair = s->pair, .fixed = s != &p->spare };
}

enum pair_role pairs_event(struct pairs *p, const struct trace_event *ev, uint32_t *pair)
{
	return pairs_event_as(p, ev, pairs_class(p, ev), pair);
}

enum pair_role pairs_event_as(struct pairs *p, const struct trace_event *ev, struct pairs_class cls, uint32_t *pair)
{
	*pair = cls.pair;
	if (cls.role == PAIR_NONE && !p->every_event)
		return PAIR_NONE;
	/* Unknown ids fall back to something stable: pid 0, one "thread" per stream (as export). */
	int64_t pid = ev->pid >= 0 ? ev->pid : 0;
	int64_t tid = ev->tid >= 0 ? ev->tid : (int64_t)ev->stream_index;
	int64_t key = ev->tid >= 0 ? ev->tid : -1 - (int64_t)ev->stream_index;
	struct thread *t = thread_of(p, ev->trace, key, pid, tid);
	if (!t) {
		p->oom = true;
		return PAIR_NONE;
	}
	/* An untimed event (babeltrace2 path only) counts as the thread's last time. */
	int64_t now = ev->has_time ? ev->ns : t->last_ns;
	t->last_ns = now;
	if (cls.role == PAIR_BEGIN) {
		/* all of them, innermost first, so that export's slices stay nested */
		if (t->depth == PAIRS_MAX_DEPTH) {
			while (t->depth > 0) {
				t->depth--;
				give_up(p, t, &t->stack[t->depth], now, PAIR_GIVEN_UP_TOO_DEEP);
			}
		}
		if (t->depth == t->cap && cli_array_grow(&t->stack, &t->cap, sizeof(*t->stack), 8)) {
			p->oom = true;
			return PAIR_NONE;
		}
		t->stack[t->depth++] = (struct open_begin){ .pair = cls.pair, .row = row_of_event(p, cls.pair, ev),
							    .ns = now };
		return PAIR_BEGIN;
	}
	if (cls.role != PAIR_END)
		return PAIR_NONE;
	size_t k = t->depth;
	while (k > 0 && t->stack[k - 1].pair != cls.pair)
		k--;
	if (k == 0) {
		uint32_t row = settle_row(p, cls.pair, NO_ROW, ev);
		if (row != NO_ROW)
			p->rows[row].no_begin++;
		return PAIR_NONE;
	}
	while (t->depth > k) {
		t->depth--;
		give_up(p, t, &t->stack[t->depth], now, PAIR_GIVEN_UP_INNER);
	}
	struct open_begin b = t->stack[--t->depth];
	/* the begin's row is nearly always known: no call then */
	uint32_t row = b.row != NO_ROW ? b.row : settle_row(p, b.pair, b.row, ev);
	if (row != NO_ROW) {
		p->rows[row].spans++;
		p->rows[row].lossy += b.spans_loss;
	}
	struct pair_span s = { .pair = b.pair, .row = row, .begin_ns = b.ns, .end_ns = now, .pid = t->pid,
			       .tid = t->tid, .spans_loss = b.spans_loss };
	if (p->ops.span)
		p->ops.span(&s, p->arg);
	return PAIR_END;
}

void pairs_set_ops(struct pairs *p, const struct pairs_ops *ops, void *arg)
{
	p->ops = *ops;
	p->arg = arg;
}

void pairs_loss(struct pairs *p, const struct trace_loss *loss)
{
	/*
	 * The loss is reported with the thread of the stream's next packet.
	 * The trace pointer is not in trace_loss, so every thread with that
	 * key in any trace is marked: in a multi-process trace a tid of
	 * another process may be marked too, which only moves its pairs to
	 * "lost" (never counts a wrong duration).
	 */
	int64_t key = loss->tid >= 0 ? loss->tid : -1 - (int64_t)loss->stream_index;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct thread *t = &p->threads[i];
		if (t->key != key)
			continue;
		for (size_t d = 0; d < t->depth; d++)
			t->stack[d].spans_loss = true;
	}
}

void pairs_finish(struct pairs *p)
{
	for (size_t i = 0; i < p->nthreads; i++) {
		struct thread *t = &p->threads[i];
		while (t->depth > 0) {
			t->depth--;
			give_up(p, t, &t->stack[t->depth], t->last_ns, PAIR_GIVEN_UP_AT_END);
		}
	}
}

/* ---------------- setup ---------------- */

struct pairs *pairs_new(const struct pairs_config *cfg, const struct pairs_ops *ops, void *arg, char *error,
			size_t errlen)
{
	snprintf(error, errlen, "out of memory");
	struct pairs *p = calloc(1, sizeof(*p));
	if (!p || (cfg->npairs && !(p->explicit = calloc(cfg->npairs, sizeof(*p->explicit)))) ||
	    (cfg->by && !(p->by = strdup(cfg->by)))) {
		pairs_free(p);
		return NULL;
	}
	p->ops = *ops;
	p->arg = arg;
	p->every_event = cfg->every_event;
	for (size_t i = 0; i < cfg->npairs; i++) {
		const char *comma = strchr(cfg->pairs[i], ',');
		size_t blen = comma ? (size_t)(comma - cfg->pairs[i]) : 0;
		if (!comma || blen == 0 || !comma[1] || strchr(comma + 1, ',') ||
		    (strlen(comma + 1) == blen && memcmp(comma + 1, cfg->pairs[i], blen) == 0)) {
			pairs_free(p);
			snprintf(error, errlen, "--pair %s: give two different marker names, --pair BEGIN,END",
				 cli_text(cfg->pairs[i]));
			return NULL;
		}
		struct explicit_pair *e = &p->explicit[p->nexplicit++];
		e->begin = strndup(cfg->pairs[i], blen);
		e->end = strdup(comma + 1);
		if (!e->begin || !e->end) {
			pairs_free(p);
			return NULL;
		}
	}
	return p;
}

size_t pairs_count(const struct pairs *p)
{
	return p->ndefs;
}

const char *pairs_name(const struct pairs *p, uint32_t pair)
{
	return p->defs[pair].name;
}

size_t pairs_rows(const struct pairs *p)
{
	return p->nrows;
}

const struct pair_row *pairs_row(const struct pairs *p, uint32_t row)
{
	return &p->rows[row];
}

bool pairs_folded(const struct pairs *p)
{
	return p->folded;
}

bool pairs_oom(const struct pairs *p)
{
	return p->oom;
}

void pairs_free(struct pairs *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nexplicit; i++) {
		free(p->explicit[i].begin);
		free(p->explicit[i].end);
	}
	free(p->explicit);
	free(p->by);
	/*
	 * MARK_PAIRS_DEBUG: how often a trace's class names were listed (once
	 * per trace when the cache works), so a test can check the work done
	 * instead of timing it.
	 */
	const char *debug = secure_getenv("MARK_PAIRS_DEBUG");
	if (debug && *debug)
		fprintf(stderr, "mark pairs: %zu class-name lists for %zu traces, %zu markers\n", p->class_lists,
			p->ntraces, p->nnames);
	for (size_t i = 0; i < p->tracecap; i++)
		free(p->traces[i].known);
	free(p->traces);
	free(p->names);
	for (size_t i = 0; i < p->ndefs; i++) {
		for (size_t j = 0; j < p->defs[i].keycap; j++)
			if (p->defs[i].keys[j].row != NO_ROW)
				free(p->defs[i].keys[j].raw);
		free(p->defs[i].name);
		free(p->defs[i].keys);
	}
	free(p->defs);
	for (size_t i = 0; i < p->nrows; i++)
		free(p->rows[i].key);
	free(p->rows);
	for (size_t i = 0; i < p->nthreads; i++)
		free(p->threads[i].stack);
	free(p->threads);
	free(p->thash);
	strbuf_release(&p->sb);
	free(p);
}

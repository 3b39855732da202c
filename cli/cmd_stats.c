/*
 * `mark stats DIR`: per-marker counts, rates, and the distribution of the
 * time between consecutive events of each marker; then the latency of each
 * begin/end pair of markers (pairs.h), optionally split by a field
 * (--by) and drawn as a log2 histogram (--histogram).
 *
 * Distributions are in bounded memory (histo.h): exact order statistics
 * (nearest-rank percentiles) while a row has at most 1024 values, within
 * 0.4% beyond; min, max, count and total are always exact.  Nothing is
 * kept per event.
 */
#include "command.h"
#include "histo.h"
#include "liveline.h"
#include "pairs.h"
#include "trace_reader.h"
#include "trace_time.h"
#include "filter/filter.h"
#include "trace_value.h"
#include "tracer/trace_format.h"
#include "util/safe_dir.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char stats_usage[] =
	"usage: mark stats [--pair BEGIN,END]... [--by FIELD] [--histogram] DIR\n"
	"\n"
	"Summarize the CTF trace in DIR (as written by `mark record`), one line per\n"
	"marker, most frequent first:\n"
	"  count    events of the marker in the trace\n"
	"  rate/s   count divided by the trace's duration (first to last event)\n"
	"  min p50 p90 p99 max\n"
	"           the time between consecutive events of the marker (all threads\n"
	"           together), nearest-rank percentiles (exact up to 1024 intervals,\n"
	"           within 0.4% beyond); \"-\" with fewer than 2 events\n"
	"The header line gives the totals, including events the tracer lost.\n"
	"\n"
	"Then one line per begin/end pair: the time from a begin to its end on the\n"
	"same thread (nesting as a stack).  Markers pair by name when the trace\n"
	"declares both: X-start with X-done or X-end, X_begin/X_end, X__start/X__done,\n"
	"X_entry/X_exit, X_start/X_stop.\n"
	"  count    pairs; min p50 p90 p99 max total: their durations\n"
	"  no_end   begins without an end (ended by an outer end, or open at the end)\n"
	"  no_begin ends without an open begin (its begin was lost or before the trace)\n"
	"  lost     pairs spanning events the tracer lost: not in count or durations\n"
	"\n"
	"Options:\n"
	"  --pair BEGIN,END  also pair these two markers (repeatable); the pair is\n"
	"               called BEGIN..END\n"
	"  --by FIELD   one line per value of the begin's argument FIELD (per lock\n"
	"               name, say); at most 4096 values per pair and 16384 in all,\n"
	"               the rest in their pair's (other) line\n"
	"  --histogram  a log2 histogram of each pair's durations, as bpftrace's hist()\n"
	"  -f, --filter EXPR\n"
	"               count only events whose fields pass EXPR (the language of\n"
	"               `mark record --filter`); the totals count those events only\n"
	"  --progress   show the reading progress on stderr (by default only when\n"
	"               stderr is a terminal)\n"
	"  -h, --help   this help\n"
	"\n"
	"Exit status: 0 on success, 1 if DIR cannot be read as a trace, 2 on bad usage.\n";

struct marker_stats {
	char *name;
	uint64_t count;
	int64_t last_ns;
	int have_last;
	struct histo intervals;
	struct marker_stats *next;   /* hash chain */
};

#define STATS_BUCKETS 1024

#define STATS_NAME_CACHE 256

/*
 * What stats_event needs of an event class (trace and marker), by its name
 * pointer: its row and its role in the pairs (pairs_class), so that an event
 * costs one compare here instead of a hash lookup here and another in
 * pairs.c.  Keyed by the trace too: the row is per name but the role is
 * per trace (a trace may declare X_begin without X_end).
 */
struct name_cache {
	const char *name;             /* compared by address only; NULL: empty */
	const void *trace;            /* compared by address only */
	struct marker_stats *row;
	struct pairs_class cls;       /* always .fixed: an entry is not kept otherwise */
};

struct stats_state {
	struct name_cache cache[STATS_NAME_CACHE];
	struct marker_stats *buckets[STATS_BUCKETS];
	struct marker_stats **all;
	size_t nall, allcap;
	uint64_t events, lost, untimed;
	uint64_t read_events;         /* every event read, --filter or not (for live_warn_unrecorded) */
	uint64_t lost_unknown;        /* "events may have been lost" reports without a count */
	int64_t first_ns, last_ns;
	int have_time;
	uint64_t streams;
	int oom;
	struct pairs *pairs;
	struct histo *rows;           /* the durations of each pairs row        */
	size_t rowcap;
	const struct mark_filter *filter;   /* --filter, or NULL */
};

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct marker_stats *find_marker(struct stats_state *st, const char *name)
{
	struct marker_stats **slot = &st->buckets[hash_name(name) % STATS_BUCKETS];
	for (struct marker_stats *m = *slot; m; m = m->next)
		if (strcmp(m->name, name) == 0)
			return m;
	if (st->nall == st->allcap && cli_array_grow(&st->all, &st->allcap, sizeof(*st->all), 64))
		return NULL;
	struct marker_stats *m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(name))) {
		free(m);
		return NULL;
	}
	m->next = *slot;
	*slot = m;
	st->all[st->nall++] = m;
	return m;
}

static int stats_event(const struct trace_event *ev, void *arg)
{
	struct stats_state *st = arg;
	st->read_events++;
	if (st->filter && !trace_event_filter_pass(ev, st->filter))
		return 0;
	/*
	 * The row and pair role of a (name, trace) pointer pair, remembered: a
	 * reader hands the same pointers (the class name, the trace) for every
	 * event of a class while it runs, so the hashes and compares run once
	 * per class, not per event.  A colliding class evicts the entry; it is
	 * looked up again when it comes back (pairs_class then finds the role
	 * it gave the first time, so the pairs are numbered as they first show
	 * up, as pairs_event does).
	 */
	struct name_cache *nc = &st->cache[((uintptr_t)ev->name >> 4) % STATS_NAME_CACHE];
	if (nc->name != ev->name || nc->trace != ev->trace) {   /* ev->name is never NULL */
		struct marker_stats *m = find_marker(st, ev->name);
		if (!m) {
			st->oom = 1;
			return 1;
		}
		/* one assignment: the row and the role always of the same class */
		*nc = (struct name_cache){ .name = ev->name, .trace = ev->trace, .row = m,
					   .cls = pairs_class(st->pairs, ev) };
		if (!nc->cls.fixed) {
			/* out of memory in pairs.c: classified for this event only,
			 * so not kept (the next event of the class asks again) */
			nc->name = NULL;
		}
	}
	struct marker_stats *m = nc->row;
	st->events++;
	/* pairs.h: with every_event false (stats' config), a class of role
	 * PAIR_NONE is nothing to pairs_event_as: half the events here. */
	if (nc->cls.role != PAIR_NONE) {
		uint32_t pair;
		pairs_event_as(st->pairs, ev, nc->cls, &pair);
	}
	if (ev->stream_index + 1 > st->streams)
		st->streams = ev->stream_index + 1;
	m->count++;
	if (!ev->has_time) {
		st->untimed++;
		return 0;
	}
	if (!st->have_time) {
		st->first_ns = ev->ns;
		st->have_time = 1;
	}
	st->last_ns = ev->ns;
	if (m->have_last) {
		/* The muxer delivers events in time order, so this is >= 0; clamp anyway. */
		uint64_t d = ev->ns > m->last_ns ? (uint64_t)(ev->ns - m->last_ns) : 0;
		if (histo_add(&m->intervals, d)) {
			st->oom = 1;
			return 1;
		}
	}
	m->last_ns = ev->ns;
	m->have_last = 1;
	return 0;
}

static void stats_discarded(const struct trace_loss *loss, void *arg)
{
	struct stats_state *st = arg;
	st->lost = trace_add_sat(st->lost, loss->count);
	if (loss->count == 0)
		st->lost_unknown++;
	pairs_loss(st->pairs, loss);
}

/* A begin and its end: its duration, unless lost events lie between them. */
static void stats_span(const struct pair_span *span, void *arg)
{
	struct stats_state *st = arg;
	if (span->spans_loss || span->row == UINT32_MAX)
		return;
	if (span->row >= st->rowcap) {
		size_t cap = st->rowcap ? st->rowcap : 16;
		while (cap <= span->row)
			cap *= 2;
		struct histo *grown = realloc(st->rows, cap * sizeof(*grown));
		if (!grown) {
			st->oom = 1;
			return;
		}
		memset(grown + st->rowcap, 0, (cap - st->rowcap) * sizeof(*grown));
		st->rows = grown;
		st->rowcap = cap;
	}
	uint64_t d = span->end_ns > span->begin_ns ? (uint64_t)(span->end_ns - span->begin_ns) : 0;
	if (histo_add(&st->rows[span->row], d))
		st->oom = 1;
}

static int cmp_marker(const void *a, const void *b)
{
	const struct marker_stats *x = *(struct marker_stats *const *)a, *y = *(struct marker_stats *const *)b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void print_duration_cell(uint64_t ns)
{
	struct strbuf sb = { 0 };
	trace_time_append_duration(&sb, ns);
	printf(" %12s", sb.data ? sb.data : "?");
	strbuf_release(&sb);
}

/* The five distribution cells, or "-" when there is no value. */
static void print_distribution(struct histo *h)
{
	if (h->count == 0) {
		printf(" %12s %12s %12s %12s %12s", "-", "-", "-", "-", "-");
		return;
	}
	print_duration_cell(h->min);
	print_duration_cell(histo_percentile(h, 50));
	print_duration_cell(histo_percentile(h, 90));
	print_duration_cell(histo_percentile(h, 99));
	print_duration_cell(h->max);
}

/* "1K" for 1024, as bpftrace labels its hist() buckets. */
static void log2_label(char *out, size_t len, uint64_t v)
{
	static const char units[] = "KMGTPE";
	unsigned u = 0;
	while (v >= 1024 && v % 1024 == 0 && u < sizeof(units) - 1) {
		v /= 1024;
		u++;
	}
	if (u)
		snprintf(out, len, "%" PRIu64 "%c", v, units[u - 1]);
	else
		snprintf(out, len, "%" PRIu64, v);
}

/* A log2 histogram in the terminal, as bpftrace's hist() prints one. */
static void print_histogram(const char *title, const struct histo *h)
{
	printf("\n@%s (ns):\n", title);
	int lo = 64, hi = -2;
	uint64_t most = 0;
	for (int k = -1; k < 64; k++) {
		uint64_t n = histo_log2_count(h, k);
		if (!n)
			continue;
		lo = k < lo ? k : lo;
		hi = k;
		most = n > most ? n : most;
	}
	for (int k = lo; k <= hi; k++) {
		uint64_t n = histo_log2_count(h, k);
		char label[64], a[24], b[24];
		if (k < 0) {
			snprintf(label, sizeof(label), "[0]");
		} else if (k == 0) {
			snprintf(label, sizeof(label), "[1]");
		} else {
			log2_label(a, sizeof(a), (uint64_t)1 << k);
			if (k == 63)
				snprintf(b, sizeof(b), "...");
			else
				log2_label(b, sizeof(b), (uint64_t)2 << k);
			snprintf(label, sizeof(label), "[%s, %s)", a, b);
		}
		char bar[53];
		size_t w = most ? (size_t)((n * 52 + most - 1) / most) : 0;
		memset(bar, '@', w);
		memset(bar + w, ' ', 52 - w);
		bar[52] = '\0';
		printf("%-20s %8" PRIu64 " |%s|\n", label, n, bar);
	}
}

struct pair_line {
	char *title;   /* the pair's name, [--by value]; terminal-escaped */
	uint32_t row;
	uint64_t count;
};

static int cmp_pair_line(const void *a, const void *b)
{
	const struct pair_line *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->title, y->title);
}

/* The pairs table (and histograms); -1 when out of memory. */
static int print_pairs(struct stats_state *st, bool histogram)
{
	size_t n = pairs_rows(st->pairs);
	if (n == 0)
		return 0;
	struct pair_line *lines = calloc(n, sizeof(*lines));
	if (!lines)
		return -1;
	size_t width = 4;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pair_row *r = pairs_row(st->pairs, (uint32_t)i);
		struct strbuf sb = { 0 };
		strbuf_add_terminal(&sb, pairs_name(st->pairs, r->pair));
		if (r->key) {
			strbuf_add_lit(&sb, "[");
			strbuf_add_terminal(&sb, r->key);
			strbuf_add_lit(&sb, "]");
		}
		if (sb.failed) {
			rc = -1;
			strbuf_release(&sb);
			break;
		}
		lines[i] = (struct pair_line){ .title = sb.data ? sb.data : strdup(""), .row = (uint32_t)i,
					       .count = i < st->rowcap ? st->rows[i].count : 0 };
		if (!lines[i].title) {
			rc = -1;
			break;
		}
		if (strlen(lines[i].title) > width)
			width = strlen(lines[i].title);
	}
	if (rc == 0) {
		qsort(lines, n, sizeof(*lines), cmp_pair_line);
		printf("\n%-*s %12s %12s %12s %12s %12s %12s %14s %9s %9s %9s\n", (int)width, "pair", "count", "min",
		       "p50", "p90", "p99", "max", "total", "no_end", "no_begin", "lost");
		static struct histo empty;
		for (size_t i = 0; i < n; i++) {
			const struct pair_row *r = pairs_row(st->pairs, lines[i].row);
			struct histo *h = lines[i].row < st->rowcap ? &st->rows[lines[i].row] : &empty;
			printf("%-*s %12" PRIu64, (int)width, lines[i].title, h->count);
			print_distribution(h);
			if (h->count) {
				struct strbuf sb = { 0 };
				trace_time_append_duration(&sb, h->total);
				printf(" %14s", sb.data ? sb.data : "?");
				strbuf_release(&sb);
			} else {
				printf(" %14s", "-");
			}
			printf(" %9" PRIu64 " %9" PRIu64 " %9" PRIu64 "\n", r->no_end, r->no_begin, r->lossy);
		}
		for (size_t i = 0; histogram && i < n; i++)
			if (lines[i].row < st->rowcap && st->rows[lines[i].row].count)
				print_histogram(lines[i].title, &st->rows[lines[i].row]);
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i].title);
	free(lines);
	return rc;
}

static int stats_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "progress", no_argument, NULL, 'P' },
		{ "pair", required_argument, NULL, 'p' },
		{ "by", required_argument, NULL, 'b' },
		{ "histogram", no_argument, NULL, 'H' },
		{ "filter", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	bool progress = false, histogram = false;
	const char *by = NULL;
	const char *filter_text = NULL;
	const char **pair_args = calloc((size_t)argc + 1, sizeof(*pair_args));
	size_t npair_args = 0;
	if (!pair_args)
		return cli_error("stats: out of memory");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(stats_usage, stdout);
			free(pair_args);
			return 0;
		case 'P': progress = true; break;
		case 'H': histogram = true; break;
		case 'p': pair_args[npair_args++] = optarg; break;
		case 'f': filter_text = optarg; break;   /* parsed once the options are read */
		case 'b':
			if (!*optarg) {
				cli_error("stats: --by takes the name of a marker argument (as `mark view` shows it)");
				free(pair_args);
				return 2;
			}
			by = optarg;
			break;
		default:
			cli_error("stats: %s: unknown option or missing argument; see `mark stats --help`",
				  argv[optind - 1]);
			free(pair_args);
			return 2;
		}
	}
	if (optind != argc - 1) {
		cli_error("stats: %s; usage: mark stats DIR",
			  optind >= argc ? "give the trace directory" : "give exactly one trace directory");
		free(pair_args);
		return 2;
	}
	const char *dir = argv[optind];
	struct mark_filter *filter = NULL;
	if (filter_text && !(filter = cli_filter_parse("stats", filter_text))) {
		free(pair_args);
		return 2;
	}
	struct stats_state *st = calloc(1, sizeof(*st));
	if (!st) {
		free(pair_args);
		mark_filter_free(filter);
		return cli_error("stats: out of memory");
	}
	st->filter = filter;
	char why[512];
	/* every_event false: stats_event skips the events of no pair */
	struct pairs_config pc = { .pairs = pair_args, .npairs = npair_args, .by = by, .every_event = false };
	struct pairs_ops pops = { .span = stats_span };
	st->pairs = pairs_new(&pc, &pops, st, why, sizeof(why));
	free(pair_args);
	if (!st->pairs) {
		free(st);
		mark_filter_free(filter);
		cli_error("stats: %s", why);
		return strncmp(why, "out of memory", 13) != 0 ? 2 : 1;
	}
	struct trace_reader_ops ops = { .native_ok = true, .progress = trace_progress_wanted(progress, false),
					.event = stats_event, .discarded = stats_discarded };
	int r = trace_read(dir, &ops, st);
	if (r == 0)
		pairs_finish(st->pairs);
	int status = 0;
	if (st->oom || pairs_oom(st->pairs)) {
		cli_error("stats: out of memory after %" PRIu64 " events (free some memory, or drop --by)", st->events);
		status = 1;
	} else if (r != 0) {
		live_warn_incomplete(stderr, dir, false);
		status = 1;
	} else {
		uint64_t span = st->have_time ? (uint64_t)(st->last_ns - st->first_ns) : 0;
		struct strbuf sb = { 0 };
		trace_time_append_seconds(&sb, (int64_t)span);
		printf("trace %s: %" PRIu64 " events, %" PRIu64 " lost, %zu markers, %" PRIu64
		       " streams, %s s from first to last event\n",
		       cli_text(dir), st->events, st->lost, st->nall, st->streams, sb.data ? sb.data : "?");
		strbuf_release(&sb);
		/* Part of the report (its second line); also on stderr when the
		 * report goes to a file or a pipe, where no one may read it. */
		if (live_warn_incomplete(stdout, dir, true) && !isatty(STDOUT_FILENO))
			live_warn_incomplete(stderr, dir, false);
		const struct live_rotated rotated = live_rotated_read(dir);
		struct live_stats live;
		if (live_stats_read(dir, &live) == 0)
			live_print_snapshots(stdout, "", dir, &live, NULL);   /* the spec is not in the trace */
		if (rotated.chunks)
			printf("(and %" PRIu64 " events rotated away: the tracer deleted %" PRIu64 " oldest chunk(s) "
			       "to keep the trace within --max-size)\n", rotated.events, rotated.chunks);
		if (rotated.lost)
			printf("(and %" PRIu64 " events lost in the deleted chunks, beside the %" PRIu64 " lost above)\n",
			       rotated.lost, st->lost);
		/* Losses no packet reports because the stream files could not
		 * be written (a full disk): the statistics files count them,
		 * and the totals must add up to what was recorded. */
		const uint64_t in_trace = st->read_events + st->lost + rotated.events + rotated.lost;
		if (live_warn_unrecorded(stdout, dir, true, in_trace) && !isatty(STDOUT_FILENO))
			live_warn_unrecorded(stderr, dir, false, in_trace);
		if (st->lost_unknown)
			printf("(and events may have been lost %" PRIu64 " more time(s): babeltrace2 gives no count "
			       "for a stream's first packet, nor where its counter goes backwards; `mark view` shows where)\n", st->lost_unknown);
		if (st->untimed)
			printf("(%" PRIu64 " events have no timestamp: they count, but not in rates or intervals)\n",
			       st->untimed);
		if (st->nall)   /* no events (all rejected by --filter): st->all is NULL */
			qsort(st->all, st->nall, sizeof(*st->all), cmp_marker);
		size_t width = 6;
		for (size_t i = 0; i < st->nall; i++)
			if (strlen(cli_text(st->all[i]->name)) > width)
				width = strlen(cli_text(st->all[i]->name));
		printf("\n%-*s %12s %14s %12s %12s %12s %12s %12s\n", (int)width, "marker", "count", "rate/s", "min",
		       "p50", "p90", "p99", "max");
		for (size_t i = 0; i < st->nall; i++) {
			struct marker_stats *m = st->all[i];
			printf("%-*s %12" PRIu64, (int)width, cli_text(m->name), m->count);
			if (span > 0)
				printf(" %14.3f", (double)m->count * 1e9 / (double)span);
			else
				printf(" %14s", "-");
			print_distribution(&m->intervals);
			printf("\n");
		}
		if (print_pairs(st, histogram) != 0) {
			cli_error("stats: out of memory printing the pairs");
			status = 1;
		} else if (pairs_folded(st->pairs)) {
			/* the (other) rows would otherwise read as a value of FIELD */
			printf("(--by %s: values past the first %d of a pair, or past the first %d values of all "
			       "pairs together, are counted in their pair's (other) row)\n",
			       cli_text(by), PAIRS_MAX_KEYS, PAIRS_MAX_KEYED_ROWS);
		}
	}
	for (size_t i = 0; i < st->nall; i++) {
		histo_free(&st->all[i]->intervals);
		free(st->all[i]->name);
		free(st->all[i]);
	}
	for (size_t i = 0; i < st->rowcap; i++)
		histo_free(&st->rows[i]);
	free(st->rows);
	pairs_free(st->pairs);
	free(st->all);
	free(st);
	mark_filter_free(filter);
	return status;
}

MARK_CLI_COMMAND(stats, "stats", "per-marker counts, rates, intervals and begin/end latencies of a trace", stats_run);

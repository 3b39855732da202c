/*
 * `mark stats DIR`: per-marker counts, rates, and the distribution of the
 * time between consecutive events of each marker.
 *
 * The distribution is exact: every interval is kept (8 bytes per event) and
 * the order statistics are selected once at the end, so min/p50/p90/p99/max
 * are true order statistics (nearest-rank percentiles), not histogram
 * estimates.
 */
#include "command.h"
#include "liveline.h"
#include "trace_reader.h"
#include "trace_time.h"
#include "filter/filter.h"
#include "trace_value.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char stats_usage[] =
	"usage: mark stats [OPTIONS] DIR\n"
	"\n"
	"Summarize the CTF trace in DIR (as written by `mark record`), one line per\n"
	"marker, most frequent first:\n"
	"  count    events of the marker in the trace\n"
	"  rate/s   count divided by the trace's duration (first to last event)\n"
	"  min p50 p90 p99 max\n"
	"           the time between consecutive events of the marker (all threads\n"
	"           together), exact nearest-rank percentiles; \"-\" with fewer than 2 events\n"
	"The header line gives the totals, including events the tracer lost.\n"
	"\n"
	"Options:\n"
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
	uint64_t *intervals;
	size_t nintervals, cap;
	struct marker_stats *next;   /* hash chain */
};

#define STATS_BUCKETS 1024

#define STATS_NAME_CACHE 256

struct name_cache {
	const char *name;             /* compared by address only */
	struct marker_stats *row;
};

struct stats_state {
	struct name_cache cache[STATS_NAME_CACHE];
	struct marker_stats *buckets[STATS_BUCKETS];
	struct marker_stats **all;
	size_t nall, allcap;
	uint64_t events, lost, untimed;
	uint64_t lost_unknown;        /* "events may have been lost" reports without a count */
	int64_t first_ns, last_ns;
	int have_time;
	uint64_t streams;
	int oom;
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
	if (st->filter && !trace_event_filter_pass(ev, st->filter))
		return 0;
	/* The row of a name pointer, remembered: a reader hands the same
	 * pointer (the class name) for every event of a class while it runs,
	 * so the hash and compare run once per class, not per event. */
	struct name_cache *nc = &st->cache[((uintptr_t)ev->name >> 4) % STATS_NAME_CACHE];
	struct marker_stats *m = nc->name == ev->name ? nc->row : NULL;
	if (!m) {
		m = find_marker(st, ev->name);
		nc->name = ev->name;
		nc->row = m;
	}
	if (!m) {
		st->oom = 1;
		return 1;
	}
	st->events++;
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
		if (m->nintervals == m->cap && cli_array_grow(&m->intervals, &m->cap, sizeof(*m->intervals), 64)) {
			st->oom = 1;
			return 1;
		}
		m->intervals[m->nintervals++] = d;
	}
	m->last_ns = ev->ns;
	m->have_last = 1;
	return 0;
}

static void stats_discarded(const struct trace_loss *loss, void *arg)
{
	struct stats_state *st = arg;
	st->lost += loss->count;
	if (loss->count == 0)
		st->lost_unknown++;
}

static int cmp_marker(const void *a, const void *b)
{
	const struct marker_stats *x = *(struct marker_stats *const *)a, *y = *(struct marker_stats *const *)b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Nearest-rank percentile: the index of the smallest value with at least p% of the values <= it. */
static size_t percentile_index(size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100;   /* ceil(n * p / 100), >= 1 for n >= 1 */
	return rank ? rank - 1 : 0;
}

/*
 * Put the k-th smallest of v[lo..hi) at v[k], smaller ones before it and
 * larger ones after (quickselect).  Only five order statistics are printed,
 * so selecting them is O(n) where sorting every interval was O(n log n) and
 * most of `mark stats`'s time.  The pivot is the middle of three values
 * taken at positions from a fixed pseudo-random sequence, so no order of
 * the input (sorted, reversed, crafted) makes it quadratic in practice;
 * the three-way partition keeps runs of equal intervals linear too.
 */
static void select_kth(uint64_t *v, size_t lo, size_t hi, size_t k, uint64_t *seed)
{
	while (hi - lo > 1) {
		size_t n = hi - lo;
		uint64_t a, b, c;
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		a = v[lo + (*seed >> 33) % n];
		b = v[lo + (*seed >> 13) % n];
		c = v[lo + (*seed >> 3) % n];
		uint64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		/* [lo, lt) < pivot, [lt, i) == pivot, (gt, hi) > pivot */
		size_t lt = lo, i = lo, gt = hi;
		while (i < gt) {
			if (v[i] < pivot) {
				uint64_t t = v[i]; v[i] = v[lt]; v[lt] = t;
				lt++, i++;
			} else if (v[i] > pivot) {
				gt--;
				uint64_t t = v[i]; v[i] = v[gt]; v[gt] = t;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return;
	}
}

static void print_duration_cell(uint64_t ns)
{
	struct strbuf sb = { 0 };
	trace_time_append_duration(&sb, ns);
	printf(" %12s", sb.data ? sb.data : "?");
	strbuf_release(&sb);
}

static int stats_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "progress", no_argument, NULL, 'P' },
		{ "filter", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	bool progress = false;
	const char *filter_text = NULL;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(stats_usage, stdout);
			return 0;
		}
		if (c == 'P') {
			progress = true;
			continue;
		}
		if (c == 'f') {
			filter_text = optarg;   /* parsed once the options are read */
			continue;
		}
		cli_error("stats: %s: unknown option; see `mark stats --help`", argv[optind - 1]);
		return 2;
	}
	if (optind != argc - 1) {
		cli_error("stats: %s; usage: mark stats DIR",
			  optind >= argc ? "give the trace directory" : "give exactly one trace directory");
		return 2;
	}
	const char *dir = argv[optind];
	struct mark_filter *filter = NULL;
	if (filter_text && !(filter = cli_filter_parse("stats", filter_text)))
		return 2;
	struct stats_state *st = calloc(1, sizeof(*st));
	if (!st) {
		mark_filter_free(filter);
		return cli_error("stats: out of memory");
	}
	st->filter = filter;
	struct trace_reader_ops ops = { .native_ok = true, .progress = trace_progress_wanted(progress, false),
					.event = stats_event, .discarded = stats_discarded };
	int r = trace_read(dir, &ops, st);
	int status = 0;
	if (st->oom) {
		cli_error("stats: out of memory after %" PRIu64 " events (8 bytes are kept per event)", st->events);
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
		if (st->lost_unknown)
			printf("(and events may have been lost %" PRIu64 " more time(s): babeltrace2 gives no count "
			       "for a stream's first packet; `mark view` shows where)\n", st->lost_unknown);
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
			if (m->nintervals == 0) {
				printf(" %12s %12s %12s %12s %12s\n", "-", "-", "-", "-", "-");
				continue;
			}
			/* each selection leaves everything above its rank to its right,
			 * so the next (larger) one only searches there */
			size_t n = m->nintervals, i50 = percentile_index(n, 50), i90 = percentile_index(n, 90),
			       i99 = percentile_index(n, 99);
			uint64_t seed = 42, lo = m->intervals[0], hi = m->intervals[0];
			for (size_t k = 1; k < n; k++) {
				lo = m->intervals[k] < lo ? m->intervals[k] : lo;
				hi = m->intervals[k] > hi ? m->intervals[k] : hi;
			}
			select_kth(m->intervals, 0, n, i50, &seed);
			select_kth(m->intervals, i50, n, i90, &seed);
			select_kth(m->intervals, i90, n, i99, &seed);
			print_duration_cell(lo);
			print_duration_cell(m->intervals[i50]);
			print_duration_cell(m->intervals[i90]);
			print_duration_cell(m->intervals[i99]);
			print_duration_cell(hi);
			printf("\n");
		}
	}
	for (size_t i = 0; i < st->nall; i++) {
		free(st->all[i]->intervals);
		free(st->all[i]->name);
		free(st->all[i]);
	}
	free(st->all);
	free(st);
	mark_filter_free(filter);
	return status;
}

MARK_CLI_COMMAND(stats, "stats", "per-marker counts, rates and intervals of a trace", stats_run);

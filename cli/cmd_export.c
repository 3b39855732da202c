/*
 * `mark export --format chrome DIR -o FILE.json`: the Chrome trace event
 * format (JSON object form), which chrome://tracing and ui.perfetto.dev open.
 *
 * Each event becomes an instant event ("ph": "i", thread scope) whose args
 * are the marker's fields.  Begin/end pairs of markers (cli/pairs.h: the
 * naming conventions, or --pair A,B) become "B"/"E" duration events named
 * after the pair, so each pair shows as a slice of its thread.
 *
 * The pairing keeps slices well nested per thread, as the format needs (an
 * "E" ends the innermost open slice of its thread, whatever its name):
 * an end whose begin is not open (lost by the tracer, or before an
 * overwrite-mode trace's oldest event) is written as an instant event
 * under its own name; an end that matches an outer open slice first ends
 * the inner ones whose ends were lost; slices still open at the end of the
 * trace end at the last event of their thread.  Synthesised ends carry
 * "args": {"closed_by": "mark export", ...}.
 *
 * Timestamps are in microseconds with ns precision (3 decimals) from the
 * first event of the trace, so they stay exact in a double (an epoch time
 * in µs does not: 1.7e15 µs leaves 0.25 µs steps); the first event's
 * clock time is in otherData (trace_start_ns, trace_start_utc).  For the
 * same reason an integer argument beyond +-2^53 is a string of its digits
 * (trace_value.c): a JavaScript viewer reads every number as a double.
 *
 * `--format perfetto` (a native Perfetto protobuf trace) is written by
 * cli/export_perfetto.c, with the output file handling of this one;
 * `--format otlp` (OpenTelemetry OTLP/JSON, to a file or an endpoint) by
 * cli/export_otlp.c.
 */
#include "command.h"
#include "output.h"
#include "export_otlp.h"
#include "export_perfetto.h"
#include "liveline.h"
#include "pairs.h"
#include "trace_reader.h"
#include "trace_time.h"
#include "trace_value.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char export_usage[] =
	"usage: mark export [--format chrome|perfetto] [--pair BEGIN,END]... -o FILE DIR\n"
	"       mark export --format otlp [--pair BEGIN,END]... (-o FILE.jsonl | --endpoint URL) DIR\n"
	"\n"
	"Convert the CTF trace in DIR (as written by `mark record`) to another format.\n"
	"\n"
	"Formats:\n"
	"  chrome   Chrome/Perfetto JSON trace (open it at https://ui.perfetto.dev or\n"
	"           chrome://tracing).  Every event is an instant event with the\n"
	"           marker's fields as args; begin/end pairs (NAME-start with\n"
	"           NAME-done or NAME-end, NAME_begin/NAME_end, NAME__start/NAME__done,\n"
	"           NAME_entry/NAME_exit, NAME_start/NAME_stop, both declared in the\n"
	"           trace, as `mark stats` pairs them) become B/E slices named NAME\n"
	"           per thread (an end without its begin becomes an instant; a slice\n"
	"           left open ends at its thread's last event).\n"
	"           ts is in microseconds from the first event, whose clock\n"
	"           time is otherData.trace_start_utc; pid and tid are the traced\n"
	"           process and thread.\n"
	"           The cpu of each event is in its args as \"cpu\".  An integer\n"
	"           arg beyond +-2^53 is a string of its digits (a JSON reader\n"
	"           would round the number); %x and %p are \"0x...\" strings.\n"
	"  perfetto Native Perfetto protobuf trace (FILE.pftrace; open it at\n"
	"           https://ui.perfetto.dev or load it with trace_processor_shell):\n"
	"           one track per thread under its process, the same slices as\n"
	"           chrome (TYPE_SLICE_BEGIN/END), other events as instants, the\n"
	"           fields as typed debug annotations, timestamps in exact ns of\n"
	"           the trace's clock, lost events as \"mark_lost_events\" instants.\n"
	"           Written as it is read: memory does not grow with the trace.\n"
	"           Mapping and string rules: docs/export.md.\n"
	"  otlp     OpenTelemetry OTLP/JSON: one ExportTraceServiceRequest or\n"
	"           ExportLogsServiceRequest per line (at most 512 spans or log records\n"
	"           each), for the Collector's otlpjsonfile receiver, or POSTed to an\n"
	"           OTLP/HTTP endpoint.  Begin/end pairs become spans (nested pairs\n"
	"           as children, the begin's arguments as attributes), every other\n"
	"           event a log record (body: the marker name; attributes: its\n"
	"           arguments) in the span open on its thread; service.name and\n"
	"           process.pid per process, thread.id on each.  See docs/export.md.\n"
	"\n"
	"Options:\n"
	"  -f, --format FMT   output format: chrome (the default), perfetto or otlp\n"
	"  -o, --output FILE  write to FILE (\"-\" for standard output); required but\n"
	"                     with --endpoint\n"
	"      --pair BEGIN,END  also make slices from these two markers (repeatable);\n"
	"                     the slice is called BEGIN..END\n"
	"      --endpoint URL  otlp: POST to URL/v1/traces and URL/v1/logs instead of\n"
	"                     writing a file (http://HOST:PORT, 4318 by default; https is\n"
	"                     not supported: put a Collector in front); a batch refused\n"
	"                     with 429/502/503/504 or a failed connection is retried with\n"
	"                     backoff (Retry-After honoured), 6 attempts at most; each\n"
	"                     attempt has 30 s, each batch 2 minutes in all\n"
	"      --timeout SECONDS  otlp --endpoint: each attempt's time to resolve, connect,\n"
	"                     send and be answered (30 by default; each batch gets 4\n"
	"                     times that), for slow links\n"
	"      --progress     show the reading progress on stderr (by default only when\n"
	"                     stderr is a terminal, and FILE is not stdout on it)\n"
	"  -h, --help         this help\n"
	"\n"
	"Exit status: 0 on success, 1 if DIR cannot be read or FILE cannot be written,\n"
	"2 on bad usage.\n";

#define EXPORT_NAME_SLOTS 256
#define EXPORT_FLUSH (64 * 1024)

/* See name_info(). */
struct name_info {
	const void *trace;                   /* compared by address only                  */
	const char *name;                    /* compared by address only; NULL: empty slot */
	bool has_cpu;                        /* an argument is called "cpu"               */
	char *json_full;                     /* the name as a JSON string                 */
	char *instant;                       /* an instant's text up to its ts (see event_prefix()) */
	size_t instant_len;
};

/* A pair's name as a JSON string, and its B and E events' text up to their ts. */
struct pair_text {
	char *json;
	char *prefix[2];                     /* [0]: "B", [1]: "E"                        */
	size_t prefix_len[2];
};

/*
 * pid and tid of an event as text, `, "pid": P, "tid": T, "args": `, made
 * once per thread: every event has them, and turning two numbers into
 * digits per event was a tenth of the export's time.  Direct-mapped by tid.
 */
#define EXPORT_THREAD_SLOTS 64
struct thread_text {
	int64_t pid, tid;
	uint8_t len;                         /* 0: empty slot                             */
	char text[71];                       /* 28 fixed bytes + 2 x at most 20 characters */
};

struct export_state {
	struct name_info names[EXPORT_NAME_SLOTS];
	FILE *out;
	struct pairs *pairs;                 /* which events begin and end slices         */
	struct pair_text *pair_text;         /* by pair; json NULL: not made yet          */
	size_t pair_text_cap;
	struct thread_text threads[EXPORT_THREAD_SLOTS];
	const void *named_trace[64];         /* traces whose process_name was emitted     */
	size_t nnamed;
	uint64_t events;
	uint64_t lost;
	uint64_t lost_unknown;               /* loss reports without a count           */
	int wrote_any;                       /* an element is out: the next needs a comma */
	bool have_origin;                    /* origin_ns is set (first timed event)      */
	int64_t origin_ns;                   /* clock time of ts 0                        */
	bool origin_is_epoch;
	uint64_t closed_slices;              /* ends written by the export itself         */
	struct strbuf sb;
	int failed;
};

/*
 * `{"name": NAME, "cat": "mark", "ph": "PH", "ts": ` (NAME already a JSON
 * string): the text every event of a name and phase starts with, made once
 * (malloc'd; NULL when out of memory).
 */
static char *event_prefix(const char *json, const char *ph, size_t *len)
{
	struct strbuf sb = { 0 };
	strbuf_add_lit(&sb, "{\"name\": ");
	strbuf_add(&sb, json, strlen(json));
	strbuf_add_lit(&sb, ", \"cat\": \"mark\", \"ph\": ");
	strbuf_add(&sb, ph, strlen(ph));
	strbuf_add_lit(&sb, ", \"ts\": ");
	if (sb.failed) {
		strbuf_release(&sb);
		return NULL;
	}
	*len = sb.len;
	return sb.data;
}

/* The pair's texts, made once; NULL when out of memory. */
static const struct pair_text *pair_text(struct export_state *x, uint32_t pair)
{
	if (pair >= x->pair_text_cap) {
		size_t cap = x->pair_text_cap ? x->pair_text_cap : 16;
		while (cap <= pair)
			cap *= 2;
		struct pair_text *grown = realloc(x->pair_text, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		memset(grown + x->pair_text_cap, 0, (cap - x->pair_text_cap) * sizeof(*grown));
		x->pair_text = grown;
		x->pair_text_cap = cap;
	}
	struct pair_text *t = &x->pair_text[pair];
	if (!t->json) {
		struct strbuf sb = { 0 };
		strbuf_add_json_string(&sb, pairs_name(x->pairs, pair));
		if (sb.failed) {
			strbuf_release(&sb);
			return NULL;
		}
		t->prefix[0] = event_prefix(sb.data, "\"B\"", &t->prefix_len[0]);
		t->prefix[1] = event_prefix(sb.data, "\"E\"", &t->prefix_len[1]);
		if (!t->prefix[0] || !t->prefix[1]) {
			free(t->prefix[0]);
			free(t->prefix[1]);
			strbuf_release(&sb);
			*t = (struct pair_text){ 0 };
			return NULL;
		}
		t->json = sb.data;
	}
	return t;
}

/* `, "pid": P, "tid": T, "args": ` of a thread, from its slot (made on a miss). */
static void append_thread(struct export_state *x, struct strbuf *sb, int64_t pid, int64_t tid)
{
	struct thread_text *t = &x->threads[(uint64_t)tid % EXPORT_THREAD_SLOTS];
	if (t->tid != tid || t->pid != pid || t->len == 0) {
		struct strbuf tmp = { 0 };
		strbuf_add_lit(&tmp, ", \"pid\": ");
		strbuf_add_int(&tmp, pid);
		strbuf_add_lit(&tmp, ", \"tid\": ");
		strbuf_add_int(&tmp, tid);
		strbuf_add_lit(&tmp, ", \"args\": ");
		if (tmp.failed || tmp.len > sizeof(t->text)) {
			t->len = 0;
			if (tmp.failed)
				sb->failed = 1;
			else
				strbuf_add(sb, tmp.data, tmp.len);
			strbuf_release(&tmp);
			return;
		}
		memcpy(t->text, tmp.data, tmp.len);
		t->len = (uint8_t)tmp.len;
		t->pid = pid;
		t->tid = tid;
		strbuf_release(&tmp);
	}
	strbuf_add(sb, t->text, t->len);
}

/* µs with 3 decimals, digits written straight into the buffer. */
static void append_ts(struct strbuf *sb, int64_t ns)
{
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	const uint64_t us = mag / 1000;
	const unsigned n = text_count_digits(us);
	if (strbuf_reserve(sb, n + 5) != 0)
		return;
	char *p = sb->data + sb->len;
	if (ns < 0)
		*p++ = '-';
	text_put_digits(p + n, us, n);
	p[n] = '.';
	text_put_digits(p + n + 4, mag % 1000, 3);
	p[n + 4] = '\0';
	sb->len = (size_t)(p + n + 4 - sb->data);
}

/* A "process_name" metadata event per traced process, from the trace's env.procname. */
static void maybe_name_process(struct export_state *x, const void *trace, const char *procname, int64_t pid)
{
	for (size_t i = 0; i < x->nnamed; i++)
		if (x->named_trace[i] == trace)
			return;
	if (x->nnamed < sizeof(x->named_trace) / sizeof(x->named_trace[0]))
		x->named_trace[x->nnamed++] = trace;
	if (!procname)
		return;
	strbuf_addf(&x->sb, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %" PRId64 ", \"tid\": 0, \"args\": {\"name\": ",
		    x->wrote_any ? ",\n" : "", pid);
	strbuf_add_json_string(&x->sb, procname);
	strbuf_add_lit(&x->sb, "}}");
	x->wrote_any = 1;
}

/* ts of a clock time: µs from the origin (the first event). */
static void append_rel_ts(struct export_state *x, struct strbuf *sb, int64_t ns)
{
	append_ts(sb, ns - (x->have_origin ? x->origin_ns : 0));
}

/* An "E" the trace does not have: a begin given up (pairs.h) ends its slice. */
static void export_given_up(const struct pair_span *span, enum pair_given_up why, void *arg)
{
	struct export_state *x = arg;
	struct strbuf *sb = &x->sb;
	const struct pair_text *pt = pair_text(x, span->pair);
	const char *name = pt ? pt->json : NULL;
	if (!name) {
		sb->failed = 1;   /* reported as out of memory by the next flush */
		return;
	}
	strbuf_addf(sb, "%s{\"name\": %s", x->wrote_any ? ",\n" : "", name);
	x->wrote_any = 1;
	strbuf_add_lit(sb, ", \"cat\": \"mark\", \"ph\": \"E\", \"ts\": ");
	append_rel_ts(x, sb, span->end_ns);
	strbuf_addf(sb, ", \"pid\": %" PRId64 ", \"tid\": %" PRId64
		    ", \"args\": {\"closed_by\": \"mark export\", \"reason\": \"%s\"}}", span->pid, span->tid,
		    why == PAIR_GIVEN_UP_INNER	 ? "its end event was lost; ended by an outer slice's end"
		    : why == PAIR_GIVEN_UP_AT_END ? "no end event in the trace; ended at the thread's last event"
						  : "more than 256 slices open on the thread; all ended here");
	x->closed_slices++;
}

/*
 * What export needs of a marker of a trace, remembered per (trace, name
 * pointer): a reader hands the same name pointer for every event of a
 * class while it runs, and the escaping and the "cpu" check per event were
 * most of the export's time.  A miss (first event of a
 * class, or a slot taken by another class) computes them again.
 */
static struct name_info *name_info(struct export_state *x, const struct trace_event *ev)
{
	struct name_info *ni = &x->names[(((uintptr_t)ev->name >> 4) ^ ((uintptr_t)ev->trace >> 6)) % EXPORT_NAME_SLOTS];
	if (ni->name == ev->name && ni->trace == ev->trace)
		return ni;
	free(ni->json_full);
	free(ni->instant);
	*ni = (struct name_info){ .trace = ev->trace };
	ni->has_cpu = trace_event_has_field(ev, "cpu");
	struct strbuf a = { 0 };
	strbuf_add_json_string(&a, ev->name);
	if (a.failed) {
		strbuf_release(&a);
		return NULL;
	}
	ni->json_full = a.data;
	ni->instant = event_prefix(a.data, "\"i\", \"s\": \"t\"", &ni->instant_len);
	if (!ni->instant)
		return NULL;   /* json_full is freed with the slot's next use or at the end */
	ni->name = ev->name;
	return ni;
}

static int flush_events(struct export_state *x);

/* Ends written as instants: ends without an open begin, over every pair. */
static uint64_t ends_without_begin(const struct pairs *p)
{
	uint64_t n = 0;
	for (size_t i = 0; i < pairs_rows(p); i++)
		n += pairs_row(p, (uint32_t)i)->no_begin;
	return n;
}

static int export_event(const struct trace_event *ev, void *arg)
{
	struct export_state *x = arg;
	struct name_info *ni = name_info(x, ev);
	if (!ni) {
		cli_error("export: out of memory formatting an event");
		x->failed = 1;
		return 1;
	}
	/* Unknown ids fall back to something stable: pid 0, one "thread" per stream. */
	int64_t pid = ev->pid >= 0 ? ev->pid : 0;
	int64_t tid = ev->tid >= 0 ? ev->tid : (int64_t)ev->stream_index;
	struct strbuf *sb = &x->sb;
	maybe_name_process(x, ev->trace, ev->procname, pid);

	/* Events come in time order: the first timed one is ts 0. */
	if (ev->has_time && !x->have_origin) {
		x->have_origin = true;
		x->origin_ns = ev->ns;
		x->origin_is_epoch = ev->clock_is_epoch;
	}
	int64_t ns = ev->has_time ? ev->ns : (x->have_origin ? x->origin_ns : 0);
	/* ends given up by this event are written (export_given_up) before it */
	uint32_t pair;
	enum pair_role role = pairs_event(x->pairs, ev, &pair);
	const char *prefix = ni->instant;
	size_t prefix_len = ni->instant_len;
	if (role != PAIR_NONE) {
		const struct pair_text *pt = pair_text(x, pair);
		prefix = pt ? pt->prefix[role == PAIR_END] : NULL;
		prefix_len = pt ? pt->prefix_len[role == PAIR_END] : 0;
	}
	if (!prefix) {
		cli_error("export: out of memory formatting an event");
		x->failed = 1;
		return 1;
	}
	if (x->wrote_any)
		strbuf_add_lit(sb, ",\n");
	x->wrote_any = 1;
	strbuf_add(sb, prefix, prefix_len);
	append_rel_ts(x, sb, ns);
	append_thread(x, sb, pid, tid);
	bool has_payload = ev->native || (ev->payload && bt_field_get_class_type(ev->payload) == BT_FIELD_CLASS_TYPE_STRUCTURE);
	if (ev->cpu >= 0 && has_payload && !ni->has_cpu && !sb->failed) {
		/* The CPU is a property of the event, not an argument; add it unless an
		 * argument already has that name. */
		trace_event_payload_append(sb, ev, TRACE_VALUE_JSON);
		sb->len--;   /* reopen the object */
		if (trace_event_payload_count(ev))
			strbuf_add_lit(sb, ", ");
		strbuf_add_lit(sb, "\"cpu\": ");
		strbuf_add_int(sb, ev->cpu);
		strbuf_add_lit(sb, "}");
	} else {
		trace_event_payload_append(sb, ev, TRACE_VALUE_JSON);
	}
	strbuf_add_lit(sb, "}");
	x->events++;
	if ((sb->failed || sb->len >= EXPORT_FLUSH) && flush_events(x) != 0)
		return 1;
	return 0;
}

/* Events are gathered in x->sb and written 64 KiB at a time (one fwrite
 * per event cost a call and a copy each).  Non-zero on failure (reported). */
static int flush_events(struct export_state *x)
{
	struct strbuf *sb = &x->sb;
	int rc = 0;
	if (sb->failed) {
		if (!x->failed)
			cli_error("export: out of memory formatting an event");
		rc = 1;
	} else if (sb->len && fwrite(sb->data, 1, sb->len, x->out) != sb->len) {
		if (x->out == stdout)
			cli_output_failed(errno);
		rc = 1;
	}
	if (rc)
		x->failed = 1;
	strbuf_reset(sb);
	return rc;
}

static void export_discarded(const struct trace_loss *loss, void *arg)
{
	struct export_state *x = arg;
	x->lost = trace_add_sat(x->lost, loss->count);
	if (loss->count == 0)
		x->lost_unknown++;
	pairs_loss(x->pairs, loss);
}

static int export_write(struct export_state *x, const char *format, const char *output, bool progress, int argc,
			char **argv);

static int export_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "progress", no_argument, NULL, 'P' },
		{ "pair", required_argument, NULL, 'p' },
		{ "endpoint", required_argument, NULL, 'E' },
		{ "timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = "chrome", *output = NULL, *endpoint = NULL;
	bool progress = false;
	unsigned timeout_s = 0;
	int c;
	const char **pair_args = calloc((size_t)argc + 1, sizeof(*pair_args));
	size_t npair_args = 0;
	if (!pair_args)
		return cli_error("export: out of memory");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
		case 'h': fputs(export_usage, stdout); free(pair_args); return 0;
		case 'P': progress = true; break;
		case 'p': pair_args[npair_args++] = optarg; break;
		case 'E': endpoint = optarg; break;
		case 'T': {
			char *end;
			errno = 0;
			unsigned long t = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || t < 1 || t > 3600 || optarg[0] == '-') {
				cli_error("export: --timeout %s: give whole seconds from 1 to 3600", cli_text(optarg));
				free(pair_args);
				return 2;
			}
			timeout_s = (unsigned)t;
			break;
		}
		default:
			cli_error("export: %s: unknown option or missing argument; see `mark export --help`",
				  argv[optind - 1]);
			free(pair_args);
			return 2;
		}
	}
	if (timeout_s && !endpoint) {
		cli_error("export: --timeout is for --format otlp --endpoint");
		free(pair_args);
		return 2;
	}
	if (strcmp(format, "otlp") == 0) {
		struct export_otlp_options oo = { .output = output, .endpoint = endpoint, .pairs = pair_args,
						  .npairs = npair_args, .progress = progress, .timeout_s = timeout_s };
		int st = export_otlp(&oo, argc - optind, argv + optind);
		free(pair_args);
		return st;
	}
	if (endpoint) {
		cli_error("export: --endpoint is for --format otlp");
		free(pair_args);
		return 2;
	}
	struct export_state x = { .out = stdout };
	char why[512];
	struct pairs_config pc = { .pairs = pair_args, .npairs = npair_args, .every_event = true };
	struct pairs_ops pops = { .given_up = export_given_up };
	x.pairs = pairs_new(&pc, &pops, &x, why, sizeof(why));
	free(pair_args);
	if (!x.pairs) {
		cli_error("export: %s", why);
		return strncmp(why, "out of memory", 13) != 0 ? 2 : 1;
	}
	int status = export_write(&x, format, output, progress, argc, argv);
	pairs_free(x.pairs);
	for (size_t i = 0; i < x.pair_text_cap; i++) {
		free(x.pair_text[i].json);
		free(x.pair_text[i].prefix[0]);
		free(x.pair_text[i].prefix[1]);
	}
	free(x.pair_text);
	return status;
}

/* The export itself, once the options are read (export_run). */
static int export_write(struct export_state *x, const char *format, const char *output, bool progress, int argc,
			char **argv)
{
	if (strcmp(format, "chrome") != 0 && strcmp(format, "perfetto") != 0) {
		cli_error("export: unknown format \"%s\"; the supported formats are: chrome, perfetto, otlp", format);
		return 2;
	}
	if (optind != argc - 1) {
		cli_error("export: %s; usage: mark export --format chrome|perfetto -o FILE DIR",
			  optind >= argc ? "give the trace directory" : "give exactly one trace directory");
		return 2;
	}
	if (!output) {
		cli_error("export: give the output file with -o FILE.json (chrome) or -o FILE.pftrace (perfetto), "
			  "or -o - for standard output");
		return 2;
	}
	const char *dir = argv[optind];
	if (trace_check_directory(dir) != 0)
		return 1;

	/* Written whole or not at all (output.h): a failed export never leaves
	 * a truncated FILE.json that looks complete.  Owner-only: it holds the
	 * trace's %s arguments, which the tracer keeps owner-only too. */
	struct output_file file = { 0 };
	if (strcmp(output, "-") != 0) {
		if (output_file_open(&file, "export", output, 0600) != 0)
			return 1;
		x->out = file.f;
	}
	int r = 0, status = 0;
	if (strcmp(format, "perfetto") == 0) {
		/* cli/export_perfetto.c writes the file; closed and renamed below */
		struct export_perfetto_counts counts = { 0 };
		status = export_perfetto(dir, x->out, x->pairs, trace_progress_wanted(progress, strcmp(output, "-") == 0),
					 &counts);
		x->events = counts.events;
		x->lost = counts.lost;
		goto close;
	}
	fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n", x->out);
	struct trace_reader_ops ops = { .native_ok = true,
					.progress = trace_progress_wanted(progress, strcmp(output, "-") == 0),
					.payload_text = true, .payload_style = TRACE_VALUE_JSON,
					.event = export_event, .discarded = export_discarded };
	r = trace_read(dir, &ops, x);
	if (!x->failed)
		flush_events(x);
	if (r != 0 || x->failed) {
		status = 1;
	} else {
		/* Slices still open end at their thread's last event (export_given_up). */
		pairs_finish(x->pairs);
		if (x->sb.failed || pairs_oom(x->pairs)) {
			cli_error("export: out of memory ending the open slices");
			status = 1;
		}
		struct strbuf sb = { 0 };
		fprintf(x->out, "%s\n],\n\"otherData\": {\"source\": ", x->sb.data ? x->sb.data : "");
		strbuf_reset(&sb);
		strbuf_add_json_string(&sb, dir);
		fprintf(x->out, "%s, \"events\": %" PRIu64 ", \"lost_events\": %" PRIu64
			", \"loss_reports_without_count\": %" PRIu64 ", \"slices_ended_by_export\": %" PRIu64
			", \"ends_without_begin\": %" PRIu64,
			sb.data ? sb.data : "\"\"", x->events, x->lost, x->lost_unknown, x->closed_slices,
			ends_without_begin(x->pairs));
		/* ts 0 as a clock time: a string, so no JSON reader rounds it */
		if (x->have_origin) {
			strbuf_reset(&sb);
			if (x->origin_is_epoch)
				trace_time_append_wall(&sb, x->origin_ns, 1);
			fprintf(x->out, ", \"trace_start_ns\": \"%" PRId64 "\"", x->origin_ns);
			if (x->origin_is_epoch && sb.data)
				fprintf(x->out, ", \"trace_start_utc\": \"%s\"", sb.data);
		}
		fputs("}}\n", x->out);
		if (sb.failed) {
			cli_error("export: out of memory writing the end of the file");
			status = 1;
		}
		strbuf_release(&sb);
	}
close:
	if (x->out != stdout) {
		int write_errno = errno;
		if (status != 0 && x->failed && r == 0)
			cli_error("export: writing %s failed: %s", file.tmp, strerror(write_errno));
		if (output_file_close(&file, "export", status == 0) != 0)
			status = 1;
	} else if (cli_flush_stdout() != 0) {
		status = 1;   /* said by main (cli_output_finish) */
	}
	if (status == 0 && x->out != stdout)
		fprintf(stderr, "mark export: %" PRIu64 " events (%" PRIu64 " lost by the tracer) written to %s\n",
			x->events, x->lost, cli_text(output));
	/* What the file cannot show: a trace still being written or never
	 * recovered, and losses its packets could not record (a full disk). */
	if (status == 0) {
		live_warn_incomplete(stderr, dir, false);
		live_warn_unrecorded_after_read(dir, x->events, x->lost);
	}
	for (size_t i = 0; i < EXPORT_NAME_SLOTS; i++) {
		free(x->names[i].json_full);
		free(x->names[i].instant);
	}
	strbuf_release(&x->sb);
	return status;
}

MARK_CLI_COMMAND(export, "export", "convert a trace to Chrome JSON, a Perfetto trace or OpenTelemetry (OTLP)",
		 export_run);

/*
 * `mark export --format chrome DIR -o FILE.json`: the Chrome trace event
 * format (JSON object form), which chrome://tracing and ui.perfetto.dev open.
 *
 * Each event becomes an instant event ("ph": "i", thread scope) whose args
 * are the marker's fields.  When the trace declares both NAME_begin and
 * NAME_end (or NAME_entry and NAME_exit), those become "B"/"E" duration
 * events named NAME, so each begin/end pair shows as a slice.  Pairing is
 * decided from the event classes the trace declares, not from the events
 * seen, so a lone *_end marker stays an instant event.
 *
 * The export keeps slices well nested per thread, as the format needs (an
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
 * clock time is in otherData (trace_start_ns, trace_start_utc).
 */
#include "command.h"
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
	"usage: mark export [--format chrome] -o FILE.json DIR\n"
	"\n"
	"Convert the CTF trace in DIR (as written by `mark record`) to another format.\n"
	"\n"
	"Formats:\n"
	"  chrome   Chrome/Perfetto JSON trace (open it at https://ui.perfetto.dev or\n"
	"           chrome://tracing).  Every event is an instant event with the\n"
	"           marker's fields as args; markers named NAME_begin/NAME_end or\n"
	"           NAME_entry/NAME_exit or NAME_start/NAME_stop (both declared in the\n"
	"           trace) become B/E slices named NAME (an end without its begin\n"
	"           becomes an instant; a slice left open ends at its thread's last\n"
	"           event).  ts is in microseconds from the first event, whose clock\n"
	"           time is otherData.trace_start_utc; pid and tid are the traced\n"
	"           process and thread.\n"
	"           The cpu of each event is in its args as \"cpu\".\n"
	"\n"
	"Options:\n"
	"  -f, --format FMT   output format: chrome (the default; \"perfetto\" is the same)\n"
	"  -o, --output FILE  write to FILE (\"-\" for standard output); required\n"
	"      --progress     show the reading progress on stderr (by default only when\n"
	"                     stderr is a terminal, and FILE is not stdout on it)\n"
	"  -h, --help         this help\n"
	"\n"
	"Exit status: 0 on success, 1 if DIR cannot be read or FILE cannot be written,\n"
	"2 on bad usage.\n";

enum pair_role { ROLE_INSTANT, ROLE_BEGIN, ROLE_END };

struct pair_suffix {
	const char *begin, *end;
};
static const struct pair_suffix pair_suffixes[] = {
	{ "_begin", "_end" },
	{ "_entry", "_exit" },
	{ "_start", "_stop" },
};

/* The open slices of one thread, innermost last, and its last event's time. */
struct thread_slices {
	int64_t pid, tid;
	int64_t last_ns;
	char **open;   /* slice names (stems) */
	size_t nopen, cap;
};

#define EXPORT_NAME_SLOTS 256
#define EXPORT_FLUSH (64 * 1024)

/* See name_info(). */
struct name_info {
	const void *trace;                   /* compared by address only                  */
	const char *name;                    /* compared by address only; NULL: empty slot */
	enum pair_role role;
	size_t stem;                         /* length of the slice name (B/E)            */
	bool has_cpu;                        /* an argument is called "cpu"               */
	char *json_full, *json_stem;         /* the name and the slice name as JSON strings */
};

/* Per trace class: which event class names are halves of a declared pair. */
struct export_state {
	struct name_info names[EXPORT_NAME_SLOTS];
	FILE *out;
	const void *known_trace;             /* the trace `paired` was computed for        */
	char **paired;                       /* names with a declared partner             */
	size_t npaired;
	const void *named_trace[64];         /* traces whose process_name was emitted     */
	size_t nnamed;
	uint64_t events;
	uint64_t lost;
	uint64_t lost_unknown;               /* loss reports without a count           */
	int wrote_any;                       /* an element is out: the next needs a comma */
	bool have_origin;                    /* origin_ns is set (first timed event)      */
	int64_t origin_ns;                   /* clock time of ts 0                        */
	bool origin_is_epoch;
	struct thread_slices *threads;       /* every thread seen, for its open slices    */
	size_t nthreads, threads_cap;
	uint64_t closed_slices;              /* ends written by the export itself         */
	uint64_t unmatched_ends;             /* ends written as instants                  */
	struct strbuf sb;
	int failed;
};

static int ends_with(const char *s, const char *suffix, size_t *stem_len)
{
	size_t ls = strlen(s), lf = strlen(suffix);
	if (ls <= lf || strcmp(s + ls - lf, suffix) != 0)
		return 0;
	*stem_len = ls - lf;
	return 1;
}

static bool name_in(const char *const *names, size_t count, const char *name)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

static void free_paired(struct export_state *x)
{
	for (size_t i = 0; i < x->npaired; i++)
		free(x->paired[i]);
	free(x->paired);
	x->paired = NULL;
	x->npaired = 0;
}

/*
 * Recompute the pairs when the events come from another trace (a
 * directory holding a parent trace and pid-P/ child traces has several).
 * Both readers declare every event class of the metadata up front.
 */
static void learn_pairs(struct export_state *x, const struct trace_event *ev)
{
	if (ev->trace == x->known_trace)
		return;
	free_paired(x);
	x->known_trace = ev->trace;
	size_t count;
	const char **names = trace_event_class_names(ev, &count);
	for (size_t i = 0; names && i < count; i++) {
		const char *n = names[i];
		for (size_t k = 0; k < sizeof(pair_suffixes) / sizeof(pair_suffixes[0]); k++) {
			size_t stem;
			if (!ends_with(n, pair_suffixes[k].begin, &stem))
				continue;
			char partner[512];
			if (stem + strlen(pair_suffixes[k].end) >= sizeof(partner))
				continue;
			memcpy(partner, n, stem);
			strcpy(partner + stem, pair_suffixes[k].end);
			if (!name_in(names, count, partner))
				continue;
			char **grown = realloc(x->paired, (x->npaired + 2) * sizeof(*grown));
			if (!grown)
				goto out;   /* out of memory: fewer pairs, never a crash */
			x->paired = grown;
			x->paired[x->npaired] = strdup(n);
			x->paired[x->npaired + 1] = strdup(partner);
			if (x->paired[x->npaired] && x->paired[x->npaired + 1])
				x->npaired += 2;
		}
	}
out:
	free(names);
}

/* The role of event `name` and, for B/E, the length of the slice name (the stem). */
static enum pair_role role_of(const struct export_state *x, const char *name, size_t *stem_len)
{
	int paired = 0;
	for (size_t i = 0; i < x->npaired && !paired; i++)
		paired = strcmp(x->paired[i], name) == 0;
	if (!paired)
		return ROLE_INSTANT;
	for (size_t k = 0; k < sizeof(pair_suffixes) / sizeof(pair_suffixes[0]); k++) {
		if (ends_with(name, pair_suffixes[k].begin, stem_len))
			return ROLE_BEGIN;
		if (ends_with(name, pair_suffixes[k].end, stem_len))
			return ROLE_END;
	}
	return ROLE_INSTANT;
}

/* The thread's slice state (created on first use); NULL when out of memory. */
static struct thread_slices *thread_of(struct export_state *x, int64_t pid, int64_t tid)
{
	for (size_t i = x->nthreads; i-- > 0;)
		if (x->threads[i].pid == pid && x->threads[i].tid == tid)
			return &x->threads[i];
	if (x->nthreads == x->threads_cap && cli_array_grow(&x->threads, &x->threads_cap, sizeof(*x->threads), 16))
		return NULL;
	struct thread_slices *t = &x->threads[x->nthreads++];
	*t = (struct thread_slices){ .pid = pid, .tid = tid };
	return t;
}

static bool slice_push(struct thread_slices *t, const char *name, size_t len)
{
	if (t->nopen == t->cap && cli_array_grow(&t->open, &t->cap, sizeof(*t->open), 8))
		return false;
	char *copy = strndup(name, len);
	if (!copy)
		return false;
	t->open[t->nopen++] = copy;
	return true;
}

static void append_ts(struct strbuf *sb, int64_t ns)
{
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (ns < 0)
		strbuf_add_lit(sb, "-");
	strbuf_add_uint(sb, mag / 1000, 1);
	strbuf_add_lit(sb, ".");
	strbuf_add_uint(sb, mag % 1000, 3);
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

/* An "E" the trace does not have: the end of the innermost open slice of t. */
static void append_closing_end(struct export_state *x, struct strbuf *sb, struct thread_slices *t, int64_t ns,
			       const char *why)
{
	char *name = t->open[--t->nopen];
	strbuf_addf(sb, "%s{\"name\": ", x->wrote_any ? ",\n" : "");
	x->wrote_any = 1;
	strbuf_add_json_string(sb, name);
	strbuf_addf(sb, "%s", ", \"cat\": \"mark\", \"ph\": \"E\", \"ts\": ");
	append_rel_ts(x, sb, ns);
	strbuf_addf(sb, ", \"pid\": %" PRId64 ", \"tid\": %" PRId64
		    ", \"args\": {\"closed_by\": \"mark export\", \"reason\": ", t->pid, t->tid);
	strbuf_add_json_string(sb, why);
	strbuf_add_lit(sb, "}}");
	free(name);
	x->closed_slices++;
}

/*
 * Keep the thread's slices nested: returns the role to write the event
 * with.  A begin opens a slice; an end closes the innermost slice of its
 * name, after ending (in sb) the slices opened inside it, or, if no slice
 * of its name is open, is written as an instant.
 */
static enum pair_role balance(struct export_state *x, struct strbuf *sb, struct thread_slices *t,
			      enum pair_role role, const char *name, size_t stem, int64_t ns)
{
	if (!t || role == ROLE_INSTANT)
		return role;
	if (role == ROLE_BEGIN)
		return slice_push(t, name, stem) ? ROLE_BEGIN : ROLE_INSTANT;
	size_t k = t->nopen;
	while (k > 0 && !(strlen(t->open[k - 1]) == stem && strncmp(t->open[k - 1], name, stem) == 0))
		k--;
	if (k == 0) {
		x->unmatched_ends++;
		return ROLE_INSTANT;
	}
	while (t->nopen > k)
		append_closing_end(x, sb, t, ns, "its end event was lost; ended by an outer slice's end");
	free(t->open[--t->nopen]);
	return ROLE_END;
}

/*
 * What export needs of a marker of a trace, remembered per (trace, name
 * pointer): a reader hands the same name pointer for every event of a
 * class while it runs, and the pairing, the escaping and the "cpu" check
 * per event were most of the export's time.  A miss (first event of a
 * class, or a slot taken by another class) computes them again.
 */
static struct name_info *name_info(struct export_state *x, const struct trace_event *ev)
{
	struct name_info *ni = &x->names[(((uintptr_t)ev->name >> 4) ^ ((uintptr_t)ev->trace >> 6)) % EXPORT_NAME_SLOTS];
	if (ni->name == ev->name && ni->trace == ev->trace)
		return ni;
	learn_pairs(x, ev);
	free(ni->json_full);
	free(ni->json_stem);
	*ni = (struct name_info){ .trace = ev->trace };
	size_t stem = strlen(ev->name);
	ni->role = role_of(x, ev->name, &stem);
	ni->stem = stem;
	ni->has_cpu = trace_event_has_field(ev, "cpu");
	struct strbuf a = { 0 }, b = { 0 };
	strbuf_add_json_string(&a, ev->name);
	char *stem_text = strndup(ev->name, stem);
	strbuf_add_json_string(&b, stem_text ? stem_text : ev->name);
	free(stem_text);
	if (a.failed || b.failed) {
		strbuf_release(&a);
		strbuf_release(&b);
		return NULL;
	}
	ni->json_full = a.data;
	ni->json_stem = b.data;
	ni->name = ev->name;
	return ni;
}

static int flush_events(struct export_state *x);

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
	struct thread_slices *t = thread_of(x, pid, tid);
	if (t)
		t->last_ns = ns;
	enum pair_role role = balance(x, sb, t, ni->role, ev->name, ni->stem, ns);
	if (x->wrote_any)
		strbuf_add_lit(sb, ",\n");
	x->wrote_any = 1;
	const char *name = role == ROLE_INSTANT ? ni->json_full : ni->json_stem;
	strbuf_add_lit(sb, "{\"name\": ");
	strbuf_add(sb, name, strlen(name));
	if (role == ROLE_BEGIN)
		strbuf_add_lit(sb, ", \"cat\": \"mark\", \"ph\": \"B\", ");
	else if (role == ROLE_END)
		strbuf_add_lit(sb, ", \"cat\": \"mark\", \"ph\": \"E\", ");
	else
		strbuf_add_lit(sb, ", \"cat\": \"mark\", \"ph\": \"i\", \"s\": \"t\", ");
	strbuf_add_lit(sb, "\"ts\": ");
	append_rel_ts(x, sb, ns);
	strbuf_add_lit(sb, ", \"pid\": ");
	strbuf_add_int(sb, pid);
	strbuf_add_lit(sb, ", \"tid\": ");
	strbuf_add_int(sb, tid);
	strbuf_add_lit(sb, ", \"args\": ");
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
	x->lost += loss->count;
	if (loss->count == 0)
		x->lost_unknown++;
}

static int export_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "progress", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = "chrome", *output = NULL;
	bool progress = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
		case 'h': fputs(export_usage, stdout); return 0;
		case 'P': progress = true; break;
		default:
			cli_error("export: %s: unknown option or missing argument; see `mark export --help`",
				  argv[optind - 1]);
			return 2;
		}
	}
	if (strcmp(format, "chrome") != 0 && strcmp(format, "perfetto") != 0) {
		cli_error("export: unknown format \"%s\"; the supported format is: chrome", format);
		return 2;
	}
	if (optind != argc - 1) {
		cli_error("export: %s; usage: mark export --format chrome -o FILE.json DIR",
			  optind >= argc ? "give the trace directory" : "give exactly one trace directory");
		return 2;
	}
	if (!output) {
		cli_error("export: give the output file with -o FILE.json (or -o - for standard output)");
		return 2;
	}
	const char *dir = argv[optind];
	if (trace_check_directory(dir) != 0)
		return 1;

	/* Write to FILE.tmp and rename at the end, so a failed export never leaves
	 * a truncated FILE.json that looks complete. */
	struct export_state x = { .out = stdout };
	char tmp[4096] = "";
	if (strcmp(output, "-") != 0) {
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", output) >= sizeof(tmp))
			return cli_error("export: output path too long: %s", output);
		/* Not through a link someone planted at FILE.tmp (in /tmp, say), and
		 * readable by the caller only: it holds the trace's %s arguments,
		 * which the tracer keeps owner-only too. */
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		x.out = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!x.out && fd >= 0)
			close(fd);
		if (!x.out)
			return cli_error("export: cannot create %s: %s (choose a writable path with -o)", tmp,
					 strerror(errno));
	}
	fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n", x.out);
	struct trace_reader_ops ops = { .native_ok = true,
					.progress = trace_progress_wanted(progress, strcmp(output, "-") == 0),
					.event = export_event, .discarded = export_discarded };
	int r = trace_read(dir, &ops, &x);
	if (!x.failed)
		flush_events(&x);
	int status = 0;
	if (r != 0 || x.failed) {
		status = 1;
	} else {
		/* Slices still open end at their thread's last event. */
		struct strbuf sb = { 0 };
		for (size_t i = 0; i < x.nthreads; i++)
			while (x.threads[i].nopen)
				append_closing_end(&x, &sb, &x.threads[i], x.threads[i].last_ns,
						   "no end event in the trace; ended at the thread's last event");
		fprintf(x.out, "%s\n],\n\"otherData\": {\"source\": ", sb.data ? sb.data : "");
		strbuf_reset(&sb);
		strbuf_add_json_string(&sb, dir);
		fprintf(x.out, "%s, \"events\": %" PRIu64 ", \"lost_events\": %" PRIu64
			", \"loss_reports_without_count\": %" PRIu64 ", \"slices_ended_by_export\": %" PRIu64
			", \"ends_without_begin\": %" PRIu64,
			sb.data ? sb.data : "\"\"", x.events, x.lost, x.lost_unknown, x.closed_slices,
			x.unmatched_ends);
		/* ts 0 as a clock time: a string, so no JSON reader rounds it */
		if (x.have_origin) {
			strbuf_reset(&sb);
			if (x.origin_is_epoch)
				trace_time_append_wall(&sb, x.origin_ns, 1);
			fprintf(x.out, ", \"trace_start_ns\": \"%" PRId64 "\"", x.origin_ns);
			if (x.origin_is_epoch && sb.data)
				fprintf(x.out, ", \"trace_start_utc\": \"%s\"", sb.data);
		}
		fputs("}}\n", x.out);
		if (sb.failed) {
			cli_error("export: out of memory writing the end of the file");
			status = 1;
		}
		strbuf_release(&sb);
	}
	if (x.out != stdout) {
		if (fclose(x.out) != 0 && status == 0) {
			cli_error("export: writing %s failed: %s", tmp, strerror(errno));
			status = 1;
		} else if (status == 0 && rename(tmp, output) != 0) {
			cli_error("export: cannot rename %s to %s: %s", tmp, output, strerror(errno));
			status = 1;
		}
		if (status != 0)
			unlink(tmp);
	} else if (fflush(stdout) != 0) {
		status = 1;
	}
	if (status == 0 && x.out != stdout)
		fprintf(stderr, "mark export: %" PRIu64 " events (%" PRIu64 " lost by the tracer) written to %s\n",
			x.events, x.lost, cli_text(output));
	else if (status != 0 && x.failed && r == 0)
		cli_error("export: writing the output failed: %s", strerror(errno));
	free_paired(&x);
	for (size_t i = 0; i < x.nthreads; i++) {
		while (x.threads[i].nopen)
			free(x.threads[i].open[--x.threads[i].nopen]);
		free(x.threads[i].open);
	}
	free(x.threads);
	for (size_t i = 0; i < EXPORT_NAME_SLOTS; i++) {
		free(x.names[i].json_full);
		free(x.names[i].json_stem);
	}
	strbuf_release(&x.sb);
	return status;
}

MARK_CLI_COMMAND(export, "export", "convert a trace to Chrome/Perfetto JSON", export_run);

/*
 * `mark export --format chrome DIR -o FILE.json`: the Chrome trace event
 * format (JSON object form), which chrome://tracing and ui.perfetto.dev open.
 *
 * Each event becomes an instant event ("ph": "i", thread scope) whose args
 * are the marker's fields.  When the trace declares both NAME_begin and
 * NAME_end (or NAME_entry and NAME_exit), those become "B"/"E" duration
 * events named NAME, so each begin/end pair shows as a slice.  Pairing is
 * decided from the event classes the trace declares, not from the events
 * seen, so a lone *_end marker stays an instant event.  Timestamps are in
 * microseconds with ns precision (3 decimals) on the trace's clock: Unix
 * epoch time when the clock says so.
 */
#include "command.h"
#include "trace_reader.h"
#include "trace_value.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
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
	"           trace) become B/E slices named NAME.  ts is in microseconds; pid and\n"
	"           tid are the traced process and thread.\n"
	"           The cpu of each event is in its args as \"cpu\".\n"
	"\n"
	"Options:\n"
	"  -f, --format FMT   output format: chrome (the default; \"perfetto\" is the same)\n"
	"  -o, --output FILE  write to FILE (\"-\" for standard output); required\n"
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

/* Per trace class: which event class names are halves of a declared pair. */
struct export_state {
	FILE *out;
	const bt_trace_class *known_class;   /* the trace class `paired` was computed for */
	char **paired;                       /* names with a declared partner             */
	size_t npaired;
	const bt_trace *named_trace[64];     /* traces whose process_name was emitted     */
	size_t nnamed;
	uint64_t events;
	uint64_t lost;
	uint64_t lost_unknown;               /* loss reports without a count           */
	int wrote_any;                       /* an element is out: the next needs a comma */
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

/* Every event class name the trace class declares (borrowed from it), in
 * one array; NULL when out of memory. */
static const char **event_class_names(const bt_trace_class *tc, size_t *count)
{
	size_t n = 0, cap = 16;
	const char **names = malloc(cap * sizeof(*names));
	uint64_t nsc = bt_trace_class_get_stream_class_count(tc);
	for (uint64_t i = 0; names && i < nsc; i++) {
		const bt_stream_class *sc = bt_trace_class_borrow_stream_class_by_index_const(tc, i);
		uint64_t nec = bt_stream_class_get_event_class_count(sc);
		for (uint64_t j = 0; names && j < nec; j++) {
			const char *name = bt_event_class_get_name(bt_stream_class_borrow_event_class_by_index_const(sc, j));
			if (!name)
				continue;
			if (n == cap) {
				const char **grown = realloc(names, 2 * cap * sizeof(*names));
				if (!grown) {
					free(names);
					names = NULL;
					break;
				}
				names = grown;
				cap *= 2;
			}
			names[n++] = name;
		}
	}
	*count = n;
	return names;
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
 * Recompute the pairs when the events come from another trace class (a
 * directory holding a parent trace and pid-P/ child traces has several).
 * The CTF reader declares every event class of the metadata up front.
 */
static void learn_pairs(struct export_state *x, const bt_trace_class *tc)
{
	if (tc == x->known_class)
		return;
	free_paired(x);
	x->known_class = tc;
	size_t count;
	const char **names = event_class_names(tc, &count);
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

static void append_ts(struct strbuf *sb, int64_t ns)
{
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	strbuf_addf(sb, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", mag / 1000, mag % 1000);
}

/* A "process_name" metadata event per traced process, from the trace's env.procname. */
static void maybe_name_process(struct export_state *x, const bt_trace *trace, int64_t pid)
{
	for (size_t i = 0; i < x->nnamed; i++)
		if (x->named_trace[i] == trace)
			return;
	if (x->nnamed < sizeof(x->named_trace) / sizeof(x->named_trace[0]))
		x->named_trace[x->nnamed++] = trace;
	const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(trace, "procname");
	if (!v || !bt_value_is_string(v))
		return;
	strbuf_addf(&x->sb, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %" PRId64 ", \"tid\": 0, \"args\": {\"name\": ",
		    x->wrote_any ? ",\n" : "", pid);
	strbuf_add_json_string(&x->sb, bt_value_string_get(v));
	strbuf_add(&x->sb, "}}", 2);
	x->wrote_any = 1;
}

static int export_event(const struct trace_event *ev, void *arg)
{
	struct export_state *x = arg;
	const bt_trace *trace = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev->event));
	learn_pairs(x, bt_trace_borrow_class_const(trace));
	/* Unknown ids fall back to something stable: pid 0, one "thread" per stream. */
	int64_t pid = ev->pid >= 0 ? ev->pid : 0;
	int64_t tid = ev->tid >= 0 ? ev->tid : (int64_t)ev->stream_index;
	struct strbuf *sb = &x->sb;
	strbuf_reset(sb);
	maybe_name_process(x, trace, pid);

	size_t stem = strlen(ev->name);
	enum pair_role role = role_of(x, ev->name, &stem);
	strbuf_addf(sb, "%s{\"name\": ", x->wrote_any ? ",\n" : "");
	x->wrote_any = 1;
	char *slice_name = strndup(ev->name, stem);
	strbuf_add_json_string(sb, slice_name ? slice_name : ev->name);
	free(slice_name);
	strbuf_addf(sb, ", \"cat\": \"mark\", \"ph\": \"%s\", ",
		    role == ROLE_BEGIN ? "B" : role == ROLE_END ? "E" : "i\", \"s\": \"t");
	strbuf_add(sb, "\"ts\": ", 6);
	append_ts(sb, ev->has_time ? ev->ns : 0);
	strbuf_addf(sb, ", \"pid\": %" PRId64 ", \"tid\": %" PRId64, pid, tid);
	strbuf_add(sb, ", \"args\": ", 10);
	if (ev->cpu >= 0 && ev->payload && bt_field_get_class_type(ev->payload) == BT_FIELD_CLASS_TYPE_STRUCTURE &&
	    !bt_field_structure_borrow_member_field_by_name_const(ev->payload, "cpu") && !sb->failed) {
		/* The CPU is a property of the event, not an argument; add it unless an
		 * argument already has that name. */
		trace_payload_append(sb, ev->payload, TRACE_VALUE_JSON);
		sb->len--;   /* reopen the object */
		strbuf_addf(sb, "%s\"cpu\": %" PRId64 "}",
			    bt_field_class_structure_get_member_count(bt_field_borrow_class_const(ev->payload)) ? ", " : "",
			    ev->cpu);
	} else {
		trace_payload_append(sb, ev->payload, TRACE_VALUE_JSON);
	}
	strbuf_add(sb, "}", 1);
	if (sb->failed) {
		cli_error("export: out of memory formatting an event");
		x->failed = 1;
		return 1;
	}
	if (fwrite(sb->data, 1, sb->len, x->out) != sb->len) {
		x->failed = 1;
		return 1;
	}
	x->events++;
	return 0;
}

static void export_discarded(uint64_t count, uint64_t stream_index, void *arg)
{
	(void)stream_index;
	struct export_state *x = arg;
	x->lost += count;
	if (count == 0)
		x->lost_unknown++;
}

static int export_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = "chrome", *output = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
		case 'h': fputs(export_usage, stdout); return 0;
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
	struct trace_reader_ops ops = { .event = export_event, .discarded = export_discarded };
	int r = trace_read(dir, &ops, &x);
	int status = 0;
	if (r != 0 || x.failed) {
		status = 1;
	} else {
		fprintf(x.out, "\n],\n\"otherData\": {\"source\": ");
		struct strbuf sb = { 0 };
		strbuf_add_json_string(&sb, dir);
		fprintf(x.out, "%s, \"events\": %" PRIu64 ", \"lost_events\": %" PRIu64
			", \"loss_reports_without_count\": %" PRIu64 "}}\n",
			sb.data ? sb.data : "\"\"", x.events, x.lost, x.lost_unknown);
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
	strbuf_release(&x.sb);
	return status;
}

MARK_CLI_COMMAND(export, "export", "convert a trace to Chrome/Perfetto JSON", export_run);

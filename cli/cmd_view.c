/* `mark view DIR`: a trace's events as readable text, one line each. */
#include "command.h"
#include "output.h"
#include "liveline.h"
#include "trace_reader.h"
#include "trace_value.h"
#include "trace_time.h"
#include "filter/filter.h"
#include "trace_native.h"

#include <errno.h>
#include <math.h>
#include <signal.h>

#include <getopt.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char view_usage[] =
	"usage: mark view [OPTIONS] DIR\n"
	"\n"
	"Print the events of the CTF trace in DIR (as written by `mark record`) in time\n"
	"order, one line each:\n"
	"  [2026-11-23 07:49:04.123456789] cpu 1 tid 4242 MARKER: field=value ...\n"
	"Hex arguments (%x, %p) print as 0x..., strings quoted.  Events the tracer lost\n"
	"appear as a line starting with \"# lost\".  Every trace under DIR (one per process,\n"
	"in DIR/pid-P/) is read, merged by time: mark's own traces by mark's reader, others\n"
	"by libbabeltrace2 (MARK_READER=bt2 uses libbabeltrace2 for all).\n"
	"\n"
	"Options:\n"
	"  -e, --enable GLOB  only markers matching GLOB (repeatable; * ? [...] globs)\n"
	"  -f, --filter EXPR  only events whose fields pass EXPR (the language of\n"
	"                     `mark record --filter`: id < 100 && name == \"req1*\");\n"
	"                     an event without a field EXPR names is not shown\n"
	"  -r, --relative     times in seconds since the first event instead of clock time\n"
	"  -u, --utc          clock times in UTC instead of the local time zone\n"
	"  -F, --follow       keep printing events as they reach the trace, like tail -f,\n"
	"                     for a recording in progress (mark's own traces: DIR/pid-P/\n"
	"                     of every process and their chunks); ends when every\n"
	"                     process's recording has ended, or on Ctrl-C, with a\n"
	"                     summary on stderr.  Events print in time order, each\n"
	"                     once it is --holdback old\n"
	"      --holdback SECONDS  how long --follow holds an event back for older ones\n"
	"                     from other threads and processes (default 1; decimals)\n"
	"      --progress     show the reading progress on stderr (by default only when\n"
	"                     stderr is a terminal and stdout is not)\n"
	"  -h, --help         this help\n"
	"\n"
	"GLOB also matches the name without its provider (net_* finds app:net_rx), and\n"
	"\"__\" in it also matches \"-\" (request__start finds the marker request-start).\n"
	"\n"
	"Exit status: 0 on success, 1 if DIR cannot be read as a trace or no event\n"
	"matches -e, 2 on bad usage (an invalid glob).\n";

#define VIEW_NAME_SLOTS 256

struct name_slot {
	const char *name;    /* compared by address only */
	char *text;          /* cli_text(name)           */
	size_t text_len;
	int match;           /* matches(v, name)         */
};

/*
 * " cpu C[ pid P \"name\"] tid T " of an event, kept as text per thread
 * and CPU in a small table: a thread's events share it, and the events of
 * a few threads alternate in time order.  Rebuilt for every change of
 * thread, its bytes were written one by one and at once read back as
 * whole words (strbuf_add_padded), which stalled store-to-load
 * forwarding on most events of a multi-threaded trace.
 */
#define VIEW_CTX_SLOTS 64
struct ctx_slot {
	int64_t cpu, pid, tid;
	const char *procname;   /* compared by address: one pointer per trace */
	bool multi, valid;
	struct strbuf text;
};

struct view_state {
	struct name_slot escaped[VIEW_NAME_SLOTS];
	char **globs;
	int nglobs;
	const struct mark_filter *filter;   /* --filter, or NULL */
	int relative, utc;
	int64_t first_ns;
	int have_first;
	struct strbuf line;
	struct ctx_slot ctx[VIEW_CTX_SLOTS];
	uint64_t lost;
	uint64_t shown;      /* events printed                                    */
	uint64_t read;       /* events read, shown or not (-e)                    */
	char *names[16];     /* marker names seen while nothing matched -e        */
	size_t nnames;
};

static int matches(const struct view_state *v, const char *name)
{
	if (v->nglobs == 0)
		return 1;
	for (int i = 0; i < v->nglobs; i++)
		if (cli_glob_match(v->globs[i], name))
			return 1;
	return 0;
}

/* Remember the marker names of the trace, for "-e matches nothing". */
static void note_name(struct view_state *v, const char *name)
{
	for (size_t i = 0; i < v->nnames; i++)
		if (strcmp(v->names[i], name) == 0)
			return;
	if (v->nnames == sizeof(v->names) / sizeof(v->names[0]))
		return;
	v->names[v->nnames] = strdup(name);
	if (v->names[v->nnames])
		v->nnames++;
}

/* " pid P \"name\"" (the name escaped: it comes from the trace). */
static void append_process(struct strbuf *sb, int64_t pid, const char *name)
{
	if (pid >= 0)
		strbuf_addf(sb, " pid %" PRId64, pid);
	if (name) {
		strbuf_add_lit(sb, " ");
		strbuf_add_c_string(sb, name);
	}
}

/*
 * What view needs of a marker name, remembered per name pointer: a reader
 * hands the same pointer for every event of a class while it runs (the
 * class name), and escaping the name and matching the globs for every
 * event cost as much as the rest of the line.  A different pointer with
 * the same text only costs computing them again.
 */
static const struct name_slot *name_slot(struct view_state *v, const char *name)
{
	struct name_slot *slot = &v->escaped[((uintptr_t)name >> 4) % VIEW_NAME_SLOTS];
	if (slot->name != name || !slot->text) {
		free(slot->text);
		const char *text = cli_text(name);
		slot->text_len = strlen(text);
		slot->text = calloc(1, slot->text_len + 1 + STRBUF_PAD);   /* padded: strbuf_add_padded() */
		if (slot->text)
			memcpy(slot->text, text, slot->text_len);
		slot->name = slot->text ? name : NULL;
		slot->match = matches(v, name);
	}
	return slot;
}

/*
 * Lines are gathered in v->line and written 64 KiB at a time: one fwrite
 * per line cost a call and a copy into stdio's buffer for each event.
 * Returns non-zero if stdout refused them (closed pipe).
 */
#define VIEW_FLUSH (64 * 1024)

static int flush_lines(struct view_state *v)
{
	struct strbuf *sb = &v->line;
	int rc = 0;
	if (sb->failed) {
		fprintf(stderr, "mark view: out of memory formatting an event\n");
		rc = 1;
	} else if (sb->len && fwrite(sb->data, 1, sb->len, stdout) != sb->len) {
		cli_output_failed(errno);   /* said by main, unless the reader went away (EPIPE) */
		rc = 1;
	}
	strbuf_reset(sb);
	return rc;
}

/* The event's context text (struct ctx_slot); NULL when out of memory. */
static const struct ctx_slot *ctx_slot(struct view_state *v, const struct trace_event *ev)
{
	const bool multi = ev->ntraces > 1;
	struct ctx_slot *cs = &v->ctx[((uint64_t)ev->tid * 31 + (uint64_t)ev->cpu) % VIEW_CTX_SLOTS];
	if (cs->valid && ev->cpu == cs->cpu && ev->tid == cs->tid && multi == cs->multi &&
	    (!multi || (ev->pid == cs->pid && ev->procname == cs->procname)))
		return cs;
	struct strbuf *c = &cs->text;
	strbuf_reset(c);
	if (ev->cpu >= 0) {
		strbuf_add_lit(c, " cpu ");
		strbuf_add_int(c, ev->cpu);
	}
	if (multi)
		append_process(c, ev->pid, ev->procname);
	if (ev->tid >= 0) {
		strbuf_add_lit(c, " tid ");
		strbuf_add_int(c, ev->tid);
	}
	strbuf_add_lit(c, " ");
	/* STRBUF_PAD bytes of the buffer's own after the text: what
	 * strbuf_add_padded() reads beyond it. */
	static const char pad[STRBUF_PAD];
	strbuf_add(c, pad, sizeof(pad));
	if (!c->failed) {
		c->len -= sizeof(pad);
		c->data[c->len] = '\0';
	}
	cs->cpu = ev->cpu;
	cs->tid = ev->tid;
	cs->pid = ev->pid;
	cs->procname = ev->procname;
	cs->multi = multi;
	cs->valid = !c->failed;
	return cs->valid ? cs : NULL;
}

static void view_state_release(struct view_state *v)
{
	strbuf_release(&v->line);
	for (size_t i = 0; i < VIEW_CTX_SLOTS; i++)
		strbuf_release(&v->ctx[i].text);
	for (size_t i = 0; i < v->nnames; i++)
		free(v->names[i]);
	for (size_t i = 0; i < VIEW_NAME_SLOTS; i++)
		free(v->escaped[i].text);
}

static int view_event(const struct trace_event *ev, void *arg)
{
	struct view_state *v = arg;
	v->read++;
	if (ev->has_time && !v->have_first) {
		v->first_ns = ev->ns;
		v->have_first = 1;
	}
	const struct name_slot *slot = name_slot(v, ev->name);
	if (!slot->match) {
		if (v->shown == 0)
			note_name(v, ev->name);
		return 0;
	}
	if (v->filter && !trace_event_filter_pass(ev, v->filter))
		return 0;
	v->shown++;
	struct strbuf *sb = &v->line;
	const struct ctx_slot *cs = ctx_slot(v, ev);
	if (!cs) {
		sb->failed = 1;
		return 1;
	}
	/*
	 * "[TIME] cpu C tid T NAME:" with one reserve, through a local
	 * pointer: appended piece by piece, each piece loaded and stored the
	 * buffer's length and checked its room again (the stores through a
	 * char pointer may alias them), most of view_event's own time.  The
	 * context and name texts are padded (STRBUF_PAD readable bytes), so
	 * each is one fixed-size copy.
	 */
	size_t ctx_len = cs->text.len, name_len = slot->text ? slot->text_len : 0;
	size_t room = 1 + TRACE_TIME_PUT_MAX + 1 + (ctx_len > STRBUF_PAD ? ctx_len : STRBUF_PAD) +
		      (name_len > STRBUF_PAD ? name_len : STRBUF_PAD) + 1;
	if (!slot->text || strbuf_reserve(sb, room) != 0) {
		/* out of memory (no escaped name, or no room): the old way, which
		 * fails quietly and is reported below */
		strbuf_add_lit(sb, "[");
		if (!ev->has_time)
			strbuf_add_lit(sb, "no time");
		else if (v->relative)
			trace_time_append_seconds(sb, ev->ns - v->first_ns);
		else if (ev->clock_is_epoch)
			trace_time_append_wall(sb, ev->ns, v->utc);
		else
			trace_time_append_seconds(sb, ev->ns);
		strbuf_add_lit(sb, "]");
		strbuf_add_padded(sb, cs->text.data, cs->text.len);
		const char *name = slot->text ? slot->text : cli_text(ev->name);
		strbuf_add(sb, name, strlen(name));
		strbuf_add_lit(sb, ":");
	} else {
		char *p = sb->data + sb->len;
		*p++ = '[';
		if (!ev->has_time) {
			memcpy(p, "no time", 7);
			p += 7;
		} else if (v->relative) {
			p = trace_time_put_seconds(p, ev->ns - v->first_ns);
		} else if (ev->clock_is_epoch) {
			p = trace_time_put_wall(p, ev->ns, v->utc);
		} else {
			p = trace_time_put_seconds(p, ev->ns);
		}
		*p++ = ']';
		if (ctx_len <= STRBUF_PAD)
			memcpy(p, cs->text.data, STRBUF_PAD);
		else
			memcpy(p, cs->text.data, ctx_len);
		p += ctx_len;
		if (name_len <= STRBUF_PAD)
			memcpy(p, slot->text, STRBUF_PAD);
		else
			memcpy(p, slot->text, name_len);
		p += name_len;
		*p++ = ':';
		*p = '\0';
		sb->len = (size_t)(p - sb->data);
	}
	if (trace_event_payload_count(ev) > 0) {
		strbuf_add_lit(sb, " ");
		trace_event_payload_append(sb, ev, TRACE_VALUE_TEXT);
	}
	strbuf_add_lit(sb, "\n");
	if (sb->failed) {
		fprintf(stderr, "mark view: out of memory formatting an event\n");
		return 1;
	}
	if (sb->len >= VIEW_FLUSH && flush_lines(v) != 0)
		return 2;   /* stdout closed (e.g. `| head`): stop quietly */
	return 0;
}

static void view_discarded(const struct trace_loss *loss, void *arg)
{
	struct view_state *v = arg;
	v->lost = trace_add_sat(v->lost, loss->count);
	struct strbuf *sb = &v->line;
	if (loss->count)
		strbuf_addf(sb, "# lost %" PRIu64 " events in stream %" PRIu64, loss->count, loss->stream_index);
	else
		strbuf_addf(sb, "# lost events in stream %" PRIu64, loss->stream_index);
	/* whose: the thread (and the process when the trace has several).
	 * tid 0 is the tracer's stream of events that never had a buffer
	 * (its creation failed, nesting or marker ids past the limits). */
	const bool no_buffer = loss->tid == 0;
	if (loss->tid > 0 || loss->ntraces > 1)
		strbuf_add_lit(sb, " of");
	if (loss->ntraces > 1)
		append_process(sb, loss->pid, loss->procname);
	if (loss->tid > 0)
		strbuf_addf(sb, " tid %" PRId64, loss->tid);
	strbuf_addf(sb, " (%s)\n", no_buffer ? "events that had no tracer buffer; see the program's warnings" :
		    loss->count       ? "tracer buffer full"
		    : loss->backwards ? "the trace's lost-events counter went backwards"
				      : "babeltrace2 gives no count");
	if (sb->len >= VIEW_FLUSH)
		flush_lines(v);
}

static volatile sig_atomic_t follow_stop;

static void on_follow_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

/* --follow: write what each round printed, at once (a reader waits for it). */
static int follow_flush(void *arg)
{
	struct view_state *v = arg;
	int rc = flush_lines(v);
	if (cli_flush_stdout() != 0)
		rc = 1;
	return rc;
}

static int follow_finished(const char *path)
{
	struct live_stats st;
	if (live_stats_read_one(path, &st) != 0)
		return -1;
	return st.unfinished == 0;
}

/* `mark view --follow DIR`: see trace_native_follow(). */
static int view_follow(const char *dir, struct view_state *v, double holdback)
{
	if (trace_check_directory(dir) != 0)
		return 1;
	struct sigaction sa = { .sa_handler = on_follow_signal }, old[2];
	sigemptyset(&sa.sa_mask);
	const int sigs[2] = { SIGINT, SIGTERM };
	for (int i = 0; i < 2; i++)
		sigaction(sigs[i], &sa, &old[i]);
	uint64_t late = 0;
	size_t traces = 0;
	struct trace_follow_opts fo = { .holdback_ns = (int64_t)(holdback * 1e9), .stop = &follow_stop,
					.flush = follow_flush, .late = &late, .traces = &traces,
					.finished = follow_finished };
	struct trace_reader_ops ops = { .native_ok = true, .event = view_event, .discarded = view_discarded };
	int r = trace_native_follow(dir, &ops, v, &fo);
	follow_flush(v);
	for (int i = 0; i < 2; i++)
		sigaction(sigs[i], &old[i], NULL);
	fprintf(stderr, "mark: follow: %" PRIu64 " events shown, %" PRIu64 " lost, from %zu trace%s; %s\n", v->shown,
		v->lost, traces, traces == 1 ? "" : "s",
		follow_stop ? "stopped by a signal" : r == 0 || r == 1 ? "the recording ended" : "stopped");
	if (late)
		fprintf(stderr, "mark: follow: %" PRIu64 " events reached the trace more than the hold-back (%g s) "
			"after others printed before them and were printed late, out of order; `mark view %s` "
			"shows them in order (or use a longer --holdback)\n", late, holdback, cli_text(dir));
	/* A process killed during the recording: its last events are in its buffers. */
	live_warn_incomplete(stderr, dir, false);
	return r == 0 || r == 2 ? 0 : 1;
}

static int view_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "enable", required_argument, NULL, 'e' },
		{ "relative", no_argument, NULL, 'r' },
		{ "filter", required_argument, NULL, 'f' },
		{ "utc", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ "progress", no_argument, NULL, 'P' },
		{ "follow", no_argument, NULL, 'F' },
		{ "holdback", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct view_state v = { .globs = NULL };
	bool progress = false, follow = false;
	double holdback = 1.0;
	const char *filter_text = NULL;
	char *globs[argc > 0 ? argc : 1];
	v.globs = globs;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+e:f:ruhF", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (cli_glob_check("view", "-e", optarg) != 0)
				return 2;
			globs[v.nglobs++] = optarg;
			break;
		case 'f': filter_text = optarg; break;   /* parsed once the options are read */
		case 'r': v.relative = 1; break;
		case 'u': v.utc = 1; break;
		case 'h': fputs(view_usage, stdout); return 0;
		case 'P': progress = true; break;
		case 'F': follow = true; break;
		case 'H': {
			char *end;
			holdback = strtod(optarg, &end);
			if (end == optarg || *end || !(holdback >= 0) || !isfinite(holdback) || holdback > 3600) {
				cli_error("view: bad --holdback \"%s\": give seconds, 0 to 3600 (decimals allowed)",
					  cli_text(optarg));
				return 2;
			}
			break;
		}
		default:
			cli_error("view: %s: unknown option or missing argument; see `mark view --help`",
				  argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		cli_error("view: %s; usage: mark view [OPTIONS] DIR",
			  optind >= argc ? "give the trace directory" : "give exactly one trace directory");
		return 2;
	}
	struct mark_filter *filter = NULL;
	if (filter_text && !(filter = cli_filter_parse("view", filter_text)))
		return 2;
	v.filter = filter;
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	if (follow) {
		int st = view_follow(argv[optind], &v, holdback);
		view_state_release(&v);
		mark_filter_free(filter);
		return st;
	}
	struct trace_reader_ops ops = { .native_ok = true, .progress = trace_progress_wanted(progress, true),
					.payload_text = true, .payload_style = TRACE_VALUE_TEXT, .filter = filter,
					.event = view_event, .discarded = view_discarded };
	int r = trace_read(argv[optind], &ops, &v);
	flush_lines(&v);
	cli_flush_stdout();
	mark_filter_free(filter);
	int status = r == 0 || r == 2 ? 0 : 1;
	if (r == 0 && v.nglobs > 0 && v.shown == 0) {
		/* Say so, with the names the trace does have (quoted; names
		 * come from the trace, so control bytes are escaped). */
		struct strbuf msg = { 0 };
		for (int i = 0; i < v.nglobs; i++) {
			strbuf_add(&msg, i ? ", " : "", i ? 2 : 0);
			strbuf_add_json_string(&msg, v.globs[i]);
		}
		strbuf_addf(&msg, "%s", v.nnames ? "; the trace has " : "; the trace has no events");
		for (size_t i = 0; i < v.nnames; i++) {
			strbuf_add(&msg, i ? ", " : "", i ? 2 : 0);
			strbuf_add_json_string(&msg, v.names[i]);
		}
		if (v.nnames == sizeof(v.names) / sizeof(v.names[0]))
			strbuf_add_lit(&msg, ", ...");
		cli_error("view: no event matches -e %s", msg.failed ? "(out of memory)" : msg.data);
		strbuf_release(&msg);
		status = 1;
	}
	/* Last, so that it is seen after the events (one line, on stderr). */
	live_warn_incomplete(stderr, argv[optind], false);
	/* Losses the trace could not record (a full disk): see `mark stats`.
	 * Not with --filter, which the reader applies before view_event. */
	if (r == 0 && !filter_text)
		live_warn_unrecorded_after_read(argv[optind], v.read, v.lost);
	view_state_release(&v);
	return status;
}

MARK_CLI_COMMAND(view, "view", "print the events of a trace as text", view_run);

/*
 * CTF trace reading through libbabeltrace2: see trace_reader.h.
 *
 * The graph is  src.ctf.fs, one per trace under the directory (one output
 *              port per stream)
 *            -> flt.utils.muxer (merges all streams in time order)
 *            -> a simple sink whose consume function turns each event
 *               message into a struct trace_event.
 * This is the graph the `babeltrace2 DIR` command line builds, minus the
 * text sink.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "trace_reader.h"
#include "filter/filter.h"
#include "tracer/trace_format.h"
#include "util/printable.h"

#include "command.h"
#include "text.h"
#include "trace_native.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Streams seen so far, so that each gets a small dense index (for tid fallbacks). */
struct stream_slot {
	const bt_stream *stream;   /* borrowed; compared by address only */
	uint64_t index;
	int64_t pid, tid;          /* of the stream's current packet (-1: unknown)   */
	bool loss_pending;         /* a loss waits for the next packet's thread      */
	bool loss_backwards;       /* it has no count: events_discarded went back    */
	uint64_t loss_count;
};

/*
 * Who runs in the child that reads with libbabeltrace2 (bt2_read_isolated),
 * so that a crash is blamed on the right code: libbabeltrace2 decoding,
 * mark's callbacks on what it decoded, or the rest of mark's command after
 * the reading.  A word in a page shared with the parent (MAP_SHARED |
 * MAP_ANONYMOUS, mapped before the fork); NULL when not isolated.  Written
 * by the child's reading thread only, read by the parent after waitpid()
 * reported the child dead: the child's exit orders its stores before the
 * parent's wait returns, so relaxed accesses are enough.
 */
enum bt2_phase { BT2_PHASE_LIBRARY = 1, BT2_PHASE_CALLBACK, BT2_PHASE_AFTER };
static int *bt2_phase;

static void bt2_phase_set(enum bt2_phase p)
{
	if (bt2_phase)
		__atomic_store_n(bt2_phase, (int)p, __ATOMIC_RELAXED);
}

struct reader {
	const struct trace_reader_ops *ops;
	void *arg;
	int stop_value;            /* the callback's non-zero return, if it stopped */
	struct stream_slot *streams;
	size_t nstreams, streams_cap;
	size_t ntraces;
};

/* The slot of a stream (added on first sight); NULL when out of memory. */
static struct stream_slot *stream_slot(struct reader *r, const bt_stream *stream)
{
	for (size_t i = 0; i < r->nstreams; i++)
		if (r->streams[i].stream == stream)
			return &r->streams[i];
	if (r->nstreams == r->streams_cap && cli_array_grow(&r->streams, &r->streams_cap, sizeof(*r->streams), 16))
		return NULL;
	r->streams[r->nstreams] = (struct stream_slot){ .stream = stream, .index = r->nstreams, .pid = -1, .tid = -1 };
	return &r->streams[r->nstreams++];
}

static uint64_t stream_index(struct reader *r, const bt_stream *stream)
{
	struct stream_slot *s = stream_slot(r, stream);
	return s ? s->index : UINT64_MAX;
}

/*
 * Finding a member by name costs string hashing and compares; doing it three
 * times per scope per event was a quarter of `mark stats`'s time.  The
 * structure *class* of a scope is shared by all events of an event or
 * stream class, so the member index found for (class, names) is cached.
 * Single-threaded (trace_read runs the graph on one thread), so a plain
 * array serves.
 */
struct member_slot {
	const void *owner;                 /* a bt_field_class, or a bt_trace for the env */
	const char *const *names;
	int64_t index;                     /* member index, -1 if none (env: the value)  */
	bool found;
};

#define MEMBER_CACHE 64

static struct member_slot member_cache[MEMBER_CACHE];
static unsigned member_cache_next;

static struct member_slot *cache_find(const void *owner, const char *const *names)
{
	for (unsigned i = 0; i < MEMBER_CACHE; i++)
		if (member_cache[i].owner == owner && member_cache[i].names == names)
			return &member_cache[i];
	return NULL;
}

static struct member_slot *cache_add(const void *owner, const char *const *names)
{
	/* Round robin: more distinct classes than slots only costs lookups again. */
	struct member_slot *s = &member_cache[member_cache_next++ % MEMBER_CACHE];
	*s = (struct member_slot){ .owner = owner, .names = names, .index = -1 };
	return s;
}

static bool int_value(const bt_field *f, int64_t *out)
{
	bt_field_class_type t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
		*out = bt_field_integer_signed_get_value(f);
		return true;
	}
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		*out = (int64_t)bt_field_integer_unsigned_get_value(f);
		return true;
	}
	return false;
}

/* The first integer member of structure `st` named in `names`, if any. */
static bool struct_int_member(const bt_field *st, const char *const *names, int64_t *out)
{
	if (!st || bt_field_get_class_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return false;
	const bt_field_class *fc = bt_field_borrow_class_const(st);
	struct member_slot *slot = cache_find(fc, names);
	if (!slot) {
		slot = cache_add(fc, names);
		uint64_t n = bt_field_class_structure_get_member_count(fc);
		for (const char *const *name = names; *name && slot->index < 0; name++)
			for (uint64_t i = 0; i < n; i++)
				if (strcmp(bt_field_class_structure_member_get_name(
						   bt_field_class_structure_borrow_member_by_index_const(fc, i)),
					   *name) == 0) {
					slot->index = (int64_t)i;
					break;
				}
	}
	if (slot->index < 0)
		return false;
	return int_value(bt_field_structure_borrow_member_field_by_index_const(st, (uint64_t)slot->index), out);
}

/* An integer entry of the trace's `env` block (cached per trace: the env is fixed). */
static bool env_int(const bt_trace *trace, const char *const *names, int64_t *out)
{
	struct member_slot *slot = cache_find(trace, names);
	if (!slot) {
		slot = cache_add(trace, names);
		for (const char *const *name = names; *name && !slot->found; name++) {
			const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(trace, *name);
			if (v && bt_value_is_signed_integer(v)) {
				slot->index = bt_value_integer_signed_get(v);
				slot->found = true;
			} else if (v && bt_value_is_unsigned_integer(v)) {
				slot->index = (int64_t)bt_value_integer_unsigned_get(v);
				slot->found = true;
			}
		}
	}
	*out = slot->index;
	return slot->found;
}

/*
 * Where a tracer may keep the CPU, process and thread of an event: the
 * event's own contexts first (per-event values), then the packet context
 * (per-buffer values: a per-thread buffer has one tid), then the trace
 * environment (per-process values).  The names are the ones LTTng and the
 * mark tracer use.
 */
static int64_t lookup_int(const bt_event *event, const bt_packet *packet, const char *const *names)
{
	const bt_field *scopes[3] = {
		bt_event_borrow_common_context_field_const(event),
		bt_event_borrow_specific_context_field_const(event),
		packet ? bt_packet_borrow_context_field_const(packet) : NULL,
	};
	int64_t v;
	for (int s = 0; s < 3; s++)
		if (struct_int_member(scopes[s], names, &v))
			return v;
	const bt_trace *trace = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(event));
	if (env_int(trace, names, &v))
		return v;
	return -1;
}

static const char *trace_process_name(const bt_trace *trace);

/* The packet context's thread_name (mark's tracer writes one), cleaned
 * into out; NULL if there is none or it is empty. */
static const char *packet_thread_name(const bt_packet *packet, char out[16])
{
	const bt_field *ctx = packet ? bt_packet_borrow_context_field_const(packet) : NULL;
	if (!ctx || bt_field_get_class_type(ctx) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return NULL;
	const bt_field *f = bt_field_structure_borrow_member_field_by_name_const(ctx, "thread_name");
	if (!f || bt_field_get_class_type(f) != BT_FIELD_CLASS_TYPE_STRING)
		return NULL;
	mark_thread_name_clean(out, bt_field_string_get_value(f), bt_field_string_get_length(f));
	return out[0] ? out : NULL;
}

static const char *const cpu_names[] = { "cpu_id", "cpu", NULL };
static const char *const pid_names[] = { "pid", "vpid", NULL };
static const char *const tid_names[] = { "tid", "vtid", NULL };

static int handle_event(struct reader *r, const bt_message *msg)
{
	const bt_event *event = bt_message_event_borrow_event_const(msg);
	const bt_event_class *ec = bt_event_borrow_class_const(event);
	const bt_stream *stream = bt_event_borrow_stream_const(event);
	const bt_stream_class *sc = bt_stream_borrow_class_const(stream);
	const bt_packet *packet = bt_stream_class_supports_packets(sc) ? bt_event_borrow_packet_const(event) : NULL;
	char thread_name[16];
	struct trace_event ev = {
		.name = bt_event_class_get_name(ec),
		.cpu = lookup_int(event, packet, cpu_names),
		.pid = lookup_int(event, packet, pid_names),
		.tid = lookup_int(event, packet, tid_names),
		.stream_index = stream_index(r, stream),
		.procname = trace_process_name(bt_stream_borrow_trace_const(stream)),
		.thread_name = packet_thread_name(packet, thread_name),
		.trace = bt_stream_borrow_trace_const(stream),
		.payload = bt_event_borrow_payload_field_const(event),
		.event = event,
		.ntraces = r->ntraces,
	};
	if (!ev.name)
		ev.name = "(unnamed)";
	/* No process or thread has id 0 (or below): such a value means "not recorded". */
	if (ev.pid <= 0)
		ev.pid = -1;
	if (ev.tid <= 0)
		ev.tid = -1;
	if (bt_stream_class_borrow_default_clock_class_const(sc)) {
		const bt_clock_snapshot *cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
		const bt_clock_class *cc = bt_clock_snapshot_borrow_clock_class_const(cs);
		ev.clock_is_epoch = bt_clock_class_origin_is_unix_epoch(cc);
		ev.has_time = bt_clock_snapshot_get_ns_from_origin(cs, &ev.ns) ==
			      BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK;
	}
	if (!r->ops->event)
		return 0;
	bt2_phase_set(BT2_PHASE_CALLBACK);
	int rc = r->ops->event(&ev, r->arg);
	bt2_phase_set(BT2_PHASE_LIBRARY);
	return rc;
}

static void report_loss(struct reader *r, const struct trace_loss *loss)
{
	if (!r->ops->discarded)
		return;
	bt2_phase_set(BT2_PHASE_CALLBACK);
	r->ops->discarded(loss, r->arg);
	bt2_phase_set(BT2_PHASE_LIBRARY);
}

/* Report the stream's pending loss with its current packet's process and thread. */
static void flush_loss(struct reader *r, struct stream_slot *s)
{
	if (!s->loss_pending)
		return;
	s->loss_pending = false;
	struct trace_loss loss = {
		.count = s->loss_count,
		.backwards = s->loss_backwards,
		.stream_index = s->index,
		.pid = s->pid > 0 ? s->pid : -1,
		.tid = s->tid > 0 ? s->tid : -1,
		.procname = trace_process_name(bt_stream_borrow_trace_const(s->stream)),
		.ntraces = r->ntraces,
	};
	s->loss_count = 0;
	s->loss_backwards = false;
	report_loss(r, &loss);
}

static void handle_discarded(struct reader *r, const bt_message *msg)
{
	uint64_t count = 0;
	if (bt_message_discarded_events_get_count(msg, &count) != BT_PROPERTY_AVAILABILITY_AVAILABLE)
		count = 0;
	/* babeltrace2's difference of the counters, modulo 2^64: see TRACE_LOSS_MAX */
	const bool backwards = count > TRACE_LOSS_MAX;
	if (backwards)
		count = 0;
	struct stream_slot *s = stream_slot(r, bt_message_discarded_events_borrow_stream_const(msg));
	if (!s) {   /* out of memory: report it now, without the thread */
		struct trace_loss loss = { .count = count, .backwards = backwards, .stream_index = UINT64_MAX,
					   .pid = -1, .tid = -1, .ntraces = r->ntraces };
		report_loss(r, &loss);
		return;
	}
	/* Two reports before the next packet: one line, unless one has no count. */
	if (s->loss_pending && (count == 0 || s->loss_count == 0))
		flush_loss(r, s);
	s->loss_pending = true;
	s->loss_backwards = backwards;
	s->loss_count = trace_add_sat(s->loss_count, count);
}

/* A packet begins: its context names the stream's thread from now on. */
static void handle_packet_beginning(struct reader *r, const bt_message *msg)
{
	const bt_packet *packet = bt_message_packet_beginning_borrow_packet_const(msg);
	const bt_stream *stream = bt_packet_borrow_stream_const(packet);
	struct stream_slot *s = stream_slot(r, stream);
	if (!s)
		return;
	const bt_field *ctx = bt_packet_borrow_context_field_const(packet);
	int64_t v;
	if (struct_int_member(ctx, tid_names, &v))
		s->tid = v;
	if (struct_int_member(ctx, pid_names, &v) || env_int(bt_stream_borrow_trace_const(stream), pid_names, &v))
		s->pid = v;
	flush_loss(r, s);
}

static const char *trace_process_name(const bt_trace *trace)
{
	const bt_value *v = trace ? bt_trace_borrow_environment_entry_value_by_name_const(trace, "procname") : NULL;
	return v && bt_value_is_string(v) ? bt_value_string_get(v) : NULL;
}

static bt_graph_simple_sink_component_consume_func_status consume(bt_message_iterator *it, void *user)
{
	struct reader *r = user;
	bt_message_array_const msgs;
	uint64_t count;
	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	bt_graph_simple_sink_component_consume_func_status status =
		BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
	for (uint64_t i = 0; i < count; i++) {
		const bt_message *msg = msgs[i];
		if (status == BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK) {
			switch (bt_message_get_type(msg)) {
			case BT_MESSAGE_TYPE_EVENT:
				r->stop_value = handle_event(r, msg);
				if (r->stop_value)
					status = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
				break;
			case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
				handle_discarded(r, msg);
				break;
			case BT_MESSAGE_TYPE_PACKET_BEGINNING:
				handle_packet_beginning(r, msg);
				break;
			case BT_MESSAGE_TYPE_STREAM_END: {
				struct stream_slot *s =
					stream_slot(r, bt_message_stream_end_borrow_stream_const(msg));
				if (s)
					flush_loss(r, s);
				break;
			}
			default:
				break;
			}
		}
		/* Every message of the batch is ours to release, even after a stop. */
		bt_message_put_ref(msg);
	}
	return status;
}

/* Print babeltrace2's error causes (most specific last), then clear them. */
static void print_bt_error(const char *directory, const char *what)
{
	/* The causes quote the trace's metadata: escaped like the rest. */
	fprintf(stderr, "mark: cannot read trace %s: %s\n", cli_text(directory), cli_text(what));
	const bt_error *err = bt_current_thread_take_error();
	if (!err)
		return;
	/* Index 0 is the root cause, the most specific; the generic "component
	 * initialization failed" causes that wrap it add nothing for a user. */
	uint64_t n = bt_error_get_cause_count(err);
	int shown = 0;
	for (uint64_t i = 0; i < n && shown < 3; i++) {
		const char *msg = bt_error_cause_get_message(bt_error_borrow_cause_by_index(err, i));
		if (!msg || strncmp(msg, "Component initialization method failed", 38) == 0 ||
		    strncmp(msg, "Graph object's", 14) == 0)
			continue;
		fprintf(stderr, "  %s\n", cli_text(msg));
		shown++;
	}
	bt_error_release(err);
}

static const bt_plugin *load_plugin(const char *name, const char *directory)
{
	const bt_plugin *plugin = NULL;
	/* fail_on_load_error is false: a broken unrelated plugin (the Python provider
	 * without python3, say) must not stop us from loading ctf and utils. */
	if (bt_plugin_find(name, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &plugin) != BT_PLUGIN_FIND_STATUS_OK) {
		char what[160];
		snprintf(what, sizeof(what),
			 "babeltrace2 plugin \"%s\" not found (install the babeltrace2 package, "
			 "or set BABELTRACE_PLUGIN_PATH)", name);
		print_bt_error(directory, what);
		return NULL;
	}
	return plugin;
}

/* ---------------- finding the traces ---------------- */

struct trace_dirs {
	char **paths;
	size_t n, cap;
	int oom;
};

static void add_dir(struct trace_dirs *t, const char *path)
{
	if (t->n == t->cap && cli_array_grow(&t->paths, &t->cap, sizeof(*t->paths), 8)) {
		t->oom = 1;
		return;
	}
	if (!(t->paths[t->n] = strdup(path)))
		t->oom = 1;
	else
		t->n++;
}

/*
 * Every trace under `dir`: the directory itself if it holds `metadata`, and
 * every sub-directory that does, at any depth up to 8.  The mark tracer
 * writes a forked child's trace in DIR/pid-P/ (and a grandchild's in
 * DIR/pid-P/pid-Q/); babeltrace2's src.ctf.fs does not descend into a
 * directory that is itself a trace, so each trace gets a source of its own.
 * Dot-directories are skipped, and so are the snapshots a trigger wrote
 * (DIR/snapshot-N/: copies of events the trace holds or held, each read
 * on its own as `mark view DIR/snapshot-N`: trace_is_snapshot_dir).  The
 * walk goes by descriptors without following links (trace_walk), and the
 * native reader opens what it found the same way (trace_dir_open).
 */
struct find_ctx {
	struct trace_dirs *t;
	const char *dir;
};

static bool find_found(void *ctx, const char *rel)
{
	const struct find_ctx *c = ctx;
	char path[4096];
	if (!*rel)
		add_dir(c->t, c->dir);
	else if ((size_t)snprintf(path, sizeof(path), "%s/%s", c->dir, rel) < sizeof(path))
		add_dir(c->t, path);
	return false;
}

static void find_traces(struct trace_dirs *t, const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	char rel[4096];
	struct find_ctx c = { t, dir };
	trace_walk(fd, true, 8, rel, sizeof(rel), 0, find_found, &c);
	close(fd);
}

static void free_traces(struct trace_dirs *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->paths[i]);
	free(t->paths);
}

static void print_link_refusal(const char *directory, const char *dir, const char *name)
{
	fprintf(stderr, "mark: cannot read trace %s: %s/%s is a symbolic link; mark reads no link inside a trace "
			"(it could point at any file); replace it with the file it names if you trust it (cp -L)\n",
		cli_text(directory), cli_text(dir), cli_text(name));
}

int trace_check_directory(const char *directory)
{
	struct stat st;
	if (stat(directory, &st) != 0) {
		fprintf(stderr, "mark: cannot open trace %s: %s\n", cli_text(directory), strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "mark: %s is not a directory: give the trace directory "
				"(the one holding the CTF `metadata` file)\n", cli_text(directory));
		return -1;
	}
	struct trace_dirs t = { 0 };
	find_traces(&t, directory);
	size_t n = t.n;
	free_traces(&t);
	if (n > 0)
		return 0;
	int dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool linked = dfd >= 0 && fstatat(dfd, MARK_TF_METADATA, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
	if (dfd >= 0)
		close(dfd);
	if (linked) {
		print_link_refusal(directory, directory, MARK_TF_METADATA);
		return -1;
	}
	fprintf(stderr, "mark: %s is not a CTF trace: it has no `metadata` file "
			"(give the directory `mark record -o` wrote)\n", cli_text(directory));
	return -1;
}

/*
 * libbabeltrace2 opens a trace's files by name and follows symbolic links.
 * The readers run as root on directories that other users can write, and a
 * stream or metadata file linked to another file (someone else's trace, a
 * secret) must not be read through the link: mark's native reader opens
 * with O_NOFOLLOW and hands a trace holding a link to this path, which
 * refuses it here before libbabeltrace2 sees it.  Checked: every entry of
 * each trace directory that src.ctf.fs reads (all but dot files), the
 * directory reached by descriptor without following links
 * (trace_dir_open).  What this cannot see: a file replaced by a link
 * between this check and libbabeltrace2's open, by a user who can write the
 * trace directory; mark's own traces are read by the native reader, which
 * has no such window.
 */
static int refuse_links(const char *directory, const struct trace_dirs *traces)
{
	for (size_t i = 0; i < traces->n; i++) {
		int dfd = trace_dir_open(directory, traces->paths[i]);
		DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
		if (!d) {
			fprintf(stderr, "mark: cannot read trace %s: cannot open %s: %s\n", cli_text(directory),
				cli_text(traces->paths[i]), strerror(errno));
			if (dfd >= 0)
				close(dfd);
			return -1;
		}
		struct dirent *de;
		struct stat st;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.' || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			    !S_ISLNK(st.st_mode))
				continue;
			print_link_refusal(directory, traces->paths[i], de->d_name);
			closedir(d);
			return -1;
		}
		closedir(d);
	}
	return 0;
}

/* Add one src.ctf.fs for `path` and connect each of its streams to the muxer. */
static int add_source(bt_graph *graph, const bt_component_class_source *fs_class, const bt_component_filter *mux,
		      const char *path, size_t index, const char *directory)
{
	bt_value *params = bt_value_map_create();
	bt_value *inputs = NULL;
	if (!params ||
	    bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) != BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
	    bt_value_array_append_string_element(inputs, path) != BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK) {
		bt_value_put_ref(params);
		print_bt_error(directory, "out of memory");
		return -1;
	}
	char name[32];
	snprintf(name, sizeof(name), "source-%zu", index);
	const bt_component_source *src = NULL;
	bt_graph_add_component_status st =
		bt_graph_add_source_component(graph, fs_class, name, params, BT_LOGGING_LEVEL_NONE, &src);
	bt_value_put_ref(params);
	if (st != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		char what[4200];
		snprintf(what, sizeof(what), "babeltrace2's CTF reader rejected %s", path);
		print_bt_error(directory, what);
		return -1;
	}
	/* The muxer grows a new input port each time one is connected: always use its last. */
	uint64_t nout = bt_component_source_get_output_port_count(src);
	for (uint64_t i = 0; i < nout; i++) {
		const bt_port_output *out = bt_component_source_borrow_output_port_by_index_const(src, i);
		uint64_t nin = bt_component_filter_get_input_port_count(mux);
		const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(mux, nin - 1);
		if (bt_graph_connect_ports(graph, out, in, NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
			print_bt_error(directory, "cannot connect a stream to the muxer");
			return -1;
		}
	}
	return 0;
}

/* The babeltrace2 graph over `traces`, on this thread (see trace_read). */
static int bt2_read(const char *directory, const struct trace_dirs *traces, const struct trace_reader_ops *ops,
		    void *arg)
{
	struct reader r = { .ops = ops, .arg = arg };
	int ret = -1;
	const bt_plugin *ctf = NULL, *utils = NULL;
	bt_graph *graph = NULL;

	if (!(ctf = load_plugin("ctf", directory)) || !(utils = load_plugin("utils", directory)))
		goto out;
	const bt_component_class_source *fs_class = bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs");
	const bt_component_class_filter *mux_class = bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer");
	if (!fs_class || !mux_class) {
		print_bt_error(directory, "babeltrace2 lacks the src.ctf.fs or flt.utils.muxer component class");
		goto out;
	}

	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	if (!(graph = bt_graph_create(0)) ||
	    bt_graph_add_filter_component(graph, mux_class, "muxer", NULL, BT_LOGGING_LEVEL_NONE, &mux) !=
		    BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(graph, "mark", NULL, consume, NULL, &r, &sink) !=
		    BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		print_bt_error(directory, "cannot build the babeltrace2 graph");
		goto out;
	}
	r.ntraces = traces->n;
	for (size_t i = 0; i < traces->n; i++)
		if (add_source(graph, fs_class, mux, traces->paths[i], i, directory) != 0)
			goto out;
	if (bt_graph_connect_ports(graph, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL) !=
	    BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		print_bt_error(directory, "cannot connect the muxer to the sink");
		goto out;
	}

	bt_graph_run_status st;
	do {
		st = bt_graph_run(graph);
	} while (st == BT_GRAPH_RUN_STATUS_AGAIN);
	if (st == BT_GRAPH_RUN_STATUS_OK) {
		ret = r.stop_value;
		for (size_t i = 0; ret == 0 && i < r.nstreams; i++)   /* a stream cut short */
			flush_loss(&r, &r.streams[i]);
	}
	else
		print_bt_error(directory, "babeltrace2 failed while decoding it (truncated or corrupt stream file?)");
out:
	bt_graph_put_ref(graph);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	free(r.streams);
	return ret;
}

/* The name of a signal that means the process crashed, else NULL (killed from outside). */
static const char *crash_signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	case SIGTRAP: return "SIGTRAP";
	case SIGSYS: return "SIGSYS";
	default: return NULL;
	}
}

/*
 * libbabeltrace2 2.0 kills its process on some damaged metadata that it
 * should refuse (SIGFPE for a clock without `freq`, abort() on a failed
 * precondition), and mark must not die of a file.  So its reading runs in
 * a child: the child returns from trace_read and carries on with the
 * command, printing or writing what the command prints or writes, exactly
 * as this process would have; this process only waits and ends with the
 * child's exit status.  Handing decoded events back through a pipe would
 * mean copying every kind of babeltrace2 field the commands look at; this
 * keeps one code path and the same bytes.  Returns only in the process
 * that is to carry on: the child, or this one with -1 after the child
 * crashed (the command then fails as after any unreadable trace, which
 * also removes its unfinished -o FILE).
 */
static int bt2_read_isolated(const char *directory, const struct trace_dirs *traces,
			     const struct trace_reader_ops *ops, void *arg)
{
	/* What is buffered would otherwise be written by both processes. */
	fflush(NULL);
	/* Inherited SIG_IGN would have the kernel reap the child, status and all. */
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old_chld;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGCHLD, &dfl, &old_chld);
	/* Without the page (no memory) a crash is blamed as before, on
	 * libbabeltrace2. */
	void *page = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int *phase = page == MAP_FAILED ? NULL : page;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		if (phase)
			munmap(phase, sizeof(int));
		sigaction(SIGCHLD, &old_chld, NULL);
		fprintf(stderr, "mark: cannot read trace %s: cannot start the process that reads it with "
				"libbabeltrace2: %s (too many processes? try again)\n", cli_text(directory), strerror(e));
		return -1;
	}
	if (pid == 0) {
		sigaction(SIGCHLD, &old_chld, NULL);
		/* A crash here is reported by the parent; a core file would be litter. */
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		/* Killing mark (timeout, kill PID) must stop the reading too. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != parent)
			_exit(1);
		bt2_phase = phase;
		bt2_phase_set(BT2_PHASE_LIBRARY);
		int rc = bt2_read(directory, traces, ops, arg);
		bt2_phase_set(BT2_PHASE_AFTER);
		return rc;
	}
	int wstatus;
	while (waitpid(pid, &wstatus, 0) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		/* Only one process may carry on with the command: this one, with the error. */
		kill(pid, SIGKILL);
		fprintf(stderr, "mark: cannot read trace %s: lost the process reading it with libbabeltrace2: %s\n",
			cli_text(directory), strerror(e));
		sigaction(SIGCHLD, &old_chld, NULL);
		if (phase)
			munmap(phase, sizeof(int));
		return -1;
	}
	sigaction(SIGCHLD, &old_chld, NULL);
	/* The child ran the rest of the command, atexit handlers included: nothing is left to do here. */
	if (WIFEXITED(wstatus))
		_exit(WEXITSTATUS(wstatus));
	int sig = WTERMSIG(wstatus);
	const char *name = crash_signal_name(sig);
	const int where = phase ? __atomic_load_n(phase, __ATOMIC_RELAXED) : BT2_PHASE_LIBRARY;
	if (phase)
		munmap(phase, sizeof(int));
	if (name && where == BT2_PHASE_CALLBACK) {
		fprintf(stderr, "mark: mark crashed (%s) in its own code, handling what libbabeltrace2 read from "
				"trace %s: a bug in mark (or in a libbabeltrace2 function it called); please report it "
				"with the trace\n", name, cli_text(directory));
		return -1;
	}
	if (name && where == BT2_PHASE_AFTER) {
		fprintf(stderr, "mark: mark crashed (%s) in its own code after libbabeltrace2 had read trace %s: "
				"a bug in mark; please report it with the trace\n", name, cli_text(directory));
		return -1;
	}
	if (name) {
		fprintf(stderr, "mark: libbabeltrace2 crashed (%s) reading trace %s: its metadata or a stream file "
				"is damaged or not valid CTF; check it with babeltrace2, or record it again\n",
			name, cli_text(directory));
		return -1;
	}
	/* Killed from outside (SIGPIPE of `mark view | head`, SIGINT, SIGTERM):
	 * end the same way, so that the shell sees what it saw before. */
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

int trace_read(const char *directory, const struct trace_reader_ops *ops, void *arg)
{
	struct trace_dirs traces = { 0 };
	int ret = -1;

	if (trace_check_directory(directory) != 0)
		return -1;
	/* Class and trace addresses of a previous graph may be reused by this one. */
	memset(member_cache, 0, sizeof(member_cache));
	member_cache_next = 0;
	find_traces(&traces, directory);
	if (traces.oom) {
		fprintf(stderr, "mark: out of memory listing the traces in %s\n", cli_text(directory));
		goto out;
	}
	const char *which = secure_getenv("MARK_READER");
	if (ops->native_ok && (!which || strcmp(which, "bt2") != 0)) {
		ret = trace_native_read(traces.paths, traces.n, directory, ops, arg);
		if (ret != TRACE_NATIVE_NOT_MINE)
			goto out;
		ret = -1;
		if (which && strcmp(which, "native") == 0) {
			fprintf(stderr, "mark: cannot read trace %s with the native reader (MARK_READER=native): "
					"it is not exactly the layout mark's tracer writes; unset MARK_READER to "
					"read it with libbabeltrace2\n", cli_text(directory));
			goto out;
		}
	}
	if (refuse_links(directory, &traces) == 0)
		ret = bt2_read_isolated(directory, &traces, ops, arg);
out:
	free_traces(&traces);
	return ret;
}

void trace_event_payload_append(struct strbuf *sb, const struct trace_event *ev, enum trace_value_style style)
{
	if (ev->native)
		trace_native_payload_append(sb, ev->native, style);
	else
		trace_payload_append(sb, ev->payload, style);
}

void trace_event_args_each(const struct trace_event *ev, void (*fn)(const struct trace_arg *a, void *ctx), void *ctx,
			   struct strbuf *scratch)
{
	if (ev->native)
		trace_native_args_each(ev->native, fn, ctx);
	else
		trace_payload_args_each(ev->payload, fn, ctx, scratch);
}

size_t trace_event_payload_count(const struct trace_event *ev)
{
	if (ev->native)
		return trace_native_payload_count(ev->native);
	if (!ev->payload || bt_field_get_class_type(ev->payload) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return 0;
	return bt_field_class_structure_get_member_count(bt_field_borrow_class_const(ev->payload));
}

bool trace_event_has_field(const struct trace_event *ev, const char *name)
{
	if (ev->native)
		return trace_native_has_field(ev->native, name);
	return ev->payload && bt_field_get_class_type(ev->payload) == BT_FIELD_CLASS_TYPE_STRUCTURE &&
	       bt_field_structure_borrow_member_field_by_name_const(ev->payload, name);
}

bool trace_event_field_append(struct strbuf *sb, const struct trace_event *ev, const char *name,
			      enum trace_value_style style)
{
	if (ev->native)
		return trace_native_field_append(sb, ev->native, name, style);
	const bt_field *f = ev->payload && bt_field_get_class_type(ev->payload) == BT_FIELD_CLASS_TYPE_STRUCTURE
				    ? bt_field_structure_borrow_member_field_by_name_const(ev->payload, name)
				    : NULL;
	if (!f)
		return false;
	trace_value_append(sb, f, style);
	return true;
}

bool trace_event_field_key(struct strbuf *sb, const struct trace_event *ev, const char *name)
{
	if (ev->native)
		return trace_native_field_key(sb, ev->native, name);
	strbuf_add_lit(sb, "T");   /* text: never equal to the native reader's tagged bytes */
	return trace_event_field_append(sb, ev, name, TRACE_VALUE_TEXT);
}

/* A babeltrace2 field as a filter value; false for kinds a filter cannot compare. */
static bool bt_filter_value(const bt_field *f, struct mark_filter_value *out)
{
	bt_field_class_type t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT) && trace_value_mark_string_tag(f) == 'n') {
		/* a NULL %s as the probe's filter and the native reader judge it */
		out->type = MARK_FILTER_STRING;
		out->str.s = "(null)";
		out->str.len = 6;
		return true;
	}
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT))
		return bt_filter_value(bt_field_variant_borrow_selected_option_field_const(f), out);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
		out->type = MARK_FILTER_INT;
		out->i = bt_field_integer_signed_get_value(f);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		out->type = MARK_FILTER_UINT;
		out->u = bt_field_integer_unsigned_get_value(f);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_REAL)) {
		out->type = MARK_FILTER_DOUBLE;
		out->d = bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL)
				 ? bt_field_real_single_precision_get_value(f)
				 : bt_field_real_double_precision_get_value(f);
	} else if (t == BT_FIELD_CLASS_TYPE_STRING) {
		out->type = MARK_FILTER_STRING;
		out->str.s = bt_field_string_get_value(f);
		out->str.len = bt_field_string_get_length(f);
	} else {
		return false;
	}
	return true;
}

bool trace_event_filter_pass(const struct trace_event *ev, const struct mark_filter *f)
{
	if (ev->native)
		return trace_native_filter_pass(ev->native, f);
	struct mark_filter_value vals[MARK_FILTER_MAX_FIELDS];
	for (unsigned k = 0; k < mark_filter_nfields(f); k++) {
		const char *name = mark_filter_field(f, k);
		if (!ev->payload || bt_field_get_class_type(ev->payload) != BT_FIELD_CLASS_TYPE_STRUCTURE)
			return false;
		const bt_field *m = bt_field_structure_borrow_member_field_by_name_const(ev->payload, name);
		if (!m || !bt_filter_value(m, &vals[k]))
			return false;   /* as in the probe: no such field, not shown */
	}
	return mark_filter_eval(f, vals);
}

const char **trace_event_class_names(const struct trace_event *ev, size_t *count)
{
	*count = 0;
	if (ev->native)
		return trace_native_class_names(ev->native, count);
	const bt_trace_class *tc = bt_trace_borrow_class_const(bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev->event)));
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

bool trace_progress_wanted(bool asked, bool output_on_stdout)
{
	return asked || (isatty(STDERR_FILENO) && !(output_on_stdout && isatty(STDOUT_FILENO)));
}

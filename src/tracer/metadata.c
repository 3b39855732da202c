/*
 * The CTF 1.8 metadata (TSDL) of a trace: the trace and its packet header,
 * the clock, the one stream class, and one event class per marker id.
 *
 * Event records are stored in the compile-time slot layout (one 64-bit
 * slot per argument) and copied into packets unchanged, so every integer
 * field is declared with align = 64: the decoder reads the low `size` bits
 * of its slot (little endian) and skips the rest of the slot when it aligns
 * the next field.  A string is a length byte and a NUL-terminated string
 * (see put_field) and the writer pads them to 8 bytes, which is again
 * exactly what align = 64 of the next field (or of the next event header)
 * skips.
 *
 * Written to ".metadata.tmp" (hidden from readers, which take any other
 * file for a stream) and renamed over "metadata", so a reader (or a crash)
 * sees either the old or the new complete text.  The metadata is
 * rewritten when markers appear (dlopen) and when the clock calibration
 * improves; event ids are marker ids, which never change in a process, so
 * an older metadata stays valid for the packets written before it.
 */
#define _GNU_SOURCE
#include "tracer_internal.h"
#include "util/printable.h"
#include "util/safe_dir.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_uuid(FILE *f, const uint8_t *u)
{
	fprintf(f, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/*
 * A TSDL string literal of a marker name (a C identifier may hold UTF-8
 * letters: café), the host or the process name.  Printable ASCII and
 * printable UTF-8 as they are, '"' and '\\' escaped; every other byte
 * (controls, DEL, C1 and bidirectional controls, bytes that are not UTF-8)
 * as '_', as thread names get '?': babeltrace2 prints these names to a
 * terminal as they are, so nothing it would act on is written.  Every byte
 * outside printable ASCII once became '_', which made MARK(café) and
 * MARK(cafè) one event name, "caf__", in every reader.
 */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		size_t n;
		if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p);
		} else if (*p >= 0x20 && *p < 0x7f) {
			fputc(*p, f);
		} else if (*p >= 0x80 && (n = mark_utf8_printable(p)) > 0) {
			fwrite(p, 1, n, f);
			p += n - 1;
		} else {
			fputc('_', f);
		}
	}
	fputc('"', f);
}

static const char *const tsdl_keywords[] = {
	"align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
	"floating_point", "float", "integer", "int", "long", "short", "signed", "stream", "string",
	"struct", "trace", "typealias", "typedef", "unsigned", "variant", "void", "_Bool", "_Complex",
	"_Imaginary", NULL,
};

#define FIELD_NAME_MAX TRACER_FIELD_NAME_MAX

static bool name_taken(char (*names)[FIELD_NAME_MAX], unsigned count, const char *name)
{
	for (unsigned j = 0; j < count; j++)
		if (strcmp(names[j], name) == 0)
			return true;
	return false;
}

/* `want`, or want_2, want_3, ... : the first not among names[0..count). */
static void unique_name(char (*names)[FIELD_NAME_MAX], unsigned count, const char *want, char *out)
{
	snprintf(out, FIELD_NAME_MAX, "%s", want);
	for (unsigned suffix = 2; name_taken(names, count, out); suffix++)
		snprintf(out, FIELD_NAME_MAX, "%.100s_%u", want, suffix);
}

/*
 * Valid, unique CTF field names for the n arguments (names[0..n)) and for
 * the length byte of each %s argument (names[n + i], "NAME_len"; see
 * put_field).  babeltrace2 strips one leading underscore of CTF 1.8 field
 * names, so names never start with one; keywords get a "_v" suffix;
 * duplicates get "_2", "_3", ...
 */
void tracer_field_names(const struct mark_arg *args, unsigned n, char (*names)[FIELD_NAME_MAX])
{
	for (unsigned i = 0; i < n; i++) {
		char base[96], want[FIELD_NAME_MAX];
		size_t len = 0;
		const char *src = args[i].name ? args[i].name : "";
		for (; *src && len + 1 < sizeof(base); src++)
			base[len++] = (isalnum((unsigned char)*src) || *src == '_') ? *src : '_';
		base[len] = '\0';
		char *b = base;
		while (*b == '_')
			b++;
		if (!*b || isdigit((unsigned char)*b)) {
			snprintf(want, sizeof(want), "arg%u", i);
		} else {
			snprintf(want, sizeof(want), "%s", b);
			for (const char *const *k = tsdl_keywords; *k; k++)
				if (strcmp(want, *k) == 0) {
					snprintf(want, sizeof(want), "%s_v", b);
					break;
				}
		}
		unique_name(names, i, want, names[i]);
	}
	/* The length bytes are named after the arguments were, so an argument
	 * keeps its own name even if it is called like another one's length. */
	for (unsigned i = 0; i < n; i++) {
		names[n + i][0] = '\0';
		if (args[i].type != MARK_ARG_STRING)
			continue;
		char want[FIELD_NAME_MAX];
		snprintf(want, sizeof(want), "%.100s_len", names[i]);
		unique_name(names, n + i, want, names[n + i]);
	}
}

static void put_field(FILE *f, const struct mark_arg *a, const char *name, const char *len_name)
{
	unsigned bits = a->size ? a->size * 8 : 64;
	if (bits > 64)
		bits = 64;
	switch (a->type) {
	case MARK_ARG_SIGNED:
		fprintf(f, "\t\tinteger { size = %u; align = 64; signed = true; base = 10; } %s;\n", bits, name);
		break;
	case MARK_ARG_UNSIGNED:
		fprintf(f, "\t\tinteger { size = %u; align = 64; signed = false; base = 10; } %s;\n", bits, name);
		break;
	case MARK_ARG_OCTAL:
		fprintf(f, "\t\tinteger { size = %u; align = 64; signed = false; base = 8; } %s;\n", bits, name);
		break;
	case MARK_ARG_HEX:
		fprintf(f, "\t\tinteger { size = %u; align = 64; signed = false; base = 16; } %s;\n", bits, name);
		break;
	case MARK_ARG_POINTER:
		fprintf(f, "\t\tinteger { size = 64; align = 64; signed = false; base = 16; } %s;\n", name);
		break;
	case MARK_ARG_STRING:
		/*
		 * A tag byte, then a variant of strings selected by it
		 * (trace_format.h, MARK_TF_STRING_*): "empty" for "", "text"
		 * for a string kept whole (the tag is its length), "null" for
		 * a NULL pointer, "truncated" for a string cut to its first
		 * bytes and "...".  A reader tells them apart by the option,
		 * so the text never has to say it.  The "empty" option is
		 * there because babeltrace2 2.0.4 (Debian 12) reuses the field
		 * objects of earlier events and never resets a string field
		 * that gets no bytes: an empty "text" would show the text of
		 * an earlier event.  Here only "text" and "truncated" get
		 * bytes, and they always do.
		 */
		fprintf(f,
			"\t\tenum : integer { size = 8; align = 8; signed = false; } "
			"{ empty = 0, text = 1 ... %u, null = %u, truncated = %u } %s;\n"
			"\t\tvariant <%s> { string { encoding = UTF8; } empty; "
			"string { encoding = UTF8; } text; string { encoding = UTF8; } null; "
			"string { encoding = UTF8; } truncated; } %s;\n",
			MARK_TF_STRING_TEXT_MAX, MARK_TF_STRING_NULL, MARK_TF_STRING_CUT, len_name, len_name, name);
		break;
	case MARK_ARG_DOUBLE:
		fprintf(f, "\t\tfloating_point { exp_dig = 11; mant_dig = 53; byte_order = le; align = 64; } %s;\n",
			name);
		break;
	case MARK_ARG_CHAR:
		fprintf(f, "\t\tmark_char_t %s;\n", name);
		break;
	default:
		fprintf(f, "\t\tinteger { size = 64; align = 64; signed = false; base = 16; } %s;\n", name);
		break;
	}
}

/*
 * The type of a %c field: an 8-bit enumeration with one label per byte
 * value, the character itself for printable ASCII, else the ASCII name of
 * the control character or 0xNN.  A CTF 1.8 integer has no "character"
 * display (babeltrace2 would print 97 for 'a'); with the labels,
 * babeltrace2 prints ( "a" : container = 97 ), and `mark view` recognises
 * the type (8 bits, 256 labels) and prints 'a'.  In the 8-byte slot of the
 * argument, as every integer.
 */
static void put_char_type(FILE *f)
{
	fprintf(f, "typealias enum : integer { size = 8; align = 64; signed = false; base = 10; } {");
	for (unsigned c = 0; c < 256; c++) {
		char label[8];
		mark_tf_char_label(c, label);
		fprintf(f, "%s", c % 8 ? " " : "\n\t");
		put_quoted(f, label);
		fprintf(f, " = %u%s", c, c < 255 ? "," : "\n");
	}
	fprintf(f, "} := mark_char_t;\n\n");
}

static void put_header(FILE *f, const struct tracer_session *s, const uint8_t *trace_uuid)
{
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	char comm[64] = "unknown";
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n > 0) {
			comm[n] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
		}
	}
	const struct tracer_clock *c = &s->clock;
	fprintf(f, "/* CTF 1.8 */\n\n"
		   "/* Written by libmark's tracer; layout in docs/tracer.md. */\n\n"
		   "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		   "typealias integer { size = 16; align = 16; signed = false; } := uint16_t;\n"
		   "typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n"
		   "typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n\n"
		   "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"");
	put_uuid(f, trace_uuid);
	fprintf(f, "\";\n\tbyte_order = le;\n"
		   "\tpacket.header := struct {\n"
		   "\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n\t\tuint32_t stream_id;\n"
		   "\t\tuint64_t stream_instance_id;\n\t};\n};\n\n");
	fprintf(f, "env {\n\tdomain = \"mark\";\n\ttracer_name = \"mark\";\n\ttracer_major = 0;\n"
		   "\ttracer_minor = 1;\n\thostname = ");
	put_quoted(f, host);
	fprintf(f, ";\n\tprocname = ");
	put_quoted(f, comm);
	fprintf(f, ";\n\tvpid = %d;\n\tclock_source = \"%s\";\n};\n\n", (int)s->pid,
		c->tsc ? TRACER_COUNTER_SOURCE : "CLOCK_MONOTONIC");
	fprintf(f, "clock {\n\tname = \"mark_clock\";\n\tuuid = \"");
	put_uuid(f, c->uuid);
	fprintf(f, "\";\n\tdescription = \"%s\";\n\tfreq = %llu;\n\tprecision = %llu;\n"
		   "\toffset_s = %lld;\n\toffset = %lld;\n\tabsolute = TRUE;\n};\n\n",
		c->tsc ? TRACER_COUNTER_NAME : "CLOCK_MONOTONIC", (unsigned long long)c->freq,
		(unsigned long long)(c->freq / 1000000 ? c->freq / 1000000 : 1), (long long)c->offset_s,
		(long long)c->offset);
	fprintf(f, "typealias integer { size = 64; align = 64; signed = false; map = clock.mark_clock.value; } "
		   ":= uint64_clock_t;\n\n");
	put_char_type(f);
	/*
	 * Event header: timestamp + id (10 bytes).  cpu_id is 32-bit aligned,
	 * so bytes 10-11 of each record are CTF padding; the tracer keeps the
	 * record size there (see trace_format.h).
	 */
	fprintf(f, "stream {\n\tid = 0;\n"
		   "\tpacket.context := struct {\n"
		   "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
		   "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
		   "\t\tuint64_t events_discarded;\n\t\tuint32_t tid;\n"
		   "\t\tinteger { size = 8; align = 8; signed = false; encoding = UTF8; } thread_name[16];\n\t};\n"
		   "\tevent.header := struct {\n\t\tuint64_clock_t timestamp;\n\t\tuint16_t id;\n\t};\n"
		   "\tevent.context := struct {\n\t\tuint32_t cpu_id;\n\t};\n};\n\n");
}

int tracer_metadata_write(int dirfd, const char *dir, const struct tracer_session *s,
			  const uint8_t *trace_uuid, unsigned *described)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	put_header(f, s, trace_uuid);
	mark_registry_lock();
	size_t n;
	struct mark_marker **ms = mark_markers_locked(&n);
	if (n > MARK_TF_MAX_ID + 1)
		n = MARK_TF_MAX_ID + 1;
	struct mark_tf_stats *st = s->stats;
	/* Entries we mapped, not the file's max_entries: anyone who can write
	 * the file could make that larger than the mapping. */
	const size_t entries = st ? s->stats_entries : 0;
	for (size_t i = 0; i < n; i++) {
		const struct mark_marker *m = ms[i];
		fprintf(f, "event {\n\tname = ");
		put_quoted(f, m->name);
		fprintf(f, ";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n", m->id);
		char names[2 * MARK_MAX_MARKER_ARGS][FIELD_NAME_MAX];
		unsigned nargs = m->nargs <= MARK_MAX_MARKER_ARGS ? m->nargs : MARK_MAX_MARKER_ARGS;
		tracer_field_names(m->args, nargs, names);
		for (unsigned a = 0; a < nargs; a++)
			put_field(f, &m->args[a], names[a], names[nargs + a]);
		fprintf(f, "\t};\n};\n\n");
		if (m->id < entries) {
			struct mark_tf_stats_entry *e = (struct mark_tf_stats_entry *)(st + 1) + m->id;
			if (e->name_len == 0) {
				size_t nl = strlen(m->name);
				e->id = m->id;
				e->name_len = (uint16_t)(nl > 0xffff ? 0xffff : nl);
				snprintf(e->name, sizeof(e->name), "%s", m->name);
			}
		}
	}
	mark_registry_unlock();
	if (fclose(f) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	char path[PATH_MAX];
	static const char tmp[] = MARK_TF_METADATA_TMP;
	tracer_path(path, sizeof(path), dir, MARK_TF_METADATA, -1);
	int rc = 0;
	/*
	 * A new file (O_EXCL, never through a link).  One left by a write that
	 * died half-way is ours: the directory is private to this euid (checked
	 * at start), and only the entry is removed, never what a link names.
	 */
	int fd = dirfd < 0 ? dirfd : mark_file_create_at(dirfd, tmp, O_WRONLY);
	if (fd == -EEXIST && unlinkat(dirfd, tmp, 0) == 0)
		fd = mark_file_create_at(dirfd, tmp, O_WRONLY);
	if (fd < 0) {
		rc = fd;
	} else {
		rc = tracer_write_full(fd, text, len);
		if (close(fd) != 0 && rc == 0)
			rc = -errno;
		/* rename replaces a link named metadata, never its target. */
		if (rc == 0 && renameat(dirfd, tmp, dirfd, MARK_TF_METADATA) != 0)
			rc = -errno;
		if (rc != 0)
			unlinkat(dirfd, tmp, 0);
	}
	if (rc != 0) {
		mark_warn("mark: tracer cannot write %s (%s)\n", path, strerror(-rc));
	} else if (described) {
		/* Atomic: the consumer reads the session's count without the
		 * lock its writers (tracer_describe_markers) hold. */
		__atomic_store_n(described, (unsigned)n, __ATOMIC_RELAXED);
	}
	free(text);
	return rc;
}

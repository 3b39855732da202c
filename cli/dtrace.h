/*
 * `mark dtrace`: a drop-in for systemtap's `dtrace` script.  It reads DTrace
 * provider definitions (probes.d) and writes
 *   -h  a header whose PROVIDER_PROBE(...) / PROVIDER_PROBE_ENABLED() macros
 *       are mark markers (and therefore USDT probes too), and
 *   -G  an object file that connects those markers to libmark at run time.
 *
 * The modules:
 *   dtrace_parse.c  the provider language: tokens, providers, probes, types
 *   dtrace_gen.c    the header and the -G object
 *   cmd_dtrace.c    the command line (options of systemtap's and Solaris' dtrace)
 */
#ifndef MARK_CLI_DTRACE_H
#define MARK_CLI_DTRACE_H

#include <stdio.h>

/* How an argument is recorded: its printf conversion and the C type its value is cast to. */
enum dt_class {
	DT_INT,        /* %d    int                 */
	DT_UINT,       /* %u    unsigned int        */
	DT_LONG,       /* %ld   long                */
	DT_ULONG,      /* %lu   unsigned long       */
	DT_LLONG,      /* %lld  long long           */
	DT_ULLONG,     /* %llu  unsigned long long  */
	DT_DOUBLE,     /* %f    double              */
	DT_STRING,     /* %s    const char *, NULL recorded as "(null)" */
	DT_POINTER,    /* %p    const void *        */
};

struct dt_arg {
	char *type;            /* as written, normalised spacing: "const char *" */
	char *name;            /* parameter name, or NULL when none was written  */
	enum dt_class cls;
};

struct dt_probe {
	char *name;            /* as written: "transaction__start"               */
	unsigned line;
	struct dt_arg *args;
	unsigned nargs;
};

struct dt_provider {
	char *name;
	struct dt_probe *probes;
	unsigned nprobes;
};

struct dt_file {
	struct dt_provider *providers;
	unsigned nproviders;
};

/* The most arguments a probe may have (sys/sdt.h and MARK() both stop at 12). */
#define DT_MAX_ARGS 12

/*
 * Parse the provider definitions in `text` (NUL-terminated).  `path` names the
 * file in messages; linemarkers ("# 12 \"x.d\"") from the C preprocessor move
 * the reported position.  `preprocessed` says whether the text went through
 * cpp (without -C, a directive other than #pragma is an error that says to use
 * -C).  On error prints "FILE:LINE: error: ..." to `err` and returns -1.
 */
int dt_parse(const char *text, const char *path, int preprocessed, struct dt_file *out, FILE *err);
void dt_free(struct dt_file *f);

/* printf conversion and C cast type of a class. */
const char *dt_class_format(enum dt_class cls);
const char *dt_class_ctype(enum dt_class cls);

/* The marker name of a probe: DTrace's convention, "__" becomes "-". Caller frees. */
char *dt_marker_name(const char *probe);

/*
 * Write the -h header.  `include_line` is the text after #include for
 * <mark/mark.h> (either "<mark/mark.h>" or a quoted absolute path).
 * `source` names the .d file in the header comment.  Returns 0, or -1 on a
 * write error.
 */
int dt_write_header(FILE *out, const struct dt_file *f, const char *source, const char *include_line);

/*
 * Write the -G object to `output` by compiling a small C file with the C
 * compiler ($CC or "cc").  `libmark_path` is tried first when the program
 * loads libmark.  Returns 0, or -1 with a message on stderr.
 */
int dt_write_object(const char *output, const struct dt_file *f, const char *source,
		    const char *libmark_path, int keep_temps);

#endif

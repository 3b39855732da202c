/*
 * `mark dtrace`: the command line of systemtap's dtrace script (and of
 * Solaris/illumos dtrace where build systems use it), so that
 *
 *   ./configure --enable-dtrace DTRACE="$(command -v mark-dtrace)"
 *
 * builds a project's probes.d into mark markers.  The installed
 * `mark-dtrace` runs `mark dtrace "$@"`.
 */
#define _GNU_SOURCE
#include "command.h"
#include "output.h"
#include "dtrace.h"
#include "text.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MARK_DTRACE_BUILD_DIR
#define MARK_DTRACE_BUILD_DIR ""
#endif
#ifndef MARK_DTRACE_SOURCE_INCLUDE
#define MARK_DTRACE_SOURCE_INCLUDE ""
#endif
#ifndef MARK_DTRACE_REL_INCLUDEDIR
#define MARK_DTRACE_REL_INCLUDEDIR "include"
#endif
#ifndef MARK_DTRACE_REL_LIBDIR
#define MARK_DTRACE_REL_LIBDIR "lib"
#endif

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mark dtrace [-C [-I DIR] [-D NAME[=VALUE]] [-U NAME]] -s FILE.d -h [-o HEADER]\n"
		"       mark dtrace [-C ...] -s FILE.d -G [-o OBJECT] [OBJECTS...]\n"
		"\n"
		"A drop-in for systemtap's dtrace: builds DTrace provider definitions into\n"
		"mark markers, which are also USDT probes.  Installed as `mark-dtrace` too, for\n"
		"./configure --enable-dtrace DTRACE=\"$(command -v mark-dtrace)\"\n"
		"(an absolute path: given a bare name, configure searches PATH for \"dtrace\").\n"
		"\n"
		"  -s FILE.d   the provider definitions\n"
		"  -h          write a header: PROVIDER_PROBE(args...) and PROVIDER_PROBE_ENABLED()\n"
		"              (default output: FILE.h in the current directory)\n"
		"  -G          write an object file to link into the program; it loads libmark at\n"
		"              run time (default output: FILE.o); OBJECTS are accepted and ignored\n"
		"  -o FILE     the output file\n"
		"  -C          run the C preprocessor ($CC -E) on FILE.d first\n"
		"  -I DIR, -D NAME[=VALUE], -U NAME\n"
		"              passed to the preprocessor (with -C)\n"
		"  -k          keep the temporary C file of -G (its name is printed)\n"
		"  -32, -64, -x OPT, --no-pyparsing, --types\n"
		"              accepted for compatibility; no effect\n"
		"  -V          print the version\n"
		"  --help      this text\n"
		"\n"
		"Probe PROVIDER:NAME becomes marker \"PROVIDER:NAME\" with \"__\" shown as \"-\"\n"
		"(`mark list`), and USDT probe PROVIDER:NAME exactly as systemtap names it\n"
		"(bpftrace, perf).  Argument types give the marker's format: integers by size\n"
		"and signedness, char pointers as strings (NULL recorded as \"(null)\"), other\n"
		"pointers as %%p.  Errors name the file and line.  Environment: CC (the C\n"
		"compiler for -C and -G; default cc).  See docs/usdt.md.\n");
}

static char *read_all(FILE *f, size_t *len)
{
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void shell_quote(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t need = *len + 4 * strlen(s) + 4;
	if (need > *cap) {
		*cap = need * 2;
		*buf = realloc(*buf, *cap);
		if (!*buf) {
			fprintf(stderr, "mark dtrace: out of memory\n");
			exit(1);
		}
	}
	char *b = *buf;
	b[(*len)++] = ' ';
	b[(*len)++] = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			memcpy(b + *len, "'\\''", 4);
			*len += 4;
		} else {
			b[(*len)++] = *s;
		}
	}
	b[(*len)++] = '\'';
	b[*len] = '\0';
}

/* Run $CC -E over the file with the -I/-D/-U options; returns the output or NULL. */
static char *preprocess(const char *path, char **cpp_opts, int ncpp_opts, size_t *text_len)
{
	const char *cc = secure_getenv("CC");   /* a build tool: CC as make passes it */
	if (!cc || !*cc)
		cc = "cc";
	size_t cap = 256, len = 0;
	char *cmd = malloc(cap);
	if (!cmd)
		return NULL;
	len = (size_t)snprintf(cmd, cap, "%s -E -x c", cc);
	for (int i = 0; i < ncpp_opts; i++)
		shell_quote(&cmd, &len, &cap, cpp_opts[i]);
	shell_quote(&cmd, &len, &cap, path);
	FILE *p = popen(cmd, "r");
	if (!p) {
		fprintf(stderr, "mark dtrace: cannot run the C preprocessor (%s): %s\n", cli_text(cmd), strerror(errno));
		free(cmd);
		return NULL;
	}
	char *text = read_all(p, text_len);
	int rc = pclose(p);
	if (rc != 0) {
		fprintf(stderr, "mark dtrace: the C preprocessor failed on %s (command: %s)\n", cli_text(path), cli_text(cmd));
		free(text);
		text = NULL;
	}
	free(cmd);
	return text;
}

/* The default output: FILE.d -> FILE.h / FILE.o in the current directory. */
static char *default_output(const char *dfile, const char *ext)
{
	char *copy = strdup(dfile);
	if (!copy)
		return NULL;
	char *base = basename(copy);
	char *dot = strrchr(base, '.');
	if (dot && dot != base)
		*dot = '\0';
	char *out = NULL;
	if (asprintf(&out, "%s%s", base, ext) < 0)
		out = NULL;
	free(copy);
	return out;
}

/* Copy src into dst (quoted when `quote`), or leave dst unchanged when it does not fit. */
static void set_path(char *dst, size_t len, const char *src, bool quote)
{
	size_t n = strlen(src);
	if (n + 3 > len)
		return;
	size_t o = 0;
	if (quote)
		dst[o++] = '"';
	memcpy(dst + o, src, n);
	o += n;
	if (quote)
		dst[o++] = '"';
	dst[o] = '\0';
}

static bool file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/*
 * Where libmark's header and shared library are, for the generated files:
 * next to this executable (PREFIX/bin/mark -> PREFIX/include, PREFIX/lib...),
 * else the build tree this command was built in.
 */
static void locate_libmark(char *include_line, size_t inc_len, char *lib_path, size_t lib_len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	snprintf(include_line, inc_len, "<mark/mark.h>");
	snprintf(lib_path, lib_len, "libmark.so.0");
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *dir = dirname(exe);
	char cand[PATH_MAX * 2];
	char prefix[PATH_MAX];
	snprintf(prefix, sizeof(prefix), "%s/..", dir);
	char real_prefix[PATH_MAX];
	if (!realpath(prefix, real_prefix))
		snprintf(real_prefix, sizeof(real_prefix), "%s", prefix);

	bool found_inc = false;
	snprintf(cand, sizeof(cand), "%s/%s/mark/mark.h", real_prefix, MARK_DTRACE_REL_INCLUDEDIR);
	if (file_exists(cand)) {
		found_inc = true;
		if (strcmp(real_prefix, "/usr") == 0 || strcmp(real_prefix, "/usr/local") == 0)
			snprintf(include_line, inc_len, "<mark/mark.h>");
		else
			set_path(include_line, inc_len, cand, true);
	}
	snprintf(cand, sizeof(cand), "%s/%s/libmark.so.0", real_prefix, MARK_DTRACE_REL_LIBDIR);
	bool found_lib = file_exists(cand);
	if (found_lib)
		set_path(lib_path, lib_len, cand, false);

	/* Running from the build tree. */
	char real_build[PATH_MAX];
	if (MARK_DTRACE_BUILD_DIR[0] && realpath(MARK_DTRACE_BUILD_DIR, real_build) && strcmp(real_build, dir) == 0) {
		snprintf(cand, sizeof(cand), "%s/mark/mark.h", MARK_DTRACE_SOURCE_INCLUDE);
		if (!found_inc && file_exists(cand))
			set_path(include_line, inc_len, cand, true);
		snprintf(cand, sizeof(cand), "%s/libmark.so.0", real_build);
		if (!found_lib && file_exists(cand))
			set_path(lib_path, lib_len, cand, false);
	}
}

static int need_arg(int argc, char **argv, int i, const char *opt)
{
	if (i + 1 >= argc) {
		fprintf(stderr, "mark dtrace: option %s needs an argument (see mark dtrace --help)\n", opt);
		return 0;
	}
	(void)argv;
	return 1;
}

static int cmd_dtrace(int argc, char **argv)
{
	const char *dfile = NULL, *output = NULL;
	int mode = 0;   /* 'h' or 'G' */
	int use_cpp = 0, keep = 0;
	char **cpp_opts = calloc((size_t)argc * 2 + 1, sizeof(char *));
	int ncpp = 0;
	if (!cpp_opts)
		return 1;
	int rc = 1;
	char *text = NULL, *defout = NULL;
	size_t text_len = 0;
	struct dt_file file = { 0 };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			rc = 0;
			goto out;
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf("mark dtrace 0.1.0 (a drop-in for systemtap's dtrace; probes are mark markers)\n");
			rc = 0;
			goto out;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "-G") == 0) {
			if (mode && mode != a[1]) {
				fprintf(stderr, "mark dtrace: -h and -G exclude each other; run twice\n");
				goto out;
			}
			mode = a[1];
		} else if (strcmp(a, "-s") == 0) {
			if (!need_arg(argc, argv, i, a))
				goto out;
			if (dfile) {
				fprintf(stderr, "mark dtrace: one -s FILE.d per run (got %s and %s)\n", cli_text(dfile), cli_text(argv[i + 1]));
				goto out;
			}
			dfile = argv[++i];
		} else if (strcmp(a, "-o") == 0) {
			if (!need_arg(argc, argv, i, a))
				goto out;
			output = argv[++i];
		} else if (strcmp(a, "-C") == 0) {
			use_cpp = 1;
		} else if (strcmp(a, "-k") == 0) {
			keep = 1;
		} else if ((a[0] == '-' && (a[1] == 'I' || a[1] == 'D' || a[1] == 'U'))) {
			if (a[2]) {
				cpp_opts[ncpp++] = (char *)a;
			} else {
				if (!need_arg(argc, argv, i, a))
					goto out;
				cpp_opts[ncpp++] = (char *)a;
				cpp_opts[ncpp++] = argv[++i];
			}
		} else if (strcmp(a, "-x") == 0) {
			if (!need_arg(argc, argv, i, a))
				goto out;
			i++;
		} else if (strcmp(a, "-32") == 0 || strcmp(a, "-64") == 0 || strcmp(a, "--no-pyparsing") == 0 ||
			   strcmp(a, "--types") == 0 || strncmp(a, "-x", 2) == 0) {
			/* compatibility: no effect */
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "mark dtrace: unknown option %s (see mark dtrace --help)\n", cli_text(a));
			goto out;
		} else {
			/* an object file of the -G step (Solaris dtrace rewrites them; nothing to do here) */
			if (mode != 'G' && !file_exists(a)) {
				fprintf(stderr, "mark dtrace: unexpected argument %s (see mark dtrace --help)\n", cli_text(a));
				goto out;
			}
		}
	}
	if (!dfile) {
		fprintf(stderr, "mark dtrace: no provider file: give -s FILE.d (see mark dtrace --help)\n");
		goto out;
	}
	if (!mode) {
		fprintf(stderr, "mark dtrace: nothing to do: give -h (header) or -G (object)\n");
		goto out;
	}
	if (ncpp && !use_cpp)
		fprintf(stderr, "mark dtrace: warning: -I/-D/-U have no effect without -C\n");

	if (use_cpp) {
		text = preprocess(dfile, cpp_opts, ncpp, &text_len);
		if (!text)
			goto out;
	} else {
		FILE *f = fopen(dfile, "r");
		if (!f) {
			fprintf(stderr, "mark dtrace: cannot open %s: %s\n", cli_text(dfile), strerror(errno));
			goto out;
		}
		text = read_all(f, &text_len);
		fclose(f);
		if (!text) {
			fprintf(stderr, "mark dtrace: cannot read %s: %s\n", cli_text(dfile), strerror(errno));
			goto out;
		}
	}
	/* The parser reads a C string: a NUL byte would silently end the file. */
	if (strlen(text) != text_len) {
		unsigned line = 1;
		for (const char *p = text; *p; p++)
			line += *p == '\n';
		fprintf(stderr, "%s:%u: error: NUL byte in the file (expected text)\n", cli_text(dfile), line);
		goto out;
	}
	if (dt_parse(text, dfile, use_cpp, &file, stderr) != 0)
		goto out;

	if (!output) {
		defout = default_output(dfile, mode == 'h' ? ".h" : ".o");
		if (!defout)
			goto out;
		output = defout;
	}
	char include_line[PATH_MAX + 8], lib_path[PATH_MAX];
	locate_libmark(include_line, sizeof(include_line), lib_path, sizeof(lib_path));
	if (mode == 'h') {
		/* Whole or not at all, and never over a device or through a link
		 * (output.h): a failed write once removed the -o path itself,
		 * whatever it was. */
		struct output_file hdr;
		if (output_file_open(&hdr, "dtrace", output, 0666) != 0)
			goto out;
		int w = dt_write_header(hdr.f, &file, dfile, include_line);
		if (w != 0)
			fprintf(stderr, "mark dtrace: cannot write %s: %s\n", cli_text(hdr.tmp), strerror(errno));
		if (output_file_close(&hdr, "dtrace", w == 0) != 0 || w != 0)
			goto out;
	} else {
		if (dt_write_object(output, &file, dfile, lib_path, keep) != 0)
			goto out;
	}
	rc = 0;
out:
	dt_free(&file);
	free(text);
	free(defout);
	free(cpp_opts);
	return rc;
}

MARK_CLI_COMMAND(dtrace, "dtrace", "build DTrace provider files (probes.d) into markers: -h, -G", cmd_dtrace);

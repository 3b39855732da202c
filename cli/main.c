/* The `mark` command: dispatches to the subcommands in cli/cmd_*.c. */
#define _GNU_SOURCE /* vasprintf */
#include "command.h"
#include "output.h"
#include "text.h"
#include "core/internal.h"
#include "filter/filter.h"
#include "tracer/trace_format.h"
#include <mark/tracer.h>

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const struct mark_cli_command __start_mark_cli_commands[] __attribute__((weak));
extern const struct mark_cli_command __stop_mark_cli_commands[] __attribute__((weak));

/*
 * Messages quote names, paths and globs, often from the traced process (its
 * name, its markers, its agent's error text): the whole message is escaped
 * for the terminal (text.h), so no caller can forget to.  As a message:
 * the values a caller quoted with cli_text() (unambiguous, a backslash as
 * \\) keep their escapes as they are.
 */
int cli_error(const char *fmt, ...)
{
	va_list ap;
	struct strbuf msg = { 0 };
	va_start(ap, fmt);
	char *raw = NULL;
	int n = vasprintf(&raw, fmt, ap);
	va_end(ap);
	strbuf_add_message(&msg, n >= 0 ? raw : fmt);
	fprintf(stderr, "mark: %s\n", msg.failed ? "(out of memory)" : msg.data ? msg.data : "");
	free(raw);
	strbuf_release(&msg);
	return 1;
}

int cli_glob_check(const char *cmd, const char *option, const char *glob)
{
	char why[200];
	if (mark_glob_check(glob, why, sizeof(why)) == 0)
		return 0;
	/* The glob is shown with control bytes as '?' (the reason names them). */
	char shown[128];
	size_t n = 0;
	for (const char *p = glob ? glob : ""; *p && n + 1 < sizeof(shown); p++)
		shown[n++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
	shown[n] = '\0';
	cli_error("%s: bad %s \"%s\": %s", cmd, option, shown, why);
	return 2;
}

struct mark_filter *cli_filter_parse(const char *cmd, const char *expr)
{
	char why[256];
	struct mark_filter *f = mark_filter_parse(expr, why, sizeof(why));
	if (!f) {
		/* cli_error() escapes control bytes of the expression it shows. */
		cli_error("%s: bad --filter \"%s\": %s", cmd, expr, why);
	}
	return f;
}

int cli_trigger_option(const char *cmd, const char *option, const char *value, struct cli_trigger *t)
{
	if (strcmp(option, "snapshot-on") == 0) {
		char glob[MARK_FILTER_MAX_TEXT + 1], why[300];
		struct mark_filter *f = NULL;
		if (strlen(value) > MARK_FILTER_MAX_TEXT) {
			cli_error("%s: bad --snapshot-on: longer than %d bytes", cmd, MARK_FILTER_MAX_TEXT);
			return 2;
		}
		if (mark_trigger_parse(value, glob, sizeof(glob), &f, why, sizeof(why)) < 0) {
			cli_error("%s: bad --snapshot-on \"%s\": %s", cmd, value, why);
			return 2;
		}
		mark_filter_free(f);
		if (cli_glob_check(cmd, "--snapshot-on glob", glob) != 0)
			return 2;
		t->spec = value;
		return 0;
	}
	if (strcmp(option, "max-snapshots") == 0) {
		char *end;
		unsigned long long v = strtoull(value, &end, 10);
		if (*value < '0' || *value > '9' || *end || v == 0 || v > MARK_TRACE_MAX_SNAPSHOTS) {
			cli_error("%s: bad --max-snapshots \"%s\": give a count from 1 to %u", cmd, value,
				  MARK_TRACE_MAX_SNAPSHOTS);
			return 2;
		}
		t->max_text = value;
		t->max_snapshots = v;
		return 0;
	}
	uint64_t bytes = 0;
	if (mark_rotate_parse(value, &bytes, &t->interval_ms) < 0 || bytes || !t->interval_ms) {
		/* "0" parses as 0 bytes: it was taken for "no interval" in silence. */
		cli_error("%s: bad --snapshot-interval \"%s\": give a duration such as 500ms, 30s, 10min, 1h%s", cmd,
			  value, !bytes && !t->interval_ms && mark_rotate_parse(value, &bytes, &t->interval_ms) == 0
					 ? " (for no least time between snapshots, leave --snapshot-interval out)"
					 : "");
		return 2;
	}
	t->interval_text = value;
	return 0;
}

int cli_trigger_mode(const char *cmd, const struct cli_trigger *t, bool mode_given, int mode)
{
	if (!t->spec && (t->max_text || t->interval_text)) {
		cli_error("%s: %s goes with --snapshot-on 'GLOB[ if EXPR]', which is missing", cmd,
			  t->max_text ? "--max-snapshots" : "--snapshot-interval");
		return 2;
	}
	if (t->spec && mode_given && mode != MARK_TRACE_OVERWRITE) {
		cli_error("%s: --snapshot-on needs --mode overwrite (the flight recorder, which it implies); "
			  "the %s mode writes every event anyway", cmd, mode == MARK_TRACE_DISCARD ? "discard" : "block");
		return 2;
	}
	return 0;
}

int cli_filter_check(const char *cmd, const char *expr)
{
	struct mark_filter *f = cli_filter_parse(cmd, expr);
	mark_filter_free(f);
	return f ? 0 : 2;
}

bool cli_dir_holds_trace(int fd)
{
	int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = own < 0 ? NULL : fdopendir(own);
	if (!d) {
		if (own >= 0)
			close(own);
		return false;
	}
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)))
		found = strcmp(de->d_name, MARK_TF_METADATA) == 0 || strcmp(de->d_name, MARK_TF_STATS) == 0 ||
			strncmp(de->d_name, MARK_TF_STREAM_PREFIX, strlen(MARK_TF_STREAM_PREFIX)) == 0 ||
			strncmp(de->d_name, MARK_TF_CHILD_PREFIX, strlen(MARK_TF_CHILD_PREFIX)) == 0;
	closedir(d);
	return found;
}

bool cli_parse_dir_only(int argc, char **argv, const char *usage, const char **dir, int *status)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = argv[0];
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			*status = 0;
			return false;
		}
		cli_error("%s: %s: unknown option; see `mark %s --help`", cmd, argv[optind - 1], cmd);
		*status = 2;
		return false;
	}
	if (optind != argc - 1) {
		cli_error("%s: %s; usage: mark %s DIR", cmd,
			  optind >= argc ? "give the trace directory" : "give exactly one trace directory", cmd);
		*status = 2;
		return false;
	}
	*dir = argv[optind];
	return true;
}

int cli_glob_match(const char *glob, const char *name)
{
	const char *colon = strchr(name, ':');
	return mark_name_glob_match(glob, name, colon ? colon + 1 : NULL);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: mark COMMAND [ARGS...]\n\n"
		     "Static instrumentation markers: list, arm and trace them.\n\n"
		     "Commands:\n");
	for (const struct mark_cli_command *c = __start_mark_cli_commands; c < __stop_mark_cli_commands; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out, "\nRun `mark help COMMAND` (or `mark COMMAND --help`) for the options of a command,\n"
		     "`mark -V` (or --version) for the version.\n");
}

/* The command called `name`, or NULL. */
static const struct mark_cli_command *find_command(const char *name)
{
	for (const struct mark_cli_command *c = __start_mark_cli_commands; c < __stop_mark_cli_commands; c++)
		if (strcmp(name, c->name) == 0)
			return c;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (strcmp(name, "help") == 0 && argc > 2) {
		/* `mark help CMD` is `mark CMD --help` */
		const struct mark_cli_command *c = find_command(argv[2]);
		if (c) {
			char *help_argv[] = { argv[2], (char *)"--help", NULL };
			return cli_output_finish(c->run(2, help_argv));
		}
		name = argv[2];
	} else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
		usage(stdout);
		return cli_output_finish(0);
	} else if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
		printf("mark %s\n", MARK_CLI_VERSION);
		return cli_output_finish(0);
	} else {
		const struct mark_cli_command *c = find_command(name);
		if (c)
			return cli_output_finish(c->run(argc - 1, argv + 1));
	}
	/* The name comes from the command line: shown with control bytes as '?'. */
	fputs("mark: unknown command \"", stderr);
	for (const char *p = name; *p; p++)
		fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
	fputs("\"\n\n", stderr);
	usage(stderr);
	return 2;
}

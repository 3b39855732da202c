/* The `mark` command: dispatches to the subcommands in cli/cmd_*.c. */
#define _GNU_SOURCE /* vasprintf */
#include "command.h"
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct mark_cli_command __start_mark_cli_commands[] __attribute__((weak));
extern const struct mark_cli_command __stop_mark_cli_commands[] __attribute__((weak));

/*
 * Messages quote names, paths and globs, often from the traced process (its
 * name, its markers, its agent's error text): the whole message is escaped
 * for the terminal (text.h), so no caller can forget to.
 */
int cli_error(const char *fmt, ...)
{
	va_list ap;
	struct strbuf msg = { 0 };
	va_start(ap, fmt);
	char *raw = NULL;
	int n = vasprintf(&raw, fmt, ap);
	va_end(ap);
	strbuf_add_terminal(&msg, n >= 0 ? raw : fmt);
	fprintf(stderr, "mark: %s\n", msg.failed ? "(out of memory)" : msg.data ? msg.data : "");
	free(raw);
	strbuf_release(&msg);
	return 1;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: mark COMMAND [ARGS...]\n\n"
		     "Static instrumentation markers: list, arm and trace them.\n\n"
		     "Commands:\n");
	for (const struct mark_cli_command *c = __start_mark_cli_commands; c < __stop_mark_cli_commands; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out, "\nRun `mark COMMAND --help` for the options of a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("mark 0.1.0\n");
		return 0;
	}
	for (const struct mark_cli_command *c = __start_mark_cli_commands; c < __stop_mark_cli_commands; c++)
		if (strcmp(argv[1], c->name) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "mark: unknown command \"%s\"\n\n", argv[1]);
	usage(stderr);
	return 2;
}

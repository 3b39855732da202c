/*
 * Subcommands of the `mark` command.  Each lives in its own cli/cmd_*.c and
 * registers itself with MARK_CLI_COMMAND(); main.c finds them through the
 * mark_cli_commands section, so adding a command touches no shared table.
 */
#ifndef MARK_CLI_COMMAND_H
#define MARK_CLI_COMMAND_H

#include <stdbool.h>
#include <stdint.h>

struct mark_cli_command {
	const char *name;
	const char *summary;   /* one line for `mark --help` */
	int (*run)(int argc, char **argv);   /* argv[0] is the command name */
};

#define MARK_CLI_COMMAND(ident, name_, summary_, run_)                          \
	static const struct mark_cli_command mark_cli_cmd_##ident                \
		__attribute__((used, section("mark_cli_commands"), aligned(8))) = { \
			name_, summary_, run_ }

/* Print "mark: <message>" to stderr; returns 1 (the usage/error exit status). */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Arguments of a command whose only option is -h/--help and whose only
 * argument is a trace directory (`mark stats DIR`, `mark recover DIR`).
 * Returns true with *dir set; or false with *status the exit status (0
 * after printing `usage` for --help, 2 after saying what is wrong).
 */
bool cli_parse_dir_only(int argc, char **argv, const char *usage, const char **dir, int *status);

/*
 * Does the directory open as `fd` hold a trace, or part of one: the names
 * the tracer writes at the top (one process) or as DIR/pid-P/ (each process
 * of a recording of several, or of a command and its children, which has
 * no top-level metadata)?  `mark record` (both forms) refuses such a
 * directory: a second recording would mix with the first.  Unreadable
 * counts as no trace: the tracer then fails to write there and says so.
 */
bool cli_dir_holds_trace(int fd);

/* 0 if glob (given to `cmd` as `option`) is a valid marker glob; else prints
 * why ("mark: view: bad -e \"req[\": ...") and returns 2 (bad usage). */
int cli_glob_check(const char *cmd, const char *option, const char *glob);

/* 0 if expr is a valid --filter expression (src/filter); else prints why
 * ("mark: record: bad --filter \"id = 3\": column 4: ...") and returns 2. */
int cli_filter_check(const char *cmd, const char *expr);
/* The parsed expression (mark_filter_free() it), or NULL after printing why. */
struct mark_filter;
struct mark_filter *cli_filter_parse(const char *cmd, const char *expr);

/* Does glob match the marker shown as `name` ("name" or "provider:name")?
 * The core's rules (src/core/glob.c): without ':' it also matches the name
 * without provider, and "__" also matches "-". */
int cli_glob_match(const char *glob, const char *name);

/* --max-size and --rotate of `mark record` (with or without --pid), checked
 * with the tracer's own parsers and limits; print the error, return -1. */
int cli_parse_max_size(const char *text);
int cli_parse_rotate(const char *text);
/* --rotate SIZE at most half of --max-size (the tracer's rule). */
int cli_check_rotate_within(const char *max_size, const char *rotate);

/*
 * Snapshot triggers of `mark record` (with or without --pid):
 * --snapshot-on 'GLOB[ if EXPR]', --max-snapshots N, --snapshot-interval
 * DURATION.  cli_trigger_option() takes one of them (`option` is its long
 * name without "--"), checking it with the tracer's own parsers; then
 * cli_trigger_mode() checks them together against --mode (mode_given:
 * whether -m was given; a trigger implies overwrite, any other mode is an
 * error).  Both print the error and return 2 (bad usage), or 0.
 */
struct cli_trigger {
	const char *spec;              /* --snapshot-on, or NULL            */
	const char *max_text, *interval_text;   /* as given, or NULL        */
	uint64_t max_snapshots;        /* 0: the tracer's default           */
	uint64_t interval_ms;          /* 0: none                           */
};
int cli_trigger_option(const char *cmd, const char *option, const char *value, struct cli_trigger *t);
int cli_trigger_mode(const char *cmd, const struct cli_trigger *t, bool mode_given, int mode);
#define CLI_TRIGGER_HELP                                                                              \
	"      --snapshot-on 'GLOB[ if EXPR]'\n"                                                     \
	"                      flight recorder trigger (implies --mode overwrite): when\n"          \
	"                      an event of a marker matching GLOB (and passing EXPR, the\n"         \
	"                      --filter language) is recorded, the buffers are written\n"          \
	"                      as DIR/snapshot-N/ ending with that event, e.g.\n"                 \
	"                        --snapshot-on 'http_request if status == 500'\n"                \
	"      --max-snapshots N  at most N snapshots per process (default 100)\n"                \
	"      --snapshot-interval DURATION\n"                                                      \
	"                      at least DURATION (500ms, 30s, 10min) between two\n"              \
	"                      snapshots; triggers in between are counted, not written\n"

#endif

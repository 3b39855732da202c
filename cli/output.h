/*
 * What the commands write: standard output, and `-o FILE` files.
 *
 * Standard output: a write that fails (a full disk, an I/O error) is an
 * error of the command, said once with its reason by cli_output_finish()
 * in main(), never a silent exit status 0.  A reader that went away
 * (EPIPE, when SIGPIPE is ignored) ends the command quietly, as `| head`.
 *
 * `-o FILE`: written whole or not at all.  The text goes to FILE.tmp, which
 * this call creates (O_EXCL: never a file that was there, nor through a
 * link planted there), and becomes FILE by rename() once
 * complete; on failure FILE.tmp is removed and FILE stays as it was.  FILE
 * must be absent or a regular file: the rename would replace a device
 * node, FIFO, socket, directory or symbolic link (/dev/null, /dev/stdout)
 * with a regular file, which run as root breaks the machine.
 */
#ifndef MARK_CLI_OUTPUT_H
#define MARK_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* A write of standard output failed with errno `err` (the first is kept). */
void cli_output_failed(int err);
/* fflush(stdout), noting a failure.  0 or -1. */
int cli_flush_stdout(void);
/* After a command returned `status`: flush standard output and say what failed.  The exit status. */
int cli_output_finish(int status);

struct output_file {
	FILE *f;
	const char *path;            /* FILE                                   */
	char tmp[4096];              /* FILE.tmp                               */
};
/*
 * Create FILE.tmp for FILE with `mode` (before the umask; 0600 for what
 * holds a trace's values), `cmd` naming the command in messages.  0, or 1
 * after saying why (an empty FILE is refused: -o '' is a mistake, not ./).
 */
int output_file_open(struct output_file *o, const char *cmd, const char *path, mode_t mode);
/*
 * Close FILE.tmp; if `complete`, rename it to FILE, else remove it.  0, or
 * 1 after saying why (FILE.tmp is then removed too).
 */
int output_file_close(struct output_file *o, const char *cmd, bool complete);

#endif

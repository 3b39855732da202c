/*
 * The table `mark list` prints, for a file (cmd_list.c) and for a running
 * process (cmd_ctl.c): one layout and one order, so the two can be compared
 * line by line.
 *
 *     NAME  FORMAT  KIND  LOCATION  [ARMED  PROBES  HITS]
 *
 * The last three columns are the live state of a process; a file has none.
 * Rows are sorted by name, then location.
 */
#ifndef MARK_CLI_LIST_TABLE_H
#define MARK_CLI_LIST_TABLE_H

#include <stdbool.h>
#include <stddef.h>

/* Every string is malloc'ed and already escaped for the terminal (cli_text);
 * a NULL cell (out of memory) prints as "?". */
struct list_row {
	char *name, *format, *kind, *location;
	char *armed, *probes, *hits;   /* live columns: NULL for a file */
	char *note;                    /* text after the row ("NEVER ARMABLE: ..."), or NULL */
};

/* Sort rows[0..n) by name, then location, and print them with the header
 * (`live`: with ARMED, PROBES and HITS) on stdout. */
void list_table_print(struct list_row *rows, size_t n, bool live);
/* Free the strings of rows[0..n) (not the array). */
void list_table_free(struct list_row *rows, size_t n);

#endif

/* The `mark list` table: see list_table.h. */
#include "list_table.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cell(const char *s)
{
	return s ? s : "?";
}

/* "FILE:LINE[ ...]": by file, then by line as a number (59 before 108). */
static int compare_locations(const char *a, const char *b)
{
	const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
	if (!ca || !cb)
		return strcmp(a, b);
	size_t la = (size_t)(ca - a), lb = (size_t)(cb - b);
	int c = strncmp(a, b, la < lb ? la : lb);
	if (c || la != lb)
		return c ? c : la < lb ? -1 : 1;
	unsigned long long na = strtoull(ca + 1, NULL, 10), nb = strtoull(cb + 1, NULL, 10);
	if (na != nb)
		return na < nb ? -1 : 1;
	return strcmp(a, b);
}

static int compare_rows(const void *a, const void *b)
{
	const struct list_row *x = a, *y = b;
	int c = strcmp(cell(x->name), cell(y->name));
	return c ? c : compare_locations(cell(x->location), cell(y->location));
}

/* The width of a column: its widest cell or its title. */
static int width_of(const struct list_row *rows, size_t n, size_t off, const char *title)
{
	size_t w = strlen(title);
	for (size_t i = 0; i < n; i++) {
		const char *s = *(char *const *)((const char *)&rows[i] + off);
		if (s && strlen(s) > w)
			w = strlen(s);
	}
	return (int)w;
}

void list_table_print(struct list_row *rows, size_t n, bool live)
{
	qsort(rows, n, sizeof(*rows), compare_rows);
	int wn = width_of(rows, n, offsetof(struct list_row, name), "NAME");
	int wf = width_of(rows, n, offsetof(struct list_row, format), "FORMAT");
	int wk = width_of(rows, n, offsetof(struct list_row, kind), "KIND");
	int wl = width_of(rows, n, offsetof(struct list_row, location), "LOCATION");
	int wa = width_of(rows, n, offsetof(struct list_row, armed), "ARMED");
	int wp = width_of(rows, n, offsetof(struct list_row, probes), "PROBES");
	/* The last column is not padded: no trailing blanks. */
	if (live)
		printf("%-*s  %-*s  %-*s  %-*s  %-*s  %*s  %s\n", wn, "NAME", wf, "FORMAT", wk, "KIND", wl,
		       "LOCATION", wa, "ARMED", wp, "PROBES", "HITS");
	else
		printf("%-*s  %-*s  %-*s  %s\n", wn, "NAME", wf, "FORMAT", wk, "KIND", "LOCATION");
	for (size_t i = 0; i < n; i++) {
		const struct list_row *r = &rows[i];
		if (live)
			printf("%-*s  %-*s  %-*s  %-*s  %-*s  %*s  %s", wn, cell(r->name), wf, cell(r->format), wk,
			       cell(r->kind), wl, cell(r->location), wa, cell(r->armed), wp, cell(r->probes),
			       cell(r->hits));
		else
			printf("%-*s  %-*s  %-*s  %s", wn, cell(r->name), wf, cell(r->format), wk, cell(r->kind),
			       cell(r->location));
		printf("%s%s\n", r->note ? "  " : "", r->note ? r->note : "");
	}
}

void list_table_free(struct list_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(rows[i].name);
		free(rows[i].format);
		free(rows[i].kind);
		free(rows[i].location);
		free(rows[i].armed);
		free(rows[i].probes);
		free(rows[i].hits);
		free(rows[i].note);
	}
}

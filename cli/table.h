/* table.h - aligned text tables for qprof-cli's human output: columns left-
 * or right-aligned to their widest cell, two spaces apart, no trailing
 * blanks, control characters from the daemon's text shown as '?'. Also the
 * short age format ("5m 03s") of status and attach. */
#ifndef QPROF_CLI_TABLE_H
#define QPROF_CLI_TABLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"

struct table_col {
	const char *name;
	bool right;	/* right-aligned (numbers) */
};

struct table {
	size_t ncols;
	const struct table_col *cols;
	size_t nrows, cap, cur;	/* cur: cells filled in the last row */
	char **cells;		/* nrows * ncols */
	bool failed;		/* out of memory */
};

void table_init(struct table *t, const struct table_col *cols, size_t ncols);
void table_free(struct table *t);
/* Start a row, then fill it left to right (missing cells print empty). */
void table_row(struct table *t);
void table_cell(struct table *t, const char *s);	/* NULL -> "-" */
__printf(2, 3) void table_cellf(struct table *t, const char *fmt, ...);
/* 0, or -ENOMEM when a cell could not be stored. */
int table_print(const struct table *t, FILE *f);

/* "850 ms", "42 s", "5m 03s", "2h 03m", "3d 04h". Returns buf. */
char *fmt_age(char *buf, size_t len, uint64_t ms);
#endif

/* table.c - aligned text tables. Cells are copied (with control characters
 * replaced, so that names from a traced program cannot drive the terminal),
 * widths are counted in UTF-8 code points, and a row is printed with the last
 * column unpadded so that no line ends in blanks. */
#include "table.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void table_init(struct table *t, const struct table_col *cols, size_t ncols)
{
	memset(t, 0, sizeof(*t));
	t->cols = cols;
	t->ncols = ncols;
	t->cur = ncols;
}

void table_free(struct table *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

void table_row(struct table *t)
{
	char **nc;
	size_t cap;

	if (t->failed)
		return;
	if (t->nrows == t->cap) {
		cap = t->cap ? t->cap * 2 : 16;
		nc = realloc(t->cells, cap * t->ncols * sizeof(*nc));
		if (!nc) {
			t->failed = true;
			return;
		}
		t->cells = nc;
		t->cap = cap;
	}
	memset(t->cells + t->nrows * t->ncols, 0, t->ncols * sizeof(*t->cells));
	t->nrows++;
	t->cur = 0;
}

void table_cell(struct table *t, const char *s)
{
	char *copy, *p;

	if (t->failed)
		return;
	if (!t->nrows || t->cur >= t->ncols) {	/* misuse: more cells than columns */
		t->failed = true;
		return;
	}
	copy = strdup(s ? s : "-");
	if (!copy) {
		t->failed = true;
		return;
	}
	for (p = copy; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	t->cells[(t->nrows - 1) * t->ncols + t->cur++] = copy;
}

void table_cellf(struct table *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	table_cell(t, buf);
}

/* Display width: one per code point (continuation bytes do not count). */
static size_t width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static void pad(FILE *f, size_t n)
{
	while (n--)
		fputc(' ', f);
}

static void print_row(const struct table *t, FILE *f, const size_t *w, const char *const *row)
{
	size_t c;

	for (c = 0; c < t->ncols; c++) {
		const char *s = row[c] ? row[c] : "";
		size_t sw = width(s);
		bool last = c + 1 == t->ncols;

		if (c)
			fputs("  ", f);
		if (t->cols[c].right)
			pad(f, w[c] - sw);
		fputs(s, f);
		if (!t->cols[c].right && !last)
			pad(f, w[c] - sw);
	}
	fputc('\n', f);
}

int table_print(const struct table *t, FILE *f)
{
	const char *heads[64];
	size_t w[64], r, c;

	if (t->failed || t->ncols > 64)
		return -ENOMEM;
	for (c = 0; c < t->ncols; c++) {
		heads[c] = t->cols[c].name;
		w[c] = width(heads[c]);
	}
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];

			if (s && width(s) > w[c])
				w[c] = width(s);
		}
	print_row(t, f, w, heads);
	for (r = 0; r < t->nrows; r++)
		print_row(t, f, w, (const char *const *)t->cells + r * t->ncols);
	return 0;
}

char *fmt_age(char *buf, size_t len, uint64_t ms)
{
	uint64_t s = ms / 1000;

	if (ms < 1000)
		snprintf(buf, len, "%llu ms", (unsigned long long)ms);
	else if (s < 60)
		snprintf(buf, len, "%llu s", (unsigned long long)s);
	else if (s < 3600)
		snprintf(buf, len, "%llum %02llus", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, len, "%lluh %02llum", (unsigned long long)(s / 3600),
			 (unsigned long long)(s % 3600 / 60));
	else
		snprintf(buf, len, "%llud %02lluh", (unsigned long long)(s / 86400),
			 (unsigned long long)(s % 86400 / 3600));
	return buf;
}

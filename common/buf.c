/* buf.c - see buf.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"

void qp_buf_init(struct qp_buf *b) { memset(b, 0, sizeof(*b)); }

void qp_buf_free(struct qp_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static bool reserve(struct qp_buf *b, size_t n)
{
	size_t cap;
	char *d;

	if (b->failed)
		return false;
	if (n > (size_t)-1 / 2 - b->len) {
		b->failed = true;
		return false;
	}
	if (b->len + n + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d) {
		b->failed = true;
		return false;
	}
	b->data = d;
	b->cap = cap;
	return true;
}

void qp_buf_add(struct qp_buf *b, const void *p, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void qp_buf_puts(struct qp_buf *b, const char *s) { qp_buf_add(b, s, strlen(s)); }

void qp_buf_printf(struct qp_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n)) {
		b->failed = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *qp_buf_steal(struct qp_buf *b, size_t *len)
{
	char *d = b->failed ? NULL : b->data;

	if (b->failed)
		free(b->data);
	else if (!d)
		d = calloc(1, 1);
	if (len)
		*len = d ? b->len : 0;
	memset(b, 0, sizeof(*b));
	return d;
}

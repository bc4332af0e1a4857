/* buf.h - a growing byte buffer for exporters and HTTP bodies. Appends never
 * fail loudly: the first allocation failure sets `failed` and later appends
 * do nothing, so a writer checks once at the end. */
#ifndef QPROF_BUF_H
#define QPROF_BUF_H
#include <stdbool.h>
#include <stddef.h>
#include "util.h"

struct qp_buf {
	char *data;	/* NUL-terminated while !failed */
	size_t len, cap;
	bool failed;
};

void qp_buf_init(struct qp_buf *b);
void qp_buf_free(struct qp_buf *b);
void qp_buf_add(struct qp_buf *b, const void *p, size_t n);
void qp_buf_puts(struct qp_buf *b, const char *s);
void qp_buf_printf(struct qp_buf *b, const char *fmt, ...) __printf(2, 3);
/* Hand the bytes over (caller frees); NULL when failed. The buffer is reset. */
char *qp_buf_steal(struct qp_buf *b, size_t *len);
#endif

/* export_folded.c - folded stacks (see export.h): each sample becomes the
 * line "comm;frame;...;leaf", the lines are sorted, equal ones merged and
 * their counts summed. Kernel frames end in "_[k]", inlined ones in "_[i]". */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "export.h"

struct line {
	char *stack;
	uint64_t count;
};

/* Append s with ';' -> ':' and newlines -> ' ' (one stack per line). */
static void put_sanitized(struct qp_buf *b, const char *s)
{
	const char *p;

	if (!s || !*s) {
		qp_buf_puts(b, "[unknown]");
		return;
	}
	for (p = s; *p; p++) {
		char c = *p;

		if (c == ';')
			c = ':';
		else if (c == '\n' || c == '\r')
			c = ' ';
		qp_buf_add(b, &c, 1);
	}
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

int qp_export_folded(const struct qp_cpu_profile *p, struct qp_buf *out)
{
	struct line *lines;
	size_t i, j, n = 0;
	int ret = 0;

	if (!p->nsamples)
		return out->failed ? -ENOMEM : 0;
	lines = calloc(p->nsamples, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (i = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];
		struct qp_buf b;

		if (!s->count)
			continue;
		qp_buf_init(&b);
		put_sanitized(&b, s->comm);
		for (j = 0; j < s->nframes; j++) {
			qp_buf_add(&b, ";", 1);
			put_sanitized(&b, s->frames[j].name);
			if (s->frames[j].kernel)
				qp_buf_puts(&b, "_[k]");
			else if (s->frames[j].inlined)
				qp_buf_puts(&b, "_[i]");
		}
		lines[n].stack = qp_buf_steal(&b, NULL);
		lines[n].count = s->count;
		if (!lines[n].stack) {
			ret = -ENOMEM;
			goto out;
		}
		n++;
	}
	qsort(lines, n, sizeof(*lines), cmp_line);
	for (i = 0; i < n; i = j) {
		uint64_t c = 0;

		for (j = i; j < n && strcmp(lines[j].stack, lines[i].stack) == 0; j++)
			c += lines[j].count;
		qp_buf_printf(out, "%s %" PRIu64 "\n", lines[i].stack, c);
	}
	if (out->failed)
		ret = -ENOMEM;
out:
	for (i = 0; i < n; i++)
		free(lines[i].stack);
	free(lines);
	return ret;
}

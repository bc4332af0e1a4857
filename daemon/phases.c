/* phases.c - see phases.h. */
#include <stdio.h>
#include "common/log.h"
#include "phases.h"
#include "common/util.h"

void phase_begin(struct phases *p)
{
	p->n = 0;
	p->t0 = p->last = qp_now_ns();
}

void phase_mark(struct phases *p, const char *name)
{
	uint64_t now = qp_now_ns();

	if (p->n < MAX_PHASES) {
		p->name[p->n] = name;
		p->ns[p->n++] = now - p->last;
	}
	p->last = now;
}

void phase_log(const struct phases *p, const char *what)
{
	char buf[1024];
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < p->n && off < sizeof(buf); i++) {
		int k = snprintf(buf + off, sizeof(buf) - off, "%s%s %.1f", i ? ", " : "", p->name[i],
				 (double)p->ns[i] / 1e6);

		if (k < 0)
			break;
		off += (size_t)k;
	}
	qp_info("%s in %.1f ms (ms: %s)", what, (double)(p->last - p->t0) / 1e6, buf);
}

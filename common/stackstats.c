/* stackstats.c - self and total per function over stacks (stackstats.h). */
#include "stackstats.h"

void qp_stackstats_init(struct qp_stackstats *s, size_t extra)
{
	s->nstacks = 0;
	s->count = 0;
	s->samples = 0;
	/* extra rounded so that the next value's qp_fnstat stays aligned */
	qp_htab_init(&s->fn, sizeof(struct qp_fnstat) + ((extra + 7) & ~(size_t)7));
}

void qp_stackstats_free(struct qp_stackstats *s)
{
	qp_htab_free(&s->fn);
	s->nstacks = 0;
	s->count = 0;
	s->samples = 0;
}

void qp_stackstats_stack(struct qp_stackstats *s, uint64_t count)
{
	s->nstacks++;
	s->count = count;
	s->samples += count;
}

int64_t qp_stackstats_frame(struct qp_stackstats *s, const void *key, size_t len, bool leaf,
			    bool *made)
{
	int64_t i = qp_htab_add(&s->fn, key, len, made);
	struct qp_fnstat *f;

	if (i < 0)
		return i;
	f = qp_htab_value(&s->fn, (size_t)i);
	if (f->stack != s->nstacks) {	/* recursion counts once per stack */
		f->stack = s->nstacks;
		f->total += s->count;
	}
	if (leaf)
		f->self += s->count;
	return i;
}

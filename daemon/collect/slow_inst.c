/* slow_inst.c - the slowest instances themselves (struct qp_slow_inst,
 * slow_store.h): copied, cleared, freed, the fastest of a reservoir found.
 * Both the since-attach reservoirs (slow_store.c) and the windows
 * (slow_window.c) keep them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "slow_store.h"

void qp_slow_inst_clear(struct qp_slow_inst *in)
{
	uint32_t i;

	if (!in)
		return;
	for (i = 0; i < in->nivs; i++)
		free(in->ivs[i].st.ips);
	for (i = 0; i < in->nsamples; i++)
		free(in->samples[i].st.ips);
	free(in->ivs);
	free(in->samples);
}

uint32_t qp_slow_fastest(struct qp_slow_inst *const *v, uint32_t n)
{
	uint32_t i, m = 0;

	for (i = 1; i < n; i++)
		if (v[i]->r.dur_ns < v[m]->r.dur_ns)
			m = i;
	return m;
}

static int stack_dup(const struct qp_slow_stack *from, struct qp_slow_stack *to)
{
	size_t n = (size_t)from->nk + from->nu;

	*to = *from;
	to->ips = malloc((n ? n : 1) * sizeof(*to->ips));
	if (!to->ips)
		return -ENOMEM;
	memcpy(to->ips, from->ips, n * sizeof(*to->ips));
	return 0;
}

int qp_slow_inst_copy(const struct qp_slow_inst *from, struct qp_slow_inst *to)
{
	uint32_t i;

	*to = *from;
	to->ivs = NULL;
	to->samples = NULL;
	to->nivs = to->nsamples = 0;
	if (from->nivs && !(to->ivs = calloc(from->nivs, sizeof(*to->ivs))))
		return -ENOMEM;
	for (i = 0; i < from->nivs; i++, to->nivs++) {
		to->ivs[i] = from->ivs[i];
		if (stack_dup(&from->ivs[i].st, &to->ivs[i].st))
			return -ENOMEM;
	}
	if (from->nsamples && !(to->samples = calloc(from->nsamples, sizeof(*to->samples))))
		return -ENOMEM;
	for (i = 0; i < from->nsamples; i++, to->nsamples++) {
		to->samples[i] = from->samples[i];
		if (stack_dup(&from->samples[i].st, &to->samples[i].st))
			return -ENOMEM;
	}
	return 0;
}

struct qp_slow_inst *qp_slow_inst_dup(const struct qp_slow_inst *in)
{
	struct qp_slow_inst *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	if (qp_slow_inst_copy(in, c)) {
		qp_slow_inst_free(c);
		return NULL;
	}
	return c;
}

void qp_slow_inst_free(struct qp_slow_inst *in)
{
	qp_slow_inst_clear(in);
	free(in);
}

void qp_slow_insts_free(struct qp_slow_inst *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		qp_slow_inst_clear(&v[i]);
	free(v);
}

/* model_cpu.c - the CPU profile's own operations (see model_cpu.h): free,
 * total, hide kernel addresses, main executable's mapping first. Its memory is an arena (common/arena.h). */
#include <string.h>
#include "model_cpu.h"
#include "common/util.h"

void qp_cpu_profile_free(struct qp_cpu_profile *p)
{
	if (!p)
		return;
	qp_arena_free(p->arena);
	memset(p, 0, sizeof(*p));
}

uint64_t qp_cpu_profile_total(const struct qp_cpu_profile *p)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < p->nsamples; i++)
		t += p->samples[i].count;
	return t;
}

void qp_cpu_profile_hide_kernel(struct qp_cpu_profile *p)
{
	size_t i, j;

	for (i = 0; i < p->nsamples; i++) {
		for (j = 0; j < p->samples[i].nframes; j++) {
			struct qp_cpu_frame *f = &p->samples[i].frames[j];

			if (!f->kernel && !qp_addr_is_kernel(f->addr))
				continue;
			f->addr = 0;
			if (!f->name || f->name[0] == '[')	/* "[kernel]+0xADDR", "[unknown]+0xADDR" */
				f->name = "[kernel]";
		}
	}
}

void qp_cpu_profile_main_first(struct qp_cpu_profile *p, const char *exe)
{
	struct qp_cpu_mapping m;
	size_t i, j, k;

	if (!exe)
		return;
	for (k = 0; k < p->nmappings; k++)
		if (p->mappings[k].file && !strcmp(p->mappings[k].file, exe))
			break;
	if (k == 0 || k == p->nmappings)
		return;
	/* index k+1 becomes 1; 1..k shift up by one */
	m = p->mappings[k];
	memmove(&p->mappings[1], &p->mappings[0], k * sizeof(m));
	p->mappings[0] = m;
	for (i = 0; i < p->nsamples; i++) {
		for (j = 0; j < p->samples[i].nframes; j++) {
			uint32_t *x = &p->samples[i].frames[j].mapping;

			if (*x == k + 1)
				*x = 1;
			else if (*x && *x <= k)
				(*x)++;
		}
	}
}

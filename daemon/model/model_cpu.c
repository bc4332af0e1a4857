/* model_cpu.c - the CPU profile's own operations (see model_cpu.h): free,
 * total, hide kernel addresses. Its memory is an arena (common/arena.h). */
#include <string.h>
#include "model_cpu.h"
#include "util.h"

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

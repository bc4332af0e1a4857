/* collect_offcpu.c - see collect_offcpu.h. off_ring's intervals become,
 * through the batch, a second table of cpu_table.c whose counts are
 * nanoseconds off the CPU (the stack at the switch-out, the innermost
 * scopes then). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_offcpu.h"
#include "common/log.h"
#include "profile.skel.h"

void qp_offcpu_start(struct qp_offcpu *o, struct profile *skel, struct ring_buffer *rb, struct qp_cpu_batch *b,
		     bool kev)
{
	struct bpf_program *progs[QP_OFF_PROGS] = {
		skel->progs.off_switch, skel->progs.off_wakeup, skel->progs.off_migrate,
		skel->progs.off_fault, skel->progs.off_irq_entry, skel->progs.off_irq_exit,
		skel->progs.off_softirq_entry, skel->progs.off_softirq_exit,
	};
	unsigned int i;
	int ret;

	ret = ring_buffer__add(rb, bpf_map__fd(skel->maps.off_ring), qp_cpu_batch_on_interval, b);
	if (ret) {
		snprintf(o->error, sizeof(o->error), "cannot open the off-CPU ring buffer: %s", strerror(-ret));
		goto fail;
	}
	/* ring instances' faults and irq time: without it they stay unknown */
	if (kev) {
		ret = ring_buffer__add(rb, bpf_map__fd(skel->maps.kev_ring), qp_cpu_batch_on_kev, b);
		if (ret)
			qp_warn("the ring collector's slow instances will have no faults, migrations or irq "
				"time: cannot open kev_ring: %s", strerror(-ret));
		o->kev = !ret;
	}
	for (i = 0; i < QP_OFF_PROGS; i++) {
		struct bpf_link *l = bpf_program__attach(progs[i]);

		if (!l) {
			snprintf(o->error, sizeof(o->error), "cannot attach %s: %s", bpf_program__name(progs[i]),
				 strerror(errno));
			goto fail;
		}
		o->links[o->nlinks++] = l;
	}
	return;
fail:
	qp_warn("off-CPU profiles and the scopes' kernel figures are unavailable: %s", o->error);
	qp_offcpu_stop(o);
}

void qp_offcpu_stop(struct qp_offcpu *o)
{
	while (o->nlinks)
		bpf_link__destroy(o->links[--o->nlinks]);
}

static int cmp_kstats(const void *a, const void *b)
{
	return memcmp(&((const struct qp_kstats_row *)a)->key, &((const struct qp_kstats_row *)b)->key,
		      sizeof(struct scope_key));
}

int qp_offcpu_kstats_read(int fd, int pid, struct qp_kstats_row **out, size_t *n)
{
	struct scope_key k, next;
	struct qp_kstats_row *v;
	size_t cap = 256, len = 0;
	bool first = true;

	*out = NULL;
	*n = 0;
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* a key deleted meanwhile restarts the walk from the first key
	 * (get_next_key's rule); the map is never deleted from, so it does not */
	while (!bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		first = false;
		k = next;
		if (pid > 0 && next.tgid != (uint32_t)pid)
			continue;
		if (len == cap) {
			struct qp_kstats_row *w = realloc(v, cap * 2 * sizeof(*v));

			if (!w) {
				free(v);
				return -ENOMEM;
			}
			v = w;
			cap *= 2;
		}
		if (bpf_map_lookup_elem(fd, &next, &v[len].v))
			continue;
		v[len++].key = next;
		if (len > QPROF_KSTATS_MAX)
			break;
	}
	if (len > 1)
		qsort(v, len, sizeof(*v), cmp_kstats);
	*out = v;
	*n = len;
	return 0;
}

/* target_ring.c - which scope collector times a pid target, file by file:
 * the ring collector for files of marker ABI 2 unless the target asked for
 * BPF (POST "collector": "bpf", or qprofd --collector bpf), the BPF
 * collector otherwise, with a note saying why when the ring was asked for. The log probe stays
 * attached either way: on a ring target it only raises the log semaphore
 * (markers that wrote the message into the ring skip it), and it carries
 * the messages of a thread that has no ring. Spans across threads go
 * through the ring in files whose markers write them (ring_register's third
 * argument), else stay on BPF. --binary targets choose in binaries.c
 * (attach_file, adopt). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "collect/collect_scopes.h"
#include "common/log.h"
#include "collect/ring_collect.h"
#include "targets.h"

int qp_collector_parse(const char *s, enum qp_collector *inout)
{
	enum qp_collector c;

	if (!strcmp(s, "ring"))
		c = QP_COLLECTOR_RING;
	else if (!strcmp(s, "bpf"))
		c = QP_COLLECTOR_BPF;
	else
		return -EINVAL;
	if (*inout != QP_COLLECTOR_DEFAULT && *inout != c)
		return -EINVAL;
	*inout = c;
	return 0;
}

void qp_registry_set_collector(struct qp_registry *r, enum qp_collector c)
{
	r->ring_default = c != QP_COLLECTOR_BPF;
	r->collector_flag = c != QP_COLLECTOR_DEFAULT;
}

struct qp_collector_choice qp_target_choice(const struct qp_registry *r, const struct qp_attach_extra *extra)
{
	struct qp_collector_choice ch = { .ring = r->ring_default, .asked = r->collector_flag };

	if (extra && extra->collector != QP_COLLECTOR_DEFAULT) {
		ch.ring = extra->collector == QP_COLLECTOR_RING;
		ch.asked = true;
	}
	return ch;
}

void qp_choice_missed(struct qp_collector_choice *ch, enum qp_ring_miss miss, const char *path, char *note,
		      size_t len)
{
	if (ch->miss == QP_RING_MISS_NONE)
		ch->miss = miss;
	if (note[0])
		return;
	if (miss == QP_RING_MISS_DOWN)
		snprintf(note, len, "the ring collector could not start: BPF collector");
	else
		snprintf(note, len, "%s has markers of ABI 1 (no qprof:ring_register; rebuild with this "
			 "qprof.h): BPF collector", path);
}

int qp_target_attach_scopes(struct qp_registry *r, struct qp_target *t, const char *path,
			    const struct qp_module *mod, uint64_t epoch, bool ring, char *err, size_t errlen)
{
	size_t first = t->nlinks;
	int ret, more;

	if (ring && r->ring && qp_ring_capable(mod->elf)) {
		ret = qp_ring_watch(r->ring, t->pid);
		if (ret) {
			snprintf(err, errlen, "the ring collector takes no more targets: %s", strerror(-ret));
			return ret;
		}
		ret = qp_ring_attach(r->ring, r->scopes, t->pid, path, mod->elf, &t->links, &t->nlinks, err, errlen);
		if (ret < 0)
			return ret;
		/* spans across threads go through the ring where the markers write them */
		more = qp_scopes_attach_some(r->scopes, t->pid, path, mod->elf, epoch,
					     QP_PROBES_LOGS | (qp_ring_spans_capable(mod->elf) ? 0 : QP_PROBES_ASYNC),
					     &t->links, &t->nlinks, err, errlen);
		if (more < 0) {
			qp_scopes_detach_links(t->links + first, t->nlinks - first);
			t->nlinks = first;
			return more;
		}
		t->ring = r->ring;
		return ret + more;
	}
	if (ring) {
		bool first = !t->collector_note[0];

		qp_choice_missed(&t->choice, r->ring ? QP_RING_MISS_ABI1 : QP_RING_MISS_DOWN, mod->path,
				 t->collector_note, sizeof(t->collector_note));
		if (first)
			qp_info("pid %d: %s", t->pid, t->collector_note);
	}
	return qp_scopes_attach(r->scopes, t->pid, path, mod->elf, epoch, &t->links, &t->nlinks, err, errlen);
}

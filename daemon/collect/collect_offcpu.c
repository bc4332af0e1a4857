/* collect_offcpu.c - the off-CPU side of the CPU collector: attaches the
 * kernel-event programs of bpf/offcpu.bpf.h (loaded with the sampler),
 * drains off_ring into a second table of cpu_table.c whose counts are
 * nanoseconds off the CPU (the stack at the switch-out, the innermost
 * scopes then), and reads the scopes' kernel figures (scope_kstats). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "cpu_internal.h"
#include "common/log.h"
#include "common/util.h"

/* One off_ring record (the caller holds c->lock, consuming). */
static int on_interval(void *ctx, void *data, size_t size)
{
	struct qp_cpu *c = ctx;
	const struct offcpu_record *r = data;
	const size_t hdr = offsetof(struct offcpu_record, ips);
	struct qp_cpu_sample_in in;
	struct qp_slow_hoff h;

	if (size < hdr || qp_cpu_lens_bad(r->kern_len, r->user_len, r->open_len) ||
	    hdr + r->kern_len + r->user_len + r->open_len > size || r->ts_in < r->ts_out) {
		c->off_lost++;
		return 0;
	}
	qp_cpu_fill_in(&in, r->tgid, r->ips, r->kern_len, r->user_len, r->open_len, (const uint64_t *)r->scopes,
		       r->comm);
	in.tid = r->tid;
	qp_cpu_cfi_off(c, r->tgid, r->walk);
	/* an interval of 0 ns (both stamps in the same tick) still happened */
	in.weight = r->ts_in > r->ts_out ? r->ts_in - r->ts_out : 1;
	c->off.now = c->tab.now;
	if (qp_cpu_table_add_ids(&c->off, &in, &h.kid, &h.uid)) {
		c->off_kept++;
		if (c->slow_on) {
			h.tgid = r->tgid;
			h.tid = r->tid;
			h.ts_out = r->ts_out;
			h.ts_wake = r->ts_wake;
			h.ts_in = r->ts_in;
			h.reason = r->reason;
			h.migrations = r->migrations;
			qp_slow_note_off(&c->slow, &h);
		}
	} else {
		c->off_lost++;
	}
	return 0;
}

/* One kev_ring record: a fault or irq run of a ring thread (the caller
 * holds c->lock, consuming). */
static int on_kev(void *ctx, void *data, size_t size)
{
	struct qp_cpu *c = ctx;
	const struct kev_record *r = data;
	struct qp_slow_hkev h;

	if (size < sizeof(*r) || (r->kind != QPROF_KEV_FAULT && r->kind != QPROF_KEV_IRQ)) {
		c->slow.cnt.kevents_lost++;
		c->kev_bad = true;
		return 0;
	}
	h.tgid = r->tgid;
	h.tid = r->tid;
	h.ts = r->ts;
	h.kind = r->kind;
	h.ns = r->ns;
	qp_slow_note_kev(&c->slow, &h);
	return 0;
}

void qp_offcpu_losses_locked(struct qp_cpu *c)
{
	uint64_t now = qp_now_ns(), kev, off;

	if (!c->slow.hk)
		return;
	kev = qp_cpu_pcounter(c, QPROF_PCNT_KEV_LOST);
	/* intervals lost, or never begun (no task storage at a switch-out):
	 * their migrations are missing */
	off = qp_cpu_pcounter(c, QPROF_PCNT_OFF_LOST_RING) + qp_cpu_pcounter(c, QPROF_PCNT_OFF_NO_STATE);
	c->slow.cnt.kevents_lost += kev - c->kev_lost_seen;
	/* lost since the last look: a ring instance overlapping that span is partial */
	if (kev != c->kev_lost_seen || off != c->off_lost_seen || c->kev_bad)
		qp_slow_kev_loss(&c->slow, c->losses_at, now);
	c->kev_lost_seen = kev;
	c->off_lost_seen = off;
	c->kev_bad = false;
	c->losses_at = now;
}

void qp_offcpu_start(struct qp_cpu *c)
{
	struct bpf_program *progs[QP_OFF_PROGS] = {
		c->skel->progs.off_switch, c->skel->progs.off_wakeup, c->skel->progs.off_migrate,
		c->skel->progs.off_fault, c->skel->progs.off_irq_entry, c->skel->progs.off_irq_exit,
		c->skel->progs.off_softirq_entry, c->skel->progs.off_softirq_exit,
	};
	unsigned int i;
	int ret;

	ret = ring_buffer__add(c->rb, bpf_map__fd(c->skel->maps.off_ring), on_interval, c);
	if (ret) {
		snprintf(c->off_error, sizeof(c->off_error), "cannot open the off-CPU ring buffer: %s",
			 strerror(-ret));
		goto fail;
	}
	/* ring instances' faults and irq time: without it they stay unknown */
	if (c->slow_on && !qp_slow_kev_enable(&c->slow)) {
		c->losses_at = qp_now_ns();
		ret = ring_buffer__add(c->rb, bpf_map__fd(c->skel->maps.kev_ring), on_kev, c);
		if (ret) {
			qp_warn("the ring collector's slow instances will have no faults, migrations or irq "
				"time: cannot open kev_ring: %s", strerror(-ret));
			free(c->slow.hk);
			c->slow.hk = NULL;
		}
	}
	for (i = 0; i < QP_OFF_PROGS; i++) {
		struct bpf_link *l = bpf_program__attach(progs[i]);

		if (!l) {
			snprintf(c->off_error, sizeof(c->off_error), "cannot attach %s: %s",
				 bpf_program__name(progs[i]), strerror(errno));
			goto fail;
		}
		c->off_links[c->noff_links++] = l;
	}
	return;
fail:
	qp_warn("off-CPU profiles and the scopes' kernel figures are unavailable: %s", c->off_error);
	qp_offcpu_stop(c);
}

void qp_offcpu_stop(struct qp_cpu *c)
{
	while (c->noff_links)
		bpf_link__destroy(c->off_links[--c->noff_links]);
}

const char *qp_cpu_off_error(const struct qp_cpu *c)
{
	return !c ? "CPU sampling is unavailable" : c->off_error[0] ? c->off_error : NULL;
}

void qp_offcpu_counters_locked(struct qp_cpu *c, uint64_t *kept, uint64_t *lost)
{
	*kept = c->off_kept;
	*lost = c->off_lost + qp_cpu_pcounter(c, QPROF_PCNT_OFF_LOST_RING);
}

void qp_cpu_off_counters(struct qp_cpu *c, struct qp_off_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	/* as of the last drain: a status request never waits for one */
	pthread_mutex_lock(&c->pub_lock);
	out->intervals = c->pub.off_kept;
	out->lost = c->pub.off_lost;
	pthread_mutex_unlock(&c->pub_lock);
	out->lost += qp_cpu_pcounter(c, QPROF_PCNT_OFF_LOST_RING);
	out->no_state = qp_cpu_pcounter(c, QPROF_PCNT_OFF_NO_STATE);
	out->kstats_full = qp_cpu_pcounter(c, QPROF_PCNT_KSTATS_FULL);
}

static int cmp_kstats(const void *a, const void *b)
{
	return memcmp(&((const struct qp_kstats_row *)a)->key, &((const struct qp_kstats_row *)b)->key,
		      sizeof(struct scope_key));
}

int qp_cpu_kstats_read(struct qp_cpu *c, int pid, struct qp_kstats_row **out, size_t *n)
{
	int fd;
	struct scope_key k, next;
	struct qp_kstats_row *v;
	size_t cap = 256, len = 0;
	bool first = true;

	*out = NULL;
	*n = 0;
	if (!c || c->off_error[0])
		return -ENODEV;
	fd = bpf_map__fd(c->skel->maps.scope_kstats);
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

/* Delete the keys of PID from map FD, whose keys (of KSIZE bytes, at
 * most a scope_key) begin with the tgid. */
static void delete_pid_keys(int fd, size_t ksize, uint32_t pid)
{
	struct scope_key k, next;
	bool first = true;

	if (ksize > sizeof(k))
		return;
	while (!bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		if (next.tgid == pid && !bpf_map_delete_elem(fd, &next)) {
			first = true;	/* the walk's key is gone: restart */
			continue;
		}
		first = false;
		memcpy(&k, &next, ksize);
	}
}

void qp_offcpu_forget(struct qp_cpu *c, uint32_t pid)
{
	delete_pid_keys(bpf_map__fd(c->skel->maps.scope_kstats), sizeof(struct scope_key), pid);
	if (c->slow_on)
		delete_pid_keys(c->slow_min_fd, sizeof(struct mark_key), pid);
}

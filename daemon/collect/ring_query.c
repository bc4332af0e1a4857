/* ring_query.c - the ring collector's attachments (a uprobe on each
 * qprof:ring_register site with the semaphore as its reference counter)
 * and what the model reads of it: rows and marks merged into the BPF
 * collector's snapshots, counters, the flight recorder. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"
#include "collect_scopes.h"
#include "common/elf_probes.h"
#include "common/procfs.h"
#include "ring_internal.h"
#include "ringreg.skel.h"

/* File offset of link-time address ADDR through the PT_LOAD segments. */
static int file_offset(const struct qp_elf_probes *elf, uint64_t addr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < elf->nsegs; i++) {
		const struct qp_elf_segment *s = &elf->segs[i];

		if (addr >= s->vaddr && addr - s->vaddr < s->filesz) {
			*off = addr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* The note qprof:ring_config of ELF (ring_layout.h) as mapped in PID
 * (MAPS): where its qprof_ring_cfg is, 0 when not found whole in a
 * writable mapping of PATH's file. */
static uint64_t cfg_addr(const struct qp_elf_probes *elf, const struct qp_maps *maps, const struct stat *st,
			 const struct qp_usdt_note *nt)
{
	uint64_t off;
	size_t i;

	if (file_offset(elf, nt->sema, &off))
		return 0;
	for (i = 0; i < maps->n; i++) {
		const struct qp_map *m = &maps->v[i];

		if (m->inode != (uint64_t)st->st_ino || m->dev != (uint64_t)st->st_dev || m->perms[1] != 'w' ||
		    off < m->offset || off - m->offset + sizeof(struct qprof_ring_cfg) > m->end - m->start)
			continue;
		return m->start + (off - m->offset);
	}
	return 0;
}

int qp_ring_configure(struct qp_ring *g, int pid, const char *path, const struct qp_elf_probes *elf)
{
	struct qp_maps maps = { 0 };
	struct stat st;
	uint32_t want;
	int done = 0;
	size_t k;

	if (!g || pid <= 0)
		return 0;
	want = g->o.ring_records;
	if (!want)
		return 0;
	for (k = 0; k < elf->nnotes; k++) {
		const struct qp_usdt_note *nt = &elf->notes[k];
		struct qprof_ring_cfg cfg;
		struct iovec l = { &cfg, sizeof(cfg) }, r;
		uint64_t a;

		if (nt->bad || !nt->sema || strcmp(nt->provider, "qprof") || strcmp(nt->name, "ring_config"))
			continue;
		if (!maps.n && (stat(path, &st) || qp_maps_read(pid, &maps)))
			break;
		a = cfg_addr(elf, &maps, &st, nt);
		if (!a)
			continue;
		/* the magic first: nothing is written where no qprof_ring_cfg is */
		r = (struct iovec){ (void *)(uintptr_t)a, sizeof(cfg) };
		if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(cfg) || cfg.magic != QPROF_RING_CFG_MAGIC)
			continue;
		l = (struct iovec){ &want, sizeof(want) };
		r = (struct iovec){ (void *)(uintptr_t)(a + offsetof(struct qprof_ring_cfg, records)), sizeof(want) };
		if (process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(want))
			done++;
	}
	qp_maps_free(&maps);
	pthread_mutex_lock(&g->lock);
	g->glob.configured += (uint64_t)done;
	pthread_mutex_unlock(&g->lock);
	return done;
}

int qp_ring_attach(struct qp_ring *g, struct qp_scopes *owner, int pid, const char *path,
		   const struct qp_elf_probes *elf, struct qp_scope_link ***links, size_t *nlinks, char *err,
		   size_t errlen)
{
	size_t k, first = *nlinks;
	int made = 0, ret;

	/* the size of new rings first: the semaphore is not up yet */
	qp_ring_configure(g, pid, path, elf);

	for (k = 0; k < elf->nnotes; k++) {
		const struct qp_usdt_note *nt = &elf->notes[k];
		LIBBPF_OPTS(bpf_uprobe_opts, opts);
		struct qp_scope_link *l, **v;
		uint64_t off, sema;

		if (nt->bad || !nt->sema || strcmp(nt->provider, "qprof") || strcmp(nt->name, "ring_register"))
			continue;
		if (file_offset(elf, nt->pc, &off) || file_offset(elf, nt->sema, &sema)) {
			ret = -EINVAL;
			snprintf(err, errlen, "%s: qprof:ring_register at 0x%llx is in no loaded segment", path,
				 (unsigned long long)nt->pc);
			goto undo;
		}
		opts.ref_ctr_offset = (size_t)sema;
		l = calloc(1, sizeof(*l));
		v = l ? realloc(*links, (*nlinks + 1) * sizeof(*v)) : NULL;
		if (!v) {
			free(l);
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto undo;
		}
		*links = v;
		l->owner = owner; /* whose lock qp_scopes_detach_links takes */
		l->fd = -1;
		if (g->multi) {
			/* released without the kernel's lock of perf-event uprobes */
			l->fd = qp_uprobe_multi_link(bpf_program__fd(g->skel->progs.ring_register), path, &off,
						     &sema, NULL, 1, pid);
			ret = l->fd < 0 ? l->fd : 0;
		} else {
			l->blink = bpf_program__attach_uprobe_opts(g->skel->progs.ring_register, pid, path,
								   (size_t)off, &opts);
			ret = l->blink ? 0 : -errno;
		}
		if (ret) {
			free(l);
			snprintf(err, errlen, "cannot attach qprof:ring_register in %s: %s", path, strerror(-ret));
			goto undo;
		}
		(*links)[(*nlinks)++] = l;
		made++;
	}
	return made;
undo:
	qp_scopes_detach_links(*links + first, *nlinks - first);
	*nlinks = first;
	return ret;
}

static void add_stats(struct scope_stats *to, const struct scope_stats *p)
{
	unsigned int b;

	if (!p->count)
		return;
	if (!to->count || p->min_ns < to->min_ns)
		to->min_ns = p->min_ns;
	if (p->max_ns > to->max_ns)
		to->max_ns = p->max_ns;
	to->count += p->count;
	to->sum_ns += p->sum_ns;
	for (b = 0; b < QPROF_HIST_BUCKETS; b++)
		to->hist[b] += p->hist[b];
}

/* What P's rings lost, in events: the gone ones' and the live ones' (g->lock held). */
static struct qp_ring_lost_est pid_lost(const struct qp_ring *g, const struct ring_pid *p)
{
	struct qp_ring_lost_est e = p->gone_est;
	size_t i;

	for (i = 0; i < g->nents; i++)
		if (g->ents[i].pid == p->pid)
			qp_ring_lost_of(&g->ents[i].rd, &e);
	return e;
}

static int cmp_row(const void *a, const void *b)
{
	return qp_scope_key_cmp(&((const struct qp_scope_row *)a)->key, &((const struct qp_scope_row *)b)->key);
}

int qp_ring_merge_rows(struct qp_ring *g, int pid, struct qp_scope_snapshot *snap)
{
	size_t n = snap->n, i, kept;
	int ret;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	ret = qp_ring_agg_rows(&g->agg, pid, &snap->rows, &n);
	for (i = 0; i < g->npids && !ret; i++) {
		const struct qp_ring_counts *c = &g->pids[i].c;

		if (pid > 0 && g->pids[i].pid != (uint32_t)pid)
			continue;
		snap->counters[QPROF_CNT_DROP_NO_ENTER] += c->no_enter;
		snap->counters[QPROF_CNT_DROP_OUT_OF_ORDER] += c->out_of_order;
		snap->counters[QPROF_CNT_DROP_TOO_DEEP] += c->too_deep;
		snap->counters[QPROF_CNT_DROP_THREAD_EXIT] += c->thread_exit;
		snap->counters[QPROF_CNT_BEGIN_UNENDED] += c->begin_unended;
		snap->counters[QPROF_CNT_DROP_MAP_FULL] += c->table_full;
		snap->counters[QPROF_CNT_VALUE_LOST] += c->value_lost;
		snap->counters[QPROF_CNT_SPAN_TABLE_FULL] += c->span_table_full;
		snap->counters[QPROF_CNT_SPAN_END_NO_BEGIN] += c->span_end_no_begin;
		snap->counters[QPROF_CNT_SPAN_STEP_NO_BEGIN] += c->span_step_no_begin;
		snap->counters[QPROF_CNT_SPAN_ID_REUSED] += c->span_id_reused;
		snap->counters[QPROF_CNT_SPAN_ABANDONED] += c->span_abandoned;
		snap->counters[QPROF_CNT_RING_LOST] += pid_lost(g, &g->pids[i]).scopes;
	}
	pthread_mutex_unlock(&g->lock);
	if (ret)
		return ret;
	if (n == snap->n)
		return 0;
	qsort(snap->rows, n, sizeof(*snap->rows), cmp_row);
	for (i = 0, kept = 0; i < n; i++) {
		if (kept && !qp_scope_key_cmp(&snap->rows[kept - 1].key, &snap->rows[i].key)) {
			add_stats(&snap->rows[kept - 1].stats, &snap->rows[i].stats);
			continue;
		}
		if (kept != i)
			snap->rows[kept] = snap->rows[i];
		kept++;
	}
	snap->n = kept;
	return 0;
}

static int cmp_mark(const void *a, const void *b)
{
	const struct mark_key *x = &((const struct qp_mark_row *)a)->key;
	const struct mark_key *y = &((const struct qp_mark_row *)b)->key;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

int qp_ring_merge_marks(struct qp_ring *g, int pid, struct qp_mark_row **rows, size_t *n)
{
	size_t m = *n, i, kept;
	int ret;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	ret = qp_ring_agg_marks(&g->agg, pid, rows, &m);
	pthread_mutex_unlock(&g->lock);
	if (ret || m == *n)
		return ret;
	qsort(*rows, m, sizeof(**rows), cmp_mark);
	for (i = 0, kept = 0; i < m; i++) {
		struct qp_mark_row *v = *rows;

		if (kept && !cmp_mark(&v[kept - 1], &v[i])) {
			v[kept - 1].count += v[i].count;
			if (v[i].last_ns > v[kept - 1].last_ns)
				v[kept - 1].last_ns = v[i].last_ns;
			continue;
		}
		if (kept != i)
			v[kept] = v[i];
		kept++;
	}
	*n = kept;
	return 0;
}

static int cmp_value(const void *a, const void *b)
{
	const struct mark_key *x = &((const struct qp_value_row *)a)->key;
	const struct mark_key *y = &((const struct qp_value_row *)b)->key;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

int qp_ring_merge_values(struct qp_ring *g, int pid, struct qp_value_row **rows, size_t *n)
{
	size_t m = *n;
	int ret;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	ret = qp_ring_agg_values(&g->agg, pid, rows, &m);
	pthread_mutex_unlock(&g->lock);
	*n = m; /* rows made before a failure are freed with the rest */
	/* a pid is on one collector at a time: keys do not repeat */
	if (!ret && m > 1)
		qsort(*rows, m, sizeof(**rows), cmp_value);
	return ret;
}

bool qp_ring_pid_status(struct qp_ring *g, int pid, struct qp_ring_status *st)
{
	const struct ring_pid *p = NULL;
	size_t i;

	memset(st, 0, sizeof(*st));
	if (!g)
		return false;
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->npids; i++)
		if (g->pids[i].pid == (uint32_t)pid)
			p = &g->pids[i];
	if (p) {
		st->c = p->c;
		st->rings = p->rings;
		st->rings_gone = p->rings_gone;
		st->head = p->gone_head;
		st->base = p->gone_base;
		st->read = p->gone_read;
		st->lost = p->gone_lost;
		st->bytes_max = p->gone_bytes_max;
		st->est = p->gone_est;
		for (i = 0; i < g->nents; i++) {
			const struct ring_ent *e = &g->ents[i];
			uint64_t head = e->head > e->tail ? e->head : e->tail;

			if (e->pid != (uint32_t)pid)
				continue;
			st->head += head;
			st->base += e->base;
			st->read += e->read;
			st->lost += e->lost;
			st->bytes += e->size;
			if (e->size > st->bytes_max)
				st->bytes_max = e->size;
			qp_ring_lost_of(&e->rd, &st->est);
			if (st->nlist < QP_RING_STATUS_LIST)
				st->list[st->nlist++] = (struct qp_ring_one){
					.addr = e->addr, .bytes = e->size, .tid = e->owner, .nrec = e->nrec,
					.head = head, .base = e->base, .read = e->read, .lost = e->lost,
					.unreadable = e->unreadable_ns != 0, .start_unknown = e->start_unknown };
		}
		st->unread = st->head - st->base - st->read - st->lost;
	}
	pthread_mutex_unlock(&g->lock);
	return p != NULL;
}

void qp_ring_global_status(struct qp_ring *g, struct qp_ring_global *out)
{
	__u32 k = QPROF_RING_CNT_LOST;
	__u64 lost = 0;

	memset(out, 0, sizeof(*out));
	if (!g)
		return;
	bpf_map__lookup_elem(g->skel->maps.ring_counters, &k, sizeof(k), &lost, sizeof(lost), 0);
	pthread_mutex_lock(&g->lock);
	*out = g->glob;
	pthread_mutex_unlock(&g->lock);
	out->lost = lost;
	out->ring_records = g->o.ring_records;
	k = QPROF_RING_CNT_EXITS;
	if (!bpf_map__lookup_elem(g->skel->maps.ring_counters, &k, sizeof(k), &lost, sizeof(lost), 0))
		out->exits = lost;
	k = QPROF_RING_CNT_EXITS_LOST;
	if (!bpf_map__lookup_elem(g->skel->maps.ring_counters, &k, sizeof(k), &lost, sizeof(lost), 0))
		out->exits_lost = lost;
}

size_t qp_ring_instances(struct qp_ring *g, int pid, uint64_t *since, struct qp_ring_inst *out,
			 size_t max, uint64_t *missed)
{
	struct ring_pid *p;
	size_t k = 0, i;

	*missed = 0;
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	for (i = 0, p = NULL; i < g->npids && !p; i++)
		if (g->pids[i].pid == (uint32_t)pid)
			p = &g->pids[i];
	if (p)
		k = qp_ring_flight_get(&p->fl, since, out, max, missed);
	pthread_mutex_unlock(&g->lock);
	return k;
}

size_t qp_ring_instances_all(struct qp_ring *g, struct qp_ring_inst *out, uint32_t *pids, size_t max,
			     uint64_t *missed)
{
	size_t k = 0, i, j;

	*missed = 0;
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->npids && k < max; i++) {
		struct ring_pid *p = &g->pids[i];
		uint64_t m;
		size_t got = qp_ring_flight_get(&p->fl, &p->feed_seq, out + k, max - k, &m);

		for (j = 0; j < got; j++)
			pids[k + j] = p->pid;
		k += got;
		*missed += m;
	}
	pthread_mutex_unlock(&g->lock);
	return k;
}

uint64_t qp_ring_flight_seq(struct qp_ring *g, int pid)
{
	uint64_t seq = 0;
	size_t i;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->npids; i++)
		if (g->pids[i].pid == (uint32_t)pid)
			seq = g->pids[i].fl.seq;
	pthread_mutex_unlock(&g->lock);
	return seq;
}

size_t qp_ring_flight_max(struct qp_ring *g)
{
	return g ? g->o.flight : 0;
}

uint64_t qp_ring_spans_pending(struct qp_ring *g)
{
	uint64_t n;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	n = g->spans.live;
	pthread_mutex_unlock(&g->lock);
	return n;
}

bool qp_ring_thread_name(struct qp_ring *g, int pid, uint32_t tid, char *buf, size_t len)
{
	bool found = false;
	size_t i;

	if (!g || !len)
		return false;
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->npids; i++) {
		int64_t k;

		if (g->pids[i].pid != (uint32_t)pid)
			continue;
		k = qp_htab_find_u64(&g->pids[i].names, tid);
		if (k >= 0) {
			const char *c = qp_htab_value(&g->pids[i].names, (size_t)k);

			snprintf(buf, len, "%.*s", 15, c);
			found = buf[0] != '\0';
		}
		break;
	}
	pthread_mutex_unlock(&g->lock);
	return found;
}

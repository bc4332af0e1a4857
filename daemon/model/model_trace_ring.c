/* model_trace_ring.c - the ring collector's part of a trace: which targets
 * it times, and their instances (a window's, or all its flight recorder
 * keeps) turned into the trace records of the BPF collector's sessions
 * (bpf/trace.h), with the threads' kernel names (as the collector read
 * them when it first read their rings, else now), so that one model
 * (model_trace.c) names, sorts and bounds both. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/hashtab.h"
#include "model_trace.h"
#include "common/procfs.h"
#include "collect/ring_collect.h"
#include "targets/targets.h"

int qp_trace_ring_pids(const struct qp_model_src *src, int pid, uint32_t **pids, size_t *n)
{
	struct qp_registry *reg = src->reg;
	uint32_t *v;
	size_t i;

	*pids = NULL;
	*n = 0;
	if (!reg->ring)
		return 0;
	pthread_mutex_lock(&reg->lock);
	v = calloc(reg->ntargets + 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&reg->lock);
		return -ENOMEM;
	}
	for (i = 0; i < reg->ntargets; i++) {
		const struct qp_target *t = reg->targets[i];

		if (t->ring && (pid <= 0 || t->pid == pid))
			v[(*n)++] = (uint32_t)t->pid;
	}
	pthread_mutex_unlock(&reg->lock);
	*pids = v;
	return 0;
}

/* One instance as the record the BPF collector would have emitted. */
static bool to_record(uint32_t pid, const struct qp_ring_inst *in, struct trace_record *r)
{
	memset(r, 0, sizeof(*r));
	r->site = in->site;
	r->ts_ns = in->begin_ns;
	r->pid = pid;
	r->tid = in->tid;
	r->depth = in->depth;
	switch (in->kind) {
	case QPROF_REC_EXIT:
	case QPROF_REC_END:
		r->kind = QPROF_TR_SCOPE;
		r->arg = in->end_ns - in->begin_ns;
		return true;
	case QPROF_REC_MARK:
		r->kind = QPROF_TR_MARK;
		return true;
	case QPROF_REC_VALUE:
		r->kind = QPROF_TR_VALUE;
		r->arg = in->arg;
		return true;
	case QP_RING_INST_ASPAN:
		r->kind = QPROF_TR_ASPAN;
		r->arg = in->end_ns - in->begin_ns;
		r->arg2 = in->arg;
		return true;
	case QP_RING_INST_ASTEP:
		r->kind = QPROF_TR_ASTEP;
		r->arg = in->arg;
		r->arg2 = in->parent;
		return true;
	}
	return false;
}

/* The thread (PID, TID) in R's names, named as the thread that had the tid
 * at AT_NS (its first record's end). */
static int add_thread(struct qp_ring *g, struct qp_trace_result *r, struct qp_htab *seen, size_t *room,
		      uint32_t pid, uint32_t tid, uint64_t at_ns)
{
	struct qp_trace_thread_name *nm;
	bool made;
	int64_t i = qp_htab_add_u64(seen, (uint64_t)pid << 32 | tid, &made);

	if (i < 0)
		return (int)i;
	if (!made)
		return 0;
	if (r->nthreads == *room) {
		size_t nr = *room ? *room * 2 : 16;
		void *v = realloc(r->threads, nr * sizeof(*r->threads));

		if (!v)
			return -ENOMEM;
		r->threads = v;
		*room = nr;
	}
	nm = &r->threads[r->nthreads++];
	nm->pid = pid;
	nm->tid = tid;
	if (qp_ring_thread_name(g, (int)pid, tid, at_ns, nm->name, sizeof(nm->name)))
		return 0;
	if (qp_proc_thread_name_at((int)pid, tid, at_ns, nm->name, sizeof(nm->name)))
		nm->name[0] = '\0';
	return 0;
}

int qp_trace_ring_append(struct qp_ring *g, const uint32_t *pids, const uint64_t *since, size_t npids,
			 uint64_t lo, uint64_t hi, struct qp_trace_result *r, uint64_t *oldest)
{
	struct qp_ring_inst *buf = malloc(4096 * sizeof(*buf));
	size_t i, room = r->nthreads, cap = r->n;
	struct qp_htab seen;
	int ret = 0;

	*oldest = UINT64_MAX;
	if (!buf)
		return -ENOMEM;
	qp_htab_init(&seen, 0);
	for (i = 0; i < r->nthreads && !ret; i++)
		if (qp_htab_add_u64(&seen, (uint64_t)r->threads[i].pid << 32 | r->threads[i].tid, NULL) < 0)
			ret = -ENOMEM;
	for (i = 0; i < npids && !ret; i++) {
		/* what the recorder holds now, not what it gets meanwhile: a
		 * target writing faster than this copies would never let the
		 * build end (nor the memory it takes stop growing) */
		uint64_t s = since[i], missed, end = qp_ring_flight_seq(g, (int)pids[i]);
		size_t got, k;

		do {
			got = qp_ring_instances(g, (int)pids[i], &s, buf, 4096, &missed);
			if (s > end)
				got = s - end >= got ? 0 : got - (size_t)(s - end);
			r->lost += missed;
			for (k = 0; k < got && !ret; k++) {
				const struct qp_ring_inst *in = &buf[k];

				/* what ended inside the window, as the BPF collector's */
				if (in->end_ns < lo || in->end_ns > hi)
					continue;
				if (r->n == cap) {
					size_t nc = cap ? cap * 2 : 4096;
					void *v = realloc(r->recs, nc * sizeof(*r->recs));

					if (!v) {
						ret = -ENOMEM;
						break;
					}
					r->recs = v;
					cap = nc;
				}
				if (!to_record(pids[i], in, &r->recs[r->n]))
					continue;
				if (in->begin_ns < *oldest)
					*oldest = in->begin_ns;
				r->n++;
				ret = add_thread(g, r, &seen, &room, pids[i], in->tid, in->end_ns);
			}
		} while (got && s < end && !ret);
	}
	qp_htab_free(&seen);
	free(buf);
	return ret;
}

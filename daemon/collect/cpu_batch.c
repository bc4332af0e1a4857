/* cpu_batch.c - see cpu_batch.h. A sample that carried a copy of its user
 * stack is unwound by CFI here, while it is decoded: the drain thread does
 * it before taking the collector's lock. The CFI stack replaces the
 * frame-pointer one unless it stopped early with fewer frames. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_batch.h"
#include "cpu_cfi.h"
#include "unwind.h"

#define KEEP_BYTES (1u << 20)	/* a batch keeps this much memory between drains */

/* Whether the stack and open-scope lengths of a record (bytes, from BPF)
 * are bad: not whole frames, or over their bounds. */
static bool lens_bad(uint32_t kern_len, uint32_t user_len, uint32_t open_len)
{
	return kern_len % 8 || user_len % 8 || open_len % 8 || kern_len > QPROF_STACK_DEPTH * 8 ||
	       user_len > QPROF_STACK_DEPTH * 8 || open_len > QPROF_SAMPLE_OPEN_MAX * 8;
}

static struct qp_cpu_rec *rec_new(struct qp_cpu_batch *b, enum qp_cpu_rec_kind kind, size_t nips)
{
	struct qp_cpu_rec *r;
	bool inst = kind == QP_CPU_REC_INST || kind == QP_CPU_REC_RING_INST;

	if (b->n >= QP_CPU_BATCH_MAX || (inst && b->ninst >= QP_CPU_BATCH_INST_MAX))
		return NULL;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct qp_cpu_rec *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		b->v = v;
		b->cap = cap;
	}
	if (b->capips - b->nips < nips) {
		size_t cap = b->capips ? b->capips : 4096;
		uint64_t *v;

		while (cap - b->nips < nips)
			cap *= 2;
		v = realloc(b->ips, cap * sizeof(*v));
		if (!v)
			return NULL;
		b->ips = v;
		b->capips = cap;
	}
	r = &b->v[b->n++];
	memset(r, 0, sizeof(*r));
	r->kind = (uint8_t)kind;
	r->ips = b->nips;
	r->kid = r->uid = -1;
	b->ninst += inst;
	return r;
}

/* IPS holds KERN_LEN bytes of kernel stack, then USER_LEN of user stack,
 * then OPEN_LEN of a ring thread's open scopes. A stack ends at its first
 * 0 (where the frame-pointer chain ended); a walk through code without
 * frame pointers can also derail into values that are no user address
 * (the kernel half): the user stack ends before them. USER (NUSER frames)
 * replaces the user stack when not NULL. */
static void rec_stacks(struct qp_cpu_batch *b, struct qp_cpu_rec *r, const uint64_t *ips, uint32_t kern_len,
		       uint32_t user_len, uint32_t open_len, const uint64_t *user, size_t nuser)
{
	uint64_t *dst = b->ips + r->ips;
	uint32_t i, nk = kern_len / 8, nu = user_len / 8;

	for (i = 0; i < nk && ips[i]; i++)
		dst[i] = ips[i];
	r->nkern = i;
	if (user) {
		memcpy(dst + r->nkern, user, nuser * sizeof(*user));
		r->nuser = (uint32_t)nuser;
	} else {
		const uint64_t *u = ips + nk;

		for (i = 0; i < nu && u[i] && u[i] < QP_USER_ADDR_END; i++)
			dst[r->nkern + i] = u[i];
		r->nuser = i;
	}
	/* right after the user stack as sent (before the cut above) */
	r->nopen = open_len / 8;
	memcpy(dst + r->nkern + r->nuser, ips + nk + nu, r->nopen * sizeof(*ips));
	b->nips += r->nkern + r->nuser + r->nopen;
}

/* The CFI unwind of sample R's stack copy into b->uips: its frame count,
 * or -1 to keep the frame-pointer stack of FP_N frames. */
static long unwind_copy(struct qp_cpu_batch *b, const struct cpu_sample *r, const uint8_t *copy, uint32_t fp_n)
{
	struct qp_unwind_in ui = {
		.pid = r->tgid, .tid = r->tid, .regs = (const uint64_t *)r->regs, .stack = copy,
		.len = r->copy_len,
	};
	size_t n = 0, i;
	int ret;

	b->cnt.copied++;
	ret = qp_unwind_stack(b->uw, &ui, b->uips, QPROF_STACK_DEPTH, &n);
	/* the same cut as for frame pointers: no frame at 0 or in the kernel half */
	for (i = 0; i < n; i++)
		if (!b->uips[i] || b->uips[i] >= QP_USER_ADDR_END)
			n = i;
	if (ret == 1 || (ret == 0 && n >= fp_n && n)) {
		b->cnt.dwarf++;
		return (long)n;
	}
	b->cnt.fp++;
	return -1;
}

/* frames of the frame-pointer user stack as rec_stacks cuts it */
static uint32_t fp_frames(const uint64_t *u, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n && u[i] && u[i] < QP_USER_ADDR_END; i++)
		;
	return i;
}

int qp_cpu_batch_on_sample(void *ctx, void *data, size_t size)
{
	struct qp_cpu_batch *b = ctx;
	const struct cpu_sample *s = data;
	const size_t hdr = offsetof(struct cpu_sample, ips);
	const uint64_t *ips = (const uint64_t *)s->ips;
	struct qp_cpu_rec *r;
	long nu = -1;

	if (size < hdr || lens_bad(s->kern_len, s->user_len, s->open_len) || s->copy_len > QPROF_USTACK_BYTES ||
	    hdr + (size_t)s->kern_len + s->user_len + s->open_len + s->copy_len > size) {
		b->cnt.lost++;
		return 0;
	}
	if (!qp_cpu_cfi_sample(b, s, ips + s->kern_len / 8, s->user_len / 8) && s->copy_len && b->uw)
		nu = unwind_copy(b, s, (const uint8_t *)ips + s->kern_len + s->user_len + s->open_len,
				 fp_frames(ips + s->kern_len / 8, s->user_len / 8));
	r = rec_new(b, QP_CPU_REC_SAMPLE, QPROF_STACK_DEPTH * 2 + s->open_len / 8);
	if (!r) {
		b->cnt.lost++;
		return 0;
	}
	r->tgid = s->tgid;
	r->tid = s->tid;
	r->ts = s->ts;
	r->weight = 1;
	r->span_site = s->span_site;
	r->span_id = s->span_site ? s->span_id : 0;
	memcpy(r->scopes, s->scopes, sizeof(r->scopes));
	memcpy(r->comm, s->comm, sizeof(r->comm));
	rec_stacks(b, r, ips, s->kern_len, s->user_len, s->open_len, nu >= 0 ? b->uips : NULL,
		   nu >= 0 ? (size_t)nu : 0);
	return 0;
}

int qp_cpu_batch_on_interval(void *ctx, void *data, size_t size)
{
	struct qp_cpu_batch *b = ctx;
	const struct offcpu_record *o = data;
	const size_t hdr = offsetof(struct offcpu_record, ips);
	struct qp_cpu_rec *r;

	if (size < hdr || lens_bad(o->kern_len, o->user_len, o->open_len) ||
	    hdr + o->kern_len + o->user_len + o->open_len > size || o->ts_in < o->ts_out) {
		b->cnt.off_lost++;
		return 0;
	}
	qp_cpu_cfi_off(b->cfi, o->tgid, o->walk);
	r = rec_new(b, QP_CPU_REC_OFF, (o->kern_len + o->user_len + o->open_len) / 8);
	if (!r) {
		b->cnt.off_lost++;
		return 0;
	}
	r->tgid = o->tgid;
	r->tid = o->tid;
	/* an interval of 0 ns (both stamps in the same tick) still happened */
	r->weight = o->ts_in > o->ts_out ? o->ts_in - o->ts_out : 1;
	r->ts_out = o->ts_out;
	r->ts_wake = o->ts_wake;
	r->ts_in = o->ts_in;
	r->reason = o->reason;
	r->migrations = o->migrations;
	r->span_site = o->span_site;
	r->span_id = o->span_site ? o->span_id : 0;
	memcpy(r->scopes, o->scopes, sizeof(r->scopes));
	memcpy(r->comm, o->comm, sizeof(r->comm));
	rec_stacks(b, r, (const uint64_t *)o->ips, o->kern_len, o->user_len, o->open_len, NULL, 0);
	return 0;
}

int qp_cpu_batch_on_kev(void *ctx, void *data, size_t size)
{
	struct qp_cpu_batch *b = ctx;
	const struct kev_record *k = data;
	struct qp_cpu_rec *r;

	if (size < sizeof(*k) || (k->kind != QPROF_KEV_FAULT && k->kind != QPROF_KEV_IRQ)) {
		b->cnt.kev_bad++;
		return 0;
	}
	r = rec_new(b, QP_CPU_REC_KEV, 0);
	if (!r) {
		b->cnt.kev_bad++;
		return 0;
	}
	r->tgid = k->tgid;
	r->tid = k->tid;
	r->ts = k->ts;
	r->kev_kind = k->kind;
	r->kev_ns = k->ns;
	return 0;
}

int qp_cpu_batch_on_instance(void *ctx, void *data, size_t size)
{
	struct qp_cpu_batch *b = ctx;
	struct qp_cpu_rec *r;

	if (size < sizeof(struct slow_record))
		return 0;
	r = rec_new(b, QP_CPU_REC_INST, 0);
	if (r)
		memcpy(&r->inst, data, sizeof(r->inst));
	else
		b->cnt.inst_lost++;
	return 0;
}

int qp_cpu_batch_ring_inst(struct qp_cpu_batch *b, const struct slow_record *in)
{
	struct qp_cpu_rec *r = rec_new(b, QP_CPU_REC_RING_INST, 0);

	if (!r) {
		b->cnt.inst_lost++;
		return -ENOMEM;
	}
	r->inst = *in;
	return 0;
}

void qp_cpu_batch_apply(struct qp_cpu_batch *b, struct qp_cpu_table *samples, struct qp_cpu_table *off,
			uint32_t now, struct qp_cpu_counts *total)
{
	size_t i;

	samples->now = off->now = now;
	for (i = 0; i < b->n; i++) {
		struct qp_cpu_rec *r = &b->v[i];
		const uint64_t *ips = qp_cpu_rec_ips(b, r);
		struct qp_cpu_sample_in in = {
			.tgid = r->tgid, .tid = r->tid, .kern = ips, .nkern = r->nkern,
			.user = ips + r->nkern, .nuser = r->nuser, .scopes = r->scopes,
			.open = ips + r->nkern + r->nuser, .nopen = r->nopen, .comm = r->comm,
			.weight = r->weight, .span_site = r->span_site, .span_id = r->span_id,
		};

		if (r->kind == QP_CPU_REC_SAMPLE) {
			r->kept = qp_cpu_table_add_ids(samples, &in, &r->kid, &r->uid);
			if (r->kept)
				b->cnt.kept++;
			else
				b->cnt.lost++;
		} else if (r->kind == QP_CPU_REC_OFF) {
			r->kept = qp_cpu_table_add_ids(off, &in, &r->kid, &r->uid);
			if (r->kept)
				b->cnt.off_kept++;
			else
				b->cnt.off_lost++;
		}
	}
	total->kept += b->cnt.kept;
	total->lost += b->cnt.lost;
	total->off_kept += b->cnt.off_kept;
	total->off_lost += b->cnt.off_lost;
	total->copied += b->cnt.copied;
	total->dwarf += b->cnt.dwarf;
	total->fp += b->cnt.fp;
	total->kev_bad += b->cnt.kev_bad;
	total->inst_lost += b->cnt.inst_lost;
	total->walked += b->cnt.walked;
	for (size_t k = 0; k < 4; k++)
		total->verify[k] += b->cnt.verify[k];
}

void qp_cpu_batch_reset(struct qp_cpu_batch *b)
{
	if (b->cap * sizeof(*b->v) > KEEP_BYTES) {
		free(b->v);
		b->v = NULL;
		b->cap = 0;
	}
	if (b->capips * sizeof(*b->ips) > KEEP_BYTES) {
		free(b->ips);
		b->ips = NULL;
		b->capips = 0;
	}
	b->n = b->nips = b->ninst = 0;
	memset(&b->cnt, 0, sizeof(b->cnt));
}

void qp_cpu_batch_free(struct qp_cpu_batch *b)
{
	free(b->v);
	free(b->ips);
	b->v = NULL;
	b->ips = NULL;
	b->n = b->cap = b->nips = b->capips = 0;
}

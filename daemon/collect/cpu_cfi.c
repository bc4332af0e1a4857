/* cpu_cfi.c - see cpu_cfi.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cpu_batch.h"
#include "cpu_cfi.h"
#include "profile.skel.h"
#include "unwind.h"
#include "common/log.h"

static uint64_t cfi_bytes = (uint64_t)QPROF_CFI_BLOCKS_DEFAULT * sizeof(struct cfi_kblock);

void qp_cpu_set_cfi_bytes(uint64_t bytes)
{
	cfi_bytes = bytes;
}

static bool walks(enum qp_cpu_unwind_mode mode)
{
	return mode == QP_CPU_UNWIND_DWARF || mode == QP_CPU_UNWIND_DWARF_ALL;
}

int qp_cpu_cfi_prepare(struct qp_cpu_cfi *k, struct profile *skel, enum qp_cpu_unwind_mode mode, char *err,
		       size_t errlen)
{
	uint64_t rows = cfi_bytes / sizeof(struct cfi_kblock);
	const char *v = getenv("QPROF_CFI_VERIFY");
	int ret;

	k->verify = walks(mode) && v && !strcmp(v, "1");
	skel->rodata->verify_walk = k->verify;

	if (!walks(mode) || !rows)
		rows = 1;
	if (rows > 0x7fffffffu / sizeof(struct cfi_kblock))
		rows = 0x7fffffffu / sizeof(struct cfi_kblock);
	ret = bpf_map__set_max_entries(skel->maps.cfi_rows, (__u32)rows);
	if (!ret && !walks(mode))
		ret = bpf_map__set_max_entries(skel->maps.cfi_procs, 1);
	if (ret)
		snprintf(err, errlen, "cannot size the CFI table maps: %s", strerror(-ret));
	return ret;
}

void qp_cpu_cfi_start(struct qp_cpu_cfi *k, struct profile *skel, enum qp_cpu_unwind_mode mode, int ncpus)
{
	if (!walks(mode))
		return;
	if (cfi_bytes / sizeof(struct cfi_kblock) == 0) {
		snprintf(k->error, sizeof(k->error), "--cfi-memory 0: no kernel tables");
		return;
	}
	k->cfi = qp_cfi_bpf_new(skel->maps.cfi_rows, skel->maps.cfi_files, skel->maps.cfi_procs,
				skel->maps.cfi_counts, ncpus, k->error, sizeof(k->error));
	if (!k->cfi)
		qp_warn("CPU samples: no walk in the kernel (%s); stacks are copied and unwound in qprofd",
			k->error);
}

/* The walk of R (its user stack, IN) against libdwfl's unwind of the copy
 * of the same stack R carries too (QPROF_CFI_VERIFY=1): counted in the
 * batch's verify, the first differences logged. */
static void verify(struct qp_cpu_batch *c, const struct cpu_sample *r, const uint64_t *user, size_t nuser)
{
	static uint64_t logged;
	struct qp_unwind_in ui = {
		.pid = r->tgid, .tid = r->tid, .regs = (const uint64_t *)r->regs,
		.stack = (const uint8_t *)r->ips + r->kern_len + r->user_len + r->open_len, .len = r->copy_len,
	};
	size_t n = 0, i, same = 0;
	int ret;

	ret = qp_unwind_stack(c->uw, &ui, c->uips, QPROF_STACK_DEPTH, &n);
	for (i = 0; i < n; i++)
		if (!c->uips[i] || c->uips[i] >= QP_USER_ADDR_END)
			n = i;
	if (ret < 0 || !n) {
		c->cnt.verify[3]++;
		return;
	}
	while (same < n && same < nuser && c->uips[same] == user[same])
		same++;
	if (same == n && same == nuser) {
		c->cnt.verify[0]++;
	} else if (same == (n < nuser ? n : nuser) &&
		   (n < nuser || r->walk == QPROF_WALK_DEPTH)) {
		/* libdwfl stopped first (its copy ends: the walk read the live
		 * stack, libdwfl takes an unreadable word for the end), or the
		 * walk's frame limit */
		c->cnt.verify[1]++;
	} else {
		c->cnt.verify[2]++;
		if (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) < 8)
			qp_warn("CFI walk of pid %u differs from libdwfl at frame %zu of %u/%zu: %#llx against %#llx",
				r->tgid, same, (unsigned int)nuser, n,
				(unsigned long long)(same < nuser ? user[same] : 0),
				(unsigned long long)(same < n ? c->uips[same] : 0));
	}
}

bool qp_cpu_cfi_sample(struct qp_cpu_batch *b, const struct cpu_sample *r, const uint64_t *user, size_t nuser)
{
	if (QPROF_WALK_KEPT(r->walk) && r->user_len) {
		b->cnt.walked++;
		if (b->cfi && b->cfi->verify && r->copy_len && b->uw)
			verify(b, r, user, nuser);
		return true;
	}
	/* new mappings (dlopen) or a new image (exec): read them again */
	if (b->cfi && (r->walk == QPROF_WALK_NOMAP || r->walk == QPROF_WALK_NOPROC || r->walk == QPROF_WALK_STALE))
		qp_cfi_bpf_rescan(b->cfi->cfi, r->tgid);
	return false;
}

void qp_cpu_cfi_off(const struct qp_cpu_cfi *k, uint32_t tgid, uint32_t walk)
{
	if (k && (walk == QPROF_WALK_NOMAP || walk == QPROF_WALK_NOPROC || walk == QPROF_WALK_STALE))
		qp_cfi_bpf_rescan(k->cfi, tgid);
}

void qp_cpu_cfi_figures(const struct qp_cpu_cfi *k, const struct qp_cpu_counts *pub,
			struct qp_cpu_unwind_figures *out)
{
	out->kernel = k->cfi != NULL;
	snprintf(out->kernel_error, sizeof(out->kernel_error), "%s", k->error);
	out->walked = pub->walked;
	out->verify_same = pub->verify[0];
	out->verify_prefix = pub->verify[1];
	out->verify_differ = pub->verify[2];
	out->verify_none = pub->verify[3];
	out->verify = k->verify;
	if (!k->cfi)
		return;
	qp_cfi_bpf_counts(k->cfi, 0, out->walk_ends, &out->walk_frames);
	qp_cfi_bpf_counts(k->cfi, 1, out->off_walk_ends, &out->off_walk_frames);
	qp_cfi_bpf_counts(k->cfi, 2, out->heap_walk_ends, &out->heap_walk_frames);
	qp_cfi_bpf_stats(k->cfi, &out->tables);
}

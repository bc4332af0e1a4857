/* cpu_cfi.c - the CPU sampler's side of the kernel's walk by compiled CFI
 * tables (cfi_bpf.h, bpf/cfiwalk.bpf.h): the maps sized before the load
 * (a sampler that does not walk keeps them at one entry), the table
 * worker started after it, each record's walk noted (a process whose
 * mappings were missing or stale is read again), the figures for status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cpu_internal.h"
#include "common/log.h"

static uint64_t cfi_bytes = (uint64_t)QPROF_CFI_ROWS_DEFAULT * sizeof(struct cfi_krow);

void qp_cpu_set_cfi_bytes(uint64_t bytes)
{
	cfi_bytes = bytes;
}

static bool walks(const struct qp_cpu *c)
{
	return c->mode == QP_CPU_UNWIND_DWARF || c->mode == QP_CPU_UNWIND_DWARF_ALL;
}

int qp_cpu_cfi_prepare(struct qp_cpu *c, char *err, size_t errlen)
{
	uint64_t rows = cfi_bytes / sizeof(struct cfi_krow);
	const char *v = getenv("QPROF_CFI_VERIFY");
	int ret;

	c->cfi_verify = walks(c) && v && !strcmp(v, "1");
	c->skel->rodata->verify_walk = c->cfi_verify;

	if (!walks(c) || !rows)
		rows = 1;
	if (rows > 0x7fffffffu / sizeof(struct cfi_krow))
		rows = 0x7fffffffu / sizeof(struct cfi_krow);
	ret = bpf_map__set_max_entries(c->skel->maps.cfi_rows, (__u32)rows);
	if (!ret && !walks(c))
		ret = bpf_map__set_max_entries(c->skel->maps.cfi_procs, 1);
	if (ret)
		snprintf(err, errlen, "cannot size the CFI table maps: %s", strerror(-ret));
	return ret;
}

void qp_cpu_cfi_start(struct qp_cpu *c)
{
	if (!walks(c))
		return;
	if (cfi_bytes / sizeof(struct cfi_krow) == 0) {
		snprintf(c->cfi_error, sizeof(c->cfi_error), "--cfi-memory 0: no kernel tables");
		return;
	}
	c->cfi = qp_cfi_bpf_new(c->skel->maps.cfi_rows, c->skel->maps.cfi_files, c->skel->maps.cfi_procs,
				c->skel->maps.cfi_counts, c->ncpus, c->cfi_error, sizeof(c->cfi_error));
	if (!c->cfi)
		qp_warn("CPU samples: no walk in the kernel (%s); stacks are copied and unwound in qprofd",
			c->cfi_error);
}

/* The walk of R (its user stack, IN) against libdwfl's unwind of the copy
 * of the same stack R carries too (QPROF_CFI_VERIFY=1): counted in
 * c->verify, the first differences logged. */
static void verify(struct qp_cpu *c, const struct cpu_sample *r, const struct qp_cpu_sample_in *in)
{
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
		c->verify[3]++;
		return;
	}
	while (same < n && same < in->nuser && c->uips[same] == in->user[same])
		same++;
	if (same == n && same == in->nuser) {
		c->verify[0]++;
	} else if (same == (n < in->nuser ? n : in->nuser) &&
		   (n < in->nuser || r->walk == QPROF_WALK_DEPTH)) {
		/* libdwfl stopped first (its copy ends: the walk read the live
		 * stack, libdwfl takes an unreadable word for the end), or the
		 * walk's frame limit */
		c->verify[1]++;
	} else {
		if (c->verify[2]++ < 8)
			qp_warn("CFI walk of pid %u differs from libdwfl at frame %zu of %u/%zu: %#llx against %#llx",
				r->tgid, same, in->nuser, n,
				(unsigned long long)(same < in->nuser ? in->user[same] : 0),
				(unsigned long long)(same < n ? c->uips[same] : 0));
	}
}

bool qp_cpu_cfi_sample(struct qp_cpu *c, const struct cpu_sample *r, const struct qp_cpu_sample_in *in)
{
	if (QPROF_WALK_KEPT(r->walk) && r->user_len) {
		c->walked++;
		if (c->cfi_verify && r->copy_len && c->uw)
			verify(c, r, in);
		return true;
	}
	/* new mappings (dlopen) or a new image (exec): read them again */
	if (r->walk == QPROF_WALK_NOMAP || r->walk == QPROF_WALK_NOPROC || r->walk == QPROF_WALK_STALE)
		qp_cfi_bpf_rescan(c->cfi, r->tgid);
	return false;
}

void qp_cpu_cfi_off(struct qp_cpu *c, uint32_t tgid, uint32_t walk)
{
	if (walk == QPROF_WALK_NOMAP || walk == QPROF_WALK_NOPROC || walk == QPROF_WALK_STALE)
		qp_cfi_bpf_rescan(c->cfi, tgid);
}

void qp_cpu_cfi_figures(struct qp_cpu *c, struct qp_cpu_unwind_figures *out)
{
	out->kernel = c->cfi != NULL;
	snprintf(out->kernel_error, sizeof(out->kernel_error), "%s", c->cfi_error);
	pthread_mutex_lock(&c->pub_lock);
	out->walked = c->pub.walked;
	out->verify_same = c->pub.verify[0];
	out->verify_prefix = c->pub.verify[1];
	out->verify_differ = c->pub.verify[2];
	out->verify_none = c->pub.verify[3];
	pthread_mutex_unlock(&c->pub_lock);
	out->verify = c->cfi_verify;
	if (!c->cfi)
		return;
	qp_cfi_bpf_counts(c->cfi, 0, out->walk_ends, &out->walk_frames);
	qp_cfi_bpf_counts(c->cfi, 1, out->off_walk_ends, &out->off_walk_frames);
	qp_cfi_bpf_stats(c->cfi, &out->tables);
}

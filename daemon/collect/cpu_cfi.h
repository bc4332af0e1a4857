/* cpu_cfi.h - the CPU sampler's side of the kernel's walk by compiled CFI
 * tables (cfi_bpf.h, bpf/cfiwalk.bpf.h): the maps sized before the load,
 * the table worker started after it, each record's walk noted by the drain
 * (a process whose mappings were missing or stale is read again), the
 * figures for status. Below collect_cpu.c and cpu_batch.c. */
#ifndef QPROF_CPU_CFI_H
#define QPROF_CPU_CFI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cfi_bpf.h"
#include "collect_cpu.h"
#include "bpf/profile.h"

struct profile;
struct qp_cpu_batch;
struct qp_cpu_counts;

struct qp_cpu_cfi {
	struct qp_cfi_bpf *cfi;	/* NULL when the kernel does not walk */
	bool verify;		/* QPROF_CFI_VERIFY=1: kept walks carry a copy too, checked */
	char error[128];	/* why it does not run, "" */
};

/* Size the maps of SKEL before its load (MODE: whether it walks). */
int qp_cpu_cfi_prepare(struct qp_cpu_cfi *k, struct profile *skel, enum qp_cpu_unwind_mode mode, char *err,
		       size_t errlen);
/* Begin loading tables after the load; a failure leaves k->cfi NULL and
 * k->error set (the copy path serves alone). */
void qp_cpu_cfi_start(struct qp_cpu_cfi *k, struct profile *skel, enum qp_cpu_unwind_mode mode, int ncpus);
/* Sample S decoded into batch B (the drain thread, no lock): true when
 * the kernel's walk of its user stack (USER, NUSER frames) is kept. */
bool qp_cpu_cfi_sample(struct qp_cpu_batch *b, const struct cpu_sample *s, const uint64_t *user, size_t nuser);
/* An off-CPU interval's walk. */
void qp_cpu_cfi_off(const struct qp_cpu_cfi *k, uint32_t tgid, uint32_t walk);
/* The figures into OUT, the counted ones from PUB. */
void qp_cpu_cfi_figures(const struct qp_cpu_cfi *k, const struct qp_cpu_counts *pub,
			struct qp_cpu_unwind_figures *out);
#endif

/* cpu_table.h - the CPU samples as the daemon keeps them: counts under
 * (process, user stack, kernel stack, scopes), the stacks interned in a table
 * of distinct stacks whose ids stay valid for as long as a key uses them and
 * are never reused. No BPF, no locking (collect_cpu.c holds its lock). */
#ifndef QPROF_CPU_TABLE_H
#define QPROF_CPU_TABLE_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "profile.h"

struct qp_cpu_stack_ent {
	uint64_t hash;
	uint64_t *ips;		/* NULL once freed (no key uses it) */
	uint32_t n;		/* frames */
	uint32_t refs;		/* keys using it */
};

struct qp_cpu_agg {
	struct sample_key key;
	uint64_t count;
	char comm[16];		/* of the first sample */
};

struct qp_cpu_table {
	struct qp_cpu_stack_ent *stacks;	/* by id */
	size_t nstacks, capstacks;	/* ids ever given */
	size_t nlive;			/* stacks not freed */
	size_t nindexed;		/* index entries: live, and freed ones not purged yet */
	uint32_t *sidx;			/* open addressing: stack id + 1, 0 = empty */
	size_t nsidx;			/* a power of two */
	struct qp_cpu_agg *aggs;	/* in no order */
	size_t naggs, capaggs;
	uint32_t *aidx;			/* open addressing: agg index + 1 */
	size_t naidx;
	size_t max_stacks, max_keys;	/* caps on live stacks and on keys */
};

/* One sample: stacks leaf first, N frames each (0 = none). */
struct qp_cpu_sample_in {
	uint32_t tgid;
	const uint64_t *kern, *user;
	uint32_t nkern, nuser;
	const uint64_t *scopes;		/* QPROF_SAMPLE_SCOPES, innermost first */
	const char *comm;		/* 16 bytes */
};

void qp_cpu_table_init(struct qp_cpu_table *t, size_t max_stacks, size_t max_keys);
void qp_cpu_table_free(struct qp_cpu_table *t);
/* Count one sample; false when a cap or memory leaves no room (the caller
 * counts it lost). */
bool qp_cpu_table_add(struct qp_cpu_table *t, const struct qp_cpu_sample_in *in);
/* Drop PID's keys and free the stacks no other key uses. 0 or -ENOMEM
 * (then every count is dropped: never a wrong one). */
int qp_cpu_table_forget(struct qp_cpu_table *t, uint32_t pid);
/* Up to MAX frames of stack ID into IPS; -ENOENT for none or a freed one. */
int qp_cpu_table_stack(const struct qp_cpu_table *t, int32_t id, uint64_t *ips, size_t max,
		       size_t *n);
#endif

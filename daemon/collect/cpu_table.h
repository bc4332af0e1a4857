/* cpu_table.h - the CPU samples as the daemon keeps them: counts under
 * (process, user stack, kernel stack, scopes), the stacks interned in a table
 * of distinct stacks. Memory is bounded in bytes, and flat over a long run:
 * keys with no sample for a while are aged out (their samples counted in
 * `aged`), and the slots of freed stacks are reused under a new generation,
 * so an id, once freed, never names another stack. No BPF, no locking
 * (collect_cpu.c holds its lock). */
#ifndef QPROF_CPU_TABLE_H
#define QPROF_CPU_TABLE_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bpf/profile.h"

/* A stack id is (generation << QP_CPU_SLOT_BITS) | slot: a positive int32. */
#define QP_CPU_SLOT_BITS 21
#define QP_CPU_MAX_SLOTS (1u << QP_CPU_SLOT_BITS)

struct qp_cpu_stack_ent {
	uint64_t hash;
	uint64_t *ips;		/* NULL once freed (no key uses it) */
	uint32_t n;		/* frames */
	uint32_t refs;		/* keys using it */
	uint32_t gen;		/* of the id now (or next) given for this slot */
};

/* key.pad holds the key's serial: a key aged out and seen again is a new
 * key, so a window (the difference of two snapshots) never subtracts the old
 * one's count from the new one's. */
struct qp_cpu_agg {
	struct sample_key key;
	uint64_t count;
	uint32_t last;		/* table clock (s) of its latest sample */
	char comm[16];		/* of the first sample */
};

struct qp_cpu_table {
	struct qp_cpu_stack_ent *stacks;	/* by slot */
	size_t nstacks, capstacks;	/* slots used so far */
	size_t nlive;			/* stacks not freed */
	size_t nindexed;		/* index entries: live, and freed ones not purged yet */
	uint32_t *sidx;			/* open addressing: slot + 1, 0 = empty */
	size_t nsidx;			/* a power of two */
	uint32_t *free_slots;		/* slots of freed stacks, to reuse */
	size_t nfree, capfree;
	size_t stack_bytes;		/* frames of live stacks, with malloc's header */
	struct qp_cpu_agg *aggs;	/* in no order */
	size_t naggs, capaggs;
	uint32_t *aidx;			/* open addressing: agg index + 1 */
	size_t naidx;
	uint32_t key_serial;		/* of the last key made */
	uint32_t now;			/* clock (s), set by the caller before adding */
	size_t max_stacks, max_keys, max_bytes;	/* caps: beyond them samples are refused */
	uint64_t aged;			/* samples whose keys were aged out */
	uint64_t aged_keys;
};

/* One sample: stacks leaf first, N frames each (0 = none). */
struct qp_cpu_sample_in {
	uint32_t tgid, tid;
	const uint64_t *kern, *user;
	uint32_t nkern, nuser;
	const uint64_t *scopes;		/* QPROF_SAMPLE_SCOPES, innermost first */
	const uint64_t *open;		/* a ring thread's open scopes, outermost first */
	uint32_t nopen;			/* 0 = none (interned like a stack: key.open_stack) */
	const char *comm;		/* 16 bytes */
	uint64_t weight;		/* what it adds to its key's count; 0 counts 1 (a sample) */
	uint64_t span_site, span_id;	/* the span open on the thread (0: none): part of the key */
};

/* MAX_STACKS is clamped to QP_CPU_MAX_SLOTS. */
void qp_cpu_table_init(struct qp_cpu_table *t, size_t max_stacks, size_t max_keys, size_t max_bytes);
void qp_cpu_table_free(struct qp_cpu_table *t);
/* Count one sample at the clock t->now; false when a cap or memory leaves
 * no room (the caller counts it lost). */
bool qp_cpu_table_add(struct qp_cpu_table *t, const struct qp_cpu_sample_in *in);
/* The same, also giving the sample's stack ids (-1: none) when it is kept. */
bool qp_cpu_table_add_ids(struct qp_cpu_table *t, const struct qp_cpu_sample_in *in, int32_t *kid,
			  int32_t *uid);
/* Drop PID's keys and free the stacks no other key uses. 0 or -ENOMEM
 * (then every remaining count is moved to t->aged: never a wrong one). */
int qp_cpu_table_forget(struct qp_cpu_table *t, uint32_t pid);
/* When the table holds more than FLOOR bytes, age out every key whose
 * latest sample is older than clock BEFORE: its count goes to t->aged, the
 * stacks no other key uses are freed. Returns the keys aged out, or -ENOMEM
 * as forget does. */
long qp_cpu_table_age(struct qp_cpu_table *t, uint32_t before, size_t floor);
/* Bytes the table holds: arrays at their capacity, indexes, live frames. */
size_t qp_cpu_table_bytes(const struct qp_cpu_table *t);
/* Up to MAX frames of stack ID into IPS; -ENOENT for none or a freed one. */
int qp_cpu_table_stack(const struct qp_cpu_table *t, int32_t id, uint64_t *ips, size_t max,
		       size_t *n);
#endif

/* stackstats.h - self and total counts per function over a set of stacks,
 * computed here once for every place that shows them (the call graph, the
 * exit report's top functions, `qprof-cli top`).
 *
 * A stack stands for COUNT samples. A function's total is the sum of the
 * counts of the stacks that hold it, once per stack however often it
 * recurs; its self is the sum over the stacks where it is the leaf. What a
 * "function" is, is the caller's key (bytes): name and module, a folded
 * frame, a caller/callee pair. Each function may carry EXTRA bytes of the
 * caller's (zeroed when it first appears). Functions are numbered in the
 * order they first appear. */
#ifndef QPROF_STACKSTATS_H
#define QPROF_STACKSTATS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hashtab.h"

struct qp_fnstat {
	uint64_t self, total;
	size_t stack;		/* the last stack that counted total (1-based) */
};

struct qp_stackstats {
	struct qp_htab fn;	/* key -> struct qp_fnstat, then EXTRA bytes */
	size_t nstacks;		/* stacks begun */
	uint64_t count;		/* the current stack's count */
	uint64_t samples;	/* the sum of all stacks' counts */
};

void qp_stackstats_init(struct qp_stackstats *s, size_t extra);
void qp_stackstats_free(struct qp_stackstats *s);	/* accepts a zeroed one */
/* A new stack of COUNT samples; its frames follow. */
void qp_stackstats_stack(struct qp_stackstats *s, uint64_t count);
/* A frame of the current stack, LEAF when it is the last: the function's
 * index, or -ENOMEM / -E2BIG. MADE (may be NULL) says it is new. */
int64_t qp_stackstats_frame(struct qp_stackstats *s, const void *key, size_t len, bool leaf,
			    bool *made);

static inline size_t qp_stackstats_count(const struct qp_stackstats *s)
{
	return s->fn.n;
}

static inline struct qp_fnstat *qp_stackstats_at(const struct qp_stackstats *s, size_t i)
{
	return qp_htab_value(&s->fn, i);
}

/* The caller's EXTRA bytes of function I (moves when the table grows). */
static inline void *qp_stackstats_extra(const struct qp_stackstats *s, size_t i)
{
	return (unsigned char *)qp_htab_value(&s->fn, i) + sizeof(struct qp_fnstat);
}

/* Function I's key (NUL-terminated, stable until qp_stackstats_free). */
static inline const char *qp_stackstats_key(const struct qp_stackstats *s, size_t i, size_t *len)
{
	return qp_htab_key(&s->fn, i, len);
}
#endif

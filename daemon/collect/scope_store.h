/* scope_store.h - the daemon's copy of the kernel's scope chunks (see
 * bpf/scopes.h): the latest value read of every chunk, grouped by (process,
 * site, parent), and the whole-histogram rows built from them. A poll puts
 * only the chunks hit since the last one; a snapshot folds every held pair.
 * No BPF here: unit-tested on hand-made chunks. Not thread-safe: the
 * collector holds its lock around every call. */
#ifndef QPROF_SCOPE_STORE_H
#define QPROF_SCOPE_STORE_H
#include <stddef.h>
#include <stdint.h>
#include "collect_scopes.h"
#include "common/hashtab.h"

struct qp_scope_store {
	struct qp_htab pairs;	/* struct scope_key -> struct qp_store_pair */
	size_t live;		/* pairs holding at least one chunk */
	size_t nchunks;		/* chunks held */
};

void qp_scope_store_init(struct qp_scope_store *st);
void qp_scope_store_free(struct qp_scope_store *st); /* accepts a zeroed store */

/* Keep C as the value of chunk K (replacing the one held; K's chunk with
 * QPROF_CHUNK_MORE is the copy of scope_chunks_more, kept beside the
 * other and summed with it). 0 or -ENOMEM; -EINVAL for a chunk number past
 * QPROF_CHUNKS (never made by BPF). */
int qp_scope_store_put(struct qp_scope_store *st, const struct scope_chunk_key *k,
		       const struct scope_chunk *c);
/* Drop every chunk of process TGID; returns how many. */
size_t qp_scope_store_forget(struct qp_scope_store *st, uint32_t tgid);
/* Chunks held (for tests and status). */
size_t qp_scope_store_chunks(const struct qp_scope_store *st);

/* The rows of PID (all when pid <= 0) with a count, sorted by key, into
 * OUT (rows malloc'ed; counters untouched). 0 or -ENOMEM. */
int qp_scope_store_snapshot(const struct qp_scope_store *st, int pid, struct qp_scope_snapshot *out);

/* Fold chunk C (number CHUNK) into ROW's figures: count, sum, min, max and
 * the 32 buckets it holds of the whole histogram. */
void qp_scope_chunk_fold(struct scope_stats *row, unsigned int chunk, const struct scope_chunk *c);
#endif

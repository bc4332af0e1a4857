/* collect_internal.h - what the three files of the scope collector share
 * (collect_scopes.c: load and snapshots; collect_attach.c: links;
 * collect_values.c: marks and values): the collector's state and its map
 * walker. Nothing outside those files includes it but the ring collector's
 * ring_query.c, whose links are struct qp_scope_link too. */
#ifndef QPROF_COLLECT_INTERNAL_H
#define QPROF_COLLECT_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect_scopes.h"
#include "hashtab.h"
#include "scope_store.h"
#include "scopes.skel.h"

#define SPEC_IDS 1024		/* BPF_USDT_MAX_SPEC_CNT in scopes.bpf.c */
#define ATTACH_UPROBE_MULTI 48	/* BPF_TRACE_UPROBE_MULTI (kernel >= 6.6) */

struct qp_scopes {
	/* held while links are made or destroyed and an epoch is handed out:
	 * the registry attaches and detaches without its own lock, from the
	 * HTTP threads and the poll thread at once. A leaf lock. */
	pthread_mutex_t lock;
	struct scopes *skel;
	int ncpus;
	uint64_t epoch;		/* last attach epoch handed out */
	bool multi;		/* programs loaded for uprobe-multi links */
	uint64_t span_timeout_ns;	/* a pending span older than this is abandoned */
	uint64_t span_capacity;		/* entries of the pending table */
	uint64_t spans_abandoned;	/* swept so far (atomic) */
	uint64_t spans_pending;		/* left after the last sweep (atomic) */
	struct qp_ring *ring;	/* the ring collector, merged into reads; NULL without */
	unsigned char spec_used[SPEC_IDS];
	/* the poll (scope_poll.c), under poll_lock (a leaf lock apart from
	 * `lock`, so that reads never wait for an attach): the daemon's copy
	 * of the chunks, the ring of dirty keys, the keys drained, its figures */
	pthread_mutex_t poll_lock;
	struct qp_scope_store store;
	struct ring_buffer *dirty;
	struct scope_chunk_key *keys;
	size_t nkeys, capkeys;
	int keys_err;			/* -ENOMEM while draining: read all */
	/* the keys the last poll drained, read again by this one: see
	 * qp_keys_carry in scope_poll.c */
	void *carry;
	size_t ncarry;
	uint64_t dirty_lost_seen;	/* QPROF_CNT_DIRTY_LOST at the last poll */
	__u64 *percpu;			/* one counter's values, ncpus of them */
	struct qp_scope_poll_stats poll;
	/* the same for value histogram buckets (value_poll.c), under poll_lock */
	struct qp_htab vbuckets;	/* struct value_bucket_key -> __u64 count */
	struct ring_buffer *vdirty;
	struct value_bucket_key *vkeys;
	size_t nvkeys, capvkeys;
	int vkeys_err;
	void *vcarry;
	size_t nvcarry;
	uint64_t vdirty_lost_seen;
};

/* One attachment of one probe name in one file: a uprobe-multi link and the
 * spec ids it holds in __bpf_usdt_specs, or a libbpf USDT link. */
struct qp_scope_link {
	struct qp_scopes *owner;
	int fd;
	struct bpf_link *blink;
	int *specs;
	size_t nspecs;
};

/* scope_poll.c: a poll drains the keys of the chunks hit since the
 * generation changed, and copies those chunks. A key queued just after this
 * poll's generation change may be drained by this very poll; the hits of
 * that generation that come after it queue nothing (their chunk is marked
 * already), so the next poll must read that chunk again. Hence each poll
 * reads the keys it drained (*KEYS, *N of them, KSZ bytes each, capacity
 * *CAP) and the ones the poll before drained (*CARRY, *NCARRY), which are
 * then replaced by this poll's. 0, or -ENOMEM (then read everything). */
int qp_keys_carry(void **keys, size_t *n, size_t *cap, void **carry, size_t *ncarry, size_t ksz);

/* scope_poll.c: the ring of dirty keys made (0 or -errno) and freed;
 * one poll (S->poll_lock held): the chunks hit since the last poll into the
 * store, the counters into COUNTERS (QPROF_CNT__MAX of them, summed). */
int qp_scope_poll_init(struct qp_scopes *s);
void qp_scope_poll_fini(struct qp_scopes *s);
int qp_scope_poll(struct qp_scopes *s, uint64_t *counters);
/* value_poll.c: the same for value buckets: the ring made and freed, one
 * poll (S->poll_lock held) of the buckets hit since the last one into
 * s->vbuckets. */
int qp_value_poll_init(struct qp_scopes *s);
void qp_value_poll_fini(struct qp_scopes *s);
int qp_value_poll(struct qp_scopes *s);

/* All keys of a map whose keys start with the tgid (of PID when pid > 0),
 * as an array of KSZ-byte keys. */
int qp_map_keys(int fd, size_t ksz, int pid, void **out, size_t *n);
#endif

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
#include "collect_calibrate.h"
#include "collect_scopes.h"
#include "common/hashtab.h"
#include "scope_store.h"
#include "scopes.skel.h"

#define SPEC_IDS 1024		/* BPF_USDT_MAX_SPEC_CNT in scopes.bpf.c */
#define ATTACH_UPROBE_MULTI 48	/* BPF_TRACE_UPROBE_MULTI (kernel >= 6.6) */

/* dirty_keys.c: the ring of keys a BPF program queues when it dirties an
 * entry (KSZ bytes each), as drained by the last poll. */
struct qp_dirty {
	struct ring_buffer *rb;
	size_t ksz;
	void *keys;		/* drained by this poll, then the carried ones */
	size_t n, cap;
	int err;		/* -ENOMEM or -EIO while draining: read all */
	void *carry;		/* the keys the last poll drained */
	size_t ncarry;
	uint64_t lost_seen;	/* the ring's lost-keys counter at the last poll */
};

/* The collector's programs, in the order of their bits (scope_progs.c). */
enum qp_scope_prog {
	QP_SP_SCOPE_ENTER, QP_SP_SCOPE_EXIT, QP_SP_MARK, QP_SP_VALUE, QP_SP_LOG, QP_SP_USDT_COUNT,
	QP_SP_USDT_SPAN_BEGIN, QP_SP_USDT_SPAN_END, QP_SP_ASYNC_BEGIN, QP_SP_ASYNC_STEP, QP_SP_ASYNC_END,
	QP_SP_THREAD_EXIT,	/* sched_process_exit: with the first program that pushes a thread stack */
	QP_SP__N
};
#define QP_SP_BIT(p) (1u << (p))
#define QP_SP_ALL ((1u << QP_SP__N) - 1)

struct qp_scope_progs {
	pthread_mutex_t lock;		/* a leaf lock: nothing is taken under it */
	pthread_cond_t cond;		/* a load or the hook done */
	bool loading;			/* a thread is loading an instance */
	unsigned int tried;		/* programs whose load was tried (bits) */
	struct bpf_program *prog[QP_SP__N];	/* loaded, or NULL */
	int err[QP_SP__N];		/* -errno of a failed load */
	struct scopes *inst[QP_SP__N];	/* the instances made (one per load) */
	size_t ninst;
	uint64_t load_ns;		/* all the loads together */
	qp_scopes_first_fn first;	/* the calibration hook, NULL: none */
	void *first_arg;
	int first_state;		/* 0 not run, 1 running, 2 done */
	pthread_t first_thread;		/* running it (it attaches too: never waits for itself) */
	struct bpf_link *exit_link;	/* thread_exit's, once a program pushes thread stacks */
	struct qp_calibration calib;	/* as published (qp_scopes_publish_calibration) */
};

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
	struct slow_floor *slow_floor;	/* the slow thresholds' slots, mmapped (scopes.h); NULL: none */
	unsigned char spec_used[SPEC_IDS];
	/* the poll (scope_poll.c), under poll_lock (a leaf lock apart from
	 * `lock`, so that reads never wait for an attach): the daemon's copy
	 * of the chunks, the ring of dirty keys, the keys drained, its figures */
	pthread_mutex_t poll_lock;
	struct qp_scope_store store;
	struct qp_dirty dirty;		/* struct scope_chunk_key, QPROF_CNT_DIRTY_LOST */
	__u64 *percpu;			/* one counter's values, ncpus of them */
	struct qp_scope_poll_stats poll;
	/* the same for value histogram buckets (value_poll.c), under poll_lock */
	struct qp_htab vbuckets;	/* struct value_bucket_key -> __u64 count */
	struct qp_dirty vdirty;		/* struct value_bucket_key, QPROF_CNT_VALUE_DIRTY_LOST */
	/* the programs of the collector (scope_progs.c), each loaded the
	 * first time a target needs it, in an instance of the object of its
	 * own that shares every map of skel: a daemon whose targets are all on
	 * the ring never loads scope_exit or a span program (the verifier's
	 * time was most of qprofd's start-up) */
	struct qp_scope_progs progs;
};

/* scope_progs.c: the loaded program of S of that name (PROG is the first
 * instance's, which holds only the maps and usdt_count), or NULL with
 * errno set when it failed to load or was never asked for with
 * qp_scope_progs_need. Never waits. */
struct bpf_program *qp_scopes_late_prog(struct qp_scopes *s, struct bpf_program *prog);
/* scope_progs.c: load (once, without S->lock) the programs of MASK (bits
 * 1 << enum qp_scope_prog) that are not loaded yet, waiting for a load
 * another thread has under way. A program that measures a duration brings
 * scope_enter and scope_exit with it and the calibration hook first (run
 * once, before any such program is attached). 0, or the -errno of the first
 * program of MASK that could not be loaded (ERR says which and why). */
int qp_scope_progs_need(struct qp_scopes *s, unsigned int mask, char *err, size_t errlen);
/* The programs of the probe names of qp_scopes_attach_some's WHICH bits
 * whose notes ELF holds. */
unsigned int qp_scope_progs_of(const struct qp_elf_probes *elf, unsigned int which);
/* scope_progs.c: S->progs made at open, its instances destroyed at close
 * (a load under way is waited for). Before the first instance (SKEL) is
 * loaded, setup chooses its programs: ALL (perf-event uprobes: libbpf's
 * USDT links keep their spec ids per object, so a second object could not
 * share __bpf_usdt_specs) or none but usdt_count; after it, loaded notes
 * what it holds. */
void qp_scope_progs_init(struct qp_scopes *s);
void qp_scope_progs_fini(struct qp_scopes *s);
void qp_scope_progs_setup(struct qp_scopes *s, struct scopes *skel, bool all);
void qp_scope_progs_loaded(struct qp_scopes *s, bool all);

/* One attachment of one probe name in one file: a uprobe-multi link and the
 * spec ids it holds in __bpf_usdt_specs, or a libbpf USDT link. */
struct qp_scope_link {
	struct qp_scopes *owner;
	int fd;
	struct bpf_link *blink;
	int *specs;
	size_t nspecs;
};

/* dirty_keys.c: D's ring of RING_FD made (0 or -errno) and freed. A poll
 * drains into d->keys (d->n of them) the keys queued since the last poll,
 * then those the last poll drained (a key queued just after a poll's
 * generation change may be drained by that very poll, and the later hits
 * of its generation queue nothing): 0, or d->err, -EIO or -ENOMEM, when
 * keys were lost. qp_dirty_read_all: whether this poll must read the whole
 * map instead (d->err, or LOST, the ring's lost-keys counter, moved). */
int qp_dirty_init(struct qp_dirty *d, int ring_fd, size_t ksz);
void qp_dirty_fini(struct qp_dirty *d);
int qp_dirty_drain(struct qp_dirty *d);
bool qp_dirty_read_all(struct qp_dirty *d, uint64_t lost);

/* dirty_keys.c: every entry of map FD (KSZ-byte keys, VSZ-byte values) to
 * PUT, by batches of BATCH, or by get_next_key + lookup where batches are
 * not supported (or a hash bucket holds more than BATCH); *NREAD (if not
 * NULL) counts the entries read (the walk may read again what batches
 * read before it failed: PUT must overwrite). 0, or the first error of PUT or -ENOMEM. */
typedef int (*qp_map_put_fn)(void *ctx, const void *key, const void *val);
int qp_map_scan(int fd, size_t ksz, size_t vsz, size_t batch, qp_map_put_fn put, void *ctx,
		uint64_t *nread);

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
/* A BPF_TRACE_UPROBE_MULTI link of program PROG_FD on CNT offsets of PATH
 * (REFS, COOKIES may be NULL), for PID (<= 0: every process): its fd, or
 * -errno. */
int qp_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offs, const uint64_t *refs,
			 const uint64_t *cookies, uint32_t cnt, int pid);
/* Drop PID's buckets from s->vbuckets (S->poll_lock held). 0 or -errno
 * (the table unchanged). */
int qp_value_poll_forget(struct qp_scopes *s, uint32_t pid);
#endif

/* slow_window.h - the reservoirs of the windows of GET
 * /api/scopes/slowest?seconds=: a window on (process, scope name) keeps,
 * per site, the N slowest instances that end inside it, whatever the
 * since-attach reservoirs keep. While a window is open the BPF threshold
 * of each site it covers is the least of its own (0 until it holds N,
 * then its N-th slowest), every other open window's and the since-attach
 * one (qp_slow_sync_threshold); closing it gives the sites their
 * thresholds back. Part of the store: no locking (the CPU collector's lock
 * covers both), no BPF, no clock. */
#ifndef QPROF_SLOW_WINDOW_H
#define QPROF_SLOW_WINDOW_H
#include "slow_store.h"

struct qp_slow_wsub {	/* one site's reservoir inside a window */
	uint64_t site;
	uint32_t n;
	struct qp_slow_inst *v[QP_SLOW_KEEP];	/* in no order */
};

struct qp_slow_win {
	uint64_t id;
	uint32_t tgid, keep;	/* keep: N, 1..QP_SLOW_KEEP */
	uint64_t t0, t1;	/* instances ending in [t0, t1] (UINT64_MAX: not set yet) */
	/* the sites named by the query, and the process's other sites, when
	 * it opened (sorted): a site in neither appeared since and is kept too
	 * (its name is known only at the answer) */
	uint64_t *named, *other;
	size_t nnamed, nother;
	struct qp_slow_wsub *sub;
	size_t nsub;		/* of QP_SLOW_WIN_SITES allocated */
	uint64_t lost;		/* instances it wanted but could not keep */
	bool gone;		/* its process was forgotten: no threshold is written for it */
	struct qp_slow_counters at_open;	/* the store's losses then */
};

/* Open a window on TGID for the sites NAMED (OTHER: the process's other
 * sites known now), keeping KEEP per site, taking nothing until
 * qp_slow_win_time); the named sites' thresholds go to 0 through FN.
 * 0 and *ID; -EBUSY (QP_SLOW_WINDOWS open, counted), -EINVAL, -ENOMEM. */
int qp_slow_win_open(struct qp_slow_store *s, uint32_t tgid, const uint64_t *named, size_t nnamed,
		     const uint64_t *other, size_t nother, uint32_t keep, qp_slow_threshold_fn fn, void *arg,
		     uint64_t *id);
/* Instances ending from T (not END) on enter window ID (set once its
 * thresholds are in BPF); from T (END) on none does (set before the last
 * drain). 0 or -ENOENT. */
int qp_slow_win_time(struct qp_slow_store *s, uint64_t id, bool end, uint64_t t);
/* Close window ID: its instances move to *OUT (an array, free with
 * qp_slow_insts_free), the thresholds it lowered come back through FN.
 * *COMPLETE: it kept every instance it wanted and the store lost none
 * since it opened. 0 or -ENOENT, -ENOMEM (the window is closed anyway). */
int qp_slow_win_close(struct qp_slow_store *s, uint64_t id, qp_slow_threshold_fn fn, void *arg,
		      struct qp_slow_inst **out, size_t *n, bool *complete);

/* The window's own part of opening and closing (slow_store.c's
 * qp_slow_win_open and qp_slow_win_close add the thresholds): a new window
 * in a free slot (-EBUSY counted, -EINVAL, -ENOMEM); whether W names SITE;
 * window ID out of its slot, *COMPLETE set (NULL: none); W's instances moved
 * to *OUT and W freed (0 or -ENOMEM, W freed anyway). */
int qp_slow_win_add(struct qp_slow_store *s, uint32_t tgid, const uint64_t *named, size_t nnamed,
		    const uint64_t *other, size_t nother, uint32_t keep, struct qp_slow_win **out);
bool qp_slow_win_names(const struct qp_slow_win *w, uint64_t site);
struct qp_slow_win *qp_slow_win_detach(struct qp_slow_store *s, uint64_t id, bool *complete);
int qp_slow_win_drain(struct qp_slow_store *s, struct qp_slow_win *w, struct qp_slow_inst **out, size_t *n);

/* For the store's join (slow_store.c). How many open windows would keep
 * the instance of R. */
uint32_t qp_slow_win_wanting(const struct qp_slow_store *s, const struct slow_record *r);
/* Give IN (the joined instance of R, NULL when it could not be joined:
 * counted lost) to every window that wants it: copies, or IN itself to
 * the last one when OWN (else the caller keeps IN). */
void qp_slow_win_take(struct qp_slow_store *s, const struct slow_record *r, struct qp_slow_inst *in, bool own);
/* The least threshold of the open windows covering (TGID, SITE);
 * UINT64_MAX when none does. */
uint64_t qp_slow_win_min(const struct qp_slow_store *s, uint32_t tgid, uint64_t site);
/* PID was forgotten: its windows keep what they have and write no
 * threshold any more. */
void qp_slow_win_forget(struct qp_slow_store *s, uint32_t pid);
void qp_slow_win_free_all(struct qp_slow_store *s);
#endif

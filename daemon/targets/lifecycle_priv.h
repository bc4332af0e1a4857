/* lifecycle_priv.h - the lifecycle watcher's state, shared by its files
 * only: lifecycle.c (the thread, forks, execs, status) and lifecycle_dl.c
 * (the dynamic linkers' rendezvous and the release process). */
#ifndef QPROF_LIFECYCLE_PRIV_H
#define QPROF_LIFECYCLE_PRIV_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "lifecycle.h"
#include "lifecycle_fork.h"

#define LC_MAX_EXECS 1024

/* Is a hold that began at TS over its bound at NOW? A hold that began after
 * NOW (the release process reads the clock once, then sweeps the map) is
 * not: the unsigned difference would wrap and end it at once. */
static inline bool lc_hold_over(uint64_t now, uint64_t ts, uint64_t bound)
{
	return ts <= now && now - ts >= bound;
}

struct lc_watched {
	int pid;
	dev_t dev;	/* of /proc/PID/exe when watched */
	ino_t ino;
	bool changed;	/* seen different once: queued if still so at the next check */
};

struct qp_lifecycle {
	struct lifecycle *skel;
	struct ring_buffer *rb;
	pthread_t thread, main;
	int wake;
	int stop_fd;		/* eventfd: the thread ends at once when written */
	bool started;
	pthread_mutex_t lock;	/* guards what follows */
	bool stopping;
	struct { dev_t dev; ino_t ino; } *files;
	size_t nfiles;
	struct lc_sites *sites;
	struct lc_watched *watched;
	size_t nwatched;
	struct qp_lc_exec execs[LC_MAX_EXECS];
	size_t nexecs;
	uint64_t execs_dropped;
	/* figures for /api/status */
	struct lc_repair rep;
	uint64_t resumed, stall_max_ns, stall_sum_ns;
	uint64_t execs_seen, execs_by_proc, binary_starts, exec_stall_max_ns;
	/* dynamic linkers (lifecycle_dl.c) */
	struct lc_ldso *ldsos;	/* ld.so files with a link on _dl_debug_state, or refused */
	size_t nldsos;
	pid_t releaser;		/* the release process, 0 when none */
	int releaser_pipe;	/* write end: its EOF tells it qprofd is gone; -1 */
	uint64_t hold_ns;	/* the bound of a hold (--dl-hold-ms); 0: loads are not held */
	bool dl_multi;		/* lc_dl loaded for uprobe-multi links (kernel >= 6.6) */
	uint64_t dl_released, dl_released_late, dl_hold_max_ns, dl_hold_sum_ns;
};

#define QP_LC_UPROBE_MULTI 48	/* BPF_TRACE_UPROBE_MULTI */

/* lifecycle_dl.c */
/* Start the release process (after the BPF object is loaded). */
int lc_dl_start(struct qp_lifecycle *lc, char *err, size_t errlen);
/* lc->lock held: when the release process died, detach the ld.so links. */
void lc_dl_check(struct qp_lifecycle *lc);
/* Stop it (it releases whatever is still held), detach the ld.so links. */
void lc_dl_stop(struct qp_lifecycle *lc);
/* End the hold of PID taken at TS_NS (lc->lock held): SIGCONT when the
 * entry was still ours; counts. True when it was not: the release process
 * had ended it at its bound, and the process ran on meanwhile. */
bool lc_dl_release(struct qp_lifecycle *lc, int pid, uint64_t ts_ns);


#endif

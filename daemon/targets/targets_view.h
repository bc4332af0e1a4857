/* targets_view.h - the targets model: plain copies of what the registry
 * and the lifecycle thread hold, for GET /api/targets, GET /api/status and
 * the answer of POST /api/targets. They are taken under r->lock (the
 * lifecycle figures under the lifecycle's own lock), the lock is dropped,
 * and export_targets.c writes the JSON from the copies: no JSON here and no
 * lock held while it is written. Each view owns its strings and arrays. */
#ifndef QPROF_TARGETS_VIEW_H
#define QPROF_TARGETS_VIEW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect/ring_collect.h"

struct qp_registry;
struct qp_target;
struct qp_binary;
struct qp_lifecycle;

enum qp_target_state { QP_TARGET_RUNNING, QP_TARGET_EXITED };

/* Which scope collector a target asked for. */
enum qp_collector { QP_COLLECTOR_DEFAULT, QP_COLLECTOR_BPF, QP_COLLECTOR_RING };

/* Why a file that asked for the ring is on the BPF collector. */
enum qp_ring_miss {
	QP_RING_MISS_NONE,
	QP_RING_MISS_ABI1,	/* its markers are of ABI 1 (no qprof:ring_register) */
	QP_RING_MISS_DOWN,	/* the ring collector could not start */
};

/* What a target (or a --binary file) asked for, and what it got. */
struct qp_collector_choice {
	bool ring;		/* the ring asked for (or the default) */
	bool asked;		/* by POST "collector" or qprofd --collector, not the default */
	enum qp_ring_miss miss;	/* the first file that could not be on the ring */
};

/* "ring (default)", "bpf (asked)", "bpf: markers of ABI 1", ... for a target
 * (or binary) that runs on the ring (RING) or not, with CPU_ONLY when it has
 * no probe at all (targets_view.c). */
void qp_collector_reason(const struct qp_collector_choice *ch, bool ring, bool cpu_only, char *buf,
			 size_t len);

/* A file a target maps executable (target_libs.c): "probed", "unloaded",
 * "no_markers", "refused" (with error). */
struct qp_module_view {
	char *path;
	const char *state;	/* static text */
	unsigned int probes, loads;
	uint64_t attached_ms;	/* 0: never attached */
	uint64_t detached_ms;	/* 0: not unloaded */
	char *error;		/* NULL unless refused */
};

struct qp_target_view {
	int pid;
	char comm[32];
	char *exe;
	enum qp_target_state state;
	uint64_t attached_ms;	/* wall clock */
	uint64_t exited_ms;	/* meaningful when state is QP_TARGET_EXITED */
	uint64_t reported_ms, released_ms;	/* 0: not yet (targets.h) */
	unsigned int probes;
	bool cpu_only;		/* nothing but CPU samples: no qprof or other probe */
	bool by_binary;		/* attached through a --binary file, not by pid */
	unsigned int sites_refused, files_unopened;
	bool ring;		/* timed by the ring collector (target_ring.c) */
	char collector_reason[96]; /* which collector runs and why (qp_collector_reason) */
	char collector_note[256]; /* why not the collector asked for; "" */
	bool has_ring_status;	/* ring_status holds the ring collector's figures of it */
	struct qp_ring_status ring_status;
	struct qp_module_view *modules;	/* files probed, and libraries loaded later not probed */
	size_t nmodules;
	unsigned int libs_loaded, libs_unloaded, libs_without_markers, libs_refused, sites_reused;
	unsigned int libs_probed_late;	/* probed after its loader ran on: first calls may be missing */
};

/* A --binary file: "attached" (links on the current version, or per-process
 * mode with qprof sites), "changed" (the file changed: links dropped, to be
 * re-made), "unprobed" (no link). */
enum qp_binary_state { QP_BINARY_ATTACHED, QP_BINARY_CHANGED, QP_BINARY_UNPROBED };

struct qp_binary_view {
	char *path;
	unsigned int probes;
	uint64_t attached_ms;
	enum qp_binary_state state;
	bool per_process;	/* no fanotify mark: links per adopted process */
	bool ring;		/* its processes are timed by the ring collector */
	char collector_reason[96];
	char collector_note[256];
	unsigned int versions_replaced;
	size_t old_versions_running;
	unsigned int sites_refused;
	size_t processes_refused;
	int *pids;		/* its targets, in registry order */
	size_t npids;
};

/* The fork/exec figures (lifecycle.c): kernel counters, then the thread's. */
struct qp_lifecycle_figures {
	uint64_t forks, shared_mm_children, children_stopped, stop_failed, records_lost,
		 descendants_unwatched;
	uint64_t children_resumed, sites_restored_nop, sites_restored_int3, site_rewrites_failed,
		 child_stall_max_ns, child_stall_mean_ns, execs, exec_stall_max_ns, binary_starts,
		 execs_seen_in_proc, execs_dropped;
	/* the dynamic linkers' rendezvous (lifecycle_dl.c) */
	uint64_t dl_rendezvous, dl_held, dl_unheld, dl_released, dl_released_late, dl_hold_max_ns,
		 dl_hold_mean_ns, dl_linkers;
	/* loads not held because the hold could not help (lifecycle.bpf.c) */
	uint64_t dl_skipped_unresponsive, dl_skipped_traced, dl_skipped_no_signal;
	/* USDT semaphores of forked children lowered with their sites' nop5 */
	uint64_t semaphores_lowered, semaphore_writes_failed;
};

struct qp_targets_view {
	struct qp_target_view *targets;
	size_t ntargets;
	struct qp_binary_view *binaries;
	size_t nbinaries;
	uint64_t exited_forgotten;	/* exited targets dropped by qp_registry_trim */
	bool has_lifecycle;		/* false: fork/exec tracking unavailable */
	struct qp_lifecycle_figures lifecycle;
};

/* What qp_targets_view_take copies besides the targets. */
enum {
	QP_VIEW_BINARIES = 1 << 0,
	QP_VIEW_LIFECYCLE = 1 << 1,
};

/* Copy T / B (r->lock held). 0 or -ENOMEM (OUT is then empty). */
int qp_target_view_copy(const struct qp_target *t, struct qp_target_view *out);
int qp_binary_view_copy(const struct qp_registry *r, const struct qp_binary *b, struct qp_binary_view *out);
void qp_target_view_free(struct qp_target_view *v);	/* accept NULL */
void qp_binary_view_free(struct qp_binary_view *v);

/* Take r->lock, copy the targets (and what WHAT asks for), drop it; the
 * lifecycle figures are read after, under the lifecycle's own lock. 0 or
 * -ENOMEM (OUT is then empty). */
int qp_targets_view_take(struct qp_registry *r, unsigned int what, struct qp_targets_view *out);
void qp_targets_view_free(struct qp_targets_view *v);
#endif

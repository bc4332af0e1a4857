/* ring_collect.h - the ring collector (marker ABI 2): loads bpf/ring.bpf.c,
 * attaches it to the qprof:ring_register probes of a target's files with
 * their semaphore as reference counter (the kernel raises
 * qprof_ring_semaphore while attached), takes the rings the threads
 * announce, and drains them from a thread of its own with process_vm_readv
 * into ring_pair.h's aggregates, which qp_scopes_read and qp_marks_read
 * merge with the BPF collector's (collect_scopes.h). Thread-safe. */
#ifndef QPROF_RING_COLLECT_H
#define QPROF_RING_COLLECT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ring_pair.h"

struct qp_ring;
struct qp_scope_link;
struct qp_elf_probes;
struct qp_scope_snapshot;
struct qp_mark_row;

struct qp_ring_opts {
	size_t max_rows;	/* aggregates (scope rows + marks), all targets */
	size_t max_rings;	/* rings drained at once, all targets */
	size_t flight;		/* instances kept for traces per target (0: none) */
	unsigned int period_us;	/* drain period */
	size_t span_pending;	/* spans across threads pending at once, all targets */
	uint64_t span_timeout_ns; /* a begin pending longer is abandoned */
	uint32_t ring_records;	/* records a target's new rings are asked to have (qprofd
				 * --ring-records; 0: the markers' own QPROF_RING_RECORDS) */
};

/* Load the BPF object, calibrate the clock, start the drain thread. */
int qp_ring_open(struct qp_ring **out, const struct qp_ring_opts *o, char *err, size_t errlen);
void qp_ring_close(struct qp_ring *g); /* accepts NULL */

/* Where the QPROF_LOG messages read from rings go (NULL: nowhere, counted
 * only). Set it to NULL before L is stopped. */
struct qp_logs;
void qp_ring_set_logs(struct qp_ring *g, struct qp_logs *l);

/* The map of thread rings for the CPU sampler (bpf/ringreg.h ring_tids),
 * -1 without G. */
int qp_ring_tids_fd(struct qp_ring *g);

/* Does ELF have a qprof:ring_register probe (marker ABI 2)? */
bool qp_ring_capable(const struct qp_elf_probes *elf);
/* ... whose spans across threads write ring records too (ring.h: the
 * announcement's third argument)? */
bool qp_ring_spans_capable(const struct qp_elf_probes *elf);
/* Take PID's announcements from now on (its records stamped before now
 * are skipped): call before attaching. Idempotent. */
int qp_ring_watch(struct qp_ring *g, int pid);
/* A point in the rings' clocks. */
struct qp_ring_stamp {
	uint64_t tsc, ns;
};
void qp_ring_stamp_now(struct qp_ring_stamp *st);
/* The same for a process of a --binary attached at SINCE: its records
 * count from SINCE on (a process that started later: all of them), and
 * the rings it announced before it became a target are taken. A ring that
 * a forked child copied from its parent counts from now only. */
int qp_ring_watch_since(struct qp_ring *g, int pid, const struct qp_ring_stamp *since);
/* The same for PID, forked by PARENT (a ring target) at FORK_NS
 * (CLOCK_MONOTONIC; 0: now): its copies of PARENT's rings are taken at
 * once, their records (the child's own) counting from the fork. */
int qp_ring_watch_child(struct qp_ring *g, int pid, int parent, uint64_t fork_ns);
/* Attach to the ring_register probes of PATH for PID: links appended to
 * *LINKS as qp_scopes_attach does, owned by OWNER (detached with
 * qp_scopes_detach_links). Returns the number made (0: PATH has none) or
 * -errno. */
struct qp_scopes;
int qp_ring_attach(struct qp_ring *g, struct qp_scopes *owner, int pid, const char *path,
		   const struct qp_elf_probes *elf, struct qp_scope_link ***links, size_t *nlinks, char *err,
		   size_t errlen);
/* Ask the new rings of PID's module at PATH (its notes ELF) for
 * ring_records records (ring_layout.h's qprof_ring_cfg, written only
 * where its magic is). qp_ring_attach does it for its pid first. Returns
 * the configurations written. */
int qp_ring_configure(struct qp_ring *g, int pid, const char *path, const struct qp_elf_probes *elf);
/* Stop draining PID and drop its aggregates and counters. */
void qp_ring_forget(struct qp_ring *g, int pid);

/* Merge PID's rows (all when pid <= 0) into SNAP (rows kept sorted and
 * unique by key; ring counters added to SNAP's), and PID's marks into
 * *ROWS (sorted by key). */
int qp_ring_merge_rows(struct qp_ring *g, int pid, struct qp_scope_snapshot *snap);
int qp_ring_merge_marks(struct qp_ring *g, int pid, struct qp_mark_row **rows, size_t *n);
/* PID's values (with their buckets) into *ROWS, sorted by key. */
struct qp_value_row;
int qp_ring_merge_values(struct qp_ring *g, int pid, struct qp_value_row **rows, size_t *n);

/* PID's counters and rings; false when PID was never watched. The
 * accounting (ring_internal.h's): base + read + lost + unread == head over
 * its rings, the gone ones included; unread is 0 at any quiescent point. */
struct qp_ring_one {
	uint64_t addr, bytes;
	uint32_t tid, nrec;	/* tid: the owner of its last announcement */
	uint64_t head, base, read, lost;
	bool unreadable, start_unknown;
};
#define QP_RING_STATUS_LIST 64	/* rings listed one by one */
struct qp_ring_status {
	struct qp_ring_counts c;
	size_t rings;		/* drained now */
	size_t rings_gone;	/* drained once, gone since (their figures kept below) */
	uint64_t head, base, read, lost, unread;
	uint64_t bytes;		/* the rings' memory in the process now (headers and records) */
	uint64_t bytes_max;	/* the largest ring */
	struct qp_ring_lost_est est;	/* lost, in events */
	size_t nlist;
	struct qp_ring_one list[QP_RING_STATUS_LIST];
};
bool qp_ring_pid_status(struct qp_ring *g, int pid, struct qp_ring_status *st);
/* The collector's own counters (not per target). */
struct qp_ring_global {
	uint64_t announces;	/* ring_register hits received */
	uint64_t not_target;	/* ... from a process that is no ring target: skipped */
	uint64_t bad;		/* ... naming no valid ring (address, size, header): skipped */
	uint64_t refused;	/* ... past max_rings */
	uint64_t lost;		/* ... the BPF ring buffer had no room for */
	uint64_t dropped_rings;	/* rings dropped later: header changed */
	uint64_t exits;		/* thread exits of ring threads the kernel reported */
	uint64_t exits_lost;	/* ... that found the ring buffer full */
	uint64_t exit_heads_unread; /* ... of a watched ring whose head the kernel could not read
				 * (the memory gone at sched_process_exit: older kernels) */
	bool exit_hook;		/* the do_exit program is attached (else: what a process
				 * wrote before it ended unread is not counted) */
	uint32_t ring_records;	/* records a new ring is asked to have (0: the markers' own) */
	uint64_t configured;	/* modules whose qprof_ring_cfg was written */
	double ns_per_tick;	/* the clock's calibration */
};
void qp_ring_global_status(struct qp_ring *g, struct qp_ring_global *out);

/* The flight recorder of PID: its instances numbered >= *SINCE, oldest
 * first, at most MAX into OUT; *SINCE becomes the next number to ask for
 * (ask with 0 for all it keeps; qp_ring_flight_seq gives the next number
 * for a window). Older ones than the recorder keeps are skipped and their
 * number is returned in *MISSED. Returns how many were copied. */
size_t qp_ring_instances(struct qp_ring *g, int pid, uint64_t *since, struct qp_ring_inst *out,
			 size_t max, uint64_t *missed);
/* The one reader of every target's flight recorder (the slow instances of
 * off-CPU): each target's instances it has not had yet, target by target,
 * at most MAX into OUT with their pids in PIDS; *MISSED those overwritten
 * before it read them. Returns how many were copied (MAX: ask again). */
size_t qp_ring_instances_all(struct qp_ring *g, struct qp_ring_inst *out, uint32_t *pids, size_t max,
			     uint64_t *missed);
uint64_t qp_ring_flight_seq(struct qp_ring *g, int pid);
/* Wait (a second at most) for a drain pass that paired everything stamped
 * up to UNTIL_NS (CLOCK_MONOTONIC), spans across threads included. */
void qp_ring_sync(struct qp_ring *g, uint64_t until_ns);
/* The flight recorder's size per target (instances). */
size_t qp_ring_flight_max(struct qp_ring *g);
/* The kernel's name of thread TID of PID when the collector first read its
 * ring (threads of traces may be gone by then), of the thread that had the
 * tid at AT_NS (CLOCK_MONOTONIC, a record's time; 0: the latest): a tid a
 * later thread took again never gives a record an earlier thread's name,
 * nor the reverse. false when unknown. */
bool qp_ring_thread_name(struct qp_ring *g, int pid, uint32_t tid, uint64_t at_ns, char *buf, size_t len);
/* Spans across threads pending on the ring collector (all targets). */
uint64_t qp_ring_spans_pending(struct qp_ring *g);
#endif

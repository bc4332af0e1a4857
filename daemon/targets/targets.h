/* targets.h - the processes and files qprofd watches: attach and detach,
 * exit detection (pidfd), discovery of processes running a --binary file,
 * and the resolution of a runtime site address to its name through the
 * process's mappings and the ELF file. One mutex guards the registry; the
 * HTTP threads and the poll thread take it for every access, and never
 * across slow work: a CPU profile, a symbolization, an exit report are
 * made outside it (the symbolizer and the collectors have locks of their
 * own; a target being reported is pinned, see qp_registry_write_reports). */
#ifndef QPROF_TARGETS_H
#define QPROF_TARGETS_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "common/elf_probes.h"
#include "collect/ring_collect.h"
#include "common/procfs.h"
#include "targets_view.h"

struct qp_scopes;
struct qp_watch;
struct qp_scope_link;
struct qp_lifecycle;
struct qp_ring;
struct qp_reap_rec;

/* One version of one ELF file (elf->id: dev, inode, size, mtime, ctime,
 * plus the build-id), parsed once and kept while a target or a binary holds
 * it (sites point into it). */
struct qp_module {
	char *path;
	struct qp_elf_probes *elf;
	size_t qprof_notes;	/* qprof sites that may be probed (elf->notes[].bad unset) */
	unsigned int refs;
};

struct qp_resolved {
	uint64_t addr;
	const struct qp_site_info *site; /* NULL: not a qprof site */
};

/* What became of a file a target maps executable (target_libs.c). */
enum qp_lib_state {
	QP_LIB_PROBED = 1,	/* its qprof sites are attached (while live) */
	QP_LIB_NO_MARKERS,	/* no qprof markers (or none that may be probed) */
	QP_LIB_REFUSED,		/* not parsed or not attached: error says why */
	QP_LIB_UNOPENED,	/* not openable as the inode mapped */
	QP_LIB_BINARY,		/* a version of a --binary file: its links cover it */
};

struct qp_target_lib {
	struct qp_module *mod;	/* the version probed (the target holds it), or NULL */
	char *path;		/* as the maps line names it */
	uint64_t ino;
	struct qp_file_id id;	/* of the version mapped when it was seen */
	struct qp_scope_link **links;	/* its links while live (t->links owns them) */
	size_t nlinks;
	unsigned int probes;
	unsigned int loads;	/* times mapped and probed */
	uint64_t attached_ms, detached_ms;	/* wall clock of the last attach and unload */
	enum qp_lib_state state;
	bool live;		/* mapped now (or attached ahead of its mapping) */
	bool premapped;		/* attached before it was mapped: not unloaded until seen */
	bool late;		/* loaded after the target was attached */
	char error[256];	/* QP_LIB_REFUSED: why */
	struct qp_maps gone;	/* its mappings when it was unloaded: its data stays named */
	struct qp_maps whole;	/* live: its mappings in the last snapshot that held it whole */
};

#define QP_REPORT_DIR_MAX 512	/* a report's directory path */

struct qp_target {
	uint64_t serial;	/* this record, of all records ever made (an exec makes a new one) */
	int pid;
	char comm[32];
	char exe[4096];
	uint64_t starttime;
	enum qp_target_state state;
	uint64_t attached_ms;	/* wall clock */
	uint64_t exited_ms;	/* wall clock: seen exited */
	uint64_t reported_ms;	/* wall clock: its exit report written (or given up); 0 before */
	uint64_t released_ms;	/* wall clock: the kernel let its links go after the exit; 0 before */
	unsigned int probes;	/* qprof probe sites in the attached files */
	bool cpu_only;		/* no probe attached: CPU samples only (any process) */
	int binary;		/* index into binaries, -1 when attached by pid */
	int pidfd;
	struct qp_scope_link **links;
	size_t nlinks;
	struct qp_maps maps;	/* last mappings read; kept after exit */
	struct qp_resolved *resolved;
	size_t nresolved;
	bool report_pending;	/* exited; the exit report is not written yet */
	char report_dir[QP_REPORT_DIR_MAX];	/* where it was written, "" when none */
	struct qp_module **mods;	/* versions of files it was attached or resolved through */
	size_t nmods;
	unsigned int sites_refused;	/* probe sites left out: not the nop their note promises */
	unsigned int files_unopened;	/* executable mappings that could not be opened as the very
					 * inode mapped (e.g. deleted, without CAP_SYS_ADMIN): not probed */
	bool excludes_binary;	/* its own links count it: --binary links skip its pid */
	struct qp_ring *ring;	/* the ring collector times its scopes (some file has marker
				 * ABI 2), NULL: the BPF collector */
	struct qp_collector_choice choice; /* the collector asked for (kept across exec) and why
					    * it does not run where asked */
	char collector_note[256]; /* why it is not (wholly) on the collector asked for, "" */
	bool reporting;		/* its report is being written (lock not held): pinned */
	struct qp_target_lib *libs;	/* every executable file seen mapped (target_libs.c) */
	size_t nlibs;
	unsigned int libs_loaded, libs_unloaded;	/* probed after attach / unloaded since */
	unsigned int libs_without_markers, libs_refused;	/* loaded after attach, not probed */
	unsigned int libs_probed_late;	/* probed after the loader ran on: first calls may be missing */
	unsigned int sites_reused;	/* site addresses a new version shares with an unloaded one */
	uint64_t maps_seq;		/* bumped each time maps is replaced (a read begun before is stale) */
};

/* One version (inode) of a --binary file with the links on it. */
struct qp_binary_gen {
	struct qp_module *mod;	/* NULL: dropped (the file changed under it) */
	uint64_t dev, ino;
	struct qp_scope_link **links;
	size_t nlinks;
	int fd;			/* open on that inode (the fanotify mark's), -1 */
};

struct qp_binary {
	char *path;
	dev_t dev;		/* of the current version */
	ino_t ino;
	unsigned int probes;
	uint64_t attached_ms;
	struct qp_binary_gen cur;	/* the file the path names now */
	struct qp_binary_gen *old;	/* earlier versions still run by some target */
	size_t nold;
	uint32_t *extra_ids;	/* its other probes and spans (defs), re-attached with each version */
	size_t nextra;
	unsigned int replaced;	/* new versions seen (rename or rewrite in place) */
	unsigned int sites_refused;
	bool stale;		/* cur's links were dropped: re-parse and re-attach */
	bool per_process;	/* no fanotify mark: links per adopted process, none for all */
	bool ring;		/* its processes are ring targets (files of marker ABI 2) */
	struct qp_collector_choice choice; /* what was asked, given to its processes */
	char collector_note[256];	/* why it is not on the ring asked for, "" */
	struct qp_ring_stamp ring_since; /* its attach, in the rings' clocks */
	int *detached;		/* pids detached by the user: never re-adopted */
	size_t ndetached;
	int *refused;		/* pids running a version that could not be opened as mapped */
	size_t nrefused;
};

struct qp_cpu;
struct qp_symbolizer;

/* Other programs' USDT probes asked for with a target: counted probes
 * ("usdt") and begin/end pairs measured like scopes ("spans"). */
struct qp_usdt_def {
	uint32_t id;		/* QPROF_COOKIE_ID of its links */
	bool span;
	char name[136];		/* "provider:name" for a probe, the span's name */
	char begin[136], end[136]; /* spans: "provider:name" of each end */
};


/* What POST /api/targets may add besides the qprof probes. */
struct qp_attach_extra {
	size_t nusdt;
	const char *const *usdt;		/* "provider:name" */
	size_t nspans;
	const char *const *span_names, *const *span_begin, *const *span_end;
	bool privileged;	/* root client on the unix socket: may name any ELF file */
	int client_pid;		/* the client's pid: a path it names is resolved in its root
				 * (/proc/PID/root); 0: in qprofd's */
	enum qp_collector collector; /* QP_COLLECTOR_DEFAULT: the registry's ring_default */
	bool probes_required;	/* no CPU-only target: a process without probes is refused
				 * (an exec'd target's new image: it stops being a target) */
};

/* The report of an exited target, in two steps; main.c registers the
 * exporter's (targets/ knows none). COLLECT reads T's figures (T exited and
 * pinned, registry lock NOT held: read T's fields, take the lock for
 * anything else) and returns them, NULL when there are none; EMIT writes
 * them out, not yet durable nor visible, frees them (lock NOT held; T may
 * be gone by then) and returns a handle on what it wrote (NULL: nothing);
 * COMMIT makes N such handles' reports durable and visible at once (one
 * sync for a batch of reports, not one per file), puts where each went in
 * DIRS[i] ("" when nowhere) and frees the handles. */
typedef void *(*qp_report_collect_fn)(void *arg, const struct qp_target *t);
typedef void *(*qp_report_emit_fn)(void *arg, void *figs);
typedef void (*qp_report_commit_fn)(void *arg, void **staged, size_t n, char (*dirs)[QP_REPORT_DIR_MAX]);

/* A detached target's links and its pid's scope data, dropped by
 * qp_registry_reap without the registry lock. */
struct qp_reap {
	int pid;
	struct qp_scope_link **links;
	size_t nlinks;
	bool taken;		/* a thread is dropping them now */
};

struct qp_registry {
	pthread_mutex_t lock;
	pthread_cond_t report_done;	/* with lock: a pinned target's report is written */
	unsigned int reporting;		/* targets pinned for their report */
	qp_report_collect_fn report_collect;	/* NULL: no reports */
	qp_report_emit_fn report_emit;
	qp_report_commit_fn report_commit;
	void *report_arg;
	bool (*report_stop)(void);	/* true: stop writing reports (a shutdown is asked) */
	struct qp_usdt_def *defs;
	size_t ndefs;
	struct qp_scopes *scopes;
	struct qp_cpu *cpu;		/* NULL when CPU sampling is unavailable */
	struct qp_symbolizer *sym;	/* thread-safe: its own locks */
	struct qp_lifecycle *lc;	/* forks and execs; NULL when unavailable */
	struct qp_target **targets;
	size_t ntargets;
	/* processes being attached without the lock (attach_pid.c): reserved,
	 * not targets yet; only pid, maps and excludes_binary are read */
	struct qp_target **pending;
	size_t npending;
	struct qp_reap **reap;		/* detached, their links not yet dropped */
	size_t nreap;
	pthread_cond_t reaped;		/* with lock: an entry of reap is done */
	struct qp_binary **binaries;
	size_t nbinaries;
	struct qp_module **modules;
	size_t nmodules;
	uint64_t exited_forgotten;	/* exited targets dropped by qp_registry_trim */
	struct qp_watch *watch;		/* fanotify on --binary files, NULL without */
	struct qp_ring *ring;		/* the ring collector, NULL when it could not start */
	bool ring_default;		/* new targets use the ring (unless qprofd --collector bpf) */
	bool collector_flag;		/* ring_default was set by qprofd --collector/--ring */
	struct qp_reap_rec *libreap;	/* links of unloaded libraries (target_reap.c) */
	size_t nlibreap;
	unsigned int reapers;		/* threads releasing such links (report_done signals) */
	void **closing;			/* the batches those threads release */
	size_t nclosing;
	pthread_mutex_t reap_lock;	/* a batch's "closed" (its thread needs no r->lock) */
	pthread_cond_t reap_cond;
};

void qp_registry_init(struct qp_registry *r, struct qp_scopes *scopes);
void qp_registry_destroy(struct qp_registry *r); /* detaches everything */

/* Attach to process PID. Called WITHOUT r->lock: the pid is reserved under
 * it, its files are parsed and attached to without it, and the target is
 * published under it (attach_pid.c). On success a copy of the target goes
 * to OUT (when not NULL; free it with qp_target_view_free). On failure return -errno, an HTTP status in *status and a
 * message in err. */
int qp_registry_add_pid(struct qp_registry *r, int pid, const struct qp_attach_extra *extra,
			struct qp_target_view *out, int *status, char *err, size_t errlen);
/* Is PID a target, being attached, or being detached? Adoption (rescan,
 * fork, exec) leaves such a pid alone. r->lock held. */
bool qp_registry_busy(struct qp_registry *r, int pid);
/* The definition of a probe or span id, or NULL. */
const struct qp_usdt_def *qp_registry_def(const struct qp_registry *r, uint32_t id);
/* Attach to a --binary file. Called WITHOUT r->lock: the file is opened and
 * parsed before the lock is taken. On success a copy of the binary goes to
 * OUT (may be NULL; free it with qp_binary_view_free).
 * An unprivileged caller (extra NULL or !extra->privileged) may name only a
 * file some running process maps; anything else gets one 404 text that does
 * not tell whether the file exists. */
int qp_registry_add_binary(struct qp_registry *r, const char *path, const struct qp_attach_extra *extra,
			   struct qp_binary_view *out, int *status, char *err, size_t errlen);
/* Detach a --binary file (PATH as given or its realpath) and its processes,
 * after any report being written. -ENOENT when no binary has that path. */
int qp_registry_remove_binary(struct qp_registry *r, const char *path);
/* Drop the links and scope data of the targets removed (remove_pid,
 * remove_binary, trim): called WITHOUT r->lock after those, as soon as the
 * lock is released. An attach of such a pid waits for it. */
void qp_registry_reap(struct qp_registry *r);
/* r->lock held: wait (releasing it) until PID's removed links and data are
 * dropped. */
void qp_registry_wait_reaped(struct qp_registry *r, int pid);
/* Detach PID and drop its data (after any report being written: the lock
 * is released while waiting; its links and scope data go in
 * qp_registry_reap). -ENOENT when PID is not a target. A pid
 * attached by --pid that a --binary target also covers is handed over to
 * that binary (1 is returned): it stays a target with its links and data,
 * so no event is lost or counted twice; a second call detaches it. */
int qp_registry_remove_pid(struct qp_registry *r, int pid);
struct qp_target *qp_registry_find(struct qp_registry *r, int pid);
/* Is the process at PID now the running target of that pid (the same start
 * time, alive)? r->lock NOT held. 0: yes; -ESRCH: the target exited (PID
 * may be another process's by now); -ENOENT: no target has that pid.
 * Whatever reads a target's /proc checks it before and after reading: a
 * pid is not reused while its process lives. */
int qp_registry_target_live(struct qp_registry *r, int pid);

/* Keep at most MAX_EXITED exited targets (whose reports are written): the
 * oldest go first, counted in exited_forgotten. A --binary target on a
 * program started thousands of times must not grow without bound. */
void qp_registry_trim(struct qp_registry *r, size_t max_exited);

/* T is gone (exit, or exec of a new image): detach its probes, keep its
 * data, mark it exited with its report pending. */
void qp_target_exited(struct qp_registry *r, struct qp_target *t);

/* Periodic work, r->lock NOT held (taken inside): exits, discovery for
 * --binary, fresh maps; the symbolizer reads the mappings after the lock is
 * dropped. */
void qp_registry_poll(struct qp_registry *r, bool rescan);
/* A number no target record had before (thread-safe). */
uint64_t qp_target_serial(void);

/* The report writer (main.c's), called without r->lock. */
void qp_registry_set_reporter(struct qp_registry *r, qp_report_collect_fn collect, qp_report_emit_fn emit,
			      qp_report_commit_fn commit, void *arg);
/* STOP (NULL: none), asked between two reports: true ends the writing of
 * pending reports (qprofd is asked to stop; the ones left are logged). */
void qp_registry_set_report_stop(struct qp_registry *r, bool (*stop)(void));
/* Write the pending exit reports, r->lock NOT held: the targets are taken
 * and pinned under the lock, the lock is dropped, the reports are written
 * by a few threads at once, made durable and visible together (one sync of
 * the report filesystem for all of them), and report_dir is set under the
 * lock again. Returns how many. */
size_t qp_registry_write_reports(struct qp_registry *r);
/* The exec of a target T, in two steps. First, r->lock held on entry and
 * on return (dropped meanwhile, T pinned): read T's figures, returned for
 * the second step (NULL: no report). Then, r->lock NOT held, once the
 * process runs again: write them out; PIN (may be NULL), the target that
 * stands for the process now, pinned by qp_target_pin_report meanwhile,
 * gets report_dir if it has none and is unpinned. */
void *qp_target_collect_report(struct qp_registry *r, struct qp_target *t);
void qp_target_pin_report(struct qp_registry *r, struct qp_target *t);
void qp_registry_emit_report(struct qp_registry *r, void *figs, struct qp_target *pin);
/* r->lock held: wait (releasing it) until no report is being written. */
void qp_registry_wait_reports(struct qp_registry *r);

/* Does one of ADDRS (runtime site addresses of process PID) name a qprof
 * site called NAME? Takes and drops r->lock: for the CPU profile's scope=,
 * built without the lock. */
bool qp_registry_site_named(struct qp_registry *r, int pid, const uint64_t *addrs, size_t n,
			    const char *name);
/* The names of the qprof sites at ADDRS[0..N) of process PID (a 0 ends
 * them), in that order, each given to FN (r->lock held: FN copies it and
 * takes no lock); sites that name nothing are skipped. Returns how many FN got. */
size_t qp_registry_site_names(struct qp_registry *r, int pid, const uint64_t *addrs, size_t n,
			      void (*fn)(void *arg, const char *name), void *arg);
/* Make sure every pid in PIDS (from the BPF maps) is a known target when a
 * --binary attachment produced it. */
void qp_registry_adopt(struct qp_registry *r, int pid);

/* Attach T's pid to the qprof probes of the file at PATH (inode INO) even
 * if it does not map it yet (the kernel probes it when it is mapped): 1 when
 * attached, 0 when the file has no qprof probes or is gone, or -errno. */
int qp_target_attach_file(struct qp_registry *r, struct qp_target *t, const char *path, uint64_t ino);

/* PID was forked by PARENT at FORK_NS (CLOCK_MONOTONIC, 0: unknown): a
 * target at once when PARENT is a --binary target, with the parent's
 * mappings if its own are gone (it exited), on the parent's collector. */
void qp_registry_adopt_child(struct qp_registry *r, int pid, int parent, uint64_t fork_ns);

/* target_ring.c: attach the scope collector of T to the qprof probes of
 * MOD's file at PATH: with RING (and the file of marker ABI 2) the ring
 * collector's ring_register plus the BPF program of logs, else
 * every BPF program. Links go to T; returns how many or -errno. */
struct qp_module;
int qp_target_attach_scopes(struct qp_registry *r, struct qp_target *t, const char *path,
			    const struct qp_module *mod, uint64_t epoch, bool ring, char *err, size_t errlen);
/* "ring" or "bpf" into *INOUT; -EINVAL for anything else, or for the other
 * one when *INOUT holds one already. */
int qp_collector_parse(const char *s, enum qp_collector *inout);
/* New targets go on C (QP_COLLECTOR_DEFAULT: the ring, not asked). */
void qp_registry_set_collector(struct qp_registry *r, enum qp_collector c);
/* The collector a new target asks for through EXTRA (or the default), with
 * whether that was asked (POST "collector", qprofd --collector) or is the
 * default. */
struct qp_collector_choice qp_target_choice(const struct qp_registry *r, const struct qp_attach_extra *extra);
/* Note in CH (and NOTE, when empty) why the file at PATH does not run on
 * the ring it asked for: MISS. */
void qp_choice_missed(struct qp_collector_choice *ch, enum qp_ring_miss miss, const char *path, char *note,
		      size_t len);

/* target_heap.c: keep the heap profiler's targets in step with the
 * registry (r->lock NOT held): with ALL (--heap) every running target is
 * heap profiled; exited ones stop being traced, removed ones are
 * forgotten. H may be NULL. */
struct qp_heap;
void qp_registry_heap_sync(struct qp_registry *r, struct qp_heap *h, bool all);

/* Site descriptor at runtime address ADDR in target T, or NULL. r->lock
 * held; the result lives while T does (copy what is kept past the lock). */
const struct qp_site_info *qp_target_site(struct qp_registry *r, struct qp_target *t, uint64_t addr);

/* target_libs.c (r->lock held). Follow T's mappings to NOW (T->maps still
 * holds the previous list; the caller replaces it after): unloaded files
 * lose their links, new ones with qprof markers are probed. Returns the
 * number of files that came or went. */
int qp_target_libs_sync(struct qp_registry *r, struct qp_target *t, const struct qp_maps *now);
/* T's modules as views (targets_view.h): the files probed and the
 * libraries loaded after attach that were not. 0 or -ENOMEM. */
struct qp_module_view;
int qp_target_libs_view(const struct qp_target *t, struct qp_module_view **out, size_t *n);
/* The mapping of an unloaded library of T that held ADDR, or NULL. */
const struct qp_map *qp_target_gone_find(const struct qp_target *t, uint64_t addr);
/* NOW plus the old ranges of T's unloaded libraries where nothing is
 * mapped now, in address order: for the symbolizer. 0 or -ENOMEM. */
int qp_target_sym_maps(const struct qp_target *t, const struct qp_maps *now, struct qp_maps *out);
/* target_reap.c, r->lock NOT held: hand the links of unloaded libraries
 * to a thread that releases them (the kernel waits for grace periods)
 * without the lock. */
void qp_registry_reap_links(struct qp_registry *r);
/* r->lock NOT held: wait until no such thread runs. */
void qp_registry_wait_reapers(struct qp_registry *r);
#endif

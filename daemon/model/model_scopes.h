/* model_scopes.h - the scope model: the rows of GET /api/scopes as plain
 * structs. A row per (process, site, parent) of the scope aggregates, like a
 * call tree (a scope entered under two parents is two rows), then one per
 * mark site and one per counted USDT probe; over a window (the difference
 * of two snapshots, scope_window.h) or since attach. Names come from the
 * registry through a namer (target_names.h); every string is copied into
 * the model's arena, so exporters read it without any lock. No JSON, no I/O
 * of its own. */
#ifndef QPROF_MODEL_SCOPES_H
#define QPROF_MODEL_SCOPES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect/collect_cpu.h"
#include "collect/collect_scopes.h"
#include "model_src.h"
#include "targets/target_names.h"

struct qp_arena;
struct qp_hist_count;

enum qp_item_shape {
	QP_ITEM_TIMED,		/* a scope or span: durations */
	QP_ITEM_MARK,		/* a QPROF_MARK site: a count and a rate */
	QP_ITEM_PROBE,		/* a counted USDT probe: a count and a rate */
};

struct qp_scope_item {
	enum qp_item_shape shape;
	int32_t pid;
	const char *exe;	/* the basename of the process's executable ("" unknown) */
	const char *kind;	/* "scope", "span", "async_span" (QPROF_SPAN_BEGIN and its steps), "mark"
				 * (also a timed row whose site is a mark), "probe" */
	const char *name;	/* the site's or the span's name; "0x..." when the site is unknown */
	const char *site_kind;	/* qp_site_kind_name(), "span" or "unknown"; NULL for probes */
	const char *begin, *end;	/* spans: "provider:name" of each end; NULL otherwise */
	bool located;		/* a known qprof site: file, line, function are its */
	const char *file, *function;
	uint32_t line;
	uint64_t count;
	/* QP_ITEM_TIMED */
	uint64_t total_ns, min_ns, max_ns;
	double mean_ns, p50_ns, p90_ns, p99_ns, p999_ns;
	/* the probes' own cost the BPF collector took off each duration (0:
	 * the ring collector's row, or none): a figure of 0 is an instance
	 * measured at or below it, whose true length is < calibration_ns */
	uint64_t calibration_ns;
	const struct qp_hist_count *hist;	/* the non-empty buckets of bpf/hist.h, in order */
	size_t nhist;
	const char *parent;	/* the enclosing scope's name, NULL at top level */
	/* kernel events attributed to it while it was the innermost open
	 * scope of its thread (offcpu.h), for either collector; has_kernel
	 * false when they are not traced (no kernel events) */
	bool has_kernel;
	struct scope_kstats kernel;
	/* QP_ITEM_MARK and QP_ITEM_PROBE: per second of the window, or of the
	 * target's attached life without one */
	double rate_per_s;
};

/* The basename of an executable path, as rows carry it (the exe label of
 * /metrics): "" for NULL or "?" (unknown), else what follows the last '/'.
 * Points into PATH. */
const char *qp_exe_basename(const char *path);

struct qp_scope_model {
	size_t n;
	struct qp_scope_item *items;	/* timed rows by pid then total time, marks, probes */
	struct qp_arena *arena;		/* owns items and their strings */
};

/* What the model is made of: collector snapshots and the query. */
struct qp_scope_input {
	const struct qp_scope_snapshot *now, *base;	/* base NULL: since attach */
	const struct qp_mark_row *marks, *mbase;	/* sorted by key; mbase with base */
	size_t nmarks, nmbase;
	const struct qp_probe_row *probes, *pbase;
	size_t nprobes, npbase;
	int pid;		/* > 0: this process only */
	double window_s;	/* > 0 with base */
	uint64_t now_ms;	/* wall clock: a running target's rates since attach */
	/* the scopes' kernel figures, sorted by key (qp_cpu_kstats_read);
	 * kbase with base. kernel false: not traced, the rows have none */
	bool kernel;
	const struct qp_kstats_row *kst, *kbase;
	size_t nkst, nkbase;
};

/* The model of IN, named through NM (rows of processes that are no target
 * are left out; a process not adopted yet is simply not there yet).
 * 0 or -ENOMEM. Pure. */
int qp_scope_model_make(const struct qp_scope_input *in, const struct qp_namer *nm,
			struct qp_scope_model *out);
void qp_scope_model_free(struct qp_scope_model *m); /* accepts NULL and a zeroed model */

struct qp_scope_query {
	int pid;		/* > 0: this process only */
	unsigned int seconds;	/* > 0: the next SECONDS (qp_model_wait), else since attach */
	bool probes;		/* counted probes too (GET /api/scopes; not the exit report) */
	bool strict;		/* a mark or probe read failure fails (else: rows without them) */
};

/* Read the collector (twice for a window, waiting between through
 * qp_model_wait), name from a copy of the registry's names taken under its lock,
 * fill OUT. 0, -EIO (a map could
 * not be read), -ECANCELED (the daemon stops during the wait), -ENOMEM. */
int qp_scope_model_build(const struct qp_model_src *src, const struct qp_scope_query *q,
			 struct qp_scope_model *out);
#endif

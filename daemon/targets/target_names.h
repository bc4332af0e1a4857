/* target_names.h - what the model asks of the registry to name the rows of
 * its aggregates: is a pid a target, the site descriptor at a runtime
 * address, the definition of a span or counted probe. The namer only reads
 * what the registry holds: a read never adopts a process (the poll loop's
 * rescan, the fork and exec records and an attach do), so a process a
 * --binary target produced is not there until the poll loop made it a
 * target. The model sees only this table of functions, so its unit tests
 * can hand it a fake one. */
#ifndef QPROF_TARGET_NAMES_H
#define QPROF_TARGET_NAMES_H
#include <stdbool.h>
#include <stdint.h>
#include "common/elf_probes.h"

struct qp_registry;
struct qp_usdt_def;

struct qp_target_times {
	bool exited;
	uint64_t attached_ms, exited_ms;	/* wall clock */
	const char *exe;	/* its executable's path ("?" unknown; NULL from a namer
				 * without it), valid while the namer is */
	bool ring;		/* the ring collector times its scopes */
};

struct qp_namer {
	/* PID is a target: its times; false if not */
	bool (*target)(void *arg, uint32_t pid, struct qp_target_times *out);
	/* the qprof site at ADDR in target PID, NULL when unknown */
	const struct qp_site_info *(*site)(void *arg, uint32_t pid, uint64_t addr);
	/* a span's or counted probe's definition, NULL when unknown */
	const struct qp_usdt_def *(*def)(void *arg, uint32_t id);
	void *arg;
};

/* A namer over R. Pointers it returns stay valid while the caller holds
 * r->lock, which it does for as long as it uses the namer. */
void qp_registry_namer(struct qp_registry *r, struct qp_namer *out);

/* Snapshot, then build: the names a model needs, asked for first (no
 * lock), copied out of the registry under its lock in one short pass
 * (qp_names_fill), then read through a namer with no lock at all while the
 * model is built, sorted and written. The copy is immutable once filled
 * and owned by the one build that made it. A lookup of a name not asked
 * for answers "unknown". */
struct qp_names;
struct qp_names *qp_names_new(void);	/* NULL on no memory */
void qp_names_free(struct qp_names *n);	/* accepts NULL */
/* Ask for PID's target times, the site at ADDR of PID (a span's pseudo
 * site asks for its definition), a definition. Each returns 0 or -ENOMEM
 * (then the fill fails too). */
int qp_names_want_target(struct qp_names *n, uint32_t pid);
int qp_names_want_site(struct qp_names *n, uint32_t pid, uint64_t addr);
int qp_names_want_def(struct qp_names *n, uint32_t id);
/* Copy everything asked for out of R, taking r->lock for the pass: it
 * copies what is there and changes nothing (no adoption, no /proc read).
 * 0 or -ENOMEM. */
int qp_names_fill(struct qp_names *n, struct qp_registry *r);
/* The registry's number of targets at the fill. */
size_t qp_names_ntargets(const struct qp_names *n);
/* A namer over the filled copy: no lock, valid until qp_names_free. */
void qp_names_namer(struct qp_names *n, struct qp_namer *out);
#endif

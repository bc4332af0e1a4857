/* unwind.h - user stacks unwound from a copy: the registers and the top
 * of the user stack a CPU sample carried (bpf/profile.bpf.c) are unwound
 * with libdwfl, by the .eh_frame / .debug_frame CFI of each mapped file and,
 * where a file has none, by frame pointers (elfutils' x86-64 fallback).
 * One Dwfl per process, made from its /proc/PID/maps and kept; made again
 * when a sample's pc falls in no module it knows (a dlopen, an exec), at
 * most once a second per process. Everything read from the copy is bounds
 * checked: hostile stacks end the walk early, never read elsewhere. Walks
 * are bounded in frames and must climb the stack (a frame whose sp does not
 * rise ends it: a loop); both are counted. Most samples are walked by
 * rules cached per process (unwind_fast.c), giving the frames libdwfl
 * would; a sample whose walk meets a rule of another form (see
 * unwind_fast.h) goes to libdwfl whole.
 * No locking: the caller holds its own (collect_cpu.c's). */
#ifndef QPROF_UNWIND_H
#define QPROF_UNWIND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QP_UNWIND_REGS 17	/* x86-64 DWARF registers 0..16 (rip last) */

struct qp_unwind;

struct qp_unwind_opts {
	const char *proc_root;	/* NULL: /proc (tests and the fuzzer point it at fixtures) */
	unsigned int max_procs;	/* processes kept at once (0: 32); the least recent is dropped */
	unsigned int makes_per_s; /* Dwfls made a second at most, all processes (0: 16) */
	bool dwfl_only;		/* no fast path: every sample through libdwfl (tests) */
};

struct qp_unwind_stats {
	uint64_t unwound;	/* walks that reached the outermost frame */
	uint64_t partial;	/* walks that stopped early (copy too short, no CFI, bad data) */
	uint64_t truncated;	/* walks cut at the frame limit */
	uint64_t loops;		/* walks stopped because sp did not rise */
	uint64_t no_module;	/* the sample's pc is in no file of the process */
	uint64_t refreshes;	/* Dwfl made again for a process */
	uint64_t errors;	/* no Dwfl could be made (the process is gone, ...) */
	uint64_t deferred;	/* none made: 16 were made in the last second already */
	/* the walks above (unwound + partial + truncated + loops), by path: */
	uint64_t fast;		/* by the cached rules (unwind_fast.c) */
	uint64_t slow;		/* by libdwfl (a rule not cached, see unwind_fast.h) */
	uint64_t fast_resets;	/* a process's rule cache emptied because full */
	uint64_t files_refused;	/* mapped files not handed to libdwfl: cut or changed while copied, not ELF, too big */
};

/* One sample: registers in DWARF order, STACK[0..LEN) copied from regs[7].
 * KNOWN: bit i set when regs[i] holds the register (0: all of them); the
 * others are undefined to the CFI, so a frame whose rules need one ends
 * the walk instead of using a made-up value (libdwfl then takes that frame
 * for the outermost: the walk may count as complete). sp (7) and ip (16)
 * must be known. */
struct qp_unwind_in {
	uint32_t pid, tid;
	const uint64_t *regs;	/* QP_UNWIND_REGS */
	uint32_t known;
	const uint8_t *stack;
	size_t len;
};

struct qp_unwind *qp_unwind_new(const struct qp_unwind_opts *opts); /* NULL on OOM */
void qp_unwind_free(struct qp_unwind *u); /* accepts NULL */

/* Up to MAX return addresses, leaf first (the leaf is the sample's pc), into
 * IPS; *N set. Returns 1 when the walk reached the outermost frame, 0 when it
 * stopped early (the frames found are kept), -errno when the process could
 * not be read at all (*N = 0). */
int qp_unwind_stack(struct qp_unwind *u, const struct qp_unwind_in *in, uint64_t *ips, size_t max,
		    size_t *n);
/* Forget PID's Dwfl (detach, exit). */
void qp_unwind_forget(struct qp_unwind *u, uint32_t pid);
void qp_unwind_stats(const struct qp_unwind *u, struct qp_unwind_stats *out);
#endif

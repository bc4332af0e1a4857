/* unwind_fast.h - the fast path of unwind.c: a walk of a sample's stack copy
 * by frame rules cached per process (keyed by the address looked up), each
 * rule read once from libdw and kept only when it is one of the simple
 * forms a compiler emits (CFA = rsp or rbp + constant, return address at
 * CFA + constant or undefined, rbp same / undefined / at CFA + constant,
 * rsp = CFA). The walk mirrors libdwfl's (elfutils 0.188 frame_unwind.c)
 * and unwind.c's frame callback step by step, so that a sample it accepts
 * gets the very frames libdwfl would give; any other rule (an expression, a
 * signal frame, no CFI where libdwfl would take frame pointers, a pc in no
 * module) sends the sample to libdwfl whole. No locking: unwind.c's caller
 * holds its own. */
#ifndef QPROF_UNWIND_FAST_H
#define QPROF_UNWIND_FAST_H
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "unwind.h"

#define QP_UFAST_SLOTS_MAX 65536	/* per process; full at 3/4: emptied, counted */

/* How a walk ended; SLOW: not walked here, libdwfl must do the sample. */
enum qp_ufast_end { QP_UFAST_SLOW, QP_UFAST_COMPLETE, QP_UFAST_BAD, QP_UFAST_DEPTH, QP_UFAST_LOOP };

struct qp_ufast;	/* one process's rules, dropped with its Dwfl */

void qp_ufast_free(struct qp_ufast *c);	/* accepts NULL */

/* Walk IN through DWFL's modules, rules cached in *CACHE (made on first
 * use). Up to MAX return addresses into IPS, *N set (whatever the end; SLOW
 * leaves garbage the caller overwrites). *RESETS counts caches emptied
 * because full. */
enum qp_ufast_end qp_ufast_walk(struct qp_ufast **cache, Dwfl *dwfl, const struct qp_unwind_in *in,
				uint64_t *ips, size_t max, size_t *n, uint64_t *resets);

/* One word of the copy at ADDR; false outside it (or crossing its end).
 * The copy starts at the sample's sp, regs[7], known or not. Both paths
 * read through this. */
static inline bool qp_unwind_copy_read(const struct qp_unwind_in *in, uint64_t addr, uint64_t *out)
{
	uint64_t sp = in->regs[7];

	if (addr < sp || in->len < sizeof(*out) || addr - sp > in->len - sizeof(*out))
		return false;
	memcpy(out, in->stack + (addr - sp), sizeof(*out));
	return true;
}
#endif

/* fuzz_cfi_table.c - libFuzzer target for the CFI table compiler
 * (daemon/collect/cfi_table.c) and the bounded walker over its output
 * (cfi_walk.c). The input is an ELF image (the seeds are real programs, so
 * mutations give truncated sections, FDEs pointing anywhere, CIEs that
 * loop, DW_CFA streams of garbage). It is compiled from memory; a table it
 * accepts must be sorted and merged, each row found by its own first
 * address, its packed form (the kernel's) must give each row's rule at the
 * row's first and last byte, and a walk over it, on a stack made of the
 * input's bytes, must stay within its frame limit. Refusals are counted and printed at exit. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/cfi_pack.h"
#include "collect/cfi_table.h"
#include "collect/cfi_walk.h"

static uint64_t accepted, refused, rows_total;
static struct qp_cfi_space space;

struct stk {
	const uint8_t *d;
	size_t n;
	uint64_t sp;
};

static bool stk_read(void *ctx, uint64_t addr, uint64_t *out)
{
	const struct stk *s = ctx;

	if (addr < s->sp || s->n < 8 || addr - s->sp > s->n - 8)
		return false;
	memcpy(out, s->d + (addr - s->sp), 8);
	return true;
}

static void print_counts(void)
{
	fprintf(stderr, "fuzz_cfi_table: accepted %llu, refused %llu, rows %llu\n", (unsigned long long)accepted,
		(unsigned long long)refused, (unsigned long long)rows_total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct qp_cfi_table *t;
	struct qp_cfi_stats st;
	uint8_t *img;
	Elf *elf;

	if (!init) {
		elf_version(EV_CURRENT);
		atexit(print_counts);
		init = 1;
	}
	img = malloc(size ? size : 1);	/* libelf may keep pointers into it */
	if (!img)
		return 0;
	memcpy(img, data, size);
	elf = elf_memory((char *)img, size);
	if (!elf) {
		free(img);
		return 0;
	}
	t = qp_cfi_compile(elf, &st);
	if (!t) {
		refused++;
	} else {
		uint64_t ips[QP_CFI_WALK_FRAMES];
		struct stk s = { data, size, 0x7ffd00000000ull };
		struct qp_cfi_regs r = { .sp = s.sp, .bp = s.sp + 64, .sp_known = true, .bp_known = true };
		size_t n, k;

		accepted++;
		rows_total += t->nrows;
		if (t->nrows > QP_CFI_ROWS_MAX || t->st.rows != t->nrows)
			abort();
		for (k = 1; k < t->nrows; k++)
			if (t->rows[k - 1].addr >= t->rows[k].addr)
				abort();
		/* the last row is NONE at the end: the one address not found */
		if (!t->nrows || t->base + t->rows[t->nrows - 1].addr != t->end ||
		    QP_CFI_KIND(t->rows[t->nrows - 1].kind) != QP_CFI_NONE)
			abort();
		for (k = 0; k + 1 < t->nrows; k++)
			if (qp_cfi_lookup(t, t->base + t->rows[k].addr) != &t->rows[k] ||
			    qp_cfi_lookup(t, t->base + t->rows[k + 1].addr - 1) != &t->rows[k])
				abort();
		/* the kernel's packed form: the same rule at each row's ends */
		{
			struct qp_cfi_packed p;
			struct qp_cfi_row got;
			uint64_t span = t->end - t->base;

			if (qp_cfi_pack(t, &p))
				abort();
			for (k = 0; k + 1 < t->nrows; k++) {
				const struct qp_cfi_row *r = &t->rows[k];
				uint64_t a[2] = { r->addr, (uint64_t)t->rows[k + 1].addr - 1 };
				int e;

				for (e = 0; e < 2; e++)
					if (!qp_cfi_packed_lookup(&p, span, a[e], &got) ||
					    ((got.kind != r->kind || got.cfa_off != r->cfa_off || got.bp_off != r->bp_off) &&
					     !(p.rules_lost && !got.kind && !got.cfa_off && !got.bp_off)))
						abort();
			}
			if (qp_cfi_packed_lookup(&p, span, span, &got))
				abort();
			qp_cfi_packed_free(&p);
		}
		/* a walk: the table mapped at its own vaddrs, pcs from the stack */
		space.n = 1;
		space.map[0] = (struct qp_cfi_map){ .start = t->base, .end = t->end, .bias = 0, .t = t };
		for (k = 0; k < 4 && k < t->nrows; k++) {
			r.pc = t->base + t->rows[(k * 7919u) % t->nrows].addr;
			qp_cfi_walk(&space, &r, stk_read, &s, ips, QP_CFI_WALK_FRAMES, &n, NULL);
			if (n > QP_CFI_WALK_FRAMES)
				abort();
		}
		qp_cfi_table_free(t);
	}
	elf_end(elf);
	free(img);
	return 0;
}

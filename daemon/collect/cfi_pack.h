/* cfi_pack.h - a compiled CFI table (cfi_table.h) in the packed form the
 * kernel walks (bpf/cfiwalk.h): 4-byte rows instead of 8, found in a
 * bucket of a few rows instead of by a search over the whole table.
 * The table's address span is cut into buckets of 2^shift bytes; an index
 * gives each bucket's first row; a row holds its offset inside its own
 * bucket (16 bits) and the number of its rule (16 bits) in the table's
 * list of distinct rules (a rule is a row less its address: most rows of
 * a table share a few hundred rules). So a lookup reads two index words,
 * a few rows next to each other and one rule: about three cache lines,
 * where the 8-byte rows cost one per halving of the whole table. The
 * shift is the smallest (down to 2^4 bytes, up to 2^16) that keeps the
 * index within an eighth of the rows. qp_cfi_packed_lookup is the walker's
 * search in C (the tests and the fuzzer check it finds each address's
 * rule as qp_cfi_lookup does). */
#ifndef QPROF_CFI_PACK_H
#define QPROF_CFI_PACK_H
#include <stdbool.h>
#include <stdint.h>
#include "cfi_table.h"

struct qp_cfi_packed {
	uint32_t *words;	/* the index (nb + 1 words), the rows (nrows), the rules (nrules) */
	uint32_t nwords;
	uint32_t nb;		/* buckets */
	uint32_t nrows, nrules;
	uint32_t rows_at, rules_at;	/* word offsets into words */
	uint8_t shift;
	uint32_t rules_lost;	/* rows whose rule found no number (over 65,536 distinct): FALLBACK */
};

/* Packs T into *P. 0 or -errno (ENOMEM; E2BIG: no bucket size fits). */
int qp_cfi_pack(const struct qp_cfi_table *t, struct qp_cfi_packed *p);
void qp_cfi_packed_free(struct qp_cfi_packed *p);	/* accepts a zeroed one */

/* The rule of REL (vaddr - the table's base, below its span) into *OUT
 * (its addr left 0), as the BPF walker finds it; false outside the table. */
bool qp_cfi_packed_lookup(const struct qp_cfi_packed *p, uint64_t span, uint64_t rel, struct qp_cfi_row *out);

/* a rule word: cfa_off | kind << 16 | bp_off << 24 (cfiwalk.h) */
static inline uint32_t qp_cfi_rule_word(const struct qp_cfi_row *r)
{
	return (uint32_t)r->cfa_off | (uint32_t)r->kind << 16 | (uint32_t)(uint8_t)r->bp_off << 24;
}
#endif

/* cfi_pack.c - see cfi_pack.h. The rules are numbered through a small
 * open-addressing hash while the rows are packed; rule 0 is FALLBACK
 * (the word 0), so a rule over the 65,536 a table can number falls back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cfi_pack.h"

#define SHIFT_MIN 4
#define SHIFT_MAX 16		/* a row's offset in its bucket is 16 bits */
#define RULES_MAX 65536u

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

struct rule_set {
	uint32_t *word;
	uint32_t *num;		/* UINT32_MAX: an empty slot */
	uint32_t mask;
};

/* the number of rule word W, given the next when new; RULES_MAX when full */
static uint32_t rule_num(struct rule_set *s, uint32_t w, uint32_t *rules, uint32_t *nrules)
{
	uint32_t h = hash32(w) & s->mask;

	while (s->num[h] != UINT32_MAX) {
		if (s->word[h] == w)
			return s->num[h];
		h = (h + 1) & s->mask;
	}
	if (*nrules >= RULES_MAX)
		return RULES_MAX;
	s->word[h] = w;
	s->num[h] = *nrules;
	rules[*nrules] = w;
	return (*nrules)++;
}

int qp_cfi_pack(const struct qp_cfi_table *t, struct qp_cfi_packed *p)
{
	uint64_t span = t->end - t->base;
	struct rule_set s = { 0 };
	uint32_t *rules = NULL, nrules = 0, b, k, want;
	uint8_t shift;
	size_t cap;

	memset(p, 0, sizeof(*p));
	if (!t->nrows || t->rows[0].addr)
		return -EINVAL;	/* the search takes row 0 to start the table */
	for (k = 1; k < t->nrows; k++)
		if (t->rows[k - 1].addr >= t->rows[k].addr)
			return -EINVAL;	/* rows out of order: the index would send lookups astray */
	if (t->nrows > QP_CFI_ROWS_MAX || span > UINT32_MAX)
		return -E2BIG;
	/* the smallest bucket whose index stays within an eighth of the rows */
	want = t->nrows / 8 ? t->nrows / 8 : 1;
	for (shift = SHIFT_MIN; shift < SHIFT_MAX; shift++)
		if ((span >> shift) + 1 <= want)
			break;
	p->shift = shift;
	p->nb = (uint32_t)(span >> shift) + 1;
	p->nrows = t->nrows;
	/* the hash: a power of two at least twice the distinct rules can be */
	cap = 1024;
	while (cap < 2 * (size_t)(t->nrows < RULES_MAX ? t->nrows : RULES_MAX))
		cap *= 2;
	s.word = malloc(cap * sizeof(*s.word));
	s.num = malloc(cap * sizeof(*s.num));
	rules = malloc((t->nrows < RULES_MAX ? t->nrows : RULES_MAX) * sizeof(*rules) + sizeof(*rules));
	p->words = malloc(((size_t)p->nb + 1 + t->nrows + RULES_MAX) * sizeof(*p->words));
	if (!s.word || !s.num || !rules || !p->words) {
		free(s.word);
		free(s.num);
		free(rules);
		free(p->words);
		p->words = NULL;
		return -ENOMEM;
	}
	s.mask = (uint32_t)cap - 1;
	memset(s.num, 0xff, cap * sizeof(*s.num));
	rule_num(&s, 0, rules, &nrules);	/* rule 0: FALLBACK */
	p->rows_at = p->nb + 1;
	/* the index: the first row at or past each bucket's start */
	k = 0;
	for (b = 0; b <= p->nb; b++) {
		uint64_t start = (uint64_t)b << shift;

		while (k < t->nrows && t->rows[k].addr < start)
			k++;
		p->words[b] = k;
	}
	for (k = 0; k < t->nrows; k++) {
		const struct qp_cfi_row *r = &t->rows[k];
		uint32_t n = rule_num(&s, qp_cfi_rule_word(r), rules, &nrules);

		if (n == RULES_MAX) {
			n = 0;
			p->rules_lost++;
		}
		p->words[p->rows_at + k] = (r->addr & ((1u << shift) - 1)) | n << 16;
	}
	p->nrules = nrules;
	p->rules_at = p->rows_at + t->nrows;
	memcpy(p->words + p->rules_at, rules, nrules * sizeof(*rules));
	p->nwords = p->rules_at + nrules;
	free(s.word);
	free(s.num);
	free(rules);
	return 0;
}

void qp_cfi_packed_free(struct qp_cfi_packed *p)
{
	free(p->words);
	p->words = NULL;
}

bool qp_cfi_packed_lookup(const struct qp_cfi_packed *p, uint64_t span, uint64_t rel, struct qp_cfi_row *out)
{
	uint32_t b, lo, hi, roff, w;
	int k;

	if (rel >= span)
		return false;
	b = (uint32_t)(rel >> p->shift);
	if (b >= p->nb)
		return false;
	roff = (uint32_t)(rel & ((1u << p->shift) - 1));
	/* rows [idx[b], idx[b + 1]) start in this bucket; the row before them
	 * (from an earlier bucket) covers its start. Row 0 is at 0. */
	lo = p->words[b];
	hi = p->words[b + 1];
	if (lo > hi || hi > p->nrows)
		return false;
	if (lo)
		lo--;
	else if (hi == 0)
		return false;
	/* rows[lo] covers roff (or starts before the bucket), rows[hi] does not */
	for (k = 0; k < 17 && hi - lo > 1; k++) {
		uint32_t mid = lo + (hi - lo) / 2;

		if ((p->words[p->rows_at + mid] & 0xffff) <= roff)
			lo = mid;
		else
			hi = mid;
	}
	if (hi - lo != 1)
		return false;
	w = p->words[p->rows_at + lo] >> 16;
	if (w >= p->nrules)
		return false;
	w = p->words[p->rules_at + w];
	memset(out, 0, sizeof(*out));
	out->cfa_off = (uint16_t)(w & 0xffff);
	out->kind = (uint8_t)(w >> 16);
	out->bp_off = (int8_t)(uint8_t)(w >> 24);
	return true;
}

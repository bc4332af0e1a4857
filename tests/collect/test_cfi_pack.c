/* test_cfi_pack.c - the packed CFI tables the kernel walks (cfi_pack.c):
 * at every address of glibc's, libstdc++'s and this program's tables, and
 * of random tables (dense, sparse, spans up to 4 GiB, more distinct rules
 * than a table can number), the packed lookup must give exactly the rule
 * qp_cfi_lookup gives, and nothing outside the span; the bucket size must
 * keep the index within an eighth of the rows; the packed form must take
 * at most 4.5 bytes a row on the real files. No root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testlib.h"
#include "collect/cfi_pack.h"
#include "collect/cfi_table.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static bool same_rule(const struct qp_cfi_row *a, const struct qp_cfi_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->bp_off == b->bp_off;
}

/* REL's rule both ways; counts a difference */
static uint64_t differ;

static void check_at(const struct qp_cfi_table *t, const struct qp_cfi_packed *p, uint64_t rel)
{
	const struct qp_cfi_row *r = qp_cfi_lookup(t, t->base + rel);
	struct qp_cfi_row got;
	bool ok = qp_cfi_packed_lookup(p, t->end - t->base, rel, &got);

	if (ok != (r != NULL) || (r && (p->rules_lost ? !(same_rule(r, &got) || got.kind == 0) : !same_rule(r, &got)))) {
		if (differ++ < 5)
			fprintf(stderr, "rel 0x%llx: table %s kind %d cfa %d bp %d, packed %s kind %d cfa %d bp %d\n",
				(unsigned long long)rel, r ? "found" : "none", r ? r->kind : -1, r ? r->cfa_off : -1,
				r ? r->bp_off : -1, ok ? "found" : "none", got.kind, got.cfa_off, got.bp_off);
	}
}

/* every address of T's span (or every row's edges and STRIDE-spaced
 * addresses when it is large), and past both ends */
static void check_table(const struct qp_cfi_table *t, uint64_t stride, const char *name)
{
	struct qp_cfi_packed p;
	uint64_t span = t->end - t->base, a;
	uint32_t k;

	CHECK_INT(qp_cfi_pack(t, &p), 0);
	if (!p.words)
		return;
	CHECK(p.nb <= (t->nrows / 8 ? t->nrows / 8 : 1) || p.shift == 16);
	CHECK(p.shift >= 4 && p.shift <= 16);
	CHECK_INT(p.nwords, p.nb + 1 + p.nrows + p.nrules);
	differ = 0;
	for (a = 0; a < span; a += stride)
		check_at(t, &p, a);
	for (k = 0; k < t->nrows; k++) {
		check_at(t, &p, t->rows[k].addr);
		if (t->rows[k].addr)
			check_at(t, &p, t->rows[k].addr - 1);
	}
	check_at(t, &p, span);
	check_at(t, &p, span + 1);
	check_at(t, &p, (uint64_t)1 << 32);
	CHECK_INT(differ, 0);
	if (name)
		printf("%s: %u rows, %u rules, shift %u, %u buckets: %u words (%.2f bytes a row; 8 unpacked)\n", name,
		       t->nrows, p.nrules, p.shift, p.nb, p.nwords, 4.0 * p.nwords / t->nrows);
	qp_cfi_packed_free(&p);
}

static void check_file(const char *path, double max_bytes_per_row)
{
	struct qp_cfi_table *t;
	struct qp_cfi_packed p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0) {
		printf("%s: not here (%s), skipped\n", path, strerror(errno));
		return;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf != NULL);
	t = qp_cfi_compile(elf, NULL);
	CHECK(t != NULL);
	if (t) {
		check_table(t, 1, path);
		CHECK_INT(qp_cfi_pack(t, &p), 0);
		CHECK(4.0 * p.nwords <= max_bytes_per_row * t->nrows);
		CHECK_INT(p.rules_lost, 0);
		qp_cfi_packed_free(&p);
	}
	qp_cfi_table_free(t);
	elf_end(elf);
	close(fd);
}

/* a random table: N rows, gaps of about GAP bytes, NRULES distinct rules */
static struct qp_cfi_table *random_table(uint32_t n, uint64_t gap, uint32_t nrules)
{
	struct qp_cfi_table *t = calloc(1, sizeof(*t));
	uint64_t a = 0;
	uint32_t k;

	t->rows = calloc(n, sizeof(*t->rows));
	t->nrows = n;
	t->base = 0x400000;
	for (k = 0; k < n; k++) {
		uint32_t r = (uint32_t)(rnd() % nrules);

		t->rows[k].addr = (uint32_t)a;
		t->rows[k].kind = (uint8_t)(2 + r % 5) | (uint8_t)((r / 5) % 3) << 4;
		t->rows[k].cfa_off = (uint16_t)(r / 15);
		t->rows[k].bp_off = (int8_t)((r / 5) % 3 == 2 ? -2 - (int)(rnd() % 3) : 0);
		a += 1 + rnd() % (2 * gap);
		if (a > UINT32_MAX - 1)
			a = UINT32_MAX - 1;
	}
	t->rows[n - 1].kind = QP_CFI_NONE;
	t->end = t->base + t->rows[n - 1].addr;
	return t;
}

int main(void)
{
	struct qp_cfi_table *t;
	struct qp_cfi_packed p;
	char self[4096];
	ssize_t len;

	elf_version(EV_CURRENT);
	check_file("/lib/x86_64-linux-gnu/libc.so.6", 4.5);
	check_file("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 4.5);
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(len > 0);
	self[len > 0 ? len : 0] = 0;
	check_file(self, 8.0);	/* a small table: its index and rules weigh more */

	/* dense, medium, sparse, one row a 64 KiB bucket and more */
	t = random_table(20000, 8, 300);
	check_table(t, 1, "dense");
	qp_cfi_table_free(t);
	t = random_table(5000, 2000, 40);
	check_table(t, 7, "sparse");
	qp_cfi_table_free(t);
	t = random_table(3000, 1000000, 10);	/* a span near 4 GiB: shift 16 */
	check_table(t, 65537, "wide");
	CHECK_INT(qp_cfi_pack(t, &p), 0);
	CHECK_INT(p.shift, 16);
	qp_cfi_packed_free(&p);
	qp_cfi_table_free(t);
	t = random_table(2, 100, 1);	/* the smallest: one row and its end */
	check_table(t, 1, "two rows");
	qp_cfi_table_free(t);
	/* more rules than 16 bits can number: the rest fall back, counted */
	t = random_table(200000, 4, 150000);
	CHECK_INT(qp_cfi_pack(t, &p), 0);
	CHECK(p.rules_lost > 0);
	CHECK_INT(p.nrules, 65536);
	qp_cfi_packed_free(&p);
	check_table(t, 1, NULL);
	qp_cfi_table_free(t);
	/* rows out of order are refused (a fuzzed file made the compiler give some) */
	t = random_table(10, 10, 3);
	t->rows[5].addr = t->rows[3].addr;
	CHECK_INT(qp_cfi_pack(t, &p), -EINVAL);
	qp_cfi_table_free(t);
	/* a table not starting at its base is refused */
	t = random_table(10, 10, 3);
	t->rows[0].addr = 1;
	CHECK_INT(qp_cfi_pack(t, &p), -EINVAL);
	qp_cfi_table_free(t);
	return test_done("test_cfi_pack");
}

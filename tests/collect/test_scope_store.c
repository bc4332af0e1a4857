/* test_scope_store.c - the daemon's copy of the kernel's scope chunks
 * (daemon/collect/scope_store.c): chunks made the way scopes.bpf.c's
 * record() makes them fold back into exactly the figures of the whole
 * per-pair histogram (count, sum, min, max, every bucket); a newer copy of a
 * chunk replaces the older; processes are forgotten and the table shrinks;
 * a copy torn by a landing hit still gives bounds that hold. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/types.h>
#include "collect/scope_store.h"
#include "testlib.h"

/* record() of scopes.bpf.c, in user space: DUR into chunk set CH[] */
static void sim_record(struct scope_chunk *ch, uint64_t dur)
{
	unsigned int idx = qprof_hist_index(dur);
	struct scope_chunk *c = &ch[idx >> QPROF_HIST_SUB_BITS];

	if (dur < c->min_ns)
		c->min_ns = dur;
	if (dur > c->max_ns)
		c->max_ns = dur;
	c->sum_ns += dur;
	c->hist[idx & (QPROF_HIST_SUB - 1)]++;
}

/* the per-pair aggregate of the old per-CPU layout, for comparison */
static void ref_record(struct scope_stats *s, uint64_t dur)
{
	if (!s->count || dur < s->min_ns)
		s->min_ns = dur;
	if (dur > s->max_ns)
		s->max_ns = dur;
	s->count++;
	s->sum_ns += dur;
	s->hist[qprof_hist_index(dur)]++;
}

static void chunks_empty(struct scope_chunk *ch)
{
	memset(ch, 0, QPROF_CHUNKS * sizeof(*ch));
	for (unsigned int i = 0; i < QPROF_CHUNKS; i++)
		ch[i].min_ns = ~0ULL;
}

/* put the chunks of CH that were hit, as the poll would */
static void put_hit(struct qp_scope_store *st, uint32_t tgid, uint64_t site, uint64_t parent,
		    const struct scope_chunk *ch)
{
	struct scope_chunk_key k = { .tgid = tgid, .site = site, .parent = parent };

	for (k.chunk = 0; k.chunk < QPROF_CHUNKS; k.chunk++)
		if (ch[k.chunk].max_ns)
			CHECK_INT(qp_scope_store_put(st, &k, &ch[k.chunk]), 0);
}

static void test_exact(void)
{
	static struct scope_chunk ch[QPROF_CHUNKS];
	static struct scope_stats ref;
	const uint64_t durs[] = { 1, 31, 32, 63, 64, 100, 150, 151, 3000, 3001, 99999,
				  1000000, 123456789, 70000000000ULL, 1ULL << 40 };
	struct qp_scope_store st;
	struct qp_scope_snapshot snap = { 0 };
	uint64_t x = 88172645463325252ULL;
	size_t i;

	chunks_empty(ch);
	memset(&ref, 0, sizeof(ref));
	for (i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		sim_record(ch, durs[i]);
		ref_record(&ref, durs[i]);
	}
	for (i = 0; i < 100000; i++) {	/* log-uniform, 1 ns .. 2^40 ns */
		uint64_t d;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		d = (x >> 24) >> (x % 40);
		sim_record(ch, d + 200);
		ref_record(&ref, d + 200);
	}
	qp_scope_store_init(&st);
	put_hit(&st, 7, 0x1000, 0x2000, ch);
	CHECK_INT(qp_scope_store_snapshot(&st, 0, &snap), 0);
	CHECK_INT(snap.n, 1);
	CHECK_INT(snap.rows[0].key.tgid, 7);
	CHECK_INT(snap.rows[0].key.site, 0x1000);
	CHECK_INT(snap.rows[0].key.parent, 0x2000);
	CHECK_INT(snap.rows[0].stats.count, ref.count);
	CHECK_INT(snap.rows[0].stats.sum_ns, ref.sum_ns);
	CHECK_INT(snap.rows[0].stats.min_ns, 1);
	CHECK_INT(snap.rows[0].stats.max_ns, 1ULL << 40);
	CHECK(!memcmp(snap.rows[0].stats.hist, ref.hist, sizeof(ref.hist)));
	CHECK_INT(qp_scope_store_chunks(&st), QPROF_CHUNKS);
	qp_scope_snapshot_free(&snap);

	/* a later copy of a chunk (two more hits, one bucket) replaces the one held */
	sim_record(ch, 150);
	sim_record(ch, 151);
	put_hit(&st, 7, 0x1000, 0x2000, ch);
	CHECK_INT(qp_scope_store_snapshot(&st, 7, &snap), 0);
	CHECK_INT(snap.n, 1);
	CHECK_INT(snap.rows[0].stats.count, ref.count + 2);
	CHECK_INT(snap.rows[0].stats.sum_ns, ref.sum_ns + 301);
	CHECK_INT(snap.rows[0].stats.hist[qprof_hist_index(150)], ref.hist[qprof_hist_index(150)] + 2);
	CHECK_INT(qp_scope_store_chunks(&st), QPROF_CHUNKS);
	qp_scope_snapshot_free(&snap);
	CHECK_INT(qp_scope_store_snapshot(&st, 8, &snap), 0);
	CHECK_INT(snap.n, 0);
	qp_scope_snapshot_free(&snap);
	qp_scope_store_free(&st);
}

static void test_rows_forget(void)
{
	struct scope_chunk ch[QPROF_CHUNKS];
	struct scope_chunk_key bad = { .tgid = 1, .chunk = QPROF_CHUNKS };
	struct qp_scope_store st;
	struct qp_scope_snapshot snap = { 0 };
	uint32_t i;

	qp_scope_store_init(&st);
	CHECK_INT(qp_scope_store_put(&st, &bad, &ch[0]), -EINVAL);
	/* 3000 pairs of process 1 (one chunk), 10 of process 2 (two chunks) */
	chunks_empty(ch);
	sim_record(ch, 500);
	for (i = 0; i < 3000; i++)
		put_hit(&st, 1, 0x5000 + 16 * (i % 1500), i / 1500, ch);
	sim_record(ch, 5000000);
	for (i = 0; i < 10; i++)
		put_hit(&st, 2, 0x9000 - 16 * i, 0, ch);
	CHECK_INT(qp_scope_store_chunks(&st), 3000 + 20);
	CHECK_INT(qp_scope_store_snapshot(&st, 0, &snap), 0);
	CHECK_INT(snap.n, 3010);
	/* sorted by (tgid, site, parent) */
	CHECK_INT(snap.rows[0].key.site, 0x5000);
	CHECK_INT(snap.rows[0].key.parent, 0);
	CHECK_INT(snap.rows[1].key.site, 0x5000);
	CHECK_INT(snap.rows[1].key.parent, 1);
	CHECK_INT(snap.rows[3000].key.tgid, 2);
	CHECK_INT(snap.rows[3000].key.site, 0x9000 - 16 * 9);
	CHECK_INT(snap.rows[3009].stats.count, 2);
	CHECK_INT(snap.rows[3009].stats.min_ns, 500);
	CHECK_INT(snap.rows[3009].stats.max_ns, 5000000);
	CHECK_INT(snap.rows[3009].stats.sum_ns, 5000500);
	qp_scope_snapshot_free(&snap);

	CHECK_INT(qp_scope_store_forget(&st, 1), 3000);
	CHECK_INT(qp_scope_store_chunks(&st), 20);
	CHECK_INT(st.live, 10);
	CHECK_INT(st.pairs.n, 10);	/* the empty pairs were dropped from the table */
	CHECK_INT(qp_scope_store_snapshot(&st, 0, &snap), 0);
	CHECK_INT(snap.n, 10);
	CHECK_INT(snap.rows[0].key.tgid, 2);
	CHECK_INT(snap.rows[0].stats.count, 2);
	qp_scope_snapshot_free(&snap);
	CHECK_INT(qp_scope_store_forget(&st, 1), 0);
	/* the process comes back: its pairs start again */
	put_hit(&st, 1, 0x5000, 0, ch);
	CHECK_INT(qp_scope_store_snapshot(&st, 1, &snap), 0);
	CHECK_INT(snap.n, 1);
	CHECK_INT(snap.rows[0].stats.count, 2);
	qp_scope_snapshot_free(&snap);
	qp_scope_store_free(&st);
}

/* one key in both maps (made in the allocating one while the preallocated
 * one was full, then in that one once room was freed): both kept, summed */
static void test_both_maps(void)
{
	struct scope_chunk a[QPROF_CHUNKS], b[QPROF_CHUNKS];
	struct scope_chunk_key k = { .tgid = 3, .site = 0x100, .parent = 0 };
	struct qp_scope_store st;
	struct qp_scope_snapshot snap = { 0 };

	chunks_empty(a);
	chunks_empty(b);
	sim_record(a, 700);
	sim_record(a, 710);
	sim_record(b, 690);
	sim_record(b, 90000);
	qp_scope_store_init(&st);
	k.chunk = qprof_hist_index(700) >> 5;
	CHECK_INT(qp_scope_store_put(&st, &k, &a[k.chunk]), 0);
	k.chunk |= QPROF_CHUNK_MORE;
	CHECK_INT(qp_scope_store_put(&st, &k, &b[qprof_hist_index(690) >> 5]), 0);
	k.chunk = (qprof_hist_index(90000) >> 5) | QPROF_CHUNK_MORE;
	CHECK_INT(qp_scope_store_put(&st, &k, &b[qprof_hist_index(90000) >> 5]), 0);
	k.chunk = QPROF_CHUNKS | QPROF_CHUNK_MORE;
	CHECK_INT(qp_scope_store_put(&st, &k, &b[0]), -EINVAL);
	CHECK_INT(qp_scope_store_chunks(&st), 3);
	CHECK_INT(qp_scope_store_snapshot(&st, 3, &snap), 0);
	CHECK_INT(snap.n, 1);
	CHECK_INT(snap.rows[0].key.tgid, 3);
	CHECK_INT(snap.rows[0].key.pad, 0);
	CHECK_INT(snap.rows[0].stats.count, 4);
	CHECK_INT(snap.rows[0].stats.sum_ns, 700 + 710 + 690 + 90000);
	CHECK_INT(snap.rows[0].stats.min_ns, 690);
	CHECK_INT(snap.rows[0].stats.max_ns, 90000);
	/* 690 and 700 share a bucket (one from each map), 710 is the next */
	CHECK_INT(qprof_hist_index(690), qprof_hist_index(700));
	CHECK_INT(snap.rows[0].stats.hist[qprof_hist_index(700)], 2);
	CHECK_INT(snap.rows[0].stats.hist[qprof_hist_index(710)], 1);
	CHECK_INT(snap.rows[0].stats.hist[qprof_hist_index(90000)], 1);
	qp_scope_snapshot_free(&snap);
	CHECK_INT(qp_scope_store_forget(&st, 3), 3);
	CHECK_INT(qp_scope_store_chunks(&st), 0);
	qp_scope_store_free(&st);
}

static void test_torn(void)
{
	struct scope_stats row;
	struct scope_chunk c;
	unsigned int idx = qprof_hist_index(1000);

	/* a copy that holds a hit's bucket but not yet its min and max */
	memset(&c, 0, sizeof(c));
	c.min_ns = ~0ULL;
	c.hist[idx & 31] = 1;
	c.sum_ns = 1000;
	memset(&row, 0, sizeof(row));
	qp_scope_chunk_fold(&row, idx >> 5, &c);
	CHECK_INT(row.count, 1);
	CHECK_INT(row.min_ns, qprof_hist_lower(idx));
	CHECK_INT(row.max_ns, qprof_hist_lower(idx) + qprof_hist_width(idx) - 1);
	CHECK(row.min_ns <= 1000 && 1000 <= row.max_ns);
	/* an empty chunk adds nothing */
	memset(&c, 0, sizeof(c));
	c.min_ns = ~0ULL;
	qp_scope_chunk_fold(&row, 3, &c);
	CHECK_INT(row.count, 1);
	CHECK_INT(row.max_ns, qprof_hist_lower(idx) + qprof_hist_width(idx) - 1);
}

int main(void)
{
	test_exact();
	test_rows_forget();
	test_both_maps();
	test_torn();
	return test_done("unit_scope_store");
}

/* test_slow_window.c - the windows of seconds= (slow_window.c) on
 * hand-made records: a window keeps the N slowest instances of its sites
 * that end inside it, however far below the full since-attach reservoir
 * they are, which stays as it was; the BPF threshold of its sites drops to
 * 0 at the open, follows the window's N-th slowest, and comes back to the
 * since-attach one at the close; an unknown site is kept, another known
 * site is not; two windows take the least threshold; QP_SLOW_WINDOWS is
 * the bound (counted); a forgotten process's window writes no threshold;
 * memory is given back. */
#include <errno.h>
#include <stdlib.h>
#include "collect/slow_store.h"
#include "collect/slow_window.h"
#include "testlib.h"

#define MAX_CALLS 256

static struct {
	uint64_t site, min;
} calls[MAX_CALLS];
static unsigned int ncalls;

static void on_threshold(void *arg, uint32_t tgid, uint64_t site, uint64_t min_ns)
{
	(void)arg;
	(void)tgid;
	if (ncalls < MAX_CALLS) {
		calls[ncalls].site = site;
		calls[ncalls].min = min_ns;
	}
	ncalls++;
}

static void put(struct qp_slow_store *s, uint64_t site, uint64_t end, uint64_t dur)
{
	struct slow_record r = { .tgid = 1, .tid = 7, .site = site, .begin_ns = end - dur, .end_ns = end,
				 .dur_ns = dur };

	qp_slow_queue(s, &r);
}

static bool all(void *arg, uint64_t site)
{
	(void)arg;
	(void)site;
	return true;
}

static bool wanted(struct qp_slow_store *s, uint64_t site, uint64_t end, uint64_t dur)
{
	struct slow_record r = { .tgid = 1, .site = site, .end_ns = end, .dur_ns = dur };

	return qp_slow_wanted(s, &r);
}

int main(void)
{
	struct qp_cpu_table samples, off;
	struct qp_slow_store s;
	struct qp_slow_inst *v;
	uint64_t named[] = { 0xb0 }, other[] = { 0xc0 }, id, id2, ids[QP_SLOW_WINDOWS], since;
	size_t n, i;
	bool complete;

	qp_cpu_table_init(&samples, 1000, 1000, 1 << 20);
	qp_cpu_table_init(&off, 1000, 1000, 1 << 20);
	CHECK_INT(qp_slow_init(&s), 0);

	/* since attach: 40 instances of 0xb0 (100..139 ns), 32 kept from 108;
	 * one of 0xc0 */
	for (i = 0; i < 40; i++)
		put(&s, 0xb0, 100 + i * 1000, 100 + i);
	put(&s, 0xc0, 50000, 70);
	qp_slow_join(&s, &samples, &off, 5, on_threshold, NULL);
	CHECK_INT(ncalls, 1 + 8);	/* filled at 100, then 101..108 */
	CHECK_INT(calls[ncalls - 1].min, 108);

	/* a window of 3 on 0xb0 from t=100000: its threshold drops to 0 */
	ncalls = 0;
	CHECK_INT(qp_slow_win_open(&s, 1, named, 1, other, 1, 3, on_threshold, NULL, &id), 0);
	CHECK_INT(s.cnt.windows_open, 1);
	CHECK_INT(ncalls, 1);
	CHECK_INT(calls[0].site, 0xb0);
	CHECK_INT(calls[0].min, 0);
	CHECK(!wanted(&s, 0xb0, 200000, 50));	/* not started yet */
	CHECK_INT(qp_slow_win_time(&s, id, false, 100000), 0);
	CHECK(wanted(&s, 0xb0, 200000, 50));
	CHECK(!wanted(&s, 0xb0, 99999, 50));	/* ended before it */

	/* in the window: 10, 20, 30, then 40 and 5; before it: 60; a known
	 * other site: 90; a site unknown at the open: 15 */
	ncalls = 0;
	put(&s, 0xb0, 99000, 60);
	put(&s, 0xb0, 110000, 10);
	put(&s, 0xb0, 120000, 20);
	put(&s, 0xb0, 130000, 30);
	qp_slow_join(&s, &samples, &off, 6, on_threshold, NULL);
	CHECK_INT(ncalls, 1);		/* full at 3: its 3rd slowest */
	CHECK_INT(calls[0].min, 10);
	CHECK(wanted(&s, 0xb0, 140000, 11));
	CHECK(!wanted(&s, 0xb0, 140000, 10));
	put(&s, 0xb0, 140000, 40);
	put(&s, 0xb0, 150000, 5);	/* below the window's: BPF would not send it */
	put(&s, 0xc0, 150000, 90);
	put(&s, 0xe0, 160000, 15);
	qp_slow_join(&s, &samples, &off, 7, on_threshold, NULL);
	CHECK_INT(ncalls, 2);
	CHECK_INT(calls[1].site, 0xb0);
	CHECK_INT(calls[1].min, 20);
	CHECK_INT(s.cnt.window_records, 5);	/* 10, 20, 30, 40, and 0xe0's 15 */

	/* a second window of 1 on the same site: the least threshold holds */
	ncalls = 0;
	CHECK_INT(qp_slow_win_open(&s, 1, named, 1, other, 1, 1, on_threshold, NULL, &id2), 0);
	CHECK_INT(ncalls, 1);
	CHECK_INT(calls[0].min, 0);
	qp_slow_win_time(&s, id2, false, 170000);
	put(&s, 0xb0, 180000, 15);	/* below window 1's 20: window 2's only */
	qp_slow_join(&s, &samples, &off, 8, on_threshold, NULL);
	CHECK_INT(ncalls, 2);
	CHECK_INT(calls[1].min, 15);	/* window 2's 15 < window 1's 20 */

	/* 99 after the first's end replaces window 2's 15 (threshold: window
	 * 1's 20); closing the first leaves window 2's 99 */
	ncalls = 0;
	qp_slow_win_time(&s, id, true, 190000);
	put(&s, 0xb0, 195000, 99);	/* after its end: window 2's only */
	qp_slow_join(&s, &samples, &off, 9, on_threshold, NULL);
	CHECK_INT(qp_slow_win_close(&s, id, on_threshold, NULL, &v, &n, &complete), 0);
	CHECK(complete);
	CHECK_INT(n, 4);	/* sorted by site: 0xb0's 3, 0xe0's */
	if (n == 4) {
		uint64_t d[3] = { v[0].r.dur_ns, v[1].r.dur_ns, v[2].r.dur_ns }, t;

		/* in no order inside a site: sort the three */
		for (i = 0; i < 3; i++)
			for (size_t k = i + 1; k < 3; k++)
				if (d[k] > d[i]) {
					t = d[i];
					d[i] = d[k];
					d[k] = t;
				}
		CHECK_INT(d[0], 40);
		CHECK_INT(d[1], 30);
		CHECK_INT(d[2], 20);
		CHECK_INT(v[3].r.site, 0xe0);
		CHECK_INT(v[3].r.dur_ns, 15);
	}
	qp_slow_insts_free(v, n);
	CHECK_INT(ncalls, 2);
	CHECK_INT(calls[0].min, 20);
	CHECK_INT(calls[1].site, 0xb0);
	CHECK_INT(calls[1].min, 99);
	CHECK_INT(qp_slow_win_close(&s, id, on_threshold, NULL, &v, &n, &complete), -ENOENT);

	/* closing the second: the since-attach threshold comes back */
	ncalls = 0;
	qp_slow_win_time(&s, id2, true, 200000);
	CHECK_INT(qp_slow_win_close(&s, id2, on_threshold, NULL, &v, &n, &complete), 0);
	CHECK_INT(n, 1);
	CHECK_INT(n ? v[0].r.dur_ns : 0, 99);
	qp_slow_insts_free(v, n);
	CHECK_INT(ncalls, 1);		/* 0xb0 back to the since-attach 108 */
	CHECK_INT(calls[0].site, 0xb0);
	CHECK_INT(calls[0].min, 108);
	CHECK_INT(s.cnt.windows_open, 0);

	/* the since-attach reservoir is as it was: 108..139 */
	CHECK_INT(qp_slow_copy(&s, 1, all, NULL, &v, &n, &since), 0);
	{
		size_t b0 = 0, mn = ~0u;

		for (i = 0; i < n; i++)
			if (v[i].r.site == 0xb0) {
				b0++;
				mn = v[i].r.dur_ns < mn ? v[i].r.dur_ns : mn;
			}
		CHECK_INT(b0, QP_SLOW_KEEP);
		CHECK_INT(mn, 108);
	}
	qp_slow_insts_free(v, n);

	/* the bound: QP_SLOW_WINDOWS open, the next refused and counted */
	for (i = 0; i < QP_SLOW_WINDOWS; i++)
		CHECK_INT(qp_slow_win_open(&s, 1, named, 1, other, 1, 2, NULL, NULL, &ids[i]), 0);
	CHECK_INT(qp_slow_win_open(&s, 1, named, 1, other, 1, 2, NULL, NULL, &id), -EBUSY);
	CHECK_INT(s.cnt.windows_refused, 1);
	CHECK_INT(qp_slow_win_open(&s, 1, named, 1, other, 1, QP_SLOW_KEEP + 1, NULL, NULL, &id), -EINVAL);
	for (i = 0; i < QP_SLOW_WINDOWS; i++) {
		CHECK_INT(qp_slow_win_close(&s, ids[i], NULL, NULL, &v, &n, &complete), 0);
		qp_slow_insts_free(v, n);
	}

	/* a window of a process forgotten meanwhile writes no threshold */
	CHECK_INT(qp_slow_win_open(&s, 1, named, 1, other, 1, 2, on_threshold, NULL, &id), 0);
	qp_slow_win_time(&s, id, false, 300000);
	put(&s, 0xb0, 310000, 3);
	qp_slow_join(&s, &samples, &off, 10, on_threshold, NULL);
	qp_slow_forget(&s, 1);
	ncalls = 0;
	put(&s, 0xb0, 320000, 4);	/* a new process with the same pid */
	qp_slow_join(&s, &samples, &off, 11, on_threshold, NULL);
	CHECK_INT(qp_slow_win_close(&s, id, on_threshold, NULL, &v, &n, &complete), 0);
	CHECK_INT(n, 1);
	CHECK_INT(n ? v[0].r.dur_ns : 0, 3);
	qp_slow_insts_free(v, n);
	CHECK_INT(ncalls, 0);
	qp_slow_forget(&s, 1);
	CHECK_INT(s.bytes, 0);

	qp_slow_free(&s);
	qp_cpu_table_free(&samples);
	qp_cpu_table_free(&off);
	return test_done("unit_slow_window");
}

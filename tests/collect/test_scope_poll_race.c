/* test_scope_poll_race.c - the race of the scope poll, placed exactly with
 * the real BPF record() (run by BPF_PROG_TEST_RUN through the test program
 * `test_record`) and the real poll (scope_poll.c):
 *
 *   a hit reads the generation a poll has just raised, finds its chunk
 *   older, queues the chunk's key; that very poll drains the key and copies
 *   the chunk; the next hit of the same generation queues nothing (the
 *   chunk is already of it). Unless the next poll reads again the keys its
 *   predecessor drained (qp_dirty_drain), that hit is never read while no
 *   other hit comes.
 *
 * The test stands in for the poll's own increment of qp_gen to run the hit
 * between the increment and the drain: raise qp_gen, hit, lower it again,
 * then poll (which raises it to the same value). Needs root and BPF: exit
 * 77 (skipped) without them. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collect_internal.h"
#include "scopes.skel.h"
#include "testlib.h"

#define TGID 4242u
#define SITE 0x7f0000001000ull

static struct qp_scopes *s;

static int hit(uint64_t dur)
{
	struct qp_test_record a = { .tgid = TGID, .site = SITE, .parent = 0, .dur = dur };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));
	int ret = bpf_prog_test_run_opts(bpf_program__fd(s->skel->progs.test_record), &o);

	return ret ? ret : (int)o.retval;
}

/* one poll; the pair's count and the chunks this poll read */
static int poll_count(uint64_t *count, uint64_t *read)
{
	uint64_t counters[QPROF_CNT__MAX], before = s->poll.chunks_read;
	struct qp_scope_snapshot snap;
	struct scope_key key = { .tgid = TGID, .site = SITE, .parent = 0 };
	const struct qp_scope_row *row;
	int ret;

	ret = qp_scope_poll(s, counters);
	if (ret)
		return ret;
	*read = s->poll.chunks_read - before;
	memset(&snap, 0, sizeof(snap));
	ret = qp_scope_store_snapshot(&s->store, TGID, &snap);
	if (ret)
		return ret;
	row = qp_scope_snapshot_find(&snap, &key);
	*count = row ? row->stats.count : 0;
	qp_scope_snapshot_free(&snap);
	return 0;
}

int main(void)
{
	char err[256] = "";
	uint64_t count = 0, read = 0;
	volatile __u64 *gen;
	int ret;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: needs root for BPF\n");
		return 77;
	}
	setenv("QPROF_TEST_PROGS", "1", 1);
	libbpf_set_print(NULL);
	ret = qp_scopes_open(&s, 64, false, NULL, 0, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "SKIP: cannot load the scope programs: %s\n", err);
		return 77;
	}
	gen = &s->skel->data->qp_gen;

	/* a new chunk: its first hit queues it, the poll reads it */
	CHECK_INT(hit(1000), 0);
	CHECK_INT(poll_count(&count, &read), 0);
	CHECK_INT(count, 1);
	CHECK_INT(read, 1);
	/* nothing new: read again once (the carry), then not at all */
	CHECK_INT(poll_count(&count, &read), 0);
	CHECK_INT(count, 1);
	CHECK_INT(read, 1);
	CHECK_INT(poll_count(&count, &read), 0);
	CHECK_INT(count, 1);
	CHECK_INT(read, 0);

	/* the race: a hit between the next poll's increment and its drain */
	__atomic_fetch_add(gen, 1, __ATOMIC_SEQ_CST);
	CHECK_INT(hit(1000), 0);
	__atomic_fetch_sub(gen, 1, __ATOMIC_SEQ_CST);
	CHECK_INT(poll_count(&count, &read), 0);	/* raises qp_gen as the hit saw it */
	CHECK_INT(count, 2);
	CHECK_INT(read, 1);
	/* the same generation: this hit queues nothing */
	CHECK_INT(hit(1000), 0);
	CHECK_INT(poll_count(&count, &read), 0);
	CHECK_INT(count, 3);	/* 2 without the carry: the hit waits for another */
	CHECK_INT(read, 1);
	/* and a hit of the next generation is queued as usual */
	CHECK_INT(hit(1000), 0);
	CHECK_INT(poll_count(&count, &read), 0);
	CHECK_INT(count, 4);
	CHECK_INT(read, 1);
	/* nothing lost, nothing dropped */
	{
		uint64_t counters[QPROF_CNT__MAX];

		CHECK_INT(qp_scope_poll(s, counters), 0);
		CHECK_INT(counters[QPROF_CNT_DIRTY_LOST], 0);
		CHECK_INT(counters[QPROF_CNT_DROP_MAP_FULL], 0);
		CHECK_INT(s->poll.full_scans, 0);
	}
	qp_scopes_close(s);
	return test_done("scope_poll_race");
}

/* test_logs_store.c - the QPROF_LOG store's memory is resident only once
 * a message arrives (logs.c): starting the store adds almost nothing to
 * this process's RSS, the first message adds the whole store's size (one
 * step), 32,767 more add nothing, and stopping it gives it back. Needs a BPF ring buffer (root);
 * exits 77 (skipped) without one. */
#include <bpf/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "collect/logs.h"
#include "testlib.h"

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int main(void)
{
	const size_t cap = 65536;
	const long store_kb = (long)(cap * sizeof(struct qp_log_entry) / 1024);
	struct qp_logs *l = NULL;
	uint64_t received = 9, oldest = 9;
	long rss0, rss1, rss2;
	char err[256] = "";
	int fd;

	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "qp_test_logs", 0, 0, 1u << 16, NULL);
	if (fd < 0) {
		printf("test_logs_store: no BPF ring buffer (%m): skipped\n");
		return 77;
	}
	rss0 = rss_kb();
	CHECK_INT(qp_logs_start(&l, fd, cap, err, sizeof(err)), 0);
	rss1 = rss_kb();
	CHECK(l != NULL);
	if (l) {
		qp_logs_stats(l, &received, &oldest);
		CHECK_INT(received, 0);
		CHECK_INT(oldest, 1);
	}
	/* not resident while no message came (an idle qprofd does not hold
	 * its 18,944 kB); all of it from the first message on, so the RSS of
	 * a qprofd whose targets log does not creep up as the store fills */
	printf("store %ld kB; RSS %ld kB before start, %ld kB after\n", store_kb, rss0, rss1);
	CHECK(rss0 > 0 && rss1 - rss0 < store_kb / 8);
	if (l) {
		size_t i;
		long rss_one, rss_half;

		qp_logs_push(l, 1, 1, 0x1000, 999, 5, "first");
		rss_one = rss_kb();
		for (i = 1; i < cap / 2; i++)
			qp_logs_push(l, 1, 1, 0x1000, 1000 + i, 5, "hello");
		rss_half = rss_kb();
		qp_logs_stats(l, &received, &oldest);
		CHECK_INT(received, cap / 2);
		printf("RSS %ld kB after 1 message, %ld kB after %zu\n", rss_one, rss_half, cap / 2);
		CHECK(rss_one - rss0 >= store_kb * 9 / 10 && rss_one - rss0 < store_kb * 5 / 4);
		CHECK(rss_half - rss_one < store_kb / 20);
	}
	qp_logs_stop(l);
	rss2 = rss_kb();
	printf("RSS %ld kB after stop\n", rss2);
	CHECK(rss2 > 0 && rss2 - rss0 < store_kb / 4);
	close(fd);
	return test_done("test_logs_store");
}

/* collect_calibrate.c - see collect_calibrate.h. The empty scope below is
 * qprofd's only qprof marker: attaching to /proc/self/exe finds it alone.
 * Its aggregates are forgotten afterwards, so no figure of the daemon's own
 * shows in any answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>
#include "collect_calibrate.h"
#include "collect_scopes.h"
#include "collect_trace.h"
#include "common/elf_probes.h"
#include "common/log.h"

static __attribute__((noinline)) void empty_scope(void)
{
	QPROF_SCOPE("qprof_calibration");
	__asm__ __volatile__("" ::: "memory");
}

/* Work between two scopes, as a program does: the probes' cost depends on
 * how warm their code and data are, and a back-to-back loop keeps them
 * warmer than a program that works 1 us or more between markers. */
static void spin_ns(uint64_t ns)
{
	struct timespec ts;
	uint64_t end, now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
	do {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	} while (now < end);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int qp_calibrate(struct qp_scopes *s, struct qp_tracer *t, unsigned int rounds, unsigned int iters,
		 struct qp_calibration *out)
{
	struct qp_scope_link **links = NULL;
	struct qp_elf_probes *elf = NULL;
	struct qp_trace_session *ss = NULL;
	struct qp_trace_result r = { 0 };
	uint64_t *d = NULL;
	size_t nlinks = 0, n = 0, i;
	unsigned int k, round;
	char err[160] = "";
	int ret, pid = getpid();

	memset(out, 0, sizeof(*out));
	qp_scopes_set_calibration(s, 0);
	ret = qp_elf_probes_open("/proc/self/exe", &elf, err, sizeof(err));
	if (ret)
		goto done;
	ret = qp_scopes_attach(s, pid, "/proc/self/exe", elf, qp_scopes_new_epoch(s), &links, &nlinks,
			       err, sizeof(err));
	if (ret < 0)
		goto done;
	ret = qp_trace_begin(t, (uint32_t)pid, (size_t)rounds * iters, &ss);
	if (ret) {
		snprintf(err, sizeof(err), "cannot record the calibration: %s", strerror(-ret));
		goto done;
	}
	for (round = 0; round < rounds; round++)
		for (k = 0; k < iters; k++) {
			spin_ns(1000);
			empty_scope();
		}
	ret = qp_trace_end(t, ss, &r);
	if (ret)
		goto done;
	d = malloc((r.n ? r.n : 1) * sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto done;
	}
	for (i = 0; i < r.n; i++)
		if (r.recs[i].kind == QPROF_TR_SCOPE && r.recs[i].depth == 0)
			d[n++] = r.recs[i].arg;
	/* the first round warms the probes' code and data: not counted */
	if (n < (size_t)rounds * iters * 9 / 10 || rounds < 2) {
		snprintf(err, sizeof(err), "%zu of %u empty scopes measured", n, rounds * iters);
		ret = -EIO;
		goto done;
	}
	memmove(d, d + iters, (n - iters) * sizeof(*d));
	n -= iters;
	qsort(d, n, sizeof(*d), cmp_u64);
	out->samples = n;
	out->p10_ns = d[n / 10];
	out->p50_ns = d[n / 2];
	out->p90_ns = d[n * 9 / 10];
	{
		size_t keep = n - n / 100;
		uint64_t sum = 0;

		for (i = 0; i < keep; i++)
			sum += d[i];
		out->mean_ns = sum / keep;
	}
	out->correction_ns = out->p50_ns;
	out->done = true;
	qp_scopes_set_calibration(s, out->correction_ns);
	ret = 0;
done:
	if (nlinks)
		qp_scopes_detach_links(links, nlinks);
	free(links);
	qp_scopes_forget(s, (uint32_t)pid);
	qp_elf_probes_free(elf);
	qp_trace_result_free(&r);
	free(d);
	if (ret) {
		snprintf(out->error, sizeof(out->error), "%s", err[0] ? err : strerror(-ret));
		qp_warn("cannot measure the probes' own cost (%s): the BPF collector's durations include it",
			out->error);
	} else {
		qp_info("the probes' own cost: %llu ns (an empty scope timed %llu times: %llu to %llu ns "
			"for 8 in 10), taken off every duration the BPF collector measures "
			"(--no-calibrate keeps them as measured)", (unsigned long long)out->correction_ns,
			(unsigned long long)n, (unsigned long long)out->p10_ns,
			(unsigned long long)out->p90_ns);
	}
	return ret;
}

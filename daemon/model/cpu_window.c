/* cpu_window.c - see cpu_window.h. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "collect/collect_cpu.h"
#include "cpu_window.h"
#include "model_cpu_build.h"
#include "targets/targets.h"
#include "common/util.h"

int qp_cpu_window(const struct qp_model_src *src, const struct qp_cpu_window_query *wq,
		  struct qp_cpu_profile *prof)
{
	struct qp_cpu_snapshot base = { 0 }, now = { 0 };
	struct qp_cpu_query q = { 0 };
	int (*read_fn)(struct qp_cpu *, struct qp_cpu_snapshot *) = wq->off ? qp_cpu_read_off : qp_cpu_read;
	int ret;

	memset(prof, 0, sizeof(*prof));
	if (!src->cpu || (wq->off && qp_cpu_off_error(src->cpu)))
		return -ENODEV;
	if (wq->seconds && read_fn(src->cpu, &base))
		return -EIO;
	q.time_ns = qp_realtime_ns();
	if (wq->seconds && !qp_model_wait(src, wq->seconds)) {
		qp_cpu_snapshot_free(&base);
		return -ECANCELED;
	}
	if (read_fn(src->cpu, &now)) {
		qp_cpu_snapshot_free(&base);
		return -EIO;
	}
	q.pid = wq->pid;
	q.scope = wq->scope;
	q.period_ns = wq->off ? 1 : 1000000000ull / (src->frequency_hz ? src->frequency_hz : 99);
	q.duration_ns = wq->seconds ? (uint64_t)wq->seconds * 1000000000ull : qp_now_ns() - src->start_ns;
	if (!wq->seconds)
		q.time_ns = qp_realtime_ns() - q.duration_ns;
	/* no lock: the build names scopes through the registry and frames
	 * through the symbolizer, each locking only for its lookups */
	ret = qp_cpu_build(src->cpu, src->reg->sym, src->reg, &now, wq->seconds ? &base : NULL, &q, prof);
	qp_cpu_snapshot_free(&base);
	qp_cpu_snapshot_free(&now);
	if (ret)
		memset(prof, 0, sizeof(*prof));
	return ret;
}

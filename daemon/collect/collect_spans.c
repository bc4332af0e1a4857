/* collect_spans.c - the user side of the pending table of spans across
 * threads (bpf/spans.bpf.h): sweep begins older than the timeout (counted
 * abandoned), drop a forgotten process's begins, tell how many are pending.
 * Called from the daemon's poll loop; reads and deletes map entries only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"
#include "common/log.h"
#include "ring_collect.h"

/* Every entry of the pending table, by batches (a bucket larger than the
 * batch makes it grow): KEYS and VALS malloc'd, N entries. */
static int pending_read(int fd, struct span_key **keys, struct span_pending **vals, size_t *n)
{
	size_t cap = 0, batch = 4096;
	struct span_key *k = NULL;
	struct span_pending *v = NULL;
	__u32 in_b = 0, out_b = 0;
	void *in = NULL;
	int ret;

	*n = 0;
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		__u32 got = (__u32)batch;

		if (cap < *n + batch) {
			void *nk = realloc(k, (*n + batch) * sizeof(*k)), *nv;

			if (!nk) {
				ret = -ENOMEM;
				break;
			}
			k = nk;
			nv = realloc(v, (*n + batch) * sizeof(*v));
			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
			cap = *n + batch;
		}
		ret = bpf_map_lookup_batch(fd, in, &out_b, k + *n, v + *n, &got, &opts) ? -errno : 0;
		if (ret == -ENOSPC && batch < (1u << 20)) {
			batch *= 4;
			continue;
		}
		if (ret && ret != -ENOENT)
			break;
		*n += got;
		if (ret == -ENOENT) {	/* the last batch */
			ret = 0;
			break;
		}
		in_b = out_b;
		in = &in_b;
	}
	if (ret) {
		free(k);
		free(v);
		k = NULL;
		v = NULL;
		*n = 0;
	}
	*keys = k;
	*vals = v;
	return ret;
}

int qp_spans_sweep(struct qp_scopes *s, uint64_t now_ns)
{
	int fd = bpf_map__fd(s->skel->maps.span_pending);
	struct span_key *keys;
	struct span_pending *vals, got;
	uint64_t abandoned = 0;
	size_t n, i;
	int ret;

	ret = pending_read(fd, &keys, &vals, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (now_ns < vals[i].ts || now_ns - vals[i].ts < s->span_timeout_ns)
			continue;
		/* the END may take it first: then it is not abandoned */
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &got))
			continue;
		if (now_ns >= got.ts && now_ns - got.ts >= s->span_timeout_ns) {
			abandoned++;
			continue;
		}
		/* begun again (same id) since the read: put the fresh begin back;
		 * if another begin made it meanwhile, that one stands */
		bpf_map_update_elem(fd, &keys[i], &got, BPF_NOEXIST);
	}
	__atomic_add_fetch(&s->spans_abandoned, abandoned, __ATOMIC_RELAXED);
	__atomic_store_n(&s->spans_pending, (uint64_t)(n - abandoned), __ATOMIC_RELAXED);
	free(keys);
	free(vals);
	return 0;
}

int qp_spans_forget(struct qp_scopes *s, uint32_t pid)
{
	int fd = bpf_map__fd(s->skel->maps.span_pending);
	struct span_key *keys;
	struct span_pending *vals;
	size_t n, i;
	int ret;

	ret = pending_read(fd, &keys, &vals, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		if (keys[i].tgid == pid)
			bpf_map_delete_elem(fd, &keys[i]);
	free(keys);
	free(vals);
	return 0;
}

void qp_spans_figures(struct qp_scopes *s, uint64_t *pending, uint64_t *capacity)
{
	*pending = __atomic_load_n(&s->spans_pending, __ATOMIC_RELAXED) + qp_ring_spans_pending(s->ring);
	*capacity = s->span_capacity;
}

/* value_poll.c - the poll of the QPROF_VALUE histogram buckets, as
 * scope_poll.c does for scope chunks: raise the generation, drain the keys
 * of the buckets hit since the last poll from the ring buffer
 * `value_dirty`, copy those buckets' counts into the daemon's table
 * s->vbuckets; read every bucket once when keys were lost. A request for
 * values then costs the buckets hit since the last one, not the map. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"
#include "common/log.h"

int qp_value_poll_init(struct qp_scopes *s)
{
	qp_htab_init(&s->vbuckets, sizeof(__u64));
	return qp_dirty_init(&s->vdirty, bpf_map__fd(s->skel->maps.value_dirty), sizeof(struct value_bucket_key));
}

void qp_value_poll_fini(struct qp_scopes *s)
{
	qp_dirty_fini(&s->vdirty);
	qp_htab_free(&s->vbuckets);
}

static int put(struct qp_scopes *s, const struct value_bucket_key *k, __u64 count)
{
	int64_t i = qp_htab_add(&s->vbuckets, k, sizeof(*k), NULL);

	if (i < 0)
		return (int)i;
	memcpy(qp_htab_value(&s->vbuckets, (size_t)i), &count, sizeof(count));
	return 0;
}

/* a bucket of a full scan into the table */
static int scan_put(void *ctx, const void *key, const void *val)
{
	struct value_bucket v;

	memcpy(&v, val, sizeof(v));
	return put(ctx, key, v.count);
}

int qp_value_poll_forget(struct qp_scopes *s, uint32_t pid)
{
	struct qp_htab keep;
	size_t i;
	int ret = 0;

	qp_htab_init(&keep, sizeof(__u64));
	for (i = 0; i < s->vbuckets.n && !ret; i++) {
		struct value_bucket_key k;
		__u64 c;

		memcpy(&k, qp_htab_key(&s->vbuckets, i, NULL), sizeof(k));
		if (k.tgid == pid)
			continue;
		memcpy(&c, qp_htab_value(&s->vbuckets, i), sizeof(c));
		{
			int64_t j = qp_htab_add(&keep, &k, sizeof(k), NULL);

			if (j < 0)
				ret = (int)j;
			else
				memcpy(qp_htab_value(&keep, (size_t)j), &c, sizeof(c));
		}
	}
	if (ret) {
		qp_htab_free(&keep);
		return ret;	/* the old table stays whole */
	}
	qp_htab_free(&s->vbuckets);
	s->vbuckets = keep;
	return 0;
}

int qp_value_poll(struct qp_scopes *s)
{
	int fd = bpf_map__fd(s->skel->maps.value_hist);
	struct value_bucket v;
	struct value_bucket_key *keys;
	size_t i;
	int ret = 0;

	/* a full barrier: see qp_scope_poll */
	__atomic_fetch_add(&s->skel->data->qp_gen, 1, __ATOMIC_SEQ_CST);
	qp_dirty_drain(&s->vdirty);	/* and the keys the poll before drained */
	keys = s->vdirty.keys;
	if (qp_dirty_read_all(&s->vdirty, qp_scopes_counter(s, QPROF_CNT_VALUE_DIRTY_LOST))) {
		ret = qp_map_scan(fd, sizeof(struct value_bucket_key), sizeof(struct value_bucket), 4096, scan_put,
				  s, NULL);
	} else {
		for (i = 0; i < s->vdirty.n && !ret; i++) {
			if (bpf_map_lookup_elem(fd, &keys[i], &v))
				continue; /* deleted since */
			ret = put(s, &keys[i], v.count);
		}
	}
	if (ret) {
		s->vdirty.lost_seen = UINT64_MAX;	/* read all next time */
		qp_warn("value poll: %s", strerror(-ret));
	}
	return ret;
}

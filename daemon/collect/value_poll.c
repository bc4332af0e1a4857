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
#include "log.h"

static int on_vdirty(void *ctx, void *data, size_t size)
{
	struct qp_scopes *s = ctx;

	if (size < sizeof(struct value_bucket_key) || s->vkeys_err)
		return 0;
	if (s->nvkeys == s->capvkeys) {
		size_t cap = s->capvkeys ? s->capvkeys * 2 : 1024;
		struct value_bucket_key *k = realloc(s->vkeys, cap * sizeof(*k));

		if (!k) {
			s->vkeys_err = -ENOMEM;
			return 0;
		}
		s->vkeys = k;
		s->capvkeys = cap;
	}
	memcpy(&s->vkeys[s->nvkeys++], data, sizeof(struct value_bucket_key));
	return 0;
}

int qp_value_poll_init(struct qp_scopes *s)
{
	qp_htab_init(&s->vbuckets, sizeof(__u64));
	s->vdirty = ring_buffer__new(bpf_map__fd(s->skel->maps.value_dirty), on_vdirty, s, NULL);
	return s->vdirty ? 0 : -errno;
}

void qp_value_poll_fini(struct qp_scopes *s)
{
	ring_buffer__free(s->vdirty);
	s->vdirty = NULL;
	free(s->vkeys);
	free(s->vcarry);
	s->vkeys = NULL;
	s->nvkeys = s->capvkeys = 0;
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

/* Every bucket of value_hist into the table (batches, or the walk). */
static int scan_all(struct qp_scopes *s, int fd)
{
	size_t batch = 4096, steps = 0;
	struct value_bucket_key *keys, k, next;
	struct value_bucket *vals, v;
	__u32 in_b = 0, out_b;
	void *in = NULL, *prev = NULL;
	int ret = 0;

	keys = malloc(batch * sizeof(*keys));
	vals = malloc(batch * sizeof(*vals));
	if (!keys || !vals) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		__u32 got = (__u32)batch, i;
		bool done;

		ret = bpf_map_lookup_batch(fd, in, &out_b, keys, vals, &got, &opts) ? -errno : 0;
		if (ret && ret != -ENOENT)
			break;
		done = ret == -ENOENT;
		ret = 0;
		for (i = 0; i < got && !ret; i++)
			ret = put(s, &keys[i], vals[i].count);
		if (ret || done)
			goto out;
		in_b = out_b;
		in = &in_b;
	}
	/* 524: the kernel's ENOTSUPP; ENOSPC: a bucket larger than a batch */
	if (ret != -EINVAL && ret != -EOPNOTSUPP && ret != -524 && ret != -ENOSPC)
		goto out;
	ret = 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0 && ++steps < (1u << 24)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		ret = put(s, &k, v.count);
		if (ret)
			break;
	}
out:
	free(keys);
	free(vals);
	return ret;
}

int qp_value_poll(struct qp_scopes *s)
{
	int fd = bpf_map__fd(s->skel->maps.value_hist);
	struct value_bucket v;
	uint64_t lost;
	size_t i;
	int ret = 0;

	/* a full barrier: see qp_scope_poll */
	__atomic_fetch_add(&s->skel->data->qp_gen, 1, __ATOMIC_SEQ_CST);
	s->nvkeys = 0;
	s->vkeys_err = 0;
	if (ring_buffer__consume(s->vdirty) < 0)
		s->vkeys_err = -EIO;
	if (!s->vkeys_err)	/* and those the poll before drained: see qp_keys_carry */
		s->vkeys_err = qp_keys_carry((void **)&s->vkeys, &s->nvkeys, &s->capvkeys, &s->vcarry,
					     &s->nvcarry, sizeof(*s->vkeys));
	lost = qp_scopes_counter(s, QPROF_CNT_VALUE_DIRTY_LOST);
	if (s->vkeys_err || lost != s->vdirty_lost_seen) {
		s->vdirty_lost_seen = s->vkeys_err ? UINT64_MAX : lost;	/* not carried: all again */
		ret = scan_all(s, fd);
	} else {
		for (i = 0; i < s->nvkeys && !ret; i++) {
			if (bpf_map_lookup_elem(fd, &s->vkeys[i], &v))
				continue; /* deleted since */
			ret = put(s, &s->vkeys[i], v.count);
		}
	}
	if (ret) {
		s->vdirty_lost_seen = UINT64_MAX;	/* read all next time */
		qp_warn("value poll: %s", strerror(-ret));
	}
	return ret;
}

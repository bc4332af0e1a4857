/* dirty_keys.c - what the scope poll and the value poll share: the ring of
 * keys a BPF program queues when it dirties an entry, drained (and carried
 * to the next poll) at each poll, and the full read of a map (batches, or a
 * key-by-key walk) that stands in when keys were lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"

static int on_key(void *ctx, void *data, size_t size)
{
	struct qp_dirty *d = ctx;

	if (size < d->ksz || d->err)
		return 0;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 1024;
		void *k = realloc(d->keys, cap * d->ksz);

		if (!k) {
			d->err = -ENOMEM;	/* the keys are gone: read all */
			return 0;
		}
		d->keys = k;
		d->cap = cap;
	}
	memcpy((char *)d->keys + d->n++ * d->ksz, data, d->ksz);
	return 0;
}

int qp_dirty_init(struct qp_dirty *d, int ring_fd, size_t ksz)
{
	memset(d, 0, sizeof(*d));
	d->ksz = ksz;
	d->rb = ring_buffer__new(ring_fd, on_key, d, NULL);
	return d->rb ? 0 : -errno;
}

void qp_dirty_fini(struct qp_dirty *d)
{
	ring_buffer__free(d->rb);
	d->rb = NULL;
	free(d->keys);
	free(d->carry);
	d->keys = d->carry = NULL;
	d->n = d->cap = d->ncarry = 0;
}

/* A poll drains the keys of the entries hit since the generation changed,
 * and copies those entries. A key queued just after this poll's generation
 * change may be drained by this very poll; the hits of that generation that
 * come after it queue nothing (their entry is marked already), so the next
 * poll must read that entry again. Hence each poll reads the keys it
 * drained and the ones the poll before drained (d->carry), which are then
 * replaced by this poll's. 0, or -ENOMEM (then read everything). */
static int carry(struct qp_dirty *d)
{
	size_t drained = d->n, old = d->ncarry, ksz = d->ksz;
	void *fresh = NULL;

	if (drained) {
		fresh = malloc(drained * ksz);
		if (!fresh)
			return -ENOMEM;
		memcpy(fresh, d->keys, drained * ksz);
	}
	if (old && drained + old > d->cap) {
		void *k = realloc(d->keys, (drained + old) * ksz);

		if (!k) {
			free(fresh);
			return -ENOMEM;
		}
		d->keys = k;
		d->cap = drained + old;
	}
	if (old)
		memcpy((char *)d->keys + drained * ksz, d->carry, old * ksz);
	free(d->carry);
	d->carry = fresh;
	d->ncarry = drained;
	d->n = drained + old;
	return 0;
}

int qp_dirty_drain(struct qp_dirty *d)
{
	d->n = 0;
	d->err = 0;
	if (ring_buffer__consume(d->rb) < 0)
		d->err = -EIO;
	if (!d->err)
		d->err = carry(d);
	return d->err;
}

bool qp_dirty_read_all(struct qp_dirty *d, uint64_t lost)
{
	bool all = d->err || lost != d->lost_seen;

	/* the keys drained now are not carried: next time, all again */
	d->lost_seen = d->err ? UINT64_MAX : lost;
	return all;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

int qp_map_scan(int fd, size_t ksz, size_t vsz, size_t batch, qp_map_put_fn put, void *ctx,
		uint64_t *nread)
{
	/* a batch token: a u32 bucket for hash maps, a key for the others */
	size_t steps = 0, tsz = align8(ksz > 4 ? ksz : 4);
	char *keys, *vals, *k, *next, *v, *in_b, *out_b;
	void *in = NULL, *prev = NULL;
	int ret = 0;

	if (!batch)
		return -EINVAL;
	/* the batches' keys and values, two tokens, then a key, the next and
	 * a value for the walk; each part 8-byte aligned for what PUT reads */
	keys = calloc(1, align8(batch * ksz) + align8(batch * vsz) + 2 * tsz + 2 * align8(ksz) + vsz);
	if (!keys)
		return -ENOMEM;
	vals = keys + align8(batch * ksz);
	in_b = vals + align8(batch * vsz);
	out_b = in_b + tsz;
	k = out_b + tsz;
	next = k + align8(ksz);
	v = next + align8(ksz);
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		__u32 got = (__u32)batch, i;
		bool done;

		ret = bpf_map_lookup_batch(fd, in, out_b, keys, vals, &got, &opts) ? -errno : 0;
		if (ret && ret != -ENOENT)
			break;
		done = ret == -ENOENT;
		ret = 0;
		for (i = 0; i < got && !ret; i++)
			ret = put(ctx, keys + i * ksz, vals + i * vsz);
		if (nread)
			*nread += got;
		if (ret || done)
			goto out;
		memcpy(in_b, out_b, tsz);
		in = in_b;
	}
	/* 524: the kernel's ENOTSUPP; ENOSPC: a bucket larger than a batch */
	if (ret != -EINVAL && ret != -EOPNOTSUPP && ret != -524 && ret != -ENOSPC)
		goto out;
	ret = 0;
	while (bpf_map_get_next_key(fd, prev, next) == 0 && ++steps < (1u << 24)) {
		memcpy(k, next, ksz);
		prev = k;
		if (bpf_map_lookup_elem(fd, k, v))
			continue;
		if (nread)
			(*nread)++;
		ret = put(ctx, k, v);
		if (ret)
			break;
	}
out:
	free(keys);
	return ret;
}

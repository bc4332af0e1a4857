/* scope_poll.c - the poll of the scope chunks: raise the generation, drain
 * the keys of the chunks hit since the last poll from the ring buffer
 * `scope_dirty`, copy those chunks (and only those) into the daemon's
 * store. When keys were lost (ring full) or could not be kept, every chunk
 * is read once instead, so nothing is missed. Its cost follows the chunks
 * hit since the last poll, not the aggregates held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"
#include "log.h"

static int on_dirty(void *ctx, void *data, size_t size)
{
	struct qp_scopes *s = ctx;

	if (size < sizeof(struct scope_chunk_key) || s->keys_err)
		return 0;
	if (s->nkeys == s->capkeys) {
		size_t cap = s->capkeys ? s->capkeys * 2 : 1024;
		struct scope_chunk_key *k = realloc(s->keys, cap * sizeof(*k));

		if (!k) {
			s->keys_err = -ENOMEM;	/* the keys are gone: read all */
			return 0;
		}
		s->keys = k;
		s->capkeys = cap;
	}
	memcpy(&s->keys[s->nkeys++], data, sizeof(struct scope_chunk_key));
	return 0;
}

int qp_keys_carry(void **keys, size_t *n, size_t *cap, void **carry, size_t *ncarry, size_t ksz)
{
	size_t drained = *n, old = *ncarry;
	void *fresh = NULL;

	if (drained) {
		fresh = malloc(drained * ksz);
		if (!fresh)
			return -ENOMEM;
		memcpy(fresh, *keys, drained * ksz);
	}
	if (old && drained + old > *cap) {
		void *k = realloc(*keys, (drained + old) * ksz);

		if (!k) {
			free(fresh);
			return -ENOMEM;
		}
		*keys = k;
		*cap = drained + old;
	}
	if (old)
		memcpy((char *)*keys + drained * ksz, *carry, old * ksz);
	free(*carry);
	*carry = fresh;
	*ncarry = drained;
	*n = drained + old;
	return 0;
}

int qp_scope_poll_init(struct qp_scopes *s)
{
	s->percpu = calloc((size_t)s->ncpus, sizeof(*s->percpu));
	if (!s->percpu)
		return -ENOMEM;
	s->dirty = ring_buffer__new(bpf_map__fd(s->skel->maps.scope_dirty), on_dirty, s, NULL);
	return s->dirty ? 0 : -errno;
}

void qp_scope_poll_fini(struct qp_scopes *s)
{
	ring_buffer__free(s->dirty);
	s->dirty = NULL;
	free(s->keys);
	free(s->carry);
	s->keys = NULL;
	s->nkeys = s->capkeys = 0;
	free(s->percpu);
	s->percpu = NULL;
}

static int cmp_ckey(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct scope_chunk_key));
}

/* Every chunk of map FD into the store (FLAG: QPROF_CHUNK_MORE for
 * scope_chunks_more): batches of keys and values, or get_next_key +
 * lookup where batches are not supported. */
static int scan_map(struct qp_scopes *s, int fd, __u32 flag)
{
	size_t batch = 1024, steps = 0;
	struct scope_chunk_key *keys = NULL, k, next;
	struct scope_chunk *vals = NULL, v;
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
		for (i = 0; i < got && !ret; i++) {
			keys[i].chunk |= flag;
			ret = qp_scope_store_put(&s->store, &keys[i], &vals[i]);
		}
		s->poll.chunks_read += got;
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
		s->poll.chunks_read++;
		k.chunk |= flag;
		ret = qp_scope_store_put(&s->store, &k, &v);
		if (ret)
			break;
	}
out:
	free(keys);
	free(vals);
	return ret;
}

static void read_counters(struct qp_scopes *s, uint64_t *counters)
{
	int fd = bpf_map__fd(s->skel->maps.counters);
	__u32 c;
	int cpu;

	memset(counters, 0, QPROF_CNT__MAX * sizeof(*counters));
	for (c = 0; c < QPROF_CNT__MAX; c++) {
		if (bpf_map_lookup_elem(fd, &c, s->percpu))
			continue;
		for (cpu = 0; cpu < s->ncpus; cpu++)
			counters[c] += s->percpu[cpu];
	}
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int qp_scope_poll(struct qp_scopes *s, uint64_t *counters)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.scope_chunks),
		       bpf_map__fd(s->skel->maps.scope_chunks_more) };
	uint64_t t0 = thread_cpu_ns();
	struct scope_chunk v;
	size_t i;
	int ret = 0, m;
	bool all;

	/* a full barrier (lock xadd): hits that read the old generation are
	 * in the maps before the copies below begin (scopes.bpf.c record()) */
	__atomic_fetch_add(&s->skel->data->qp_gen, 1, __ATOMIC_SEQ_CST);
	s->nkeys = 0;
	s->keys_err = 0;
	if (ring_buffer__consume(s->dirty) < 0)
		s->keys_err = -EIO;
	if (!s->keys_err)
		s->keys_err = qp_keys_carry((void **)&s->keys, &s->nkeys, &s->capkeys, &s->carry, &s->ncarry,
					    sizeof(*s->keys));
	read_counters(s, counters);
	all = s->keys_err || counters[QPROF_CNT_DIRTY_LOST] != s->dirty_lost_seen;
	s->dirty_lost_seen = counters[QPROF_CNT_DIRTY_LOST];
	if (s->keys_err)	/* the keys drained now are not carried: next time, all again */
		s->dirty_lost_seen = UINT64_MAX;
	if (all) {
		s->poll.full_scans++;
		for (m = 0; m < 2 && !ret; m++)
			ret = scan_map(s, fds[m], m ? QPROF_CHUNK_MORE : 0);
	} else {
		if (s->nkeys > 1)
			qsort(s->keys, s->nkeys, sizeof(*s->keys), cmp_ckey);
		for (i = 0; i < s->nkeys && !ret; i++) {
			struct scope_chunk_key k = s->keys[i];

			if (i && !cmp_ckey(&s->keys[i - 1], &s->keys[i]))
				continue; /* two CPUs queued it at once */
			m = !!(k.chunk & QPROF_CHUNK_MORE);
			k.chunk &= ~QPROF_CHUNK_MORE;
			if (bpf_map_lookup_elem(fds[m], &k, &v))
				continue; /* deleted since (a process forgotten) */
			s->poll.chunks_read++;
			ret = qp_scope_store_put(&s->store, &s->keys[i], &v);
		}
	}
	if (ret) {
		/* what was not kept must be read again: next time, all of it */
		s->dirty_lost_seen = UINT64_MAX;
		qp_warn("scope poll: %s", strerror(-ret));
	}
	s->poll.polls++;
	s->poll.cpu_ns += thread_cpu_ns() - t0;
	s->poll.chunks = qp_scope_store_chunks(&s->store);
	return ret;
}

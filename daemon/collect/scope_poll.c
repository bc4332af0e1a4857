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
#include "common/log.h"

int qp_scope_poll_init(struct qp_scopes *s)
{
	s->percpu = calloc((size_t)s->ncpus, sizeof(*s->percpu));
	if (!s->percpu)
		return -ENOMEM;
	return qp_dirty_init(&s->dirty, bpf_map__fd(s->skel->maps.scope_dirty), sizeof(struct scope_chunk_key));
}

void qp_scope_poll_fini(struct qp_scopes *s)
{
	qp_dirty_fini(&s->dirty);
	free(s->percpu);
	s->percpu = NULL;
}

static int cmp_ckey(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct scope_chunk_key));
}

struct scan_ctx {
	struct qp_scopes *s;
	__u32 flag;
};

/* a chunk of a full scan into the store, its key marked with the map's flag */
static int scan_put(void *ctx, const void *key, const void *val)
{
	struct scan_ctx *c = ctx;
	struct scope_chunk_key k;

	memcpy(&k, key, sizeof(k));
	k.chunk |= c->flag;
	return qp_scope_store_put(&c->s->store, &k, val);
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

/* collect_scopes.h: here beside read_counters, below the value poll that
 * reads one too (value_poll.c) and the collector that calls that poll. */
uint64_t qp_scopes_counter(struct qp_scopes *s, unsigned int which)
{
	__u64 *cnt;
	uint64_t sum = 0;
	__u32 k = which;
	int cpu;

	if (which == QPROF_CNT_SPAN_ABANDONED)
		return __atomic_load_n(&s->spans_abandoned, __ATOMIC_RELAXED);
	if (which >= QPROF_CNT__MAX)
		return 0;
	cnt = calloc((size_t)s->ncpus, sizeof(*cnt));
	if (cnt && !bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.counters), &k, cnt))
		for (cpu = 0; cpu < s->ncpus; cpu++)
			sum += cnt[cpu];
	free(cnt);
	return sum;
}

int qp_scope_poll(struct qp_scopes *s, uint64_t *counters)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.scope_chunks),
		       bpf_map__fd(s->skel->maps.scope_chunks_more) };
	uint64_t t0 = thread_cpu_ns();
	struct scope_chunk_key *keys;
	struct scope_chunk v;
	size_t i;
	int ret = 0, m;
	bool all;

	/* a full barrier (lock xadd): hits that read the old generation are
	 * in the maps before the copies below begin (scopes.bpf.c record()) */
	__atomic_fetch_add(&s->skel->data->qp_gen, 1, __ATOMIC_SEQ_CST);
	qp_dirty_drain(&s->dirty);
	keys = s->dirty.keys;
	read_counters(s, counters);
	all = qp_dirty_read_all(&s->dirty, counters[QPROF_CNT_DIRTY_LOST]);
	if (all) {
		s->poll.full_scans++;
		for (m = 0; m < 2 && !ret; m++) {
			struct scan_ctx c = { s, m ? QPROF_CHUNK_MORE : 0 };

			ret = qp_map_scan(fds[m], sizeof(struct scope_chunk_key), sizeof(struct scope_chunk), 1024,
					  scan_put, &c, &s->poll.chunks_read);
		}
	} else {
		if (s->dirty.n > 1)
			qsort(keys, s->dirty.n, sizeof(*keys), cmp_ckey);
		for (i = 0; i < s->dirty.n && !ret; i++) {
			struct scope_chunk_key k = keys[i];

			if (i && !cmp_ckey(&keys[i - 1], &keys[i]))
				continue; /* two CPUs queued it at once */
			m = !!(k.chunk & QPROF_CHUNK_MORE);
			k.chunk &= ~QPROF_CHUNK_MORE;
			if (bpf_map_lookup_elem(fds[m], &k, &v))
				continue; /* deleted since (a process forgotten) */
			s->poll.chunks_read++;
			ret = qp_scope_store_put(&s->store, &keys[i], &v);
		}
	}
	if (ret) {
		/* what was not kept must be read again: next time, all of it */
		s->dirty.lost_seen = UINT64_MAX;
		qp_warn("scope poll: %s", strerror(-ret));
	}
	s->poll.polls++;
	s->poll.cpu_ns += thread_cpu_ns() - t0;
	s->poll.chunks = qp_scope_store_chunks(&s->store);
	return ret;
}

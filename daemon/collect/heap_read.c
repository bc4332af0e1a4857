/* heap_read.c - reads of the heap maps: a batched walk of a BPF hash map
 * (entries made and deleted meanwhile are seen or not, none twice, as
 * bpf_map_lookup_batch gives them), a process's snapshot (its live sampled
 * allocations summed per stack, joined with the stacks' cumulative
 * figures), and the removal of a process's entries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/hashtab.h"
#include "heap_internal.h"
#include "common/util.h"

/* whether the maps and programs are there (collect_heap.c loads them) */
bool qp_heap_loaded(struct qp_heap *h)
{
	return h && __atomic_load_n(&h->loaded, __ATOMIC_ACQUIRE);
}

#define BATCH 1024

int qp_heap_map_walk(int fd, size_t ksize, size_t vsize,
		     void (*fn)(void *arg, const void *key, const void *val), void *arg)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 count, cap = BATCH, i;
	__u64 in = 0, out = 0;
	bool first = true;
	char *keys = NULL, *vals = NULL;
	int ret = 0;

	for (;;) {
		if (!keys) {
			keys = malloc(cap * ksize);
			vals = malloc(cap * vsize);
			if (!keys || !vals) {
				ret = -ENOMEM;
				break;
			}
		}
		count = cap;
		ret = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &count, &opts);
		if (ret < 0 && errno == ENOSPC && cap < (1u << 20)) {
			/* a bucket holds more than fits: retry it with more room */
			cap *= 4;
			free(keys);
			free(vals);
			keys = vals = NULL;
			continue;
		}
		if (ret < 0 && errno != ENOENT) {
			ret = -errno;
			break;
		}
		for (i = 0; i < count; i++)
			fn(arg, keys + (size_t)i * ksize, vals + (size_t)i * vsize);
		if (ret < 0) {	/* ENOENT: that was the last batch */
			ret = 0;
			break;
		}
		in = out;
		first = false;
	}
	free(keys);
	free(vals);
	return ret;
}

/* ---- a process's snapshot ---------------------------------------------- */

struct read_ctx {
	__u32 tgid;
	uint64_t since, interval;
	struct qp_htab rows;	/* stack -> struct qp_heap_row */
	int err;
};

static struct qp_heap_row *row_of(struct read_ctx *c, uint64_t stack)
{
	int64_t i = qp_htab_add_u64(&c->rows, stack, NULL);
	struct qp_heap_row *r;

	if (i < 0) {
		c->err = (int)i;
		return NULL;
	}
	r = qp_htab_value(&c->rows, (size_t)i);
	r->stack = stack;
	return r;
}

static void on_live(void *arg, const void *key, const void *val)
{
	const struct heap_live_key *k = key;
	const struct heap_live *v = val;
	struct read_ctx *c = arg;
	struct qp_heap_row *r;
	uint64_t thresh;

	if (k->tgid != c->tgid || v->ts_ns < c->since)
		return;
	thresh = heap_threshold(v->size, c->interval);
	if (!thresh || !(r = row_of(c, v->stack)))
		return;
	r->inuse_samples++;
	r->inuse_objects_x16 += heap_weight_objects_x16(thresh);
	r->inuse_bytes += heap_weight_bytes(v->size, thresh);
}

static void on_stack(void *arg, const void *key, const void *val)
{
	const struct heap_stack *s = val;
	struct read_ctx *c = arg;
	struct qp_heap_row *r;

	if (s->tgid != c->tgid || !(r = row_of(c, *(const __u64 *)key)))
		return;
	r->nips = s->nips < QPROF_HEAP_DEPTH ? s->nips : QPROF_HEAP_DEPTH;
	memcpy(r->ips, s->ips, r->nips * sizeof(r->ips[0]));
	r->tid = s->tid;
	r->nscopes = s->nscopes < QPROF_HEAP_SCOPES ? s->nscopes : QPROF_HEAP_SCOPES;
	memcpy(r->scopes, s->scopes, r->nscopes * sizeof(r->scopes[0]));
	r->span_site = s->span_site;
	memcpy(r->comm, s->comm, sizeof(r->comm) - 1);
	r->comm[sizeof(r->comm) - 1] = '\0';
	r->alloc_samples = s->samples;
	r->alloc_objects_x16 = s->est_objects_x16;
	r->alloc_bytes = s->est_bytes;
	r->growth_bytes = s->growth_bytes;
	r->growth_calls = s->growth_calls;
}

static int cmp_row(const void *a, const void *b)
{
	uint64_t x = ((const struct qp_heap_row *)a)->stack, y = ((const struct qp_heap_row *)b)->stack;

	return x < y ? -1 : x > y;
}

int qp_heap_read(struct qp_heap *h, int pid, uint64_t live_since_ns, struct qp_heap_snapshot *out)
{
	struct read_ctx c = { .tgid = (__u32)pid, .since = live_since_ns, .interval = h->interval };
	size_t i;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!qp_heap_loaded(h))
		return -ENOENT;	/* no heap target was ever made */
	qp_htab_init(&c.rows, sizeof(struct qp_heap_row));
	out->mono_ns = qp_now_ns();
	/* stacks after the live allocations: a stack made meanwhile is read too */
	ret = qp_heap_map_walk(bpf_map__fd(h->skel->maps.heap_live), sizeof(struct heap_live_key),
			       sizeof(struct heap_live), on_live, &c);
	if (!ret)
		ret = qp_heap_map_walk(bpf_map__fd(h->skel->maps.heap_stacks), sizeof(__u64),
				       sizeof(struct heap_stack), on_stack, &c);
	if (!ret)
		ret = c.err;
	if (!ret && c.rows.n) {
		out->v = malloc(c.rows.n * sizeof(*out->v));
		if (!out->v)
			ret = -ENOMEM;
	}
	if (!ret) {
		for (i = 0; i < c.rows.n; i++)
			out->v[i] = *(struct qp_heap_row *)qp_htab_value(&c.rows, i);
		out->n = c.rows.n;
		qsort(out->v, out->n, sizeof(*out->v), cmp_row);
		qp_heap_counters(h, out->counters);
	}
	qp_htab_free(&c.rows);
	return ret;
}

void qp_heap_snapshot_free(struct qp_heap_snapshot *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

const struct qp_heap_row *qp_heap_snapshot_find(const struct qp_heap_snapshot *s, uint64_t stack)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].stack == stack)
			return &s->v[mid];
		if (s->v[mid].stack < stack)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- forgetting a process ---------------------------------------------- */

struct forget_ctx {
	__u32 tgid;
	size_t ksize;
	char *keys;
	size_t n, cap;
};

static void collect_key(struct forget_ctx *c, const void *key)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		char *v = realloc(c->keys, cap * c->ksize);

		if (!v)
			return;	/* left in the map: bounded, and counted nowhere wrong (no target reads it) */
		c->keys = v;
		c->cap = cap;
	}
	memcpy(c->keys + c->n++ * c->ksize, key, c->ksize);
}

static void on_forget_live(void *arg, const void *key, const void *val)
{
	struct forget_ctx *c = arg;

	(void)val;
	if (((const struct heap_live_key *)key)->tgid == c->tgid)
		collect_key(c, key);
}

static void on_forget_stack(void *arg, const void *key, const void *val)
{
	struct forget_ctx *c = arg;

	if (((const struct heap_stack *)val)->tgid == c->tgid)
		collect_key(c, key);
}

static void forget_in(int fd, size_t ksize, size_t vsize, __u32 tgid,
		      void (*fn)(void *, const void *, const void *))
{
	struct forget_ctx c = { .tgid = tgid, .ksize = ksize };
	size_t i;

	qp_heap_map_walk(fd, ksize, vsize, fn, &c);
	for (i = 0; i < c.n; i++)
		bpf_map_delete_elem(fd, c.keys + i * ksize);
	free(c.keys);
}

void qp_heap_map_forget(struct qp_heap *h, int pid)
{
	forget_in(bpf_map__fd(h->skel->maps.heap_live), sizeof(struct heap_live_key),
		  sizeof(struct heap_live), (__u32)pid, on_forget_live);
	forget_in(bpf_map__fd(h->skel->maps.heap_stacks), sizeof(__u64), sizeof(struct heap_stack),
		  (__u32)pid, on_forget_stack);
}

void qp_heap_counters(struct qp_heap *h, uint64_t c[HEAP_CNT__MAX])
{
	__u64 *v;
	__u32 k;
	int cpu, fd;

	memset(c, 0, HEAP_CNT__MAX * sizeof(*c));
	if (!qp_heap_loaded(h))
		return;	/* no heap target yet: nothing counted */
	fd = bpf_map__fd(h->skel->maps.heap_counters);
	v = calloc((size_t)h->ncpus, sizeof(*v));
	if (!v)
		return;
	for (k = 0; k < HEAP_CNT__MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, v))
			continue;
		for (cpu = 0; cpu < h->ncpus; cpu++)
			c[k] += v[cpu];
	}
	free(v);
}

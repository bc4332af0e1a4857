/* collect_values.c - reads the marks and QPROF_VALUE maps of the scope
 * collector (statistics, and histogram buckets from the copy value_poll.c
 * keeps) into plain rows. The maps are shared by all CPUs: one value a key. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "collect_internal.h"
#include "ring_collect.h"
#include "common/elf_probes.h"
#include "common/log.h"
#include "common/usdt_spec.h"

static int cmp_mark_key(const struct mark_key *a, const struct mark_key *b)
{
	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	return a->site < b->site ? -1 : a->site > b->site;
}

/* Rows that begin with their struct mark_key (qp_mark_row, qp_value_row). */
static int cmp_row_key(const void *a, const void *b)
{
	return cmp_mark_key(a, b);
}

static int list_mark_keys(int fd, int pid, struct mark_key **out, size_t *n)
{
	return qp_map_keys(fd, sizeof(**out), pid, (void **)out, n);
}

/* The rows of the map FD (the keys of PID when pid > 0): each key's value
 * of VSIZE bytes folded by FOLD into a row of RSIZE bytes that begins with
 * the key; sorted by key. 0 or -errno (*ROWS NULL). */
static int read_rows(int fd, int pid, size_t vsize, size_t rsize,
		     void (*fold)(void *row, const void *pc, int n), void **rows, size_t *n)
{
	unsigned char *pc = calloc(1, vsize), *v = NULL;
	struct mark_key *keys = NULL;
	size_t nk = 0, i, kept = 0;
	int ret;

	*rows = NULL;
	*n = 0;
	if (!pc)
		return -ENOMEM;
	ret = list_mark_keys(fd, pid, &keys, &nk);
	if (!ret && nk && !(v = calloc(nk, rsize)))
		ret = -ENOMEM;
	for (i = 0; !ret && i < nk; i++) {
		if (bpf_map_lookup_elem(fd, &keys[i], pc))
			continue;
		memcpy(v + kept * rsize, &keys[i], sizeof(keys[i]));
		fold(v + kept * rsize, pc, 1);
		kept++;
	}
	free(keys);
	free(pc);
	if (ret) {
		free(v);
		return ret;
	}
	if (kept > 1)
		qsort(v, kept, rsize, cmp_row_key);
	*rows = v;
	*n = kept;
	return 0;
}

static void fold_mark(void *row, const void *pcv, int ncpus)
{
	const struct mark_stats *pc = pcv;
	struct qp_mark_row *r = row;
	int cpu;

	for (cpu = 0; cpu < ncpus; cpu++) {
		r->count += pc[cpu].count;
		if (pc[cpu].last_ns > r->last_ns)
			r->last_ns = pc[cpu].last_ns;
	}
}

int qp_marks_read(struct qp_scopes *s, int pid, struct qp_mark_row **rows, size_t *n)
{
	int ret = read_rows(bpf_map__fd(s->skel->maps.mark_stats), pid, sizeof(struct mark_stats),
			    sizeof(**rows), fold_mark, (void **)rows, n);

	return ret ? ret : qp_ring_merge_marks(s->ring, pid, rows, n);
}

struct hist_ent {
	struct value_bucket_key k;
	__u64 cnt;
};

static int cmp_hist(const void *a, const void *b)
{
	const struct value_bucket_key *x = &((const struct hist_ent *)a)->k;
	const struct value_bucket_key *y = &((const struct hist_ent *)b)->k;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

static int hist_add(struct hist_ent **v, size_t *n, size_t *cap, int pid,
		    const struct value_bucket_key *k, __u64 cnt)
{
	if (pid > 0 && k->tgid != (uint32_t)pid)
		return 0;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct hist_ent *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[*n].k = *k;
	(*v)[(*n)++].cnt = cnt;
	return 0;
}

/* Every histogram bucket of PID (all when <= 0): a poll copies the buckets
 * hit since the last one (value_poll.c), then the daemon's copy is listed.
 * (Reading the whole map at each request cost 25-45 ms for 20,000 buckets.) */
static int hist_read(struct qp_scopes *s, int pid, struct hist_ent **out, size_t *n)
{
	size_t i, cap = 0;
	int ret;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&s->poll_lock);
	ret = qp_value_poll(s);
	for (i = 0; !ret && i < s->vbuckets.n; i++) {
		struct value_bucket_key k;
		__u64 c;

		memcpy(&k, qp_htab_key(&s->vbuckets, i, NULL), sizeof(k));
		memcpy(&c, qp_htab_value(&s->vbuckets, i), sizeof(c));
		ret = hist_add(out, n, &cap, pid, &k, c);
	}
	pthread_mutex_unlock(&s->poll_lock);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

static void fold_value(void *row, const void *pcv, int ncpus)
{
	const struct value_stats *pc = pcv;
	struct value_stats *t = &((struct qp_value_row *)row)->st;
	int cpu;

	for (cpu = 0; cpu < ncpus; cpu++) {
		const struct value_stats *p = &pc[cpu];

		if (p->count) {
			if (!t->count || p->min_key < t->min_key)
				t->min_key = p->min_key;
			if (p->max_key > t->max_key)
				t->max_key = p->max_key;
		}
		t->count += p->count;
		t->nan += p->nan;
		t->pos_inf += p->pos_inf;
		t->neg_inf += p->neg_inf;
		if (p->last_ns > t->last_ns) {
			t->last_ns = p->last_ns;
			t->last_bits = p->last_bits;
		}
	}
}

int qp_values_read(struct qp_scopes *s, int pid, struct qp_value_row **rows, size_t *n)
{
	struct qp_value_row *v;
	struct hist_ent *h = NULL;
	size_t i, j, kept, nh = 0;
	int ret;

	ret = read_rows(bpf_map__fd(s->skel->maps.value_stats), pid, sizeof(struct value_stats),
			sizeof(*v), fold_value, (void **)&v, &kept);
	if (ret)
		return ret;
	/* histogram buckets, sorted like the rows, handed out in one merge */
	if (kept)
		ret = hist_read(s, pid, &h, &nh);
	if (nh > 1)
		qsort(h, nh, sizeof(*h), cmp_hist);
	for (i = 0, j = 0; !ret && i < kept; i++) {
		struct mark_key hk;
		size_t first;
		int c = 1;

		while (j < nh) {
			hk.tgid = h[j].k.tgid;
			hk.site = h[j].k.site;
			c = cmp_mark_key(&hk, &v[i].key);
			if (c >= 0)
				break;
			j++;	/* a bucket of no row (its row came after we listed them) */
		}
		for (first = j; j < nh; j++) {
			hk.tgid = h[j].k.tgid;
			hk.site = h[j].k.site;
			if (cmp_mark_key(&hk, &v[i].key))
				break;
		}
		if (j == first)
			continue;
		v[i].buckets = malloc((j - first) * sizeof(*v[i].buckets));
		if (!v[i].buckets) {
			ret = -ENOMEM;
			break;
		}
		for (; first < j; first++) {
			v[i].buckets[v[i].nbuckets].bucket = h[first].k.bucket;
			v[i].buckets[v[i].nbuckets++].count = h[first].cnt;
		}
	}
	free(h);
	if (!ret)
		ret = qp_ring_merge_values(s->ring, pid, &v, &kept);
	if (ret) {
		qp_values_free(v, kept);
		return ret;
	}
	*rows = v;
	*n = kept;
	return 0;
}

void qp_values_free(struct qp_value_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(rows[i].buckets);
	free(rows);
}

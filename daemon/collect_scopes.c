/* collect_scopes.c - loads bpf/scopes.bpf.c through its skeleton, attaches
 * it to USDT sites with libbpf's USDT support (which also raises semaphores),
 * and reads its per-CPU maps back into plain snapshots for the model. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_scopes.h"
#include "log.h"
#include "scopes.skel.h"

struct qp_scopes {
	struct scopes *skel;
	int ncpus;
	uint64_t epoch;	/* last attach epoch handed out */
};

int qp_scopes_open(struct qp_scopes **out, unsigned int max_sites,
		   char *err, size_t errlen)
{
	struct qp_scopes *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		snprintf(err, errlen, "cannot count possible CPUs: %s", strerror(-s->ncpus));
		ret = s->ncpus ? s->ncpus : -EINVAL;
		goto fail;
	}
	s->skel = scopes__open();
	if (!s->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	bpf_map__set_max_entries(s->skel->maps.scope_stats, max_sites);
	ret = scopes__load(s->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF programs: %s", strerror(-ret));
		goto fail;
	}
	s->skel->links.thread_exit = bpf_program__attach(s->skel->progs.thread_exit);
	if (!s->skel->links.thread_exit) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach to sched_process_exit: %s", strerror(errno));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	qp_scopes_close(s);
	return ret;
}

void qp_scopes_close(struct qp_scopes *s)
{
	if (!s)
		return;
	scopes__destroy(s->skel);
	free(s);
}

static int push_link(struct bpf_link ***links, size_t *n, struct bpf_link *l)
{
	struct bpf_link **v = realloc(*links, (*n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	v[(*n)++] = l;
	*links = v;
	return 0;
}

int qp_scopes_thread_stacks_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.thread_stacks);
}

uint64_t qp_scopes_new_epoch(struct qp_scopes *s)
{
	return ++s->epoch;
}

int qp_scopes_attach(struct qp_scopes *s, int pid, const char *path, uint64_t epoch, bool has_enter,
		     bool has_exit, struct bpf_link ***links, size_t *nlinks, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_usdt_opts, opts);
	struct bpf_program *progs[2] = { s->skel->progs.scope_enter, s->skel->progs.scope_exit };
	const char *names[2] = { "scope_enter", "scope_exit" };
	bool want[2] = { has_enter, has_exit };
	size_t first = *nlinks;
	int i, made = 0, ret;

	opts.usdt_cookie = (epoch << 1) | (pid < 0 ? QPROF_COOKIE_BINARY : 0);
	/* exits first: an exit seen without its enter is counted and harmless,
	 * an enter seen without its exit would sit at the bottom of the stack */
	for (i = 1; i >= 0; i--) {
		struct bpf_link *l;

		if (!want[i])
			continue;
		l = bpf_program__attach_usdt(progs[i], pid, path, "qprof", names[i], &opts);
		if (!l) {
			ret = -errno;
			snprintf(err, errlen, "cannot attach qprof:%s in %s: %s", names[i], path,
				 strerror(errno));
			goto undo;
		}
		ret = push_link(links, nlinks, l);
		if (ret) {
			bpf_link__destroy(l);
			snprintf(err, errlen, "out of memory");
			goto undo;
		}
		made++;
	}
	return made;
undo:
	qp_scopes_detach_links(*links + first, *nlinks - first);
	*nlinks = first;
	return ret;
}

void qp_scopes_detach_links(struct bpf_link **links, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
}

int qp_scopes_exclude(struct qp_scopes *s, uint32_t pid, bool excluded)
{
	int fd = bpf_map__fd(s->skel->maps.excluded);
	__u8 one = 1;

	if (excluded)
		return bpf_map_update_elem(fd, &pid, &one, BPF_ANY) ? -errno : 0;
	if (bpf_map_delete_elem(fd, &pid) && errno != ENOENT)
		return -errno;
	return 0;
}

static int cmp_key(const struct scope_key *a, const struct scope_key *b)
{
	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	if (a->site != b->site)
		return a->site < b->site ? -1 : 1;
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	return cmp_key(&((const struct qp_scope_row *)a)->key, &((const struct qp_scope_row *)b)->key);
}

/* All keys of the map (of PID when pid > 0). Keys deleted while we walk make
 * get_next_key restart from the beginning; a cap bounds that. */
static int list_keys(int fd, int pid, struct scope_key **out, size_t *n)
{
	struct scope_key key, next, *v = NULL, *nv;
	size_t cap = 0, cnt = 0, steps = 0;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (++steps > 1u << 22)
			break;
		if (pid <= 0 || next.tgid == (uint32_t)pid) {
			if (cnt == cap) {
				cap = cap ? cap * 2 : 64;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			v[cnt++] = next;
		}
		key = next;
		prev = &key;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int qp_scopes_forget(struct qp_scopes *s, uint32_t pid)
{
	int fd = bpf_map__fd(s->skel->maps.scope_stats);
	struct scope_key *keys = NULL;
	size_t n = 0, i;
	int ret;

	/* its thread stacks need no cleaning: a later attach has a newer epoch */
	ret = list_keys(fd, (int)pid, &keys, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &keys[i]);
	free(keys);
	return 0;
}

int qp_scopes_read(struct qp_scopes *s, int pid, struct qp_scope_snapshot *out)
{
	int fd = bpf_map__fd(s->skel->maps.scope_stats);
	int cfd = bpf_map__fd(s->skel->maps.counters);
	size_t vsz = (sizeof(struct scope_stats) + 7) & ~(size_t)7;
	struct scope_stats *percpu;
	struct scope_key *keys = NULL;
	size_t n = 0, i, kept = 0;
	__u64 cnt[256];
	__u32 c;
	int ret, cpu;

	memset(out, 0, sizeof(*out));
	percpu = malloc(vsz * s->ncpus);
	if (!percpu)
		return -ENOMEM;
	ret = list_keys(fd, pid, &keys, &n);
	if (ret)
		goto done;
	out->rows = calloc(n ? n : 1, sizeof(*out->rows));
	if (!out->rows) {
		ret = -ENOMEM;
		goto done;
	}
	for (i = 0; i < n; i++) {
		struct qp_scope_row *r = &out->rows[kept];

		if (bpf_map_lookup_elem(fd, &keys[i], percpu))
			continue; /* deleted meanwhile */
		r->key = keys[i];
		for (cpu = 0; cpu < s->ncpus; cpu++) {
			const struct scope_stats *p = (const void *)((const char *)percpu + vsz * cpu);
			unsigned int b;

			if (!p->count)
				continue;
			if (!r->stats.count || p->min_ns < r->stats.min_ns)
				r->stats.min_ns = p->min_ns;
			if (p->max_ns > r->stats.max_ns)
				r->stats.max_ns = p->max_ns;
			r->stats.count += p->count;
			r->stats.sum_ns += p->sum_ns;
			for (b = 0; b < QPROF_HIST_BUCKETS; b++)
				r->stats.hist[b] += p->hist[b];
		}
		if (r->stats.count)
			kept++;
	}
	out->n = kept;
	qsort(out->rows, kept, sizeof(*out->rows), cmp_row);
	for (c = 0; c < QPROF_CNT__MAX && s->ncpus <= 256; c++) {
		if (bpf_map_lookup_elem(cfd, &c, cnt))
			continue;
		for (cpu = 0; cpu < s->ncpus; cpu++)
			out->counters[c] += cnt[cpu];
	}
	ret = 0;
done:
	free(keys);
	free(percpu);
	if (ret)
		qp_scope_snapshot_free(out);
	return ret;
}

void qp_scope_snapshot_free(struct qp_scope_snapshot *snap)
{
	free(snap->rows);
	memset(snap, 0, sizeof(*snap));
}

const struct qp_scope_row *qp_scope_snapshot_find(const struct qp_scope_snapshot *snap,
						  const struct scope_key *key)
{
	size_t lo = 0, hi = snap->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = cmp_key(&snap->rows[mid].key, key);

		if (!c)
			return &snap->rows[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

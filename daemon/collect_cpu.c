/* collect_cpu.c - loads bpf/profile.bpf.c, shares the scopes object's
 * thread stacks with it, opens a software cpu-clock perf event per CPU and
 * attaches the sampler to each. Samples arrive in a ring buffer, drained
 * every 5 ms by a thread of ours and before every read; each is counted under
 * (process, stack ids, scopes) in a table of ours, the stacks interned in a
 * table of distinct stacks whose ids never change and are never reused. So
 * nothing in the kernel fills up over a long run: the only losses are a full
 * ring buffer and the table caps below, both counted. Reads are sorted
 * snapshots of the counts. */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_cpu.h"
#include "log.h"
#include "profile.skel.h"

#define MAX_STACKS (1u << 20)	/* distinct live stacks; beyond, samples are lost (counted) */
#define MAX_KEYS (1u << 21)	/* distinct (process, stacks, scopes) */
#define DRAIN_MS 5

struct stack_ent {
	uint64_t hash;
	uint64_t *ips;		/* NULL once freed (its process forgotten) */
	uint32_t n;		/* frames */
	uint32_t refs;		/* sample keys using it */
};

struct agg {
	struct sample_key key;
	uint64_t count;
	char comm[16];
};

struct qp_cpu {
	struct profile *skel;
	struct bpf_link **links;
	int *pfds;
	unsigned int nevents;
	int ncpus;
	struct ring_buffer *rb;
	pthread_t thread;
	bool thread_started, stopping;
	pthread_cond_t cond;
	pthread_mutex_t lock;		/* all below, and ring consumption */
	struct stack_ent *stacks;	/* by id */
	size_t nstacks, capstacks;	/* ids ever given */
	size_t nlive;			/* stacks not freed */
	size_t nindexed;		/* index entries: live, and freed ones not purged yet */
	uint32_t *sidx;			/* open addressing: stack id + 1, 0 = empty */
	size_t nsidx;			/* a power of two */
	struct agg *aggs;
	size_t naggs, capaggs;
	uint32_t *aidx;			/* open addressing: agg index + 1 */
	size_t naidx;
	uint64_t kept, lost;		/* samples counted; lost here (caps, bad records) */
};

/* ---- the tables ------------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_ips(const uint64_t *ips, uint32_t n)
{
	uint64_t h = n;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = mix(h, ips[i]);
	return h;
}

static uint64_t hash_key(const struct sample_key *k)
{
	uint64_t h = mix(k->tgid, ((uint64_t)(uint32_t)k->user_stack << 32) | (uint32_t)k->kern_stack);
	int i;

	for (i = 0; i < QPROF_SAMPLE_SCOPES; i++)
		h = mix(h, k->scopes[i]);
	return h;
}

/* (Re)build an index of N slots over the live entries. */
static int stacks_reindex(struct qp_cpu *c, size_t nslots)
{
	uint32_t *idx = calloc(nslots, sizeof(*idx));
	size_t id;

	if (!idx)
		return -ENOMEM;
	for (id = 0; id < c->nstacks; id++) {
		size_t m = nslots - 1, i;

		if (!c->stacks[id].ips)
			continue;
		for (i = c->stacks[id].hash & m; idx[i]; i = (i + 1) & m)
			;
		idx[i] = (uint32_t)id + 1;
	}
	free(c->sidx);
	c->sidx = idx;
	c->nsidx = nslots;
	c->nindexed = c->nlive;
	return 0;
}

/* The id of the stack IPS[0..N), added when new; -1 when there is no room. */
static int32_t stack_intern(struct qp_cpu *c, const uint64_t *ips, uint32_t n)
{
	uint64_t h = hash_ips(ips, n);
	struct stack_ent *e;
	size_t m, i;

	if (c->nsidx) {
		m = c->nsidx - 1;
		for (i = h & m; c->sidx[i]; i = (i + 1) & m) {
			e = &c->stacks[c->sidx[i] - 1];
			if (e->ips && e->hash == h && e->n == n && !memcmp(e->ips, ips, n * sizeof(*ips)))
				return (int32_t)(c->sidx[i] - 1);
		}
	}
	if (c->nlive >= MAX_STACKS || c->nstacks >= INT32_MAX)
		return -1;
	/* at most half full, freed entries included; after a rebuild at most
	 * a quarter, so a rebuild purges and doubles only when needed */
	if ((c->nindexed + 1) * 2 > c->nsidx) {
		size_t ns = c->nsidx ? c->nsidx : 4096;

		while ((c->nlive + 1) * 4 > ns)
			ns *= 2;
		if (stacks_reindex(c, ns))
			return -1;
	}
	if (c->nstacks == c->capstacks) {
		size_t cap = c->capstacks ? c->capstacks * 2 : 1024;
		struct stack_ent *v = realloc(c->stacks, cap * sizeof(*v));

		if (!v)
			return -1;
		c->stacks = v;
		c->capstacks = cap;
	}
	e = &c->stacks[c->nstacks];
	e->ips = malloc(n ? n * sizeof(*ips) : 1);
	if (!e->ips)
		return -1;
	memcpy(e->ips, ips, n * sizeof(*ips));
	e->hash = h;
	e->n = n;
	e->refs = 0;
	m = c->nsidx - 1;
	for (i = h & m; c->sidx[i]; i = (i + 1) & m)
		;
	c->sidx[i] = (uint32_t)c->nstacks + 1;
	c->nlive++;
	c->nindexed++;
	return (int32_t)c->nstacks++;
}

static int aggs_reindex(struct qp_cpu *c, size_t nslots)
{
	uint32_t *idx = calloc(nslots, sizeof(*idx));
	size_t a;

	if (!idx)
		return -ENOMEM;
	for (a = 0; a < c->naggs; a++) {
		size_t m = nslots - 1, i;

		for (i = hash_key(&c->aggs[a].key) & m; idx[i]; i = (i + 1) & m)
			;
		idx[i] = (uint32_t)a + 1;
	}
	free(c->aidx);
	c->aidx = idx;
	c->naidx = nslots;
	return 0;
}

/* The aggregate of KEY, added (with COMM) when new; NULL when no room. */
static struct agg *agg_get(struct qp_cpu *c, const struct sample_key *key, const char *comm)
{
	uint64_t h = hash_key(key);
	struct agg *a;
	size_t m, i;

	if (c->naidx) {
		m = c->naidx - 1;
		for (i = h & m; c->aidx[i]; i = (i + 1) & m) {
			a = &c->aggs[c->aidx[i] - 1];
			if (!memcmp(&a->key, key, sizeof(*key)))
				return a;
		}
	}
	if (c->naggs >= MAX_KEYS)
		return NULL;
	if ((c->naggs + 1) * 2 > c->naidx && aggs_reindex(c, c->naidx ? c->naidx * 2 : 4096))
		return NULL;
	if (c->naggs == c->capaggs) {
		size_t cap = c->capaggs ? c->capaggs * 2 : 1024;
		struct agg *v = realloc(c->aggs, cap * sizeof(*v));

		if (!v)
			return NULL;
		c->aggs = v;
		c->capaggs = cap;
	}
	a = &c->aggs[c->naggs];
	a->key = *key;
	a->count = 0;
	memcpy(a->comm, comm, sizeof(a->comm));
	a->comm[sizeof(a->comm) - 1] = '\0';
	m = c->naidx - 1;
	for (i = h & m; c->aidx[i]; i = (i + 1) & m)
		;
	c->aidx[i] = (uint32_t)c->naggs + 1;
	if (key->user_stack >= 0)
		c->stacks[key->user_stack].refs++;
	if (key->kern_stack >= 0)
		c->stacks[key->kern_stack].refs++;
	c->naggs++;
	return a;
}

/* One ring-buffer record (the caller holds c->lock, consuming). */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct qp_cpu *c = ctx;
	const struct cpu_sample *r = data;
	const size_t hdr = offsetof(struct cpu_sample, ips);
	struct sample_key key = { 0 };
	struct agg *a;

	if (size < hdr || r->kern_len % 8 || r->user_len % 8 ||
	    r->kern_len > QPROF_STACK_DEPTH * 8 || r->user_len > QPROF_STACK_DEPTH * 8 ||
	    hdr + r->kern_len + r->user_len > size) {
		c->lost++;
		return 0;
	}
	key.tgid = r->tgid;
	memcpy(key.scopes, r->scopes, sizeof(key.scopes));
	key.kern_stack = key.user_stack = -1;
	if (r->kern_len && (key.kern_stack = stack_intern(c, (const uint64_t *)r->ips, r->kern_len / 8)) < 0)
		goto lost;
	if (r->user_len &&
	    (key.user_stack = stack_intern(c, (const uint64_t *)r->ips + r->kern_len / 8, r->user_len / 8)) < 0)
		goto lost;
	a = agg_get(c, &key, r->comm);
	if (!a)
		goto lost;
	a->count++;
	c->kept++;
	return 0;
lost:
	c->lost++;
	return 0;
}

/* Everything the ring buffer holds into the tables; the caller holds the lock. */
static void drain_locked(struct qp_cpu *c)
{
	int n;

	if (!c->rb)
		return;
	n = ring_buffer__consume(c->rb);
	if (n < 0 && n != -EINTR)
		qp_warn("CPU sample ring buffer: %s", strerror(-n));
}

static void *drain_thread(void *arg)
{
	struct qp_cpu *c = arg;
	struct timespec until;

	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += DRAIN_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->cond, &c->lock, &until);
		drain_locked(c);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---- perf events and the BPF object ------------------------------------- */

static int perf_open(unsigned int freq, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_freq = freq,
		.freq = 1,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int qp_cpu_open(struct qp_cpu **out, int thread_stacks_fd, unsigned int freq, bool all,
		char *err, size_t errlen)
{
	struct qp_cpu *c;
	long nconf = sysconf(_SC_NPROCESSORS_CONF);
	int cpu, ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cond, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_init(&c->lock, NULL);
	}
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0 || nconf <= 0) {
		snprintf(err, errlen, "cannot count CPUs");
		qp_cpu_close(c);
		return -EINVAL;
	}
	c->skel = profile__open();
	if (!c->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the sampler BPF object: %s", strerror(errno));
		goto fail;
	}
	c->skel->rodata->sample_all = all;
	ret = bpf_map__reuse_fd(c->skel->maps.thread_stacks, thread_stacks_fd);
	if (ret) {
		snprintf(err, errlen, "cannot share the thread stacks map: %s", strerror(-ret));
		goto fail;
	}
	ret = profile__load(c->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the sampler: %s", strerror(-ret));
		goto fail;
	}
	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.cpu_ring), on_sample, c, NULL);
	if (!c->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the CPU sample ring buffer: %s", strerror(errno));
		goto fail;
	}
	ret = -pthread_create(&c->thread, NULL, drain_thread, c);
	if (ret) {
		snprintf(err, errlen, "cannot start the CPU sample thread: %s", strerror(-ret));
		goto fail;
	}
	c->thread_started = true;
	c->links = calloc((size_t)nconf, sizeof(*c->links));
	c->pfds = calloc((size_t)nconf, sizeof(*c->pfds));
	if (!c->links || !c->pfds) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (cpu = 0; cpu < nconf; cpu++) {
		int fd = perf_open(freq, cpu);
		struct bpf_link *l;

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline CPU */
			ret = -errno;
			snprintf(err, errlen, "perf_event_open(cpu-clock, cpu %d): %s", cpu, strerror(errno));
			goto fail;
		}
		l = bpf_program__attach_perf_event(c->skel->progs.do_sample, fd);
		if (!l) {
			ret = -errno;
			close(fd);
			snprintf(err, errlen, "cannot attach the sampler to cpu %d: %s", cpu, strerror(errno));
			goto fail;
		}
		c->links[c->nevents] = l;
		c->pfds[c->nevents++] = fd;
	}
	if (!c->nevents) {
		ret = -ENODEV;
		snprintf(err, errlen, "no online CPU accepted a cpu-clock perf event");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	qp_cpu_close(c);
	return ret;
}

void qp_cpu_close(struct qp_cpu *c)
{
	unsigned int i;
	size_t id;

	if (!c)
		return;
	for (i = 0; i < c->nevents; i++) {
		bpf_link__destroy(c->links[i]);
		close(c->pfds[i]);
	}
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	ring_buffer__free(c->rb);
	free(c->links);
	free(c->pfds);
	profile__destroy(c->skel);
	for (id = 0; id < c->nstacks; id++)
		free(c->stacks[id].ips);
	free(c->stacks);
	free(c->sidx);
	free(c->aggs);
	free(c->aidx);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

unsigned int qp_cpu_ncpus(const struct qp_cpu *c) { return c ? c->nevents : 0; }

int qp_cpu_add_pid(struct qp_cpu *c, uint32_t pid)
{
	__u8 one = 1;

	return bpf_map_update_elem(bpf_map__fd(c->skel->maps.cpu_targets), &pid, &one, BPF_ANY) ? -errno : 0;
}

static int cmp_key(const struct sample_key *a, const struct sample_key *b)
{
	return memcmp(a, b, sizeof(*a));
}

static int cmp_raw(const void *a, const void *b)
{
	return cmp_key(&((const struct qp_cpu_raw *)a)->key, &((const struct qp_cpu_raw *)b)->key);
}

static void stack_unref(struct qp_cpu *c, int32_t id)
{
	struct stack_ent *e;

	if (id < 0)
		return;
	e = &c->stacks[id];
	if (e->refs && !--e->refs) {
		free(e->ips);
		e->ips = NULL;	/* the id is not reused: old snapshots stay right */
		c->nlive--;
	}
}

int qp_cpu_remove_pid(struct qp_cpu *c, uint32_t pid, bool forget)
{
	size_t a, n = 0;
	int ret = 0;

	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.cpu_targets), &pid) && errno != ENOENT)
		return -errno;
	if (!forget)
		return 0;
	pthread_mutex_lock(&c->lock);
	drain_locked(c);
	for (a = 0; a < c->naggs; a++) {
		if (c->aggs[a].key.tgid == pid) {
			stack_unref(c, c->aggs[a].key.user_stack);
			stack_unref(c, c->aggs[a].key.kern_stack);
			continue;
		}
		c->aggs[n++] = c->aggs[a];
	}
	if (n != c->naggs) {
		c->naggs = n;
		/* rebuilt at the same sizes. A failed stack index only keeps
		 * freed entries, which lookups skip (and nindexed counts); a
		 * failed key index would be wrong: then drop every count
		 * rather than lie */
		if (c->nsidx)
			stacks_reindex(c, c->nsidx);
		if (aggs_reindex(c, c->naidx)) {
			ret = -ENOMEM;
			c->naggs = 0;
			c->naidx = 0;
			free(c->aidx);
			c->aidx = NULL;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* The caller holds the lock, having drained the ring. */
static void counters_locked(struct qp_cpu *c, uint64_t *samples, uint64_t *lost)
{
	int cfd = bpf_map__fd(c->skel->maps.pcounters);
	__u64 *cnt = calloc((size_t)c->ncpus, sizeof(*cnt));
	__u32 k;
	int cpu;

	*samples = c->kept;
	*lost = c->lost;
	if (!cnt)
		return;
	for (k = QPROF_PCNT_LOST_RING; k < QPROF_PCNT__MAX; k++) {
		if (bpf_map_lookup_elem(cfd, &k, cnt))
			continue;
		for (cpu = 0; cpu < c->ncpus; cpu++)
			*lost += cnt[cpu];
	}
	free(cnt);
}

void qp_cpu_counters(struct qp_cpu *c, uint64_t *samples, uint64_t *lost)
{
	pthread_mutex_lock(&c->lock);
	drain_locked(c);
	counters_locked(c, samples, lost);
	pthread_mutex_unlock(&c->lock);
}

int qp_cpu_read(struct qp_cpu *c, struct qp_cpu_snapshot *out)
{
	size_t a;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lock);
	drain_locked(c);
	if (c->naggs) {
		out->v = malloc(c->naggs * sizeof(*out->v));
		if (!out->v) {
			pthread_mutex_unlock(&c->lock);
			return -ENOMEM;
		}
	}
	for (a = 0; a < c->naggs; a++) {
		out->v[a].key = c->aggs[a].key;
		out->v[a].count = c->aggs[a].count;
		memcpy(out->v[a].comm, c->aggs[a].comm, sizeof(out->v[a].comm));
	}
	out->n = c->naggs;
	counters_locked(c, &out->samples, &out->lost);
	pthread_mutex_unlock(&c->lock);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_raw);
	return 0;
}

void qp_cpu_snapshot_free(struct qp_cpu_snapshot *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

const struct qp_cpu_raw *qp_cpu_snapshot_find(const struct qp_cpu_snapshot *s, const struct sample_key *k)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = cmp_key(&s->v[mid].key, k);

		if (!r)
			return &s->v[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int qp_cpu_stack(struct qp_cpu *c, int32_t id, uint64_t ips[QPROF_STACK_DEPTH], size_t *n)
{
	int ret = 0;

	*n = 0;
	if (id < 0)
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	if ((size_t)id >= c->nstacks || !c->stacks[id].ips) {
		ret = -ENOENT;
	} else {
		*n = c->stacks[id].n;
		memcpy(ips, c->stacks[id].ips, *n * sizeof(*ips));
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

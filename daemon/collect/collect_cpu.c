/* collect_cpu.c - loads bpf/profile.bpf.c, shares the scopes object's
 * thread stacks with it, opens a software cpu-clock perf event per CPU and
 * attaches the sampler to each. Samples arrive in a ring buffer, drained
 * every 50 ms by a thread of ours and before every read; each is counted in
 * cpu_table.c under (process, stack ids, scopes), the stacks interned in a
 * table of distinct stacks (an id, once freed, never names another stack).
 * So nothing in the kernel fills up over a long run: the only losses are a
 * full ring buffer and the table caps below, both counted. The table's
 * memory stays flat: every AGE_EVERY_S the thread ages out keys with no
 * sample in KEEP_S, longer than any window, so windows stay exact; their
 * samples leave the since-attach views and are counted as aged. Reads are
 * sorted snapshots of the counts. */
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
#include "cpu_table.h"
#include "log.h"
#include "profile.skel.h"
#include "util.h"

#define MAX_STACKS (1u << 19)	/* distinct live stacks (~0.45 kB each); beyond, samples are lost (counted) */
#define MAX_KEYS (1u << 20)	/* distinct (process, stacks, scopes) */
#define MAX_BYTES (128u << 20)	/* the table's memory; beyond, new stacks and keys are refused (lost) */
#define KEEP_S 600		/* a key with no sample for this long is aged out: twice the longest window (300 s) */
#define AGE_EVERY_S 10
#define AGE_FLOOR (256u << 10)	/* below this many bytes nothing is aged: small profiles keep all since attach */
#define DRAIN_MS 50	/* reads drain first anyway: this only keeps the ring from filling */
#define USER_ADDR_END (1ull << 56)	/* x86-64 user space, 5-level paging included */

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
	struct qp_cpu_table tab;
	uint64_t kept, lost;		/* samples counted; lost here (caps, bad records) */
	uint64_t t0_ns;			/* the table's clock starts here (monotonic) */
	uint32_t aged_at;		/* table clock of the last aging pass */
};

/* One ring-buffer record (the caller holds c->lock, consuming). */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct qp_cpu *c = ctx;
	const struct cpu_sample *r = data;
	const size_t hdr = offsetof(struct cpu_sample, ips);
	struct qp_cpu_sample_in in;
	uint32_t i;

	if (size < hdr || r->kern_len % 8 || r->user_len % 8 || r->open_len % 8 ||
	    r->kern_len > QPROF_STACK_DEPTH * 8 || r->user_len > QPROF_STACK_DEPTH * 8 ||
	    r->open_len > QPROF_SAMPLE_OPEN_MAX * 8 ||
	    hdr + (size_t)r->kern_len + r->user_len + r->open_len > size) {
		c->lost++;
		return 0;
	}
	in.tgid = r->tgid;
	in.kern = (const uint64_t *)r->ips;
	in.nkern = r->kern_len / 8;
	in.user = in.kern + in.nkern;
	in.nuser = r->user_len / 8;
	/* a stack ends at its first 0 (where the frame-pointer chain ended,
	 * as the stack map's zero padding did); a walk through code built
	 * without frame pointers can also derail into values that are no user
	 * address at all (kernel half): the user stack ends before them */
	for (i = 0; i < in.nkern; i++)
		if (!in.kern[i])
			in.nkern = i;
	for (i = 0; i < in.nuser; i++)
		if (!in.user[i] || in.user[i] >= USER_ADDR_END)
			in.nuser = i;
	in.scopes = (const uint64_t *)r->scopes;
	/* right after the user stack as sent (before the cut above) */
	in.open = (const uint64_t *)r->ips + (r->kern_len + r->user_len) / 8;
	in.nopen = r->open_len / 8;
	in.comm = r->comm;
	if (qp_cpu_table_add(&c->tab, &in))
		c->kept++;
	else
		c->lost++;
	return 0;
}

/* Everything the ring buffer holds into the tables; the caller holds the lock. */
static void drain_locked(struct qp_cpu *c)
{
	int n;

	if (!c->rb)
		return;
	c->tab.now = (uint32_t)((qp_now_ns() - c->t0_ns) / 1000000000ull);
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
		if (c->tab.now >= KEEP_S && c->tab.now - c->aged_at >= AGE_EVERY_S) {
			c->aged_at = c->tab.now;
			if (qp_cpu_table_age(&c->tab, c->tab.now - KEEP_S, AGE_FLOOR) < 0)
				qp_warn("CPU samples: out of memory while aging; every count moved to aged");
		}
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

int qp_cpu_open(struct qp_cpu **out, int thread_stacks_fd, int ring_tids_fd, unsigned int freq, bool all,
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
	qp_cpu_table_init(&c->tab, MAX_STACKS, MAX_KEYS, MAX_BYTES);
	c->t0_ns = qp_now_ns();
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
	if (ring_tids_fd >= 0) {
		ret = bpf_map__reuse_fd(c->skel->maps.ring_tids, ring_tids_fd);
		if (ret) {
			snprintf(err, errlen, "cannot share the ring collector's thread map: %s", strerror(-ret));
			goto fail;
		}
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
	qp_cpu_table_free(&c->tab);
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

int qp_cpu_remove_pid(struct qp_cpu *c, uint32_t pid, bool forget)
{
	int ret;

	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.cpu_targets), &pid) && errno != ENOENT)
		return -errno;
	if (!forget)
		return 0;
	pthread_mutex_lock(&c->lock);
	drain_locked(c);
	ret = qp_cpu_table_forget(&c->tab, pid);
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

void qp_cpu_memory(struct qp_cpu *c, uint64_t *aged, size_t *bytes)
{
	pthread_mutex_lock(&c->lock);
	*aged = c->tab.aged;
	*bytes = qp_cpu_table_bytes(&c->tab);
	pthread_mutex_unlock(&c->lock);
}

int qp_cpu_read(struct qp_cpu *c, struct qp_cpu_snapshot *out)
{
	size_t a;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lock);
	drain_locked(c);
	if (c->tab.naggs) {
		out->v = malloc(c->tab.naggs * sizeof(*out->v));
		if (!out->v) {
			pthread_mutex_unlock(&c->lock);
			return -ENOMEM;
		}
	}
	for (a = 0; a < c->tab.naggs; a++) {
		out->v[a].key = c->tab.aggs[a].key;
		out->v[a].count = c->tab.aggs[a].count;
		memcpy(out->v[a].comm, c->tab.aggs[a].comm, sizeof(out->v[a].comm));
	}
	out->n = c->tab.naggs;
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

static int cmp_key_raw(const void *key, const void *raw)
{
	return cmp_key(key, &((const struct qp_cpu_raw *)raw)->key);
}

const struct qp_cpu_raw *qp_cpu_snapshot_find(const struct qp_cpu_snapshot *s, const struct sample_key *k)
{
	return s->n ? bsearch(k, s->v, s->n, sizeof(*s->v), cmp_key_raw) : NULL;
}

int qp_cpu_stack(struct qp_cpu *c, int32_t id, uint64_t ips[QPROF_STACK_DEPTH], size_t *n)
{
	int ret = 0;

	*n = 0;
	if (id < 0)
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	ret = qp_cpu_table_stack(&c->tab, id, ips, QPROF_STACK_DEPTH, n);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

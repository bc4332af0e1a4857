/* collect_cpu.c - loads bpf/profile.bpf.c, shares the scopes object's
 * thread stacks with it, opens a software cpu-clock perf event per CPU and
 * attaches the sampler to each. Reads sample counts as sorted snapshots. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_cpu.h"
#include "log.h"
#include "profile.skel.h"

struct qp_cpu {
	struct profile *skel;
	struct bpf_link **links;
	int *pfds;
	unsigned int nevents;
	int ncpus;
};

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
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0 || nconf <= 0) {
		snprintf(err, errlen, "cannot count CPUs");
		free(c);
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
	free(c->links);
	free(c->pfds);
	profile__destroy(c->skel);
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
	int fd = bpf_map__fd(c->skel->maps.samples);
	struct sample_key key, next, *dead = NULL, *nd;
	size_t n = 0, i, steps = 0;
	void *prev = NULL;

	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.cpu_targets), &pid) && errno != ENOENT)
		return -errno;
	if (!forget)
		return 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0 && ++steps < (1u << 22)) {
		if (next.tgid == pid) {
			nd = realloc(dead, (n + 1) * sizeof(*nd));
			if (!nd)
				break;
			dead = nd;
			dead[n++] = next;
		}
		key = next;
		prev = &key;
	}
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &dead[i]);
	free(dead);
	return 0;
}

void qp_cpu_counters(struct qp_cpu *c, uint64_t *samples, uint64_t *lost)
{
	int cfd = bpf_map__fd(c->skel->maps.pcounters);
	__u64 *cnt = calloc((size_t)c->ncpus, sizeof(*cnt));
	__u32 k;
	int cpu;

	*samples = *lost = 0;
	if (!cnt)
		return;
	for (k = 0; k < QPROF_PCNT__MAX; k++) {
		if (bpf_map_lookup_elem(cfd, &k, cnt))
			continue;
		for (cpu = 0; cpu < c->ncpus; cpu++) {
			if (k == QPROF_PCNT_SAMPLES)
				*samples += cnt[cpu];
			else
				*lost += cnt[cpu];
		}
	}
	free(cnt);
}

int qp_cpu_read(struct qp_cpu *c, struct qp_cpu_snapshot *out)
{
	int fd = bpf_map__fd(c->skel->maps.samples);
	struct sample_key key, next;
	struct sample_value val;
	size_t cap = 0, steps = 0;
	void *prev = NULL;

	memset(out, 0, sizeof(*out));
	while (bpf_map_get_next_key(fd, prev, &next) == 0 && ++steps < (1u << 22)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &val))
			continue;
		if (out->n == cap) {
			struct qp_cpu_raw *nv;

			cap = cap ? cap * 2 : 256;
			nv = realloc(out->v, cap * sizeof(*nv));
			if (!nv) {
				qp_cpu_snapshot_free(out);
				return -ENOMEM;
			}
			out->v = nv;
		}
		out->v[out->n].key = key;
		out->v[out->n].count = val.count;
		memcpy(out->v[out->n].comm, val.comm, sizeof(val.comm));
		out->v[out->n].comm[sizeof(val.comm) - 1] = '\0';
		out->n++;
	}
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_raw);
	qp_cpu_counters(c, &out->samples, &out->lost);
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
	size_t i;

	*n = 0;
	if (id < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.stacks), &id, ips))
		return -errno;
	for (i = 0; i < QPROF_STACK_DEPTH && ips[i]; i++)
		;
	*n = i;
	return 0;
}

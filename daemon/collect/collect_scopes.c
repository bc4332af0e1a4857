/* collect_scopes.c - loads bpf/scopes.bpf.c through its skeleton and reads
 * its per-CPU scope aggregates and counters back into plain snapshots for
 * the model (links: collect_attach.c; marks and values: collect_values.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "collect_scopes.h"
#include "elf_probes.h"
#include "log.h"
#include "scopes.skel.h"
#include "collect_internal.h"
#include "usdt_spec.h"

/* Kernel memory reserved up front for scope aggregates (the preallocated
 * map scope_stats: 8.5 KiB per entry per possible CPU); never fewer than
 * PREALLOC_MIN entries, and QPROF_PREALLOC_SITES in the environment sets the
 * number. The rest of --max-sites is allocated on demand. */
#define PREALLOC_BYTES (32u << 20)
#define PREALLOC_MIN 16u


int qp_scopes_open(struct qp_scopes **out, unsigned int max_sites, bool allow_multi, char *err,
		   size_t errlen)
{
	struct qp_scopes *s;
	size_t per_entry;
	unsigned int pre;
	const char *env;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		snprintf(err, errlen, "cannot count possible CPUs: %s", strerror(-s->ncpus));
		ret = s->ncpus ? s->ncpus : -EINVAL;
		goto fail;
	}
	per_entry = ((sizeof(struct scope_stats) + 7) & ~(size_t)7) * (size_t)s->ncpus;
	pre = PREALLOC_BYTES / per_entry;
	if (pre < PREALLOC_MIN)
		pre = PREALLOC_MIN;
	env = getenv("QPROF_PREALLOC_SITES");
	if (env && *env) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(env, &end, 10);
		if (errno || *end || v < 1 || v > (1ul << 18)) {
			ret = -EINVAL;
			snprintf(err, errlen, "QPROF_PREALLOC_SITES must be 1..262144, not '%s'", env);
			goto fail;
		}
		pre = (unsigned int)v;
	}
	if (pre > max_sites)
		pre = max_sites;
	/* uprobe-multi links first: about 30 ns cheaper per probe hit than a
	 * perf-event uprobe each; an older kernel refuses the attach type */
	for (int attempt = allow_multi ? 0 : 1; attempt < 2; attempt++) {
		s->multi = attempt == 0;
		s->skel = scopes__open();
		if (!s->skel) {
			ret = -errno;
			snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
			goto fail;
		}
		bpf_map__set_max_entries(s->skel->maps.scope_stats, pre);
		bpf_map__set_max_entries(s->skel->maps.scope_stats_more,
					 max_sites > pre ? max_sites - pre : 1);
		if (s->multi) {
			bpf_program__set_expected_attach_type(s->skel->progs.scope_enter, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.scope_exit, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.mark_probe, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.value_probe, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.log_probe, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.span_begin, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.span_end, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.usdt_count, ATTACH_UPROBE_MULTI);
		}
		ret = scopes__load(s->skel);
		if (!ret)
			break;
		scopes__destroy(s->skel);
		s->skel = NULL;
		if (!s->multi) {
			snprintf(err, errlen, "cannot load the BPF programs: %s", strerror(-ret));
			goto fail;
		}
		qp_info("uprobe-multi links unavailable (%s): using perf-event uprobes", strerror(-ret));
	}
	if (s->multi && bpf_map__value_size(s->skel->maps.__bpf_usdt_specs) != sizeof(struct qp_usdt_spec)) {
		ret = -EINVAL;
		snprintf(err, errlen, "libbpf's USDT spec layout is not the one qprofd writes");
		goto fail;
	}
	qp_info("scope aggregates: %u preallocated (%zu KiB), %u more allocated on demand", pre,
		pre * per_entry >> 10, max_sites > pre ? max_sites - pre : 0);
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
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int qp_scopes_thread_stacks_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.thread_stacks);
}

uint64_t qp_scopes_new_epoch(struct qp_scopes *s)
{
	uint64_t e;

	pthread_mutex_lock(&s->lock);
	e = ++s->epoch;
	pthread_mutex_unlock(&s->lock);
	return e;
}

bool qp_scopes_multi(const struct qp_scopes *s)
{
	return s->multi;
}

int qp_probe_counts_read(struct qp_scopes *s, int pid, struct qp_probe_row **rows, size_t *n)
{
	int fd = bpf_map__fd(s->skel->maps.probe_counts);
	__u64 *pc = calloc((size_t)s->ncpus, sizeof(*pc));
	struct probe_key key, next;
	struct qp_probe_row *v = NULL, *nv;
	size_t cnt = 0, cap = 0, steps = 0;
	void *prev = NULL;
	int cpu;

	*rows = NULL;
	*n = 0;
	if (!pc)
		return -ENOMEM;
	while (bpf_map_get_next_key(fd, prev, &next) == 0 && ++steps < (1u << 22)) {
		key = next;
		prev = &key;
		if (pid > 0 && next.tgid != (uint32_t)pid)
			continue;
		if (bpf_map_lookup_elem(fd, &next, pc))
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 32;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				free(pc);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt].tgid = next.tgid;
		v[cnt].id = next.id;
		v[cnt].count = 0;
		for (cpu = 0; cpu < s->ncpus; cpu++)
			v[cnt].count += pc[cpu];
		cnt++;
	}
	free(pc);
	*rows = v;
	*n = cnt;
	return 0;
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

static int cmp_row(const void *a, const void *b)
{
	return qp_scope_key_cmp(&((const struct qp_scope_row *)a)->key, &((const struct qp_scope_row *)b)->key);
}

/* All keys of a map whose keys start with the tgid (of PID when pid > 0),
 * as an array of KSZ-byte keys. Keys deleted while we walk make
 * get_next_key restart from the beginning; a cap bounds that. */
int qp_map_keys(int fd, size_t ksz, int pid, void **out, size_t *n)
{
	unsigned char key[64], next[64], *v = NULL, *nv;
	size_t cap = 0, cnt = 0, steps = 0;
	void *prev = NULL;
	uint32_t tgid;

	if (ksz > sizeof(key))
		return -EINVAL;
	while (bpf_map_get_next_key(fd, prev, next) == 0 && ++steps <= (1u << 22)) {
		memcpy(&tgid, next, sizeof(tgid));
		if (pid <= 0 || tgid == (uint32_t)pid) {
			if (cnt == cap) {
				cap = cap ? cap * 2 : 64;
				nv = realloc(v, cap * ksz);
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			memcpy(v + cnt++ * ksz, next, ksz);
		}
		memcpy(key, next, ksz);
		prev = key;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static int list_keys(int fd, int pid, struct scope_key **out, size_t *n)
{
	return qp_map_keys(fd, sizeof(**out), pid, (void **)out, n);
}

int qp_scopes_forget(struct qp_scopes *s, uint32_t pid)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.scope_stats),
		       bpf_map__fd(s->skel->maps.scope_stats_more) };
	struct scope_key *keys;
	size_t n, i;
	int ret, m;

	/* its thread stacks need no cleaning: a later attach has a newer epoch */
	for (m = 0; m < 2; m++) {
		keys = NULL;
		n = 0;
		ret = list_keys(fds[m], (int)pid, &keys, &n);
		if (ret)
			return ret;
		for (i = 0; i < n; i++)
			bpf_map_delete_elem(fds[m], &keys[i]);
		free(keys);
	}
	return 0;
}

static void add_stats(struct scope_stats *to, const struct scope_stats *p)
{
	unsigned int b;

	if (!p->count)
		return;
	if (!to->count || p->min_ns < to->min_ns)
		to->min_ns = p->min_ns;
	if (p->max_ns > to->max_ns)
		to->max_ns = p->max_ns;
	to->count += p->count;
	to->sum_ns += p->sum_ns;
	for (b = 0; b < QPROF_HIST_BUCKETS; b++)
		to->hist[b] += p->hist[b];
}

/* Append to *ROWS (N of them) the aggregates of PID in map FD, summed over
 * CPUs; PERCPU holds one lookup's values. */
static int read_map_rows(struct qp_scopes *s, int fd, int pid, void *percpu,
			 struct qp_scope_row **rows, size_t *n)
{
	size_t vsz = (sizeof(struct scope_stats) + 7) & ~(size_t)7;
	struct scope_key *keys = NULL;
	struct qp_scope_row *v;
	size_t nk = 0, i;
	int ret, cpu;

	ret = list_keys(fd, pid, &keys, &nk);
	if (ret)
		return ret;
	v = realloc(*rows, (*n + nk + 1) * sizeof(*v));
	if (!v) {
		free(keys);
		return -ENOMEM;
	}
	*rows = v;
	for (i = 0; i < nk; i++) {
		struct qp_scope_row *r = &v[*n];

		if (bpf_map_lookup_elem(fd, &keys[i], percpu))
			continue; /* deleted meanwhile */
		memset(r, 0, sizeof(*r));
		r->key = keys[i];
		for (cpu = 0; cpu < s->ncpus; cpu++)
			add_stats(&r->stats, (const void *)((const char *)percpu + vsz * cpu));
		if (r->stats.count)
			(*n)++;
	}
	free(keys);
	return 0;
}

int qp_scopes_read(struct qp_scopes *s, int pid, struct qp_scope_snapshot *out)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.scope_stats),
		       bpf_map__fd(s->skel->maps.scope_stats_more) };
	int cfd = bpf_map__fd(s->skel->maps.counters);
	size_t vsz = (sizeof(struct scope_stats) + 7) & ~(size_t)7;
	void *percpu;
	size_t n = 0, i, kept;
	__u64 cnt[256];
	__u32 c;
	int ret, cpu, m;

	memset(out, 0, sizeof(*out));
	percpu = malloc(vsz * s->ncpus);
	if (!percpu)
		return -ENOMEM;
	for (m = 0; m < 2; m++) {
		ret = read_map_rows(s, fds[m], pid, percpu, &out->rows, &n);
		if (ret)
			goto done;
	}
	if (!out->rows) {
		out->rows = calloc(1, sizeof(*out->rows));
		if (!out->rows) {
			ret = -ENOMEM;
			goto done;
		}
	}
	qsort(out->rows, n, sizeof(*out->rows), cmp_row);
	/* a key in both maps (made in the second while the first was full,
	 * then room freed by a detach): one row */
	for (i = 0, kept = 0; i < n; i++) {
		if (kept && !qp_scope_key_cmp(&out->rows[kept - 1].key, &out->rows[i].key)) {
			add_stats(&out->rows[kept - 1].stats, &out->rows[i].stats);
			continue;
		}
		if (kept != i)
			out->rows[kept] = out->rows[i];
		kept++;
	}
	out->n = kept;
	for (c = 0; c < QPROF_CNT__MAX && s->ncpus <= 256; c++) {
		if (bpf_map_lookup_elem(cfd, &c, cnt))
			continue;
		for (cpu = 0; cpu < s->ncpus; cpu++)
			out->counters[c] += cnt[cpu];
	}
	ret = 0;
done:
	free(percpu);
	if (ret)
		qp_scope_snapshot_free(out);
	return ret;
}

int qp_scopes_logs_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.logs);
}

uint64_t qp_scopes_counter(struct qp_scopes *s, unsigned int which)
{
	__u64 cnt[256] = { 0 };
	uint64_t sum = 0;
	__u32 k = which;
	int cpu;

	if (which >= QPROF_CNT__MAX || s->ncpus > 256 ||
	    bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.counters), &k, cnt))
		return 0;
	for (cpu = 0; cpu < s->ncpus; cpu++)
		sum += cnt[cpu];
	return sum;
}

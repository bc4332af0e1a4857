/* collect_scopes.c - loads bpf/scopes.bpf.c through its skeleton, sized by
 * scope_sizing.c, and hands its scope aggregates and counters out as plain
 * snapshots for the model, from the copy the poll keeps (scope_poll.c;
 * links: collect_attach.c; marks and values: collect_values.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "collect_scopes.h"
#include "common/elf_probes.h"
#include "common/log.h"
#include "scopes.skel.h"
#include "bpf/trace.h"
#include "collect_internal.h"
#include "scope_sizing.h"
#include "ring_collect.h"
#include "common/usdt_spec.h"
#include "common/util.h"

/* Kernel memory for scope aggregates: chunks (scope_sizing.h) of
 * --max-sites pairs, QP_CHUNKS_PER_PAIR_PRE of each preallocated, or of
 * QPROF_PREALLOC_SITES pairs when the environment sets it. */

/* Environment NAME, when set, as an integer in MIN..MAX (a power of two
 * with POW2) into *OUT: 0, or -EINVAL with the reason in ERR. */
static int env_uint(const char *name, unsigned long min, unsigned long max, bool pow2, unsigned int *out,
		    char *err, size_t errlen)
{
	const char *env = getenv(name);
	unsigned long v;
	char *end;

	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtoul(env, &end, 10);
	if (errno || *end || v < min || v > max || (pow2 && (v & (v - 1)))) {
		if (pow2)
			snprintf(err, errlen, "%s must be a power of two, 4096..2^30, not '%s'", name, env);
		else
			snprintf(err, errlen, "%s must be %lu..%lu, not '%s'", name, min, max, env);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

/* The test settings of the environment (tests/): sites preallocated, a
 * small ring of dirty keys (the poll's full-scan fallback runs; the value
 * ring as small), a small trace ring buffer (a test overflows it). */
struct scope_env {
	unsigned int pre, dirty_bytes, trace_rb;
};

static int read_env(struct scope_env *e, unsigned int trace_rb_bytes, char *err, size_t errlen)
{
	int ret;

	e->pre = e->dirty_bytes = 0;
	e->trace_rb = trace_rb_bytes ? trace_rb_bytes : QPROF_TRACE_RB_BYTES;	/* --trace-ring-mb */
	if ((ret = env_uint("QPROF_PREALLOC_SITES", 1, 1ul << 18, false, &e->pre, err, errlen)) ||
	    (ret = env_uint("QPROF_DIRTY_RING_BYTES", 4096, 1ul << 30, true, &e->dirty_bytes, err, errlen)) ||
	    (ret = env_uint("QPROF_TRACE_RB_BYTES", 4096, 1ul << 30, true, &e->trace_rb, err, errlen)))
		return ret;
	return 0;
}

/* The maps' sizes and which programs load, how, into s->skel (opened). */
static void configure(struct qp_scopes *s, const struct qp_scope_sizing *sz, const struct scope_env *e)
{
	struct scopes *k = s->skel;

	bpf_map__set_max_entries(k->maps.scope_chunks, sz->chunks_pre);
	bpf_map__set_max_entries(k->maps.scope_chunks_more, sz->chunks_more);
	bpf_map__set_max_entries(k->maps.scope_dirty, sz->dirty_bytes);
	bpf_map__set_max_entries(k->maps.trace_rb, e->trace_rb);
	if (e->dirty_bytes)	/* the test setting: the value ring as small */
		bpf_map__set_max_entries(k->maps.value_dirty, sz->dirty_bytes);
	bpf_map__set_max_entries(k->maps.span_pending, (__u32)s->span_capacity);
	/* with qprofd's own uprobe-multi links (its own spec ids), each
	 * program is loaded when a target first needs it (scope_progs.c):
	 * this instance holds the maps; the test program
	 * (tests/unit/test_scope_poll_race.c) only on demand */
	qp_scope_progs_setup(s, k, !s->multi);
}

/* Open, configure and load the object: uprobe-multi links first (about
 * 30 ns cheaper per probe hit than a perf-event uprobe each), perf-event
 * uprobes when the kernel refuses the attach type. */
static int load_object(struct qp_scopes *s, const struct qp_scope_sizing *sz, const struct scope_env *e,
		bool allow_multi, char *err, size_t errlen)
{
	int ret = 0;

	for (int attempt = allow_multi ? 0 : 1; attempt < 2; attempt++) {
		s->multi = attempt == 0;
		s->skel = scopes__open();
		if (!s->skel) {
			ret = -errno;
			snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
			return ret;
		}
		configure(s, sz, e);
		ret = scopes__load(s->skel);
		if (!ret)
			break;
		scopes__destroy(s->skel);
		s->skel = NULL;
		if (!s->multi) {
			snprintf(err, errlen, "cannot load the BPF programs: %s", strerror(-ret));
			return ret;
		}
		qp_info("uprobe-multi links unavailable (%s): using perf-event uprobes", strerror(-ret));
	}
	if (s->multi && bpf_map__value_size(s->skel->maps.__bpf_usdt_specs) != sizeof(struct qp_usdt_spec)) {
		snprintf(err, errlen, "libbpf's USDT spec layout is not the one qprofd writes");
		return -EINVAL;
	}
	return 0;
}

/* The polls of what changed (the thread-exit tracepoint and the programs
 * come when a target needs them: scope_progs.c). */
static int start_polls(struct qp_scopes *s, char *err, size_t errlen)
{
	int ret = qp_scope_poll_init(s);

	if (!ret)
		ret = qp_value_poll_init(s);
	if (ret) {
		snprintf(err, errlen, "cannot read the dirty-key ring buffers: %s", strerror(-ret));
		return ret;
	}
	qp_scope_progs_loaded(s, !s->multi);
	return 0;
}

int qp_scopes_open(struct qp_scopes **out, unsigned int max_sites, bool allow_multi,
		   const struct qp_span_opts *spans, unsigned int trace_rb_bytes, char *err, size_t errlen)
{
	struct qp_scope_sizing sz;
	struct scope_env e;
	struct qp_scopes *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->poll_lock, NULL);
	qp_scope_progs_init(s);
	qp_scope_store_init(&s->store);
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		snprintf(err, errlen, "cannot count possible CPUs: %s", strerror(-s->ncpus));
		ret = s->ncpus ? s->ncpus : -EINVAL;
		goto fail;
	}
	if ((ret = read_env(&e, trace_rb_bytes, err, errlen)))
		goto fail;
	ret = qp_scope_sizing((unsigned int)s->ncpus, max_sites, e.pre, &sz);
	if (ret) {
		snprintf(err, errlen, "cannot size the scope maps for %u sites", max_sites);
		goto fail;
	}
	if (e.dirty_bytes)
		sz.dirty_bytes = e.dirty_bytes;
	s->span_capacity = spans && spans->pending ? spans->pending : QP_SPAN_PENDING_DEFAULT;
	s->span_timeout_ns = (spans && spans->timeout_ms ? spans->timeout_ms : QP_SPAN_TIMEOUT_MS_DEFAULT) *
			     1000000ull;
	if ((ret = load_object(s, &sz, &e, allow_multi, err, errlen)))
		goto fail;
	qp_info("scope figures: room for %u scopes (one per process, scope and caller; --max-sites "
		"for more), %llu KiB of kernel memory reserved", max_sites,
		(unsigned long long)(sz.reserved_bytes >> 10));
	/* the slow thresholds where exits read them without a hash lookup;
	 * without the mapping every exit looks its threshold up (slow_min) */
	s->slow_floor = mmap(NULL, QPROF_SLOW_FLOOR_SLOTS * sizeof(struct slow_floor), PROT_READ | PROT_WRITE,
			     MAP_SHARED, bpf_map__fd(s->skel->maps.slow_floor), 0);
	if (s->slow_floor == MAP_FAILED) {
		qp_info("slow thresholds: no mapping of slow_floor (%s): each exit looks its threshold up",
			strerror(errno));
		s->slow_floor = NULL;
	}
	if ((ret = start_polls(s, err, errlen)))
		goto fail;
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
	qp_scope_poll_fini(s);
	qp_value_poll_fini(s);
	qp_scope_progs_fini(s);
	if (s->slow_floor)
		munmap(s->slow_floor, QPROF_SLOW_FLOOR_SLOTS * sizeof(struct slow_floor));
	s->slow_floor = NULL;
	scopes__destroy(s->skel);
	s->skel = NULL;
	qp_scope_store_free(&s->store);
	pthread_mutex_destroy(&s->poll_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int qp_scopes_thread_stacks_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.thread_stacks);
}

int qp_scopes_slow_rb_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.slow_rb);
}

int qp_scopes_slow_min_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.slow_min);
}

struct slow_floor *qp_scopes_slow_floor(struct qp_scopes *s)
{
	return s->slow_floor;
}

void qp_scopes_set_slow(struct qp_scopes *s, bool on)
{
	__atomic_store_n(&s->skel->bss->slow_active, on ? 1 : 0, __ATOMIC_RELEASE);
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
	__u64 *pc = calloc(1, sizeof(*pc));	/* a shared map: one value a key */
	struct probe_key key, next;
	struct qp_probe_row *v = NULL;
	size_t cnt = 0, cap = 0, steps = 0;
	void *prev = NULL;

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
		if (qp_grow(&v, &cap, cnt + 1, sizeof(*v))) {
			free(v);
			free(pc);
			return -ENOMEM;
		}
		v[cnt].tgid = next.tgid;
		v[cnt].id = next.id;
		v[cnt].count = pc[0];
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

/* All keys of a map whose keys start with the tgid (of PID when pid > 0),
 * as an array of KSZ-byte keys. Keys deleted while we walk make
 * get_next_key restart from the beginning; a cap bounds that. */
int qp_map_keys(int fd, size_t ksz, int pid, void **out, size_t *n)
{
	unsigned char key[64], next[64], *v = NULL;
	size_t cap = 0, cnt = 0, steps = 0;
	void *prev = NULL;
	uint32_t tgid;

	if (ksz > sizeof(key))
		return -EINVAL;
	while (bpf_map_get_next_key(fd, prev, next) == 0 && ++steps <= (1u << 22)) {
		memcpy(&tgid, next, sizeof(tgid));
		if (pid <= 0 || tgid == (uint32_t)pid) {
			if (qp_grow(&v, &cap, cnt + 1, ksz)) {
				free(v);
				return -ENOMEM;
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

/* Delete the keys of PID from map FD, whose keys are KSZ bytes starting
 * with the tgid. */
static int forget_keys(int fd, size_t ksz, uint32_t pid)
{
	unsigned char *keys = NULL;
	size_t n = 0, i;
	int ret;

	ret = qp_map_keys(fd, ksz, (int)pid, (void **)&keys, &n);
	for (i = 0; !ret && i < n; i++)
		bpf_map_delete_elem(fd, keys + i * ksz);
	free(keys);
	return ret;
}

int qp_scopes_forget(struct qp_scopes *s, uint32_t pid)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.scope_chunks),
		       bpf_map__fd(s->skel->maps.scope_chunks_more) };
	struct scope_chunk_key *keys;
	size_t n, i;
	int ret = 0, m;

	qp_ring_forget(s->ring, (int)pid);
	/* its thread stacks need no cleaning: a later attach has a newer epoch */
	ret = qp_spans_forget(s, pid);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->poll_lock);
	for (m = 0; m < 2 && !ret; m++) {
		keys = NULL;
		n = 0;
		ret = qp_map_keys(fds[m], sizeof(*keys), (int)pid, (void **)&keys, &n);
		for (i = 0; !ret && i < n; i++)
			bpf_map_delete_elem(fds[m], &keys[i]);
		free(keys);
	}
	qp_scope_store_forget(&s->store, pid);
	/* its marks, counted probes and values too: after an exec the same pid
	 * is another image, whose sites may sit at other addresses (the old
	 * rows would stay as raw addresses) or at the same ones (they would
	 * add up) */
	if (!ret)
		ret = forget_keys(bpf_map__fd(s->skel->maps.mark_stats), sizeof(struct mark_key), pid);
	if (!ret)
		ret = forget_keys(bpf_map__fd(s->skel->maps.probe_counts), sizeof(struct probe_key), pid);
	if (!ret)
		ret = forget_keys(bpf_map__fd(s->skel->maps.value_stats), sizeof(struct mark_key), pid);
	if (!ret)
		ret = forget_keys(bpf_map__fd(s->skel->maps.value_hist), sizeof(struct value_bucket_key), pid);
	if (!ret)
		ret = qp_value_poll_forget(s, pid);
	pthread_mutex_unlock(&s->poll_lock);
	return ret;
}

int qp_scopes_read(struct qp_scopes *s, int pid, struct qp_scope_snapshot *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->poll_lock);
	ret = qp_scope_poll(s, out->counters);
	if (!ret)
		ret = qp_scope_store_snapshot(&s->store, pid, out);
	out->poll = s->poll;
	pthread_mutex_unlock(&s->poll_lock);
	/* the ring collector's targets, in the same rows */
	if (!ret)
		ret = qp_ring_merge_rows(s->ring, pid, out);
	/* no BPF program counts it: the daemon's sweep does (plus the ring's) */
	out->counters[QPROF_CNT_SPAN_ABANDONED] += __atomic_load_n(&s->spans_abandoned, __ATOMIC_RELAXED);
	if (ret)
		qp_scope_snapshot_free(out);
	return ret;
}

void qp_scopes_set_ring(struct qp_scopes *s, struct qp_ring *ring)
{
	s->ring = ring;
}

int qp_scopes_logs_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.logs);
}

/* cpu_events.c - see cpu_events.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cpu_events.h"
#include "cpu_cfi.h"
#include "unwind.h"
#include "profile.skel.h"
#include "bpf/scopes.h"

#define RING_BYTES_COPY_MAX (32u << 20)	/* with stack copies: ~0.9 s at 999 Hz on 2 CPUs */
#define RING_COPY_SAMPLE (19u << 10)	/* a sample with its 16 KiB stack copy, rounded up */

/* The ring with stack copies: room for about a second of samples at FREQ
 * on every CPU (it is drained every DRAIN_MS), a power of two, 1 to 32
 * MiB: 4 MiB at the default 99 Hz on 2 CPUs (it was 32 MiB at any
 * frequency, and qprofd's RSS counts a ring twice: the kernel maps its
 * pages twice). A sample that finds it full is counted lost. */
static __u32 copy_ring_bytes(unsigned int freq, long ncpu)
{
	uint64_t want = (uint64_t)freq * (uint64_t)(ncpu > 0 ? ncpu : 1) * RING_COPY_SAMPLE;
	__u32 b = 1u << 20;

	while (b < want && b < RING_BYTES_COPY_MAX)
		b <<= 1;
	return b;
}

static const char *const mode_names[] = { "fp", "dwarf", "dwarf-all", "dwarf-copy" };

const char *qp_cpu_unwind_mode_name(enum qp_cpu_unwind_mode m)
{
	return (unsigned int)m < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[m] : "?";
}

int qp_cpu_unwind_mode_parse(const char *s, enum qp_cpu_unwind_mode *out)
{
	unsigned int i;

	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (!strcmp(s, mode_names[i])) {
			*out = (enum qp_cpu_unwind_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

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

/* QPROF_OFF_RB_BYTES in the environment (a power of two, 4 KiB..1 GiB)
 * sizes the off-CPU ring buffer: small enough for a test to overflow it */
static int off_ring_size(struct profile *skel, char *err, size_t errlen)
{
	const char *env = getenv("QPROF_OFF_RB_BYTES");
	unsigned long v;
	char *end;

	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtoul(env, &end, 10);
	if (errno || *end || v < 4096 || v > (1ul << 30) || (v & (v - 1))) {
		snprintf(err, errlen, "QPROF_OFF_RB_BYTES must be a power of two, 4096..2^30, not '%s'", env);
		return -EINVAL;
	}
	return bpf_map__set_max_entries(skel->maps.off_ring, (__u32)v);
}

int qp_cpu_skel_open(struct profile **out, struct qp_cpu_cfi *cfi, int thread_stacks_fd, int ring_tids_fd,
		     unsigned int off_rb_bytes,
		     unsigned int freq, long nconf,
		     bool all, enum qp_cpu_unwind_mode mode, char *err, size_t errlen)
{
	struct profile *skel;
	int ret;

	*out = skel = profile__open();
	if (!skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the sampler BPF object: %s", strerror(-ret));
		return ret;
	}
	skel->rodata->sample_all = all;
	skel->rodata->copy_all = all && mode == QP_CPU_UNWIND_DWARF_ALL;
	if (mode != QP_CPU_UNWIND_FP) {
		ret = bpf_map__set_max_entries(skel->maps.cpu_ring, copy_ring_bytes(freq, nconf));
		if (ret) {
			snprintf(err, errlen, "cannot size the CPU sample ring buffer: %s", strerror(-ret));
			return ret;
		}
	}
	ret = bpf_map__reuse_fd(skel->maps.thread_stacks, thread_stacks_fd);
	if (ret) {
		snprintf(err, errlen, "cannot share the thread stacks map: %s", strerror(-ret));
		return ret;
	}
	if (ring_tids_fd >= 0) {
		ret = bpf_map__reuse_fd(skel->maps.ring_tids, ring_tids_fd);
		if (ret) {
			snprintf(err, errlen, "cannot share the ring collector's thread map: %s", strerror(-ret));
			return ret;
		}
	}
	/* the off-CPU ring's size (--offcpu-ring-mb), unless the environment's */
	if (off_rb_bytes && (ret = bpf_map__set_max_entries(skel->maps.off_ring, off_rb_bytes))) {
		snprintf(err, errlen, "cannot size the off-CPU ring buffer: %s", strerror(-ret));
		return ret;
	}
	ret = off_ring_size(skel, err, errlen);
	if (!ret)
		ret = qp_cpu_cfi_prepare(cfi, skel, mode, err, errlen);
	if (ret)
		return ret;
	ret = profile__load(skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the sampler: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

int qp_cpu_events_open(struct qp_cpu_events *ev, struct bpf_program *prog, unsigned int freq, long nconf,
		       char *err, size_t errlen)
{
	int cpu, ret;

	ev->links = calloc((size_t)nconf, sizeof(*ev->links));
	ev->pfds = calloc((size_t)nconf, sizeof(*ev->pfds));
	if (!ev->links || !ev->pfds) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	for (cpu = 0; cpu < nconf; cpu++) {
		int fd = perf_open(freq, cpu);
		struct bpf_link *l;

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline CPU */
			ret = -errno;
			snprintf(err, errlen, "perf_event_open(cpu-clock, cpu %d): %s", cpu, strerror(errno));
			return ret;
		}
		l = bpf_program__attach_perf_event(prog, fd);
		if (!l) {
			ret = -errno;
			close(fd);
			snprintf(err, errlen, "cannot attach the sampler to cpu %d: %s", cpu, strerror(errno));
			return ret;
		}
		ev->links[ev->n] = l;
		ev->pfds[ev->n++] = fd;
	}
	if (!ev->n) {
		ret = -ENODEV;
		snprintf(err, errlen, "no online CPU accepted a cpu-clock perf event");
		return ret;
	}
	return 0;
}

void qp_cpu_events_close(struct qp_cpu_events *ev)
{
	unsigned int i;

	for (i = 0; i < ev->n; i++) {
		bpf_link__destroy(ev->links[i]);
		close(ev->pfds[i]);
	}
	free(ev->links);
	free(ev->pfds);
	memset(ev, 0, sizeof(*ev));
}

/* Delete the keys of PID from map FD, whose keys (of KSIZE bytes, at
 * most a scope_key) begin with the tgid. */
void qp_cpu_delete_pid_keys(int fd, size_t ksize, uint32_t pid)
{
	struct scope_key k, next;
	bool first = true;

	if (ksize > sizeof(k))
		return;
	while (!bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		if (next.tgid == pid && !bpf_map_delete_elem(fd, &next)) {
			first = true;	/* the walk's key is gone: restart */
			continue;
		}
		first = false;
		memcpy(&k, &next, ksize);
	}
}

/* ---- snapshots ---------------------------------------------------------- */

static int cmp_key(const struct sample_key *a, const struct sample_key *b)
{
	return memcmp(a, b, sizeof(*a));
}

int qp_cpu_raw_cmp(const void *a, const void *b)
{
	return cmp_key(&((const struct qp_cpu_raw *)a)->key, &((const struct qp_cpu_raw *)b)->key);
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

uint64_t qp_cpu_pcounter(struct profile *skel, int ncpus, __u32 k)
{
	__u64 *cnt = calloc((size_t)ncpus, sizeof(*cnt));
	uint64_t sum = 0;
	int cpu;

	if (!cnt)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.pcounters), &k, cnt))
		for (cpu = 0; cpu < ncpus; cpu++)
			sum += cnt[cpu];
	free(cnt);
	return sum;
}

void qp_cpu_unwind_stats_fill(const struct qp_unwind_stats *st, struct qp_cpu_unwind_figures *out)
{
	out->complete = st->unwound;
	out->partial = st->partial;
	out->truncated = st->truncated;
	out->loops = st->loops;
	out->no_module = st->no_module;
	out->refreshes = st->refreshes;
	out->errors = st->errors;
	out->deferred = st->deferred;
	out->fast = st->fast;
	out->slow = st->slow;
	out->cache_resets = st->fast_resets;
	out->files_refused = st->files_refused;
}

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
 * sorted snapshots of the counts. User stacks are walked by frame pointers
 * in BPF; for targets whose samples carry a copy of the stack (--unwind
 * dwarf, the default), the drain thread unwinds the copy by CFI (unwind.c)
 * and keeps that stack unless it stopped early with fewer frames than the
 * frame-pointer walk found. */
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
#include "cpu_internal.h"
#include "common/log.h"
#include "unwind.h"
#include "common/util.h"

#define MAX_STACKS (1u << 19)	/* distinct live stacks (~0.45 kB each); beyond, samples are lost (counted) */
#define MAX_KEYS (1u << 20)	/* distinct (process, stacks, scopes) */
#define MAX_BYTES (128u << 20)	/* the table's memory; beyond, new stacks and keys are refused (lost) */
#define KEEP_S 600		/* a key with no sample for this long is aged out: twice the longest window (300 s) */
#define AGE_EVERY_S 10
#define AGE_FLOOR (256u << 10)	/* below this many bytes nothing is aged: small profiles keep all since attach */
#define DRAIN_MS 50	/* reads drain first anyway: this only keeps the ring from filling */
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

/* The CFI unwind of a sample's stack copy in place of its frame-pointer
 * stack, by the rule of the file's comment. */
static void unwind_copy(struct qp_cpu *c, const struct cpu_sample *r, const uint8_t *copy,
			struct qp_cpu_sample_in *in)
{
	struct qp_unwind_in ui = {
		.pid = r->tgid, .tid = r->tid, .regs = (const uint64_t *)r->regs, .stack = copy,
		.len = r->copy_len,
	};
	size_t n = 0, i;
	int ret;

	c->copied++;
	ret = qp_unwind_stack(c->uw, &ui, c->uips, QPROF_STACK_DEPTH, &n);
	/* the same cut as for frame pointers: no frame at 0 or in the kernel half */
	for (i = 0; i < n; i++)
		if (!c->uips[i] || c->uips[i] >= QP_USER_ADDR_END)
			n = i;
	if (ret == 1 || (ret == 0 && n >= in->nuser && n)) {
		in->user = c->uips;
		in->nuser = (uint32_t)n;
		c->dwarf_used++;
	} else {
		c->fp_kept++;
	}
}

/* One ring-buffer record (the caller holds c->lock, consuming). */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct qp_cpu *c = ctx;
	const struct cpu_sample *r = data;
	const size_t hdr = offsetof(struct cpu_sample, ips);
	struct qp_cpu_sample_in in;
	struct qp_slow_hsample h;

	if (size < hdr || qp_cpu_lens_bad(r->kern_len, r->user_len, r->open_len) ||
	    r->copy_len > QPROF_USTACK_BYTES ||
	    hdr + (size_t)r->kern_len + r->user_len + r->open_len + r->copy_len > size) {
		c->lost++;
		return 0;
	}
	qp_cpu_fill_in(&in, r->tgid, r->ips, r->kern_len, r->user_len, r->open_len, (const uint64_t *)r->scopes,
		       r->comm);
	in.tid = r->tid;
	if (!qp_cpu_cfi_sample(c, r, &in) && r->copy_len && c->uw)
		unwind_copy(c, r, (const uint8_t *)r->ips + r->kern_len + r->user_len + r->open_len, &in);
	if (qp_cpu_table_add_ids(&c->tab, &in, &h.kid, &h.uid)) {
		c->kept++;
		if (c->slow_on) {
			h.tgid = r->tgid;
			h.tid = r->tid;
			h.ts = r->ts;
			qp_slow_note_sample(&c->slow, &h);
		}
	} else {
		c->lost++;
	}
	return 0;
}

/* One slow_rb record: joined once this consume has read the rest. */
static int on_instance(void *ctx, void *data, size_t size)
{
	struct qp_cpu *c = ctx;

	if (size < sizeof(struct slow_record))
		return 0;
	qp_slow_queue(&c->slow, data);
	return 0;
}

void qp_cpu_publish_locked(struct qp_cpu *c)
{
	pthread_mutex_lock(&c->pub_lock);
	c->pub.kept = c->kept;
	c->pub.lost = c->lost;
	c->pub.off_kept = c->off_kept;
	c->pub.off_lost = c->off_lost;
	c->pub.copied = c->copied;
	c->pub.dwarf = c->dwarf_used;
	c->pub.fp = c->fp_kept;
	c->pub.walked = c->walked;
	memcpy(c->pub.verify, c->verify, sizeof(c->verify));
	c->pub.aged = c->tab.aged;
	c->pub.bytes = qp_cpu_table_bytes(&c->tab);
	if (c->uw)
		qp_unwind_stats(c->uw, &c->pub.uw);
	c->pub.slow = c->slow.cnt;
	pthread_mutex_unlock(&c->pub_lock);
}

/* Everything the ring buffer holds into the tables; the caller holds the lock. */
void qp_cpu_drain_locked(struct qp_cpu *c)
{
	int n;

	if (!c->rb)
		return;
	c->tab.now = (uint32_t)((qp_now_ns() - c->t0_ns) / 1000000000ull);
	qp_slow_ring_feed(c);
	n = ring_buffer__consume(c->rb);
	if (n < 0 && n != -EINTR)
		qp_warn("CPU sample ring buffer: %s", strerror(-n));
	qp_offcpu_losses_locked(c);
	if (c->slow.npending)
		qp_slow_join(&c->slow, &c->tab, &c->off, qp_now_ns(), qp_cpu_slow_threshold, c);
	qp_cpu_publish_locked(c);
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
		qp_cpu_drain_locked(c);
		if (c->tab.now >= KEEP_S && c->tab.now - c->aged_at >= AGE_EVERY_S) {
			c->aged_at = c->tab.now;
			if (qp_cpu_table_age(&c->tab, c->tab.now - KEEP_S, AGE_FLOOR) < 0)
				qp_warn("CPU samples: out of memory while aging; every count moved to aged");
			if (qp_cpu_table_age(&c->off, c->tab.now - KEEP_S, AGE_FLOOR) < 0)
				qp_warn("off-CPU intervals: out of memory while aging; every weight moved to aged");
			qp_cpu_publish_locked(c);
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

int qp_cpu_open(struct qp_cpu **out, int thread_stacks_fd, int ring_tids_fd, int slow_rb_fd, int slow_min_fd,
		unsigned int freq, bool all, enum qp_cpu_unwind_mode mode, char *err, size_t errlen)
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
		pthread_mutex_init(&c->pub_lock, NULL);
	}
	qp_cpu_table_init(&c->tab, MAX_STACKS, MAX_KEYS, MAX_BYTES);
	qp_cpu_table_init(&c->off, MAX_STACKS / 4, MAX_KEYS / 4, MAX_BYTES / 4);
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
	c->skel->rodata->copy_all = all && mode == QP_CPU_UNWIND_DWARF_ALL;
	c->mode = mode;
	if (mode != QP_CPU_UNWIND_FP) {
		c->uw = qp_unwind_new(NULL);
		if (!c->uw) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		ret = bpf_map__set_max_entries(c->skel->maps.cpu_ring, copy_ring_bytes(freq, nconf));
		if (ret) {
			snprintf(err, errlen, "cannot size the CPU sample ring buffer: %s", strerror(-ret));
			goto fail;
		}
	}
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
	ret = off_ring_size(c->skel, err, errlen);
	if (!ret)
		ret = qp_cpu_cfi_prepare(c, err, errlen);
	if (ret)
		goto fail;
	ret = profile__load(c->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the sampler: %s", strerror(-ret));
		goto fail;
	}
	qp_cpu_cfi_start(c);
	/* slow instances first (cpu_internal.h), when there is room for them */
	if (slow_rb_fd >= 0 && !qp_slow_init(&c->slow)) {
		c->rb = ring_buffer__new(slow_rb_fd, on_instance, c, NULL);
		if (c->rb && ring_buffer__add(c->rb, bpf_map__fd(c->skel->maps.cpu_ring), on_sample, c)) {
			ring_buffer__free(c->rb);
			c->rb = NULL;
		}
		c->slow_on = c->rb != NULL;
		c->slow_min_fd = slow_min_fd;
	}
	if (!c->rb)
		c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.cpu_ring), on_sample, c, NULL);
	if (!c->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the CPU sample ring buffer: %s", strerror(errno));
		goto fail;
	}
	qp_offcpu_start(c);
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
	qp_offcpu_stop(c);
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	ring_buffer__free(c->rb);
	qp_cfi_bpf_free(c->cfi);
	free(c->links);
	free(c->pfds);
	profile__destroy(c->skel);
	qp_unwind_free(c->uw);
	qp_cpu_table_free(&c->tab);
	qp_cpu_table_free(&c->off);
	qp_slow_free(&c->slow);
	free(c->ring_buf);
	free(c->ring_pids);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->pub_lock);
	free(c);
}

unsigned int qp_cpu_ncpus(const struct qp_cpu *c) { return c ? c->nevents : 0; }

int qp_cpu_add_pid(struct qp_cpu *c, uint32_t pid)
{
	__u8 v = QPROF_CPU_TARGET | (c->mode != QP_CPU_UNWIND_FP ? QPROF_CPU_COPY : 0) |
		 (c->cfi ? QPROF_CPU_WALK : 0);

	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.cpu_targets), &pid, &v, BPF_ANY))
		return -errno;
	qp_cfi_bpf_add(c->cfi, pid);
	return 0;
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
	qp_cfi_bpf_remove(c->cfi, pid);
	if (forget)
		qp_offcpu_forget(c, pid);
	pthread_mutex_lock(&c->lock);
	if (forget)
		qp_cpu_drain_locked(c);
	/* its files stay open in its Dwfl otherwise; made again if sampled again */
	qp_unwind_forget(c->uw, pid);
	ret = 0;
	if (forget) {
		ret = qp_cpu_table_forget(&c->tab, pid);
		if (qp_cpu_table_forget(&c->off, pid) && !ret)
			ret = -ENOMEM;
		qp_slow_forget(&c->slow, pid);
	}
	qp_cpu_publish_locked(c);
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
	for (k = QPROF_PCNT_LOST_RING; k <= QPROF_PCNT_LOST_STACK; k++) {
		if (bpf_map_lookup_elem(cfd, &k, cnt))
			continue;
		for (cpu = 0; cpu < c->ncpus; cpu++)
			*lost += cnt[cpu];
	}
	free(cnt);
}

/* As of the last drain (at most DRAIN_MS old), for /api/status: never
 * behind c->lock. */
void qp_cpu_counters(struct qp_cpu *c, uint64_t *samples, uint64_t *lost)
{
	__u32 k;

	pthread_mutex_lock(&c->pub_lock);
	*samples = c->pub.kept;
	*lost = c->pub.lost;
	pthread_mutex_unlock(&c->pub_lock);
	for (k = QPROF_PCNT_LOST_RING; k <= QPROF_PCNT_LOST_STACK; k++)
		*lost += qp_cpu_pcounter(c, k);
}

uint64_t qp_cpu_pcounter(struct qp_cpu *c, __u32 k)
{
	__u64 *cnt = calloc((size_t)c->ncpus, sizeof(*cnt));
	uint64_t sum = 0;
	int cpu;

	if (!cnt)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.pcounters), &k, cnt))
		for (cpu = 0; cpu < c->ncpus; cpu++)
			sum += cnt[cpu];
	free(cnt);
	return sum;
}

void qp_cpu_unwind_figures(struct qp_cpu *c, struct qp_cpu_unwind_figures *out)
{
	struct qp_unwind_stats st = { 0 };

	memset(out, 0, sizeof(*out));
	out->mode = qp_cpu_unwind_mode_name(c->mode);
	out->copy_fail = qp_cpu_pcounter(c, QPROF_PCNT_COPY_FAIL);
	out->copy_short = qp_cpu_pcounter(c, QPROF_PCNT_COPY_SHORT);
	pthread_mutex_lock(&c->pub_lock);
	out->copied = c->pub.copied;
	out->dwarf = c->pub.dwarf;
	out->fp = c->pub.fp;
	st = c->pub.uw;
	pthread_mutex_unlock(&c->pub_lock);
	out->complete = st.unwound;
	out->partial = st.partial;
	out->truncated = st.truncated;
	out->loops = st.loops;
	out->no_module = st.no_module;
	out->refreshes = st.refreshes;
	out->errors = st.errors;
	out->deferred = st.deferred;
	out->fast = st.fast;
	out->slow = st.slow;
	out->cache_resets = st.fast_resets;
	qp_cpu_cfi_figures(c, out);
}

void qp_cpu_memory(struct qp_cpu *c, uint64_t *aged, size_t *bytes)
{
	pthread_mutex_lock(&c->pub_lock);
	*aged = c->pub.aged;
	*bytes = c->pub.bytes;
	pthread_mutex_unlock(&c->pub_lock);
}

static int read_table(struct qp_cpu *c, bool off, struct qp_cpu_snapshot *out)
{
	struct qp_cpu_table *t = off ? &c->off : &c->tab;
	size_t a;

	memset(out, 0, sizeof(*out));
	out->off = off;
	pthread_mutex_lock(&c->lock);
	qp_cpu_drain_locked(c);
	if (t->naggs) {
		out->v = malloc(t->naggs * sizeof(*out->v));
		if (!out->v) {
			pthread_mutex_unlock(&c->lock);
			return -ENOMEM;
		}
	}
	for (a = 0; a < t->naggs; a++) {
		out->v[a].key = t->aggs[a].key;
		out->v[a].count = t->aggs[a].count;
		memcpy(out->v[a].comm, t->aggs[a].comm, sizeof(out->v[a].comm));
	}
	out->n = t->naggs;
	if (off)
		qp_offcpu_counters_locked(c, &out->samples, &out->lost);
	else
		counters_locked(c, &out->samples, &out->lost);
	out->mono_ns = qp_now_ns();
	pthread_mutex_unlock(&c->lock);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_raw);
	return 0;
}

int qp_cpu_read(struct qp_cpu *c, struct qp_cpu_snapshot *out)
{
	return read_table(c, false, out);
}

int qp_cpu_read_off(struct qp_cpu *c, struct qp_cpu_snapshot *out)
{
	if (c->off_error[0])
		return -ENODEV;
	return read_table(c, true, out);
}

bool qp_cpu_has_pid(struct qp_cpu *c, uint32_t pid)
{
	bool found = false;
	size_t a;

	pthread_mutex_lock(&c->lock);
	qp_cpu_drain_locked(c);
	for (a = 0; a < c->tab.naggs && !found; a++)
		found = c->tab.aggs[a].key.tgid == pid;
	pthread_mutex_unlock(&c->lock);
	return found;
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

int qp_cpu_stack(struct qp_cpu *c, bool off, int32_t id, uint64_t ips[QPROF_STACK_DEPTH], size_t *n)
{
	int ret = 0;

	*n = 0;
	if (id < 0)
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	ret = qp_cpu_table_stack(off ? &c->off : &c->tab, id, ips, QPROF_STACK_DEPTH, n);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

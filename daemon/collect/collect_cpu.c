/* collect_cpu.c - loads bpf/profile.bpf.c, shares the scopes object's
 * thread stacks with it, opens a software cpu-clock perf event per CPU and
 * attaches the sampler to each. Samples arrive in a ring buffer that only
 * the drain thread consumes, every 50 ms or when a reader asks for a flush;
 * each is counted in cpu_table.c under (process, stack ids, scopes), the
 * stacks interned in a table of distinct stacks (an id, once freed, never
 * names another stack). So nothing in the kernel fills up over a long run:
 * the only losses are a full ring buffer and the table caps below, both
 * counted. The table's memory stays flat: every AGE_EVERY_S the thread ages
 * out keys with no sample in KEEP_S, longer than any window, so windows
 * stay exact; their samples leave the since-attach views and are counted
 * as aged. Reads are sorted snapshots of the counts. User stacks are walked
 * by frame pointers in BPF; for targets whose samples carry a copy of the
 * stack (--unwind dwarf, the default), the drain thread unwinds the copy by
 * CFI (cpu_batch.c, unwind.c).
 *
 * Locks: a drain reads the rings into a private batch (the unwinding, the
 * slow part) holding no lock, then takes c->lock only to count the batch
 * into the tables; readers take c->lock only to copy. A reader that needs
 * every sample up to now asks for a flush: it waits (with a deadline) for a
 * drain that began after its request, never drains itself. */
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
#include "collect_offcpu.h"
#include "collect_slow.h"
#include "cpu_batch.h"
#include "cpu_cfi.h"
#include "cpu_events.h"
#include "cpu_table.h"
#include "common/log.h"
#include "profile.skel.h"
#include "unwind.h"
#include "common/util.h"

#define MAX_STACKS (1u << 19)	/* distinct live stacks (~0.45 kB each); beyond, samples are lost (counted) */
#define MAX_KEYS (1u << 20)	/* distinct (process, stacks, scopes) */
#define MAX_BYTES (128u << 20)	/* the table's memory; beyond, new stacks and keys are refused (lost) */
#define KEEP_S 600		/* a key with no sample for this long is aged out: twice the longest window (300 s) */
#define AGE_EVERY_S 10
#define AGE_FLOOR (256u << 10)	/* below this many bytes nothing is aged: small profiles keep all since attach */
#define DRAIN_MS 50	/* readers ask for a flush anyway: this only keeps the ring from filling */
#define FLUSH_MS 5000	/* a reader waits this long at most for a drain (unwinding a new process's first samples) */
#define RING_BYTES_COPY_MAX (32u << 20)	/* with stack copies: ~0.9 s at 999 Hz on 2 CPUs */
#define RING_COPY_SAMPLE (19u << 10)	/* a sample with its 16 KiB stack copy, rounded up */
#define SUBMIT_PAUSE_NS 2000000L	/* a scope exit stamped before a window's end submits within this */


struct forget_req {
	uint32_t pid;
	bool table;	/* its samples too, not only its unwinding state */
};

struct qp_cpu {
	struct profile *skel;
	struct qp_cpu_events ev;	/* a perf event per online CPU */
	int ncpus;
	enum qp_cpu_unwind_mode mode;
	uint64_t t0_ns;			/* the table's clock starts here (monotonic) */
	struct ring_buffer *rb;		/* the drain thread's only */
	struct qp_cpu_batch batch;	/* the drain thread's only, with its unwinder */
	struct qp_cpu_cfi cfi;		/* the kernel's walk by compiled tables (cpu_cfi.c) */
	struct qp_offcpu offcpu;	/* set up before the drain thread starts */
	struct qp_slow_side *slow;	/* NULL: no slow instances; its own lock */
	pthread_t thread;
	bool thread_started;
	/* what /api/status shows, copied at the end of each drain: a status
	 * request takes only pub_lock (held for the copy), never waits for a
	 * drain */
	pthread_mutex_t pub_lock;
	struct {
		struct qp_cpu_counts cnt;
		uint64_t aged;
		size_t bytes;
		struct qp_unwind_stats uw;
	} pub;
	pthread_mutex_t lock;		/* all below; never held while the rings are read */
	pthread_cond_t wake;		/* the drain thread: a flush asked for, or stop */
	pthread_cond_t drained;		/* a drain ended */
	bool stopping, flush_wanted;
	uint64_t started, finished;	/* drains begun and ended */
	struct qp_cpu_table tab;
	struct qp_cpu_table off;	/* off-CPU intervals: weights in ns, same keys */
	struct qp_cpu_counts cnt;
	uint32_t aged_at;		/* table clock of the last aging pass */
	struct forget_req *forget;	/* pids to forget at the next drain */
	size_t nforget, capforget;
};

static void deadline_ms(struct timespec *t, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/* The figures /api/status shows into c->pub, c->lock held; with UW (the
 * drain thread: the unwinder is its own) the unwinding's too. */
static void publish_locked(struct qp_cpu *c, bool uw)
{
	qp_lock(&c->pub_lock);
	c->pub.cnt = c->cnt;
	c->pub.aged = c->tab.aged;
	c->pub.bytes = qp_cpu_table_bytes(&c->tab);
	if (uw && c->batch.uw)
		qp_unwind_stats(c->batch.uw, &c->pub.uw);
	pthread_mutex_unlock(&c->pub_lock);
}

/* PID's samples, intervals and slow instances dropped; c->lock held. */
static int forget_locked(struct qp_cpu *c, uint32_t pid)
{
	int ret = qp_cpu_table_forget(&c->tab, pid);

	if (qp_cpu_table_forget(&c->off, pid) && !ret)
		ret = -ENOMEM;
	if (c->slow)
		qp_slow_side_forget(c->slow, pid);
	return ret;
}

/* The pids to forget, taken from the queue (c->lock held): those asked for
 * before this drain's consume, so their samples already sent are read first. */
static struct forget_req *take_forgets(struct qp_cpu *c, size_t *n)
{
	struct forget_req *v = c->forget;

	*n = c->nforget;
	c->forget = NULL;
	c->nforget = c->capforget = 0;
	return v;
}

/* One drain: entered and left with c->lock held, released while the rings
 * are read and the samples unwound. */
static void drain_locked(struct qp_cpu *c)
{
	struct forget_req *fg;
	uint64_t kev_lost = 0, off_lost = 0;
	uint32_t now;
	size_t nfg, i;
	int n;

	c->started++;
	c->flush_wanted = false;
	fg = take_forgets(c, &nfg);
	pthread_mutex_unlock(&c->lock);
	now = (uint32_t)((qp_now_ns() - c->t0_ns) / 1000000000ull);
	if (c->slow && !c->offcpu.error[0])
		qp_slow_side_fetch(c->slow, &c->batch);
	n = ring_buffer__consume(c->rb);
	if (n < 0 && n != -EINTR)
		qp_warn("CPU sample ring buffer: %s", strerror(-n));
	if (c->slow) {
		kev_lost = qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_KEV_LOST);
		/* intervals lost, or never begun (no task storage at a
		 * switch-out): their migrations are missing */
		off_lost = qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_OFF_LOST_RING) + qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_OFF_NO_STATE);
	}
	/* its files stay open in its Dwfl otherwise; made again if sampled again */
	for (i = 0; i < nfg; i++)
		qp_unwind_forget(c->batch.uw, fg[i].pid);
	qp_lock(&c->lock);
	qp_cpu_batch_apply(&c->batch, &c->tab, &c->off, now, &c->cnt);
	if (c->slow)
		qp_slow_side_apply(c->slow, &c->batch, &c->tab, &c->off, kev_lost, off_lost);
	qp_cpu_batch_reset(&c->batch);
	/* what the rings still held of them when they were forgotten */
	for (i = 0; i < nfg; i++)
		if (fg[i].table && forget_locked(c, fg[i].pid))
			qp_warn("CPU samples: out of memory while forgetting pid %u; every count moved to aged",
				fg[i].pid);
	free(fg);
	if (now >= KEEP_S && now - c->aged_at >= AGE_EVERY_S) {
		c->aged_at = now;
		if (qp_cpu_table_age(&c->tab, now - KEEP_S, AGE_FLOOR) < 0)
			qp_warn("CPU samples: out of memory while aging; every count moved to aged");
		if (qp_cpu_table_age(&c->off, now - KEEP_S, AGE_FLOOR) < 0)
			qp_warn("off-CPU intervals: out of memory while aging; every weight moved to aged");
	}
	publish_locked(c, true);
	c->finished = c->started;
	pthread_cond_broadcast(&c->drained);
}

static void *drain_thread(void *arg)
{
	struct qp_cpu *c = arg;
	struct timespec until;

	qp_lock(&c->lock);
	while (!c->stopping) {
		deadline_ms(&until, DRAIN_MS);
		while (!c->stopping && !c->flush_wanted)
			if (pthread_cond_timedwait(&c->wake, &c->lock, &until) == ETIMEDOUT)
				break;
		if (!c->stopping)
			drain_locked(c);
	}
	pthread_cond_broadcast(&c->drained);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Wait, c->lock held, for a drain that begins after this call: every
 * sample sent before it is then in the tables. false when the deadline
 * (FLUSH_MS) passed or the collector stops first: the tables are as of the
 * last drain. */
static bool flush_locked(struct qp_cpu *c)
{
	uint64_t want = c->started + 1;
	struct timespec until;

	if (!c->thread_started)
		return false;
	c->flush_wanted = true;
	pthread_cond_signal(&c->wake);
	deadline_ms(&until, FLUSH_MS);
	while (c->finished < want && !c->stopping)
		if (pthread_cond_timedwait(&c->drained, &c->lock, &until) == ETIMEDOUT)
			break;
	if (c->finished < want && !c->stopping)
		qp_warn("CPU samples: no drain within %d ms; read as of the last one", FLUSH_MS);
	return c->finished >= want;
}

int qp_cpu_open(struct qp_cpu **out, int thread_stacks_fd, int ring_tids_fd, int slow_rb_fd, int slow_min_fd,
		unsigned int off_rb_bytes, unsigned int freq, bool all, enum qp_cpu_unwind_mode mode, char *err, size_t errlen)
{
	struct qp_cpu *c;
	long nconf = sysconf(_SC_NPROCESSORS_CONF);
	int ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	qp_cond_init_monotonic(&c->wake);
	qp_cond_init_monotonic(&c->drained);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->pub_lock, NULL);
	qp_cpu_table_init(&c->tab, MAX_STACKS, MAX_KEYS, MAX_BYTES);
	qp_cpu_table_init(&c->off, MAX_STACKS / 4, MAX_KEYS / 4, MAX_BYTES / 4);
	c->t0_ns = qp_now_ns();
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0 || nconf <= 0) {
		snprintf(err, errlen, "cannot count CPUs");
		qp_cpu_close(c);
		return -EINVAL;
	}
	c->mode = mode;
	if (mode != QP_CPU_UNWIND_FP && !(c->batch.uw = qp_unwind_new(NULL))) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ret = qp_cpu_skel_open(&c->skel, &c->cfi, thread_stacks_fd, ring_tids_fd, off_rb_bytes, freq, nconf, all, mode, err,
			       errlen);
	if (ret)
		goto fail;
	qp_cpu_cfi_start(&c->cfi, c->skel, mode, c->ncpus);
	c->batch.cfi = &c->cfi;
	/* slow instances first: slow_rb is the first ring of rb, so its
	 * records are read before the samples and intervals stamped before
	 * their exits, which the same consume reads */
	if (slow_rb_fd >= 0 && !qp_slow_side_new(&c->slow, slow_min_fd)) {
		c->rb = ring_buffer__new(slow_rb_fd, qp_cpu_batch_on_instance, &c->batch, NULL);
		if (c->rb && ring_buffer__add(c->rb, bpf_map__fd(c->skel->maps.cpu_ring), qp_cpu_batch_on_sample,
					      &c->batch)) {
			ring_buffer__free(c->rb);
			c->rb = NULL;
		}
		if (!c->rb) {
			qp_slow_side_free(c->slow);
			c->slow = NULL;
		}
	}
	if (!c->rb)
		c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.cpu_ring), qp_cpu_batch_on_sample, &c->batch,
					 NULL);
	if (!c->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the CPU sample ring buffer: %s", strerror(errno));
		goto fail;
	}
	{
		bool kev = c->slow && !qp_slow_side_kev_on(c->slow);

		qp_offcpu_start(&c->offcpu, c->skel, c->rb, &c->batch, kev);
		if (kev && !c->offcpu.kev)
			qp_slow_side_kev_off(c->slow);
	}
	ret = -pthread_create(&c->thread, NULL, drain_thread, c);
	if (ret) {
		snprintf(err, errlen, "cannot start the CPU sample thread: %s", strerror(-ret));
		goto fail;
	}
	c->thread_started = true;
	ret = qp_cpu_events_open(&c->ev, c->skel->progs.do_sample, freq, nconf, err, errlen);
	if (ret)
		goto fail;
	*out = c;
	return 0;
fail:
	qp_cpu_close(c);
	return ret;
}

void qp_cpu_close(struct qp_cpu *c)
{
	if (!c)
		return;
	qp_cpu_events_close(&c->ev);
	qp_offcpu_stop(&c->offcpu);
	if (c->thread_started) {
		qp_lock(&c->lock);
		c->stopping = true;
		pthread_cond_broadcast(&c->wake);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	ring_buffer__free(c->rb);
	qp_cfi_bpf_free(c->cfi.cfi);
	profile__destroy(c->skel);
	qp_unwind_free(c->batch.uw);
	qp_cpu_batch_free(&c->batch);
	qp_cpu_table_free(&c->tab);
	qp_cpu_table_free(&c->off);
	qp_slow_side_free(c->slow);
	free(c->forget);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->drained);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->pub_lock);
	free(c);
}

unsigned int qp_cpu_ncpus(const struct qp_cpu *c) { return c ? c->ev.n : 0; }

int qp_cpu_add_pid(struct qp_cpu *c, uint32_t pid)
{
	__u8 v = QPROF_CPU_TARGET | (c->mode != QP_CPU_UNWIND_FP ? QPROF_CPU_COPY : 0) |
		 (c->cfi.cfi ? QPROF_CPU_WALK : 0);

	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.cpu_targets), &pid, &v, BPF_ANY))
		return -errno;
	qp_cfi_bpf_add(c->cfi.cfi, pid);
	return 0;
}

/* The drain thread forgets PID at its next drain (c->lock held). */
static int queue_forget(struct qp_cpu *c, uint32_t pid, bool table)
{
	if (c->nforget == c->capforget) {
		size_t cap = c->capforget ? c->capforget * 2 : 16;
		struct forget_req *v = realloc(c->forget, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->forget = v;
		c->capforget = cap;
	}
	c->forget[c->nforget].pid = pid;
	c->forget[c->nforget++].table = table;
	pthread_cond_signal(&c->wake);
	return 0;
}

int qp_cpu_remove_pid(struct qp_cpu *c, uint32_t pid, bool forget)
{
	int ret;

	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.cpu_targets), &pid) && errno != ENOENT)
		return -errno;
	qp_cfi_bpf_remove(c->cfi.cfi, pid);
	if (forget) {
		qp_cpu_delete_pid_keys(bpf_map__fd(c->skel->maps.scope_kstats), sizeof(struct scope_key), pid);
		if (c->slow)
			qp_slow_side_forget_thresholds(c->slow, pid);
	}
	/* its samples go now; the drain thread unwinds no more of it and
	 * drops, at its next drain, what the rings still held of it */
	qp_lock(&c->lock);
	ret = queue_forget(c, pid, forget);
	if (forget) {
		if (forget_locked(c, pid) && !ret)
			ret = -ENOMEM;
		publish_locked(c, false);
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* The caller holds the lock, having flushed. */
static void counters_locked(struct qp_cpu *c, uint64_t *samples, uint64_t *lost)
{
	__u32 k;

	*samples = c->cnt.kept;
	*lost = c->cnt.lost;
	for (k = QPROF_PCNT_LOST_RING; k <= QPROF_PCNT_LOST_STACK; k++)
		*lost += qp_cpu_pcounter(c->skel, c->ncpus, k);
}

/* As of the last drain (at most DRAIN_MS old), for /api/status: never
 * behind c->lock. */
void qp_cpu_counters(struct qp_cpu *c, uint64_t *samples, uint64_t *lost)
{
	__u32 k;

	qp_lock(&c->pub_lock);
	*samples = c->pub.cnt.kept;
	*lost = c->pub.cnt.lost;
	pthread_mutex_unlock(&c->pub_lock);
	for (k = QPROF_PCNT_LOST_RING; k <= QPROF_PCNT_LOST_STACK; k++)
		*lost += qp_cpu_pcounter(c->skel, c->ncpus, k);
}

bool qp_cpu_cfi_maps(struct qp_cpu *c, int fds[4])
{
	if (!c || !c->cfi.cfi)
		return false;
	fds[0] = bpf_map__fd(c->skel->maps.cfi_rows);
	fds[1] = bpf_map__fd(c->skel->maps.cfi_files);
	fds[2] = bpf_map__fd(c->skel->maps.cfi_procs);
	fds[3] = bpf_map__fd(c->skel->maps.cfi_counts);
	return true;
}

void qp_cpu_unwind_figures(struct qp_cpu *c, struct qp_cpu_unwind_figures *out)
{
	struct qp_unwind_stats st = { 0 };
	struct qp_cpu_counts cnt;

	memset(out, 0, sizeof(*out));
	out->mode = qp_cpu_unwind_mode_name(c->mode);
	out->copy_fail = qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_COPY_FAIL);
	out->copy_short = qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_COPY_SHORT);
	qp_lock(&c->pub_lock);
	out->copied = c->pub.cnt.copied;
	out->dwarf = c->pub.cnt.dwarf;
	out->fp = c->pub.cnt.fp;
	st = c->pub.uw;
	cnt = c->pub.cnt;
	pthread_mutex_unlock(&c->pub_lock);
	qp_cpu_unwind_stats_fill(&st, out);
	qp_cpu_cfi_figures(&c->cfi, &cnt, out);
}

void qp_cpu_memory(struct qp_cpu *c, uint64_t *aged, size_t *bytes)
{
	qp_lock(&c->pub_lock);
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
	qp_lock(&c->lock);
	flush_locked(c);
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
	if (off) {
		out->samples = c->cnt.off_kept;
		out->lost = c->cnt.off_lost + qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_OFF_LOST_RING);
	} else
		counters_locked(c, &out->samples, &out->lost);
	out->mono_ns = qp_now_ns();
	pthread_mutex_unlock(&c->lock);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), qp_cpu_raw_cmp);
	return 0;
}

int qp_cpu_read(struct qp_cpu *c, struct qp_cpu_snapshot *out)
{
	return read_table(c, false, out);
}

int qp_cpu_read_off(struct qp_cpu *c, struct qp_cpu_snapshot *out)
{
	if (c->offcpu.error[0])
		return -ENODEV;
	return read_table(c, true, out);
}

bool qp_cpu_has_pid(struct qp_cpu *c, uint32_t pid)
{
	bool found = false;
	size_t a;

	qp_lock(&c->lock);
	flush_locked(c);
	for (a = 0; a < c->tab.naggs && !found; a++)
		found = c->tab.aggs[a].key.tgid == pid;
	pthread_mutex_unlock(&c->lock);
	return found;
}

int qp_cpu_stack(struct qp_cpu *c, bool off, int32_t id, uint64_t ips[QPROF_STACK_DEPTH], size_t *n)
{
	int ret = 0;

	*n = 0;
	if (id < 0)
		return -ENOENT;
	qp_lock(&c->lock);
	ret = qp_cpu_table_stack(off ? &c->off : &c->tab, id, ips, QPROF_STACK_DEPTH, n);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* ---- off-CPU and slow instances (collect_offcpu.c, collect_slow.c) ------ */

const char *qp_cpu_off_error(const struct qp_cpu *c)
{
	return !c ? "CPU sampling is unavailable" : c->offcpu.error[0] ? c->offcpu.error : NULL;
}

void qp_cpu_off_counters(struct qp_cpu *c, struct qp_off_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	/* as of the last drain: a status request never waits for one */
	qp_lock(&c->pub_lock);
	out->intervals = c->pub.cnt.off_kept;
	out->lost = c->pub.cnt.off_lost;
	pthread_mutex_unlock(&c->pub_lock);
	out->lost += qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_OFF_LOST_RING);
	out->no_state = qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_OFF_NO_STATE);
	out->kstats_full = qp_cpu_pcounter(c->skel, c->ncpus, QPROF_PCNT_KSTATS_FULL);
}

int qp_cpu_kstats_read(struct qp_cpu *c, int pid, struct qp_kstats_row **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!c || c->offcpu.error[0])
		return -ENODEV;
	return qp_offcpu_kstats_read(bpf_map__fd(c->skel->maps.scope_kstats), pid, out, n);
}

void qp_cpu_set_ring(struct qp_cpu *c, struct qp_ring *ring)
{
	if (c && c->slow)
		qp_slow_side_set_ring(c->slow, ring);
}

bool qp_cpu_slow_on(const struct qp_cpu *c)
{
	return c && c->slow && !c->offcpu.error[0];
}

/* Every slow instance sent before now joined (c->slow set). */
static void slow_flush(struct qp_cpu *c)
{
	qp_lock(&c->lock);
	flush_locked(c);
	pthread_mutex_unlock(&c->lock);
}

int qp_cpu_slow_copy(struct qp_cpu *c, uint32_t pid, bool (*keep)(void *arg, uint64_t site), void *arg,
		     struct qp_slow_inst **out, size_t *n, uint64_t *since_ns)
{
	*out = NULL;
	*n = 0;
	*since_ns = 0;
	if (!c->slow)
		return 0;
	slow_flush(c);
	return qp_slow_side_copy(c->slow, pid, keep, arg, out, n, since_ns);
}

void qp_cpu_slow_counters(struct qp_cpu *c, struct qp_slow_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (c && c->slow)
		qp_slow_side_counters(c->slow, out);
}

int qp_cpu_slow_sites(struct qp_cpu *c, uint32_t pid, uint64_t **sites, size_t *n)
{
	*sites = NULL;
	*n = 0;
	if (!c->slow)
		return 0;
	slow_flush(c);
	return qp_slow_side_sites(c->slow, pid, sites, n);
}

int qp_cpu_slow_window_open(struct qp_cpu *c, uint32_t pid, const uint64_t *named, size_t nnamed,
			    const uint64_t *other, size_t nother, unsigned int keep, uint64_t *id)
{
	if (!c->slow)
		return -ENODEV;
	return qp_slow_side_window_open(c->slow, pid, named, nnamed, other, nother, keep, id);
}

int qp_cpu_slow_window_close(struct qp_cpu *c, uint64_t id, struct qp_slow_inst **out, size_t *n,
			     bool *complete)
{
	struct timespec pause = { 0, SUBMIT_PAUSE_NS };

	if (!c->slow)
		return -ENOENT;
	qp_slow_side_window_end(c->slow, id);
	nanosleep(&pause, NULL);
	slow_flush(c);
	return qp_slow_side_window_close(c->slow, id, out, n, complete);
}

void qp_cpu_set_slow_floor(struct qp_cpu *c, struct slow_floor *floor)
{
	if (c && c->slow)
		qp_slow_side_set_floor(c->slow, floor);
}

/* ring_collect.c - the ring collector (ring_collect.h): the BPF object, the
 * attachments with their semaphore, the announcements, the rings and the
 * drain thread. A ring is read only inside the range its thread announced,
 * after its header checked out; everything the process wrote is hostile
 * and at worst counted and skipped. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"
#include "collect_scopes.h"
#include "common/elf_probes.h"
#include "common/log.h"
#include "common/procfs.h"
#include "logs.h"
#include "bpf/profile.h"
#include "ring_internal.h"
#include "ringreg.skel.h"
#include "ring_collect.h"


/* A (TSC, CLOCK_MONOTONIC) pair: the tightest of a few brackets. */
static void clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 7; i++) {
		uint64_t a = __rdtsc(), n = qp_ring_mono_ns(), b = __rdtsc();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

/* The slope since the first pair; a new segment of the map, continuous
 * (qp_ring_clock_step), slewing to the fresh pair over a second. */
static void clock_update(struct qp_ring *g)
{
	uint64_t tsc = 0, ns = 0;

	clock_pair(&tsc, &ns);
	if (tsc <= g->cal_tsc || ns <= g->cal_ns)
		return;
	g->glob.ns_per_tick = (double)(ns - g->cal_ns) / (double)(tsc - g->cal_tsc);
	if (!g->clk.ns0)
		g->clk = (struct qp_ring_clock){ .tsc0 = tsc, .ns0 = ns, .ns_per_tick = g->glob.ns_per_tick };
	else
		qp_ring_clock_step(&g->clk, tsc, ns, g->glob.ns_per_tick, 1e9);
}

static struct ring_pid *pid_of(struct qp_ring *g, uint32_t pid)
{
	size_t i;

	for (i = 0; i < g->npids; i++)
		if (g->pids[i].pid == pid)
			return &g->pids[i];
	return NULL;
}




static struct ring_ent *ent_of(struct qp_ring *g, uint32_t pid, uint64_t addr)
{
	size_t i;

	for (i = 0; i < g->nents; i++)
		if (g->ents[i].pid == pid && g->ents[i].addr == addr)
			return &g->ents[i];
	return NULL;
}

/* An announcement of a process that is no ring target (yet): kept, the
 * last RING_PENDING of them, for a --binary process adopted a moment
 * later (qp_ring_watch_since takes its rings from here). */
static void pend(struct qp_ring *g, const struct ring_announce *a)
{
	g->pend[g->npend++ % RING_PENDING] = *a;
}

/* Is [ADDR, ADDR + SIZE) of PID inside one mapping (whatever its access)? */
static bool mapped_whole(uint32_t pid, uint64_t addr, uint64_t size)
{
	struct qp_maps m = { 0 };
	const struct qp_map *x;
	bool ok;

	if (qp_maps_read((int)pid, &m))
		return false;
	x = qp_maps_find(&m, addr);
	ok = x && addr + size <= x->end;
	qp_maps_free(&m);
	return ok;
}

static void drop_ent(struct qp_ring *g, size_t i);

/* A ring announced by a target: checked under the lock, its header read
 * without it (a read of the process may take long: never with the lock
 * held). Called and returns with the lock held. */
static void take(struct qp_ring *g, const struct ring_announce *a)
{
	struct qprof_ring h;
	struct ring_pid *p;
	struct ring_ent *e;
	bool ok, later;
	int ret;

	e = ent_of(g, a->pid, a->addr);
	if (e) {
		/* announced again: by the next owner of a ring of the free list
		 * (its head goes on, 2 or more), or by the owner of a new ring
		 * mapped where one was unmapped (head 1, its THREAD record,
		 * while more than that was read there): taken anew. */
		bool again = e->ann_head_ok && e->ann_head == a->head && e->owner == a->tid;

		if (e->renewed) {
			/* the new ring's own, after a read took it anew */
			e->renewed = false;
			e->owner = a->tid;
			return;
		}
		if (again || !a->head_ok || a->head != 1 || e->tail <= 1)
			return;
		drop_ent(g, (size_t)(e - g->ents));
		g->glob.dropped_rings++;
	}
	if (a->size < QPROF_RING_HDR_SIZE_V1 + RING_MIN_REC * sizeof(struct qprof_ring_rec) ||
	    a->size > QPROF_RING_HDR_SIZE + (uint64_t)RING_MAX_REC * sizeof(struct qprof_ring_rec) ||
	    (a->addr & 4095) || a->addr >= (1ULL << 47) || a->addr + a->size > (1ULL << 47)) {
		g->glob.bad++;
		return;
	}
	pthread_mutex_unlock(&g->lock);
	ret = qp_ring_peek(a->pid, a->addr, &h, sizeof(h));
	ok = !ret && qp_ring_header_ok(&h, a->size);
	/* mapped whole but unreadable now (PROT_NONE a while): taken, its
	 * header checked at its first read (nrec 0 until then) */
	later = ret == -EFAULT && mapped_whole(a->pid, a->addr, a->size);
	pthread_mutex_lock(&g->lock);
	if (!ok && !later) {
		g->glob.bad++;
		return;
	}
	if (later)
		memset(&h, 0, sizeof(h));
	p = pid_of(g, a->pid);
	if (!p || ent_of(g, a->pid, a->addr))
		return; /* forgotten meanwhile */
	if (g->nents >= g->o.max_rings) {
		g->glob.refused++;
		return;
	}
	e = realloc(g->ents, (g->nents + 1) * sizeof(*e));
	if (!e) {
		g->glob.refused++;
		return;
	}
	g->ents = e;
	e = &g->ents[g->nents++];
	memset(e, 0, sizeof(*e));
	e->pid = a->pid;
	e->addr = a->addr;
	e->size = a->size;
	e->nrec = h.nrec; /* 0: not checked yet */
	e->hdr = later ? 0 : qp_ring_rec_offset(&h);
	e->mono = h.flags & QPROF_RING_F_MONO;
	/* what the ring still holds; records older than the target's start
	 * are skipped. A ring announced by a thread other than its owner is a
	 * forked child's copy of its parent's ring: the parent's records in it
	 * are not the child's, so only those after the watch began count. */
	e->min_ts = e->mono ? p->from_ns : p->from_ts;
	if (h.tid != a->tid)
		e->min_ts = e->mono ? p->watch_ns : p->watch_ts;
	/* from the ring's first record: its first read (job_apply) counts
	 * what the writer overwrote before it, or tells it was not ours */
	e->tail = 0;
	e->fresh = true;
	e->ann_head = a->head;
	e->ann_head_ok = a->head_ok;
	e->head = a->head_ok ? a->head : 0;
	e->owner = a->tid;
	e->serial = ++g->serial;
	e->rd.pid = a->pid;
	e->rd.tid = a->tid;
	p->rings++;
}

void qp_ring_take_locked(struct qp_ring *g, const struct ring_announce *a)
{
	take(g, a);
}

struct ring_pid *qp_ring_pid_locked(struct qp_ring *g, uint32_t pid)
{
	return pid_of(g, pid);
}

/* Take PID's copy of its parent's ring at ADDR, if it has one (a ring
 * made after its fork is not in it): its one thread (tid = pid) writes on
 * in its copy of the forking thread's ring, and a tid other than the
 * header's makes take() count from the child's watch (the fork) on. The
 * header is read without the lock. */
void qp_ring_take_copy_locked(struct qp_ring *g, uint32_t pid, uint64_t addr, uint64_t size)
{
	struct ring_announce b = { .pid = pid, .tid = pid, .addr = addr, .size = size };
	struct qprof_ring h;
	struct iovec l = { &h, sizeof(h) }, r = { (void *)(uintptr_t)addr, sizeof(h) };
	bool ok;

	pthread_mutex_unlock(&g->lock);
	ok = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(h) &&
	     h.magic == QPROF_RING_MAGIC;
	pthread_mutex_lock(&g->lock);
	if (ok)
		qp_ring_take_locked(g, &b);
}

/* The copies that the children forked from A's process hold of the ring
 * A announces (G->lock held, dropped and taken again). */
static void take_children(struct qp_ring *g, const struct ring_announce *a)
{
	uint32_t kids[64];
	size_t i, n = 0;

	for (i = 0; i < g->npids && n < 64; i++)
		if (g->pids[i].parent == a->pid)
			kids[n++] = g->pids[i].pid;
	for (i = 0; i < n; i++)
		qp_ring_take_copy_locked(g, kids[i], a->addr, a->size);
}

/* A thread of PID that announced the ring at ADDR is exiting, with the
 * ring's head then: what the drain must read or count, even if the
 * process is gone by then. */
static void exit_seen(struct qp_ring *g, const struct ring_announce *a)
{
	struct ring_ent *e = ent_of(g, a->pid, a->addr);

	/* a kernel whose sched_process_exit comes after the memory is gone
	 * (before 6.16 or so): no head; what the process left unread is then
	 * not counted, and status says how often */
	if (e && !a->head_ok)
		g->glob.exit_heads_unread++;
	/* bounded by the ring's announced size (its nrec is 0 until its first read) */
	if (e && a->head_ok && a->head > e->head &&
	    a->head - e->tail <= e->size / sizeof(struct qprof_ring_rec) * 4096)
		e->head = a->head;
}

static int on_announce(void *ctx, void *data, size_t len)
{
	struct qp_ring *g = ctx;
	struct ring_announce a;

	if (len < sizeof(a))
		return 0;
	memcpy(&a, data, sizeof(a));
	pthread_mutex_lock(&g->lock);
	if (a.kind == QPROF_RING_ANN_EXIT) {
		exit_seen(g, &a);
		pthread_mutex_unlock(&g->lock);
		return 0;
	}
	g->glob.announces++;
	if (!pid_of(g, a.pid)) {
		g->glob.not_target++;
		pend(g, &a);
	} else {
		take(g, &a);
		take_children(g, &a);
	}
	pthread_mutex_unlock(&g->lock);
	return 0;
}

/* The ring's figures into its target's, for good: it is gone. */
static void fold_ent(struct ring_pid *p, const struct ring_ent *e)
{
	p->gone_head += e->head > e->tail ? e->head : e->tail;
	p->gone_base += e->base;
	p->gone_read += e->read;
	p->gone_lost += e->lost;
	if (e->size > p->gone_bytes_max)
		p->gone_bytes_max = e->size;
	qp_ring_lost_of(&e->rd, &p->gone_est);
	p->rings_gone++;
}

static void drop_ent(struct qp_ring *g, size_t i)
{
	struct ring_pid *p = pid_of(g, g->ents[i].pid);

	if (p) {
		fold_ent(p, &g->ents[i]);
		if (p->rings)
			p->rings--;
	}
	g->ents[i] = g->ents[--g->nents];
}

/* The ring at E's address is another than the one E read: E's figures go
 * to P's gone rings and E starts over, its header checked at its first
 * read, its announcement (still to come) taken as its own. */
static void renew_ent(struct qp_ring *g, struct ring_ent *e, struct ring_pid *p)
{
	uint32_t pid = e->pid;
	uint64_t addr = e->addr, size = e->size;

	fold_ent(p, e);
	g->glob.dropped_rings++;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->addr = addr;
	e->size = size;
	e->min_ts = p->from_ts;	/* p->from_ns once its first read finds it a CLOCK_MONOTONIC ring */
	e->fresh = true;
	e->renewed = true;
	e->serial = ++g->serial;
	e->rd.pid = pid;
}


/* qp_ring_pid_fn of the span pairing (g->lock held) */
static void who(void *arg, uint32_t pid, struct qp_ring_counts **c, struct qp_ring_flight **fl)
{
	struct ring_pid *p = pid_of(arg, pid);

	*c = p ? &p->c : NULL;
	*fl = p ? &p->fl : NULL;
}

/* Spans across threads are paired this long after their records' time: a
 * record stamped before a pass began minus this was published before the
 * pass read its ring (unless its writer stalled longer between the stamp
 * and the head store), so every BEGIN precedes its END in the queue. */
#define SPAN_SLACK_NS 5000000ull

/* Sleep US microseconds, or less: until an announcement (or a thread's
 * exit) is in the ring buffer, so that a new ring is read within a pass
 * of its first record rather than a period later. */
static void wait_announce(struct qp_ring *g, unsigned int us)
{
	struct pollfd pf = { .fd = ring_buffer__epoll_fd(g->rb), .events = POLLIN };
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	if (ppoll(&pf, 1, &ts, NULL) < 0)
		usleep(us);
}

static void *drain(void *arg)
{
	struct qp_ring *g = arg;
	uint64_t last_cal = qp_ring_mono_ns();
	struct ring_job *jobs = NULL;
	size_t i, n, cap = 0;

	while (!g->stop) {
		uint64_t pass = qp_ring_mono_ns();

		ring_buffer__consume(g->rb);
		pthread_mutex_lock(&g->lock);
		if (qp_ring_mono_ns() - last_cal > 1000000000ull) {
			clock_update(g);
			last_cal = qp_ring_mono_ns();
		}
		if (g->nents > cap) {
			struct ring_job *v = realloc(jobs, g->nents * sizeof(*v));

			if (v) {
				jobs = v;
				cap = g->nents;
			}
		}
		for (n = 0; n < g->nents && n < cap; n++) {
			const struct ring_ent *e = &g->ents[n];

			jobs[n] = (struct ring_job){ .pid = e->pid, .addr = e->addr, .size = e->size,
						.tail = e->tail, .hdr = e->hdr, .nrec = e->nrec, .known_tid = e->named_tid,
						.serial = e->serial };
		}
		pthread_mutex_unlock(&g->lock);
		g->busy = false;
		for (i = 0; i < n && !g->stop; i++) {
			enum qp_ring_fate fate;
			struct ring_ent *e;
			struct ring_pid *p;

			qp_ring_job_read(g, &jobs[i]);
			if (jobs[i].what == JOB_NONE && !jobs[i].tid)
				continue;
			/* a process gone: its threads' last heads first */
			if (jobs[i].what == JOB_DROP)
				ring_buffer__consume(g->rb);
			pthread_mutex_lock(&g->lock);
			e = ent_of(g, jobs[i].pid, jobs[i].addr);
			if (e && e->serial != jobs[i].serial)
				e = NULL; /* another ring at that address since the pass began */
			p = e ? pid_of(g, e->pid) : NULL;
			fate = e && p ? qp_ring_job_apply(g, e, p, &jobs[i]) : RING_DROP;
			if (e && fate == RING_DROP)
				drop_ent(g, (size_t)(e - g->ents));
			else if (e && fate == RING_RENEW)
				renew_ent(g, e, p);
			pthread_mutex_unlock(&g->lock);
		}
		pthread_mutex_lock(&g->lock);
		if (pass > SPAN_SLACK_NS)
			qp_ring_spans_pair(&g->spans, &g->agg, pass - SPAN_SLACK_NS, who, g);
		g->pass_done_ns = pass;
		pthread_mutex_unlock(&g->lock);
		if (!g->busy)
			wait_announce(g, n ? g->o.period_us : RING_IDLE_US);
	}
	free(jobs);
	return NULL;
}

/* The BPF object, with or without its do_exit program. */
static struct ringreg *load_skel(bool exit_prog, bool multi)
{
	struct ringreg *k = ringreg__open();
	int ret;

	if (!k)
		return NULL;
	bpf_program__set_autoload(k->progs.ring_thread_exit, exit_prog);
	if (multi)
		bpf_program__set_expected_attach_type(k->progs.ring_register, ATTACH_UPROBE_MULTI);
	ret = ringreg__load(k);
	if (ret) {
		ringreg__destroy(k);
		errno = -ret;
		return NULL;
	}
	return k;
}

int qp_ring_open(struct qp_ring **out, const struct qp_ring_opts *o, char *err, size_t errlen)
{
	struct qp_ring *g = calloc(1, sizeof(*g));
	int ret;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	g->o = *o;
	qp_ring_agg_init(&g->agg, o->max_rows);
	/* the queue of span events: at most 1 M waiting for the watermark */
	qp_ring_spans_init(&g->spans, o->span_pending, o->span_timeout_ns, 1u << 20);
	/* ring_register as a uprobe-multi program first: its links are
	 * released in parallel (a perf-event uprobe's release is serialized by
	 * the kernel: 200 exiting ring targets took 8 s to detach), else as a
	 * perf-event uprobe (kernels before 6.6); the thread-exit program
	 * where the kernel has BPF trampolines, else without it */
	for (int attempt = 0; attempt < 4 && !g->skel; attempt++) {
		g->multi = !(attempt & 1);
		g->skel = load_skel(attempt < 2, g->multi);
	}
	if (!g->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot load the ring BPF object: %s", strerror(errno));
		goto fail;
	}
	/* the heads exiting threads leave; without it (a kernel that refuses
	 * the fentry program) what a process wrote unread before it ended is not
	 * counted, and status says so (exit_hook false) */
	g->exit_link = bpf_program__fd(g->skel->progs.ring_thread_exit) >= 0
			       ? bpf_program__attach(g->skel->progs.ring_thread_exit)
			       : NULL;
	if (!g->exit_link)
		qp_warn("ring collector: no do_exit program (%s): records unread when a process ends are "
			"not counted", strerror(errno));
	g->glob.exit_hook = g->exit_link != NULL;
	g->rb = ring_buffer__new(bpf_map__fd(g->skel->maps.announces), on_announce, g, NULL);
	if (!g->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the announcement ring buffer: %s", strerror(errno));
		goto fail;
	}
	/* the slope over 20 ms to begin with, refined every second after */
	clock_pair(&g->cal_tsc, &g->cal_ns);
	usleep(20000);
	clock_update(g);
	ret = -pthread_create(&g->thread, NULL, drain, g);
	if (ret) {
		snprintf(err, errlen, "cannot start the ring thread: %s", strerror(-ret));
		goto fail;
	}
	g->running = true;
	*out = g;
	return 0;
fail:
	qp_ring_close(g);
	return ret;
}

void qp_ring_close(struct qp_ring *g)
{
	size_t i;

	if (!g)
		return;
	if (g->running) {
		g->stop = 1;
		pthread_join(g->thread, NULL);
	}
	ring_buffer__free(g->rb);
	bpf_link__destroy(g->exit_link);
	ringreg__destroy(g->skel);
	qp_ring_agg_free(&g->agg);
	qp_ring_spans_free(&g->spans);
	free(g->ents);
	for (i = 0; i < g->npids; i++) {
		qp_ring_flight_free(&g->pids[i].fl);
		qp_htab_free(&g->pids[i].names);
	}
	free(g->pids);
	free(g->buf);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

bool qp_ring_capable(const struct qp_elf_probes *elf)
{
	size_t k;

	for (k = 0; k < elf->nnotes; k++)
		if (!elf->notes[k].bad && elf->notes[k].sema && !strcmp(elf->notes[k].provider, "qprof") &&
		    !strcmp(elf->notes[k].name, "ring_register"))
			return true;
	return false;
}

void qp_ring_sync(struct qp_ring *g, uint64_t until_ns)
{
	int i;

	if (!g || !g->running)
		return;
	for (i = 0; i < 1000; i++) { /* a second at most: the drain thread may be stuck */
		uint64_t done;

		pthread_mutex_lock(&g->lock);
		done = g->pass_done_ns;
		pthread_mutex_unlock(&g->lock);
		if (done > until_ns + SPAN_SLACK_NS)
			return;
		usleep(1000);
	}
}

bool qp_ring_spans_capable(const struct qp_elf_probes *elf)
{
	size_t k;

	for (k = 0; k < elf->nnotes; k++)
		if (!elf->notes[k].bad && elf->notes[k].sema && !strcmp(elf->notes[k].provider, "qprof") &&
		    !strcmp(elf->notes[k].name, "ring_register") && elf->notes[k].args &&
		    strstr(elf->notes[k].args, " 4@$2"))
			return true;
	return false;
}

void qp_ring_stamp_now(struct qp_ring_stamp *st)
{
	st->tsc = __rdtsc();
	st->ns = qp_ring_mono_ns();
}

void qp_ring_forget(struct qp_ring *g, int pid)
{
	size_t i;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nents;) {
		if (g->ents[i].pid == (uint32_t)pid)
			drop_ent(g, i);
		else
			i++;
	}
	for (i = 0; i < g->npids; i++) {
		if (g->pids[i].pid == (uint32_t)pid) {
			qp_ring_flight_free(&g->pids[i].fl);
			qp_htab_free(&g->pids[i].names);
			g->pids[i] = g->pids[--g->npids];
			break;
		}
	}
	qp_ring_agg_forget(&g->agg, (uint32_t)pid);
	qp_ring_spans_forget(&g->spans, (uint32_t)pid);
	pthread_mutex_unlock(&g->lock);
}

/* A QPROF_LOG message read from a ring, into the log store. A cut one
 * says so as the BPF path does (len >= QPROF_LOG_MSG). */
static void to_logs(void *arg, const struct qp_ring_log *m)
{
	int32_t len = m->len;

	if ((size_t)len > strlen(m->msg) && len < QPROF_LOG_MSG)
		len = QPROF_LOG_MSG;
	qp_logs_push(arg, m->pid, m->tid, m->site, m->mono_ns, len, m->msg);
}

void qp_ring_set_logs(struct qp_ring *g, struct qp_logs *l)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->agg.log_fn = l ? to_logs : NULL;
	g->agg.log_arg = l;
	pthread_mutex_unlock(&g->lock);
}

int qp_ring_tids_fd(struct qp_ring *g)
{
	return g ? bpf_map__fd(g->skel->maps.ring_tids) : -1;
}

/* The sampler reads the header through ringreg.h's mirror of it. */
_Static_assert(sizeof(struct ring_hdr) == sizeof(struct qprof_ring), "ring_hdr size");
_Static_assert(offsetof(struct ring_hdr, generation) == offsetof(struct qprof_ring, generation), "generation");
_Static_assert(offsetof(struct ring_hdr, depth) == offsetof(struct qprof_ring, depth), "depth");
_Static_assert(offsetof(struct ring_hdr, open) == offsetof(struct qprof_ring, open), "open");
_Static_assert(offsetof(struct ring_hdr, span_site) == offsetof(struct qprof_ring, span_site), "span_site");
_Static_assert(offsetof(struct ring_hdr, span_id) == offsetof(struct qprof_ring, span_id), "span_id");
_Static_assert(QPROF_SAMPLE_OPEN == QPROF_RING_OPEN && QPROF_SAMPLE_OPEN_MAX == QPROF_RING_OPEN, "open scopes");

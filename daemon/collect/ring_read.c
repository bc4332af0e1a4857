/* ring_read.c - the ring collector's reading of one ring (ring_internal.h):
 * a job's records copied out of the process without the lock, then applied
 * to its entry under it; the header checks and the process reads they use.
 * Everything read is the process's and hostile: checked, at worst counted
 * and skipped. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "collect_internal.h"
#include "common/log.h"
#include "common/procfs.h"
#include "ring_internal.h"
#include "ring_collect.h"

void qp_ring_tnames_note(struct ring_tnames *t, uint64_t start_ns, const char *comm)
{
	uint32_t i;

	for (i = 0; i < t->n; i++) {
		/* the same thread (its ring read again, or renamed): its name now */
		if (t->v[i].start_ns == start_ns) {
			memcpy(t->v[i].comm, comm, sizeof(t->v[i].comm));
			return;
		}
	}
	if (t->n == RING_NAMES_PER_TID) {	/* the oldest goes */
		memmove(&t->v[0], &t->v[1], (RING_NAMES_PER_TID - 1) * sizeof(t->v[0]));
		t->n--;
	}
	/* kept in start order: a thread found late (its ring read after a
	 * later one's) goes before the later ones */
	for (i = t->n; i > 0 && t->v[i - 1].start_ns > start_ns; i--)
		t->v[i] = t->v[i - 1];
	t->v[i].start_ns = start_ns;
	memcpy(t->v[i].comm, comm, sizeof(t->v[i].comm));
	t->n++;
}

const char *qp_ring_tnames_at(const struct ring_tnames *t, uint64_t at_ns, uint64_t live_start_ns)
{
	uint32_t i = t->n;

	/* the newest thread that had started by AT_NS (0: the newest) */
	while (i > 0 && at_ns && t->v[i - 1].start_ns > at_ns)
		i--;
	if (!i)
		return NULL;
	/* a later thread holds the tid now, not noted here, that had
	 * started by AT_NS: the record is its, not this one's */
	if (live_start_ns > t->v[i - 1].start_ns && (!at_ns || live_start_ns <= at_ns))
		return NULL;
	return t->v[i - 1].comm;
}

uint64_t qp_ring_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Read LEN bytes at ADDR of PID: 0, or -errno (-EFAULT for a short read). */
int qp_ring_peek(uint32_t pid, uint64_t addr, void *dst, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Where the records start: QPROF_RING_HDR_SIZE in version 2, 64 in
 * version 1 (no open scopes in the header). */
uint64_t qp_ring_rec_offset(const struct qprof_ring *h)
{
	return h->version == 1 ? QPROF_RING_HDR_SIZE_V1 : QPROF_RING_HDR_SIZE;
}

bool qp_ring_header_ok(const struct qprof_ring *h, uint64_t size)
{
	return h->magic == QPROF_RING_MAGIC && (h->version == 1 || h->version == QPROF_RING_VERSION) &&
	       h->rec_size == sizeof(struct qprof_ring_rec) && h->nrec >= RING_MIN_REC &&
	       h->nrec <= RING_MAX_REC && !(h->nrec & (h->nrec - 1)) &&
	       qp_ring_rec_offset(h) + (uint64_t)h->nrec * sizeof(struct qprof_ring_rec) == size;
}

/* Records E's writer published that were never read: lost (its process
 * ended, or the ring is dropped). */
static void count_unread(struct ring_ent *e, struct ring_pid *p)
{
	uint64_t n = e->head > e->tail ? e->head - e->tail : 0;

	if (!n)
		return;
	e->lost += n;
	p->c.lost_at_exit += n;
	qp_ring_gap(&e->rd, n, &p->c);
	e->tail = e->head;
}


/* Read what the ring holds past the job's tail into g->buf (the drain
 * thread's alone). */
void qp_ring_job_read(struct qp_ring *g, struct ring_job *j)
{
	struct qprof_ring h;
	uint64_t head, head2, tail = j->tail, first;
	struct iovec l, r[2];
	size_t nr = 1;
	ssize_t got;
	int ret;

	j->what = JOB_NONE;
	ret = qp_ring_peek(j->pid, j->addr, &h, sizeof(h));
	if (ret == -ESRCH || ret == -EFAULT) {
		/* gone, or unmapped or PROT_NONE for now: tried again */
		j->what = ret == -ESRCH ? JOB_DROP : JOB_UNREADABLE;
		return;
	}
	if (ret)
		return; /* tried again next time */
	j->checked = false;
	if (!j->nrec && qp_ring_header_ok(&h, j->size)) {
		j->nrec = h.nrec;
		j->hdr = qp_ring_rec_offset(&h);
		j->mono = h.flags & QPROF_RING_F_MONO;
		j->checked = true;
	}
	if (!qp_ring_header_ok(&h, j->size) || h.nrec != j->nrec || qp_ring_rec_offset(&h) != j->hdr) {
		j->what = JOB_BAD;
		return;
	}
	/* a new owner's name and start, for traces and the slowest instances:
	 * read while it is alive. A new owner is a new generation of the ring
	 * (a ring of the free list taken by a thread that has an exited
	 * owner's tid is one too), not only a new tid. */
	j->tid = 0;
	if (h.tid && ((uint64_t)h.generation << 32 | h.tid) != j->known_tid) {
		char path[64];

		j->tid = h.tid;
		j->owner = (uint64_t)h.generation << 32 | h.tid;
		snprintf(path, sizeof(path), "task/%u/comm", h.tid);
		if (qp_proc_file_line((int)j->pid, path, j->comm, sizeof(j->comm)))
			j->comm[0] = '\0';
		if (qp_proc_thread_start_ns((int)j->pid, h.tid, &j->start_ns))
			j->start_ns = 0;
	}
	head = h.head;
	j->head = head;
	j->what = JOB_READ;
	j->lapped = j->skip = j->n = 0;
	if (head <= tail)
		return; /* nothing new (applied: a ring readable again), or head went back */
	if (head - tail > j->nrec) {
		j->lapped = head - j->nrec - tail;
		tail = head - j->nrec;
	}
	j->n = head - tail;
	if (j->n > j->nrec / 2)
		g->busy = true; /* more than half full: the next pass at once */
	if (j->n > g->bufcap) {
		struct qprof_ring_rec *b = realloc(g->buf, j->nrec * sizeof(*b));

		if (!b) {
			j->what = JOB_NONE;
			return;
		}
		g->buf = b;
		g->bufcap = j->nrec;
	}
	first = tail & (j->nrec - 1);
	r[0].iov_base = (void *)(uintptr_t)(j->addr + j->hdr + first * sizeof(*g->buf));
	r[0].iov_len = (size_t)j->n * sizeof(*g->buf);
	if (first + j->n > j->nrec) {
		r[0].iov_len = (size_t)(j->nrec - first) * sizeof(*g->buf);
		r[1].iov_base = (void *)(uintptr_t)(j->addr + j->hdr);
		r[1].iov_len = (size_t)(first + j->n - j->nrec) * sizeof(*g->buf);
		nr = 2;
	}
	l.iov_base = g->buf;
	l.iov_len = (size_t)j->n * sizeof(*g->buf);
	got = process_vm_readv((pid_t)j->pid, &l, 1, r, nr, 0);
	if (got != (ssize_t)l.iov_len) {
		/* a ring unmapped (or made unreadable) mid-read: tried again */
		j->what = got < 0 && errno == ESRCH ? JOB_DROP : JOB_UNREADABLE;
		return;
	}
	/* what the writer may have overwritten while we copied */
	ret = qp_ring_peek(j->pid, j->addr + offsetof(struct qprof_ring, head), &head2, sizeof(head2));
	if (ret) {
		j->what = ret == -ESRCH ? JOB_DROP : JOB_UNREADABLE;
		return;
	}
	if (head2 < head)
		head2 = head;
	if (head2 >= j->nrec && head2 - j->nrec + 1 > tail)
		j->skip = head2 - j->nrec + 1 - tail;
	if (j->skip > j->n)
		j->skip = j->n;
}

/* The first read of E: records [0, lapped + skip) were overwritten before
 * it. Whose were they? A ring first announced at head 1 was made while
 * watched: all ours, lost. Else (a qprofd started after the ring, a forked
 * child's copy) the oldest record read tells: stamped before the session
 * began, every earlier one was too (base, not ours); stamped after, the
 * session began somewhere in what was overwritten: not later than its
 * first announcement, not much earlier (a ring announces itself every
 * QPROF_RING_ANNOUNCE records), counted lost from there, an upper bound
 * (start_unknown). */
static void first_read(struct qp_ring *g, struct ring_ent *e, struct ring_pid *p, const struct ring_job *j,
		       uint64_t over)
{
	uint64_t from;

	e->fresh = false;
	if (!over)
		return;
	if (e->ann_head_ok && e->ann_head <= 1) {
		e->lost += over;
		qp_ring_gap(&e->rd, over, &p->c);
		e->rd.gap_thread++; /* record 0 of a new ring is its THREAD record */
		return;
	}
	if (j->n > j->skip && g->buf[j->skip].ts < e->min_ts) {
		e->base = over;
		return;
	}
	from = e->ann_head_ok && e->ann_head > 2ull * QPROF_RING_ANNOUNCE ? e->ann_head - 2ull * QPROF_RING_ANNOUNCE : 0;
	if (from > over)
		from = over;
	e->base = from;
	e->lost += over - from;
	e->start_unknown = true;
	p->c.start_unknown++;
	qp_ring_gap(&e->rd, over - from, &p->c);
}

/* Under the lock: the job's reading into its entry (if it is still the
 * same one). false: drop the entry. Every move of e->tail adds to exactly
 * one of base, read and lost (ring_internal.h). */
enum qp_ring_fate qp_ring_job_apply(struct qp_ring *g, struct ring_ent *e, struct ring_pid *p,
				    const struct ring_job *j)
{
	uint64_t now;

	if (j->what == JOB_DROP) {
		/* the process is gone (or its leader is): its other threads'
		 * exits may still be on their way with the heads they left */
		now = qp_ring_mono_ns();
		if (!e->gone_ns)
			e->gone_ns = now;
		if (now - e->gone_ns < RING_GONE_GRACE_NS)
			return RING_KEEP;
		count_unread(e, p);
		return RING_DROP;
	}
	if (j->what == JOB_BAD) {
		g->glob.dropped_rings++;
		count_unread(e, p);
		return RING_DROP;
	}
	if (j->what == JOB_UNREADABLE) {
		if (!e->unreadable_ns) {
			e->unreadable_ns = qp_ring_mono_ns();
			p->c.unreadable++;
		}
		return RING_KEEP;
	}
	if (e->unreadable_ns) {
		p->c.unreadable_ns += qp_ring_mono_ns() - e->unreadable_ns;
		e->unreadable_ns = 0;
	}
	if (j->checked && !e->nrec) {
		e->nrec = j->nrec;
		e->hdr = j->hdr;
		e->mono = j->mono;
		if (e->mono)
			e->min_ts = p->from_ns;
	}
	e->gone_ns = 0;
	if (j->tid && p->names.n < RING_MAX_NAMES) {
		int64_t k = qp_htab_add_u64(&p->names, j->tid, NULL);

		if (k >= 0)
			qp_ring_tnames_note(qp_htab_value(&p->names, (size_t)k), j->start_ns, j->comm);
		e->named_tid = j->owner;
		if (!e->rd.tid)
			e->rd.tid = j->tid; /* a ring taken anew */
	}
	if (j->what != JOB_READ || e->tail != j->tail)
		return RING_KEEP;
	/* head went back: no writer does that. With a new owner in the
	 * header, the ring there is another (the one read was unmapped, a new
	 * one mapped at its address): read from its first record next pass */
	if (j->head < e->tail && j->tid)
		return RING_RENEW;
	if (j->head < e->tail || j->head - e->tail > RING_HEAD_LEAP_MAX) {
		/* a scribbled head, or one no writer reaches: a forged ring */
		p->c.garbage++;
		qp_ring_gap(&e->rd, 0, &p->c);
		g->glob.dropped_rings++;
		count_unread(e, p);
		return RING_DROP;
	}
	if (j->head > e->head)
		e->head = j->head;
	if (e->fresh)
		first_read(g, e, p, j, j->lapped + j->skip);
	else if (j->lapped + j->skip) {
		e->lost += j->lapped + j->skip;
		qp_ring_gap(&e->rd, j->lapped + j->skip, &p->c);
	}
	e->rd.fl = &p->fl;	/* p moves when pids grows: set for each read */
	e->rd.spans = &g->spans;
	qp_ring_feed(&g->agg, &e->rd, g->buf + j->skip, (size_t)(j->n - j->skip), &g->clk, e->mono,
		     e->min_ts, &p->c);
	e->read += j->n - j->skip;
	e->tail = j->head;
	return RING_KEEP;
}

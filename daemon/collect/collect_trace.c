/* collect_trace.c - see collect_trace.h. One drain thread consumes
 * trace_rb while at least one session is open (on a 5 ms timer: the BPF
 * side never wakes it) and sleeps on a condition variable otherwise. A
 * record goes to the session of its pid, else to the session of every
 * process; records of no session (emitted just before one ended) are
 * dropped unseen. A session's end waits for one full drain after its map
 * entry is gone, so every record emitted while it was open is in. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"
#include "collect_trace.h"
#include "common/hashtab.h"
#include "common/log.h"
#include "common/procfs.h"
#include "rb_drain.h"
#include "common/util.h"

struct qp_trace_session {
	uint32_t pid;
	size_t cap;
	struct trace_record *recs;
	size_t n, room;
	uint64_t dropped;
	uint64_t begin_ns;
	struct qp_htab threads;		/* (pid << 32 | tid) -> index in names */
	struct qp_trace_thread_name *names;
	size_t nnames, names_room;
	bool failed;			/* out of memory: records past it dropped */
};

struct qp_tracer {
	struct qp_scopes *s;
	struct qp_rb_drain rd;	/* trace_rb and the drain thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	struct qp_trace_session *sess[QPROF_TRACE_MAX_TARGETS];
	unsigned int nsess;
	uint64_t flush_req, flush_done;	/* drains asked for / done */
	struct qp_tracer_stats st;
};

static struct qp_trace_session *session_of(struct qp_tracer *t, uint32_t pid)
{
	struct qp_trace_session *all = NULL;
	unsigned int i;

	for (i = 0; i < t->nsess; i++) {
		if (t->sess[i]->pid == pid)
			return t->sess[i];
		if (t->sess[i]->pid == QPROF_TRACE_ALL)
			all = t->sess[i];
	}
	return all;
}

/* The kernel's name of a thread, read once when first seen (it may be gone
 * by the end of the trace). */
static void note_thread(struct qp_trace_session *ss, uint32_t pid, uint32_t tid)
{
	struct qp_trace_thread_name *nm;
	char path[64];
	bool made;
	int64_t i;

	i = qp_htab_add_u64(&ss->threads, (uint64_t)pid << 32 | tid, &made);
	if (i < 0 || !made)
		return;
	if (ss->nnames == ss->names_room) {
		size_t room = ss->names_room ? ss->names_room * 2 : 16;
		void *v = realloc(ss->names, room * sizeof(*ss->names));

		if (!v)
			return;
		ss->names = v;
		ss->names_room = room;
	}
	nm = &ss->names[ss->nnames++];
	nm->pid = pid;
	nm->tid = tid;
	nm->name[0] = '\0';
	snprintf(path, sizeof(path), "task/%u/comm", tid);
	if (qp_proc_file_line((int)pid, path, nm->name, sizeof(nm->name)))
		nm->name[0] = '\0';
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct qp_tracer *t = ctx;
	const struct trace_record *r = data;
	struct qp_trace_session *ss;

	if (size < sizeof(*r))
		return 0;
	t->st.records++;
	ss = session_of(t, r->pid);
	if (!ss)
		return 0;
	if (ss->n == ss->cap || ss->failed) {
		ss->dropped++;
		t->st.dropped++;
		return 0;
	}
	if (ss->n == ss->room) {
		size_t room = ss->room ? ss->room * 2 : 4096;
		void *v;

		if (room > ss->cap)
			room = ss->cap;
		v = realloc(ss->recs, room * sizeof(*ss->recs));
		if (!v) {
			ss->failed = true;
			ss->dropped++;
			t->st.dropped++;
			return 0;
		}
		ss->recs = v;
		ss->room = room;
	}
	ss->recs[ss->n++] = *r;
	note_thread(ss, r->pid, r->tid);
	return 0;
}

/* Wait up to MS on the condition (T->lock held). */
static void wait_ms(struct qp_tracer *t, long ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += ms * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&t->cond, &t->lock, &until);
}

static void *drain(void *arg)
{
	struct qp_tracer *t = arg;
	bool broken = false;

	pthread_mutex_lock(&t->lock);
	while (!t->stopping) {
		uint64_t req = t->flush_req;
		int n;

		if (!t->nsess && t->flush_done == req) {
			pthread_cond_wait(&t->cond, &t->lock);
			continue;
		}
		/* the callbacks run under the lock: sessions change only under it */
		n = broken ? 0 : ring_buffer__consume(t->rd.rb);
		if (n < 0 && n != -EINTR) {
			qp_warn("trace ring buffer: %s: traces stop here", strerror(-n));
			broken = true;
		}
		if (t->flush_done != req) {
			t->flush_done = req;
			pthread_cond_broadcast(&t->cond);
		}
		if (t->flush_req == req)
			wait_ms(t, 5); /* a session's end wakes it at once */
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int qp_tracer_open(struct qp_tracer **out, struct qp_scopes *s, char *err, size_t errlen)
{
	struct qp_tracer *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->s = s;
	pthread_mutex_init(&t->lock, NULL);
	qp_cond_init_monotonic(&t->cond);
	ret = qp_rb_drain_start(&t->rd, bpf_map__fd(s->skel->maps.trace_rb), on_record, drain, t, "trace", err,
				errlen);
	if (ret) {
		qp_tracer_close(t);
		return ret;
	}
	*out = t;
	return 0;
}

static void session_free(struct qp_trace_session *ss)
{
	if (!ss)
		return;
	free(ss->recs);
	free(ss->names);
	qp_htab_free(&ss->threads);
	free(ss);
}

/* Tell the BPF side how many sessions there are (T->lock held). */
static void publish_active(struct qp_tracer *t)
{
	__atomic_store_n(&t->s->skel->bss->trace_active, t->nsess, __ATOMIC_RELEASE);
	t->st.active = t->nsess;
}

void qp_tracer_close(struct qp_tracer *t)
{
	unsigned int i;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	for (i = 0; i < t->nsess; i++) {
		uint32_t pid = t->sess[i]->pid;

		bpf_map_delete_elem(bpf_map__fd(t->s->skel->maps.trace_pids), &pid);
		session_free(t->sess[i]);
	}
	t->nsess = 0;
	if (t->s && t->s->skel)
		publish_active(t);
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	qp_rb_drain_join(&t->rd);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int qp_trace_begin(struct qp_tracer *t, uint32_t pid, size_t cap, struct qp_trace_session **out)
{
	int fd = bpf_map__fd(t->s->skel->maps.trace_pids);
	struct trace_target zero = { 0 };
	struct qp_trace_session *ss;
	unsigned int i;
	int ret = 0;

	*out = NULL;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->pid = pid;
	ss->cap = cap ? cap : 1;
	qp_htab_init(&ss->threads, 0);
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nsess && !ret; i++)
		if (t->sess[i]->pid == pid || t->sess[i]->pid == QPROF_TRACE_ALL || pid == QPROF_TRACE_ALL)
			ret = -EBUSY;
	if (!ret && t->nsess == QPROF_TRACE_MAX_TARGETS)
		ret = -ENOSPC;
	if (!ret && t->stopping)
		ret = -ECANCELED;
	if (!ret && bpf_map_update_elem(fd, &pid, &zero, BPF_NOEXIST))
		ret = errno == EEXIST ? -EBUSY : -EIO;
	if (ret) {
		pthread_mutex_unlock(&t->lock);
		session_free(ss);
		return ret;
	}
	ss->begin_ns = qp_now_ns();
	t->sess[t->nsess++] = ss;
	t->st.sessions++;
	publish_active(t);
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	*out = ss;
	return 0;
}

int qp_trace_end(struct qp_tracer *t, struct qp_trace_session *ss, struct qp_trace_result *out)
{
	int fd = bpf_map__fd(t->s->skel->maps.trace_pids);
	struct trace_target tt = { 0 };
	uint64_t want;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&t->lock);
	/* taken out of the map with its loss count in one step: a loss
	 * counted after it is read cannot be missed */
	if (bpf_map_lookup_and_delete_elem(fd, &ss->pid, &tt))
		qp_warn("trace of %u: its BPF entry could not be read back: %s", ss->pid, strerror(errno));
	want = ++t->flush_req;
	pthread_cond_broadcast(&t->cond);
	while (t->flush_done < want && !t->stopping)
		pthread_cond_wait(&t->cond, &t->lock);
	for (i = 0; i < t->nsess; i++) {
		if (t->sess[i] == ss) {
			t->sess[i] = t->sess[--t->nsess];
			break;
		}
	}
	publish_active(t);
	t->st.lost += tt.lost;
	pthread_mutex_unlock(&t->lock);
	out->recs = ss->recs;
	out->n = ss->n;
	out->dropped = ss->dropped;
	out->lost = tt.lost;
	out->begin_ns = ss->begin_ns;
	out->end_ns = qp_now_ns();
	out->threads = ss->names;
	out->nthreads = ss->nnames;
	ss->recs = NULL;
	ss->names = NULL;
	session_free(ss);
	return 0;
}

void qp_trace_result_free(struct qp_trace_result *r)
{
	if (!r)
		return;
	free(r->recs);
	free(r->threads);
	memset(r, 0, sizeof(*r));
}

void qp_tracer_stats(struct qp_tracer *t, struct qp_tracer_stats *out)
{
	pthread_mutex_lock(&t->lock);
	*out = t->st;
	pthread_mutex_unlock(&t->lock);
	/* also the losses of sessions still open */
	out->lost = __atomic_load_n(&t->s->skel->bss->trace_lost_total, __ATOMIC_RELAXED);
}

void qp_scopes_set_calibration(struct qp_scopes *s, uint64_t ns)
{
	__atomic_store_n(&s->skel->bss->calib_ns, ns, __ATOMIC_RELEASE);
}

uint64_t qp_scopes_calibration(struct qp_scopes *s)
{
	return __atomic_load_n(&s->skel->bss->calib_ns, __ATOMIC_RELAXED);
}

/* export_speedscope.c - see export_trace.h: the timeline's scopes in
 * speedscope's own file format. Three passes over the scopes (time order):
 * number threads and frames and close each scope no later than the one
 * around it; keep the longest prefix whose events fit the size cap (each
 * event's length is known exactly); write one evented profile per thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_trace.h"
#include "common/hashtab.h"

#define SCHEMA "https://www.speedscope.app/file-format-schema.json"
/* What the trailer ("qprof": {...}) and the closing may take, every number
 * at its widest. */
#define TRAILER_MAX 768
/* A profile's fixed text beside its name and end value. */
#define PROFILE_FIXED 128
#define CUT_NOTE_MAX 64

struct open_frame {
	uint64_t end;
	uint32_t frame;
};

struct sthread {
	uint32_t pid, tid;
	size_t head, tail;		/* the chain of its scopes (next[]) */
	size_t n;			/* its scopes in the prefix kept */
	struct open_frame *stack;	/* pass 1 and 3 */
	size_t depth, cap;
};

struct sdoc {
	const struct qp_trace_doc *d;
	size_t m;			/* scopes */
	size_t *ev;			/* m: index into d->ev */
	uint32_t *thread, *frame;	/* m */
	uint64_t *end;			/* m: the end written (ns since base) */
	size_t *next;			/* m: the next scope of the same thread */
	struct qp_htab threads, frames;	/* threads: value struct sthread */
	uint64_t base;
};

static unsigned int digits(uint64_t v)
{
	unsigned int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* The bytes of ,{"type":"O","frame":F,"at":T} (the comma counted always). */
static uint64_t event_len(uint32_t frame, uint64_t at)
{
	return 28 + digits(frame) + digits(at);
}

static int push(struct sthread *t, uint64_t end, uint32_t frame)
{
	if (t->depth == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct open_frame *s = realloc(t->stack, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		t->stack = s;
		t->cap = cap;
	}
	t->stack[t->depth].end = end;
	t->stack[t->depth].frame = frame;
	t->depth++;
	return 0;
}

static const char *proc_name(const struct qp_trace_doc *d, uint32_t pid)
{
	size_t i;

	for (i = 0; i < d->nprocs; i++)
		if (d->procs[i].pid == pid)
			return d->procs[i].name;
	return NULL;
}

static const char *thread_name(const struct qp_trace_doc *d, uint32_t pid, uint32_t tid)
{
	size_t i;

	for (i = 0; i < d->nthreads; i++)
		if (d->threads[i].pid == pid && d->threads[i].tid == tid)
			return d->threads[i].name;
	return NULL;
}

static void profile_name(const struct qp_trace_doc *d, const struct sthread *t, const char *cut,
			 char *buf, size_t len)
{
	const char *p = proc_name(d, t->pid), *th = thread_name(d, t->pid, t->tid);
	char pnum[16], tnum[16];

	snprintf(pnum, sizeof(pnum), "%u", t->pid);
	snprintf(tnum, sizeof(tnum), "%u", t->tid);
	snprintf(buf, len, "%s (pid %u), %s (tid %u)%s", p ? p : pnum, t->pid, th ? th : tnum, t->tid, cut);
}

/* Pass 1: threads, frames, the clamped ends. */
static int number(struct sdoc *s)
{
	const struct qp_trace_doc *d = s->d;
	size_t i, k = 0;
	int64_t ti, fi;

	for (i = 0; i < d->n; i++)
		if (d->ev[i].kind == QP_TEV_SCOPE)
			s->m++;
	if (s->m) {
		s->ev = malloc(s->m * sizeof(*s->ev));
		s->thread = malloc(s->m * sizeof(*s->thread));
		s->frame = malloc(s->m * sizeof(*s->frame));
		s->end = malloc(s->m * sizeof(*s->end));
		s->next = malloc(s->m * sizeof(*s->next));
		if (!s->ev || !s->thread || !s->frame || !s->end || !s->next)
			return -ENOMEM;
	}
	s->base = d->begin_ns;
	for (i = 0; i < d->n; i++)
		if (d->ev[i].kind == QP_TEV_SCOPE && d->ev[i].ts_ns < s->base)
			s->base = d->ev[i].ts_ns;
	for (i = 0; i < d->n; i++) {
		const struct qp_trace_event *e = &d->ev[i];
		struct sthread *t;
		uint64_t ts, end;
		bool made;

		if (e->kind != QP_TEV_SCOPE)
			continue;
		ti = qp_htab_add_u64(&s->threads, (uint64_t)e->pid << 32 | e->tid, &made);
		fi = qp_htab_add_str(&s->frames, e->name ? e->name : "?", NULL);
		if (ti < 0 || fi < 0)
			return -ENOMEM;
		t = qp_htab_value(&s->threads, (size_t)ti);
		if (made) {
			t->pid = e->pid;
			t->tid = e->tid;
			t->head = k;
		} else {
			s->next[t->tail] = k;
		}
		t->tail = k;
		s->next[k] = SIZE_MAX;
		ts = e->ts_ns - s->base;
		end = ts + e->dur_ns;
		while (t->depth && t->stack[t->depth - 1].end <= ts)
			t->depth--;
		if (t->depth && end > t->stack[t->depth - 1].end)
			end = t->stack[t->depth - 1].end;
		if (push(t, end, (uint32_t)fi))
			return -ENOMEM;
		s->ev[k] = i;
		s->thread[k] = (uint32_t)ti;
		s->frame[k] = (uint32_t)fi;
		s->end[k] = end;
		k++;
	}
	return 0;
}

static void write_event(struct qp_json *j, const char *type, uint32_t frame, uint64_t at)
{
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "type", type);
	qp_json_kv_u64(j, "frame", frame);
	qp_json_kv_u64(j, "at", at);
	qp_json_obj_end(j);
}

/* Pass 3: thread T's scopes of the prefix [0, KEEP) as O/C events. */
static void write_profile(struct qp_json *j, struct sdoc *s, struct sthread *t, size_t keep,
			  uint64_t end_value, const char *cut)
{
	char name[512];
	uint64_t last = 0;
	size_t k;

	profile_name(s->d, t, cut, name, sizeof(name));
	for (k = t->head; k != SIZE_MAX && k < keep; k = s->next[k])
		if (s->end[k] > last)
			last = s->end[k];
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "type", "evented");
	qp_json_kv_str(j, "name", name);
	qp_json_kv_str(j, "unit", "nanoseconds");
	qp_json_kv_u64(j, "startValue", 0);
	qp_json_kv_u64(j, "endValue", end_value > last ? end_value : last);
	qp_json_key(j, "events");
	qp_json_arr_begin(j);
	t->depth = 0;
	for (k = t->head; k != SIZE_MAX && k < keep && !j->failed; k = s->next[k]) {
		uint64_t ts = s->d->ev[s->ev[k]].ts_ns - s->base;

		while (t->depth && t->stack[t->depth - 1].end <= ts) {
			t->depth--;
			write_event(j, "C", t->stack[t->depth].frame, t->stack[t->depth].end);
		}
		write_event(j, "O", s->frame[k], ts);
		/* room was made in pass 1: never deeper than there */
		t->stack[t->depth].end = s->end[k];
		t->stack[t->depth].frame = s->frame[k];
		t->depth++;
	}
	while (t->depth) {
		t->depth--;
		write_event(j, "C", t->stack[t->depth].frame, t->stack[t->depth].end);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

static void free_sdoc(struct sdoc *s)
{
	size_t i;

	for (i = 0; i < s->threads.n; i++)
		free(((struct sthread *)qp_htab_value(&s->threads, i))->stack);
	qp_htab_free(&s->threads);
	qp_htab_free(&s->frames);
	free(s->ev);
	free(s->thread);
	free(s->frame);
	free(s->end);
	free(s->next);
}

int qp_export_speedscope(const struct qp_trace_doc *d, uint64_t max_bytes, struct qp_json *j)
{
	uint64_t marks = 0, values = 0, logs = 0, spans = 0, budget = UINT64_MAX, used = 0, end_value;
	struct sdoc s = { .d = d };
	char cut[CUT_NOTE_MAX] = "", name[160];
	const char *pname;
	size_t i, keep;
	int ret;

	qp_htab_init(&s.threads, sizeof(struct sthread));
	qp_htab_init(&s.frames, 0);
	ret = number(&s);
	if (ret) {
		free_sdoc(&s);
		return ret;
	}
	for (i = 0; i < d->n; i++) {
		switch (d->ev[i].kind) {
		case QP_TEV_MARK:
			marks++;
			break;
		case QP_TEV_VALUE:
			values++;
			break;
		case QP_TEV_LOG:
			logs++;
			break;
		case QP_TEV_ABEGIN:
		case QP_TEV_ASTEP:
		case QP_TEV_AEND:
			spans++;
			break;
		case QP_TEV_SCOPE:
			break;
		}
	}
	pname = d->nprocs == 1 && d->procs[0].name ? d->procs[0].name : "qprof trace";

	qp_json_obj_begin(j);
	qp_json_kv_str(j, "$schema", SCHEMA);
	qp_json_kv_str(j, "exporter", "qprofd");
	/* the name is written below, once the cut is known: its room is kept */
	qp_json_key(j, "shared");
	qp_json_obj_begin(j);
	qp_json_key(j, "frames");
	qp_json_arr_begin(j);
	for (i = 0; i < s.frames.n; i++) {
		size_t len;
		const char *f = qp_htab_key(&s.frames, i, &len);

		qp_json_obj_begin(j);
		qp_json_key(j, "name");
		qp_json_strn(j, f, len);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);

	end_value = d->end_ns > s.base ? d->end_ns - s.base : 0;
	if (max_bytes) {
		/* the fixed parts at their widest, then the events that fit */
		uint64_t fixed = (uint64_t)j->len + TRAILER_MAX + 32 + 6 * (strlen(pname) + CUT_NOTE_MAX);

		for (i = 0; i < s.threads.n; i++) {
			const struct sthread *t = qp_htab_value(&s.threads, i);
			const char *p = proc_name(d, t->pid), *th = thread_name(d, t->pid, t->tid);

			fixed += PROFILE_FIXED + 20 + 6 * ((p ? strlen(p) : 10) + (th ? strlen(th) : 10) +
							    40 + CUT_NOTE_MAX);
		}
		budget = max_bytes > fixed ? max_bytes - fixed : 0;
	}
	for (keep = 0; keep < s.m; keep++) {
		uint64_t ts = d->ev[s.ev[keep]].ts_ns - s.base;
		uint64_t len = event_len(s.frame[keep], ts) + event_len(s.frame[keep], s.end[keep]);

		if (used + len > budget)
			break;
		used += len;
		((struct sthread *)qp_htab_value(&s.threads, s.thread[keep]))->n++;
	}
	if (keep < s.m) {
		uint64_t at = d->ev[s.ev[keep]].ts_ns - s.base;
		char mb[32];

		snprintf(cut, sizeof(cut), " [cut at +%llu.%06llu s: the %s cap]",
			 (unsigned long long)(at / 1000000000), (unsigned long long)(at % 1000000000 / 1000),
			 qp_trace_cap_text(max_bytes, mb, sizeof(mb)));
		end_value = at;
	}
	snprintf(name, sizeof(name), "%s%s", pname, cut);

	qp_json_key(j, "profiles");
	qp_json_arr_begin(j);
	for (i = 0; i < s.threads.n; i++) {
		struct sthread *t = qp_htab_value(&s.threads, i);

		if (t->n)
			write_profile(j, &s, t, keep, end_value, cut);
	}
	if (!keep) {
		/* speedscope opens no file without a profile: an empty one says
		 * there was nothing (or nothing fit) */
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "type", "evented");
		qp_json_kv_str(j, "name", name);
		qp_json_kv_str(j, "unit", "nanoseconds");
		qp_json_kv_u64(j, "startValue", 0);
		qp_json_kv_u64(j, "endValue", end_value);
		qp_json_key(j, "events");
		qp_json_arr_begin(j);
		qp_json_arr_end(j);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	qp_json_kv_str(j, "name", name);
	qp_json_kv_u64(j, "activeProfileIndex", 0);
	qp_json_key(j, "qprof");
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "collector", d->collector ? d->collector : "bpf");
	qp_json_kv_u64(j, "begin_ns", d->begin_ns);
	qp_json_kv_u64(j, "end_ns", d->end_ns);
	qp_json_kv_u64(j, "base_ns", s.base);
	qp_json_kv_u64(j, "scopes", keep);
	qp_json_kv_u64(j, "dropped_events", d->dropped);
	qp_json_kv_u64(j, "lost_events", d->lost);
	qp_json_kv_u64(j, "calibration_ns", d->calibration_ns);
	qp_json_kv_u64(j, "max_bytes", max_bytes);
	qp_json_kv_u64(j, "cut_scopes", s.m - keep);
	if (keep < s.m)
		qp_json_kv_u64(j, "cut_at_ns", d->ev[s.ev[keep]].ts_ns);
	qp_json_key(j, "left_out");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "marks", marks);
	qp_json_kv_u64(j, "values", values);
	qp_json_kv_u64(j, "logs", logs);
	qp_json_kv_u64(j, "span_events", spans);
	qp_json_obj_end(j);
	qp_json_obj_end(j);
	qp_json_obj_end(j);
	free_sdoc(&s);
	return j->failed ? -ENOMEM : 0;
}

/* test_ring_abi.c - marker ABI 2 in process, without qprofd: the semaphore
 * is raised by hand, as the kernel's uprobe reference counter would. Checks
 * that nothing is written and no ring is made while it is zero; the exact
 * records a known sequence writes (kinds, sites, arguments, order, the
 * THREAD record, the header's head and depth; the triples of spans across
 * threads); that rings of exited threads
 * are reused (10 000 threads created and joined: as many rings as threads
 * alive at once, generations counted); the descriptors' version 2; the
 * header's open scopes and the records of QPROF_LOG (ring version 2). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <qprof/qprof.h>

#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testlib.h"

static const char SPAN[] = "t_span";

/* Exactly: THREAD (once per ring owner), then per call ENTER f, ENTER
 * inner, EXIT inner, MARK, VALUE+ARG, BEGIN+ARG, END+ARG, EXIT f. */
static __attribute__((noinline)) double work(double x)
{
	QPROF_FUNC();
	{
		QPROF_SCOPE("inner");
		x = x * 3 + 1;
	}
	QPROF_MARK("m");
	QPROF_VALUE("v", x);
	QPROF_SCOPE_BEGIN(SPAN);
	QPROF_SCOPE_END(SPAN);
	return x;
}
#define RECS_PER_WORK 11

static struct qprof_ring_rec *rec_at(struct qprof_ring *r, uint64_t i)
{
	return (struct qprof_ring_rec *)((char *)r + QPROF_RING_HDR_SIZE) + (i & (r->nrec - 1));
}

static unsigned kind_of(const struct qprof_ring_rec *x)
{
	return (unsigned)(x->word & QPROF_REC_KIND_MASK);
}

static const struct qprof_site *site_of(const struct qprof_ring_rec *x)
{
	return (const struct qprof_site *)(uintptr_t)(x->word & ~(uint64_t)QPROF_REC_KIND_MASK);
}

static void check_work_records(struct qprof_ring *r, uint64_t first, double expect_value)
{
	static const unsigned kinds[RECS_PER_WORK] = {
		QPROF_REC_ENTER, QPROF_REC_ENTER, QPROF_REC_EXIT, QPROF_REC_MARK, QPROF_REC_VALUE,
		QPROF_REC_ARG, QPROF_REC_BEGIN, QPROF_REC_ARG, QPROF_REC_END, QPROF_REC_ARG,
		QPROF_REC_EXIT,
	};
	static const char *names[RECS_PER_WORK] = {
		"work", "inner", "inner", "m", "v", NULL, "t_span", NULL, "t_span", NULL, "work",
	};
	uint64_t bits, prev_ts = 0;
	int i;

	memcpy(&bits, &expect_value, sizeof(bits));
	for (i = 0; i < RECS_PER_WORK; i++) {
		struct qprof_ring_rec *x = rec_at(r, first + i);

		CHECK_INT(kind_of(x), kinds[i]);
		if (names[i]) {
			const struct qprof_site *s = site_of(x);

			CHECK_INT(s->magic, QPROF_SITE_MAGIC);
			CHECK_INT(s->version, 2);
			CHECK_STR(s->name, names[i]);
			CHECK(x->ts >= prev_ts);
			prev_ts = x->ts;
		}
	}
	CHECK_INT(rec_at(r, first + 5)->ts, bits);	/* the value's bits */
	CHECK(rec_at(r, first + 7)->ts == (uintptr_t)SPAN); /* the name literal */
	CHECK(rec_at(r, first + 9)->ts == (uintptr_t)SPAN);
	CHECK(site_of(rec_at(r, first + 0)) == site_of(rec_at(r, first + 10)));
	CHECK(site_of(rec_at(r, first + 1)) == site_of(rec_at(r, first + 2)));
	CHECK_INT(site_of(rec_at(r, first + 6))->kind, QPROF_KIND_SPAN_BEGIN);
	CHECK_INT(site_of(rec_at(r, first + 8))->kind, QPROF_KIND_SPAN_END);
}

static void test_idle_and_records(void)
{
	struct qprof_ring *r;
	double x;
	int i;

	/* semaphore zero: the markers run, no ring is made */
	CHECK_INT(qprof_ring_semaphore, 0);
	for (i = 0; i < 100; i++)
		work(i);
	CHECK(qprof__ring_tls == NULL);

	qprof_ring_semaphore = 1;
	x = work(2.0);
	r = qprof__ring_tls;
	CHECK(r != NULL && r != QPROF__RING_NONE);
	if (!r || r == QPROF__RING_NONE)
		return;
	CHECK_INT(r->magic, QPROF_RING_MAGIC);
	CHECK_INT(r->version, QPROF_RING_VERSION);
	CHECK_INT(r->rec_size, 16);
	CHECK_INT(r->nrec, QPROF_RING_RECORDS);
	CHECK_INT(r->generation, 1);
	CHECK_INT(r->tid, syscall(SYS_gettid));
	CHECK_INT(r->depth, 0);
	CHECK_INT(r->head, 1 + RECS_PER_WORK);
	CHECK_INT(kind_of(rec_at(r, 0)), QPROF_REC_THREAD);
	CHECK_INT(rec_at(r, 0)->word >> 32, 1);
	CHECK_INT((rec_at(r, 0)->word & 0xffffffffu) >> 3, syscall(SYS_gettid));
	check_work_records(r, 1, x);
	CHECK(rec_at(r, 1)->ts >= rec_at(r, 0)->ts);

	/* depth while open */
	{
		QPROF_SCOPE("open");
		CHECK_INT(r->depth, 1);
		/* a SCOPE_BEGIN span is no block scope: the open scopes stay */
		QPROF_SCOPE_BEGIN(SPAN);
		CHECK_INT(r->depth, 1);
		QPROF_SCOPE_END(SPAN);
		CHECK_INT(r->depth, 1);
	}
	CHECK_INT(r->depth, 0);
	CHECK_INT(r->head, 1 + RECS_PER_WORK + 6);

	/* spans across threads: a record and two arguments (name, id) each,
	 * the thread's depth unchanged */
	{
		static const unsigned kinds[9] = {
			QPROF_REC_BEGIN, QPROF_REC_ARG, QPROF_REC_ARG, QPROF_REC_MARK, QPROF_REC_ARG,
			QPROF_REC_ARG, QPROF_REC_END, QPROF_REC_ARG, QPROF_REC_ARG,
		};
		uint64_t h = r->head, id = 0x7a00000000000042ull;
		int k;

		QPROF_SPAN_BEGIN(SPAN, id);
		QPROF_SPAN_STEP(SPAN, id, "st");
		QPROF_SPAN_END(SPAN, id);
		CHECK_INT(r->head, h + 9);
		CHECK_INT(r->depth, 0);
		for (k = 0; k < 9; k++) {
			CHECK_INT(kind_of(rec_at(r, h + k)), kinds[k]);
			if (kinds[k] == QPROF_REC_ARG)
				CHECK_INT(rec_at(r, h + k)->word, QPROF_REC_ARG);
		}
		for (k = 0; k < 9; k += 3) {
			CHECK(rec_at(r, h + k + 1)->ts == (uintptr_t)SPAN);
			CHECK_INT(rec_at(r, h + k + 2)->ts, id);
		}
		CHECK_INT(site_of(rec_at(r, h))->kind, QPROF_KIND_ASYNC_BEGIN);
		CHECK_INT(site_of(rec_at(r, h + 3))->kind, QPROF_KIND_ASYNC_STEP);
		CHECK_STR(site_of(rec_at(r, h + 3))->name, "st");
		CHECK_INT(site_of(rec_at(r, h + 6))->kind, QPROF_KIND_ASYNC_END);
		CHECK(rec_at(r, h + 3)->ts >= rec_at(r, h)->ts && rec_at(r, h + 6)->ts >= rec_at(r, h + 3)->ts);
	}

	/* lapping: the writer wraps, head keeps counting */
	{
		uint64_t h0 = r->head;
		uint64_t n = (QPROF_RING_RECORDS / RECS_PER_WORK) + 3;
		uint64_t k;

		for (k = 0; k < n; k++)
			x = work((double)k);
		CHECK_INT(r->head, h0 + n * RECS_PER_WORK);
		check_work_records(r, r->head - RECS_PER_WORK, x);
	}
	qprof_ring_semaphore = 0;
	{
		uint64_t h = r->head;

		work(5);
		CHECK_INT(r->head, h); /* lowered: nothing written */
	}
}

/* Threads: each writes once and exits. */
#define NTHREADS 10000
#define MAXRINGS 64

static struct qprof_ring *seen[MAXRINGS];
static int nseen, overflow;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both; /* the two threads of a pair are alive at once */

static void *thread_main(void *arg)
{
	struct qprof_ring *r;
	int i;

	(void)arg;
	work(1.0);
	r = qprof__ring_tls;
	pthread_barrier_wait(&both);
	pthread_mutex_lock(&seen_lock);
	for (i = 0; i < nseen; i++)
		if (seen[i] == r)
			break;
	if (i == nseen) {
		if (nseen < MAXRINGS)
			seen[nseen++] = r;
		else
			overflow++;
	}
	pthread_mutex_unlock(&seen_lock);
	return r;
}

static void test_threads(void)
{
	uint64_t gens = 0, recs = 0;
	int i, bad = 0;

	pthread_barrier_init(&both, NULL, 2);
	qprof_ring_semaphore = 1;
	/* two at a time, joined before the next two */
	for (i = 0; i < NTHREADS; i += 2) {
		pthread_t a, b;
		void *ra, *rb;

		if (pthread_create(&a, NULL, thread_main, NULL) ||
		    pthread_create(&b, NULL, thread_main, NULL)) {
			bad++;
			break;
		}
		pthread_join(a, &ra);
		pthread_join(b, &rb);
		if (ra == rb || !ra || !rb || ra == QPROF__RING_NONE || rb == QPROF__RING_NONE)
			bad++;
	}
	qprof_ring_semaphore = 0;
	pthread_barrier_destroy(&both);
	CHECK_INT(bad, 0);
	CHECK_INT(overflow, 0);
	/* two alive at once: two rings (a joined thread's key destructor ran
	 * before pthread_join returned) */
	CHECK_INT(nseen, 2);
	for (i = 0; i < nseen; i++) {
		gens += seen[i]->generation;
		recs += seen[i]->head;
		CHECK_INT(seen[i]->tid, 0); /* on the free list */
		CHECK_INT(seen[i]->depth, 0);
	}
	CHECK_INT(gens, NTHREADS);
	CHECK_INT(recs, (uint64_t)NTHREADS * (1 + RECS_PER_WORK));
}

/* The text of the log head at record I (ring_layout.h); its records. */
static unsigned log_text(struct qprof_ring *r, uint64_t i, char *out)
{
	uint64_t w = rec_at(r, i)->word;
	unsigned stored = QPROF_REC_LOG_STORED(w), n = (stored + 14) / 15, k;

	for (k = 0; k < n; k++) {
		const struct qprof_ring_rec *t = rec_at(r, i + 1 + k);
		uint64_t hi = t->word >> 8;

		CHECK_INT(t->word & 0xff, QPROF_REC_LOG_TEXT);
		memcpy(out + 15 * k, &t->ts, 8);
		memcpy(out + 15 * k + 8, &hi, 7);
	}
	out[stored] = '\0';
	return 1 + n;
}

static __attribute__((noinline)) void deep(struct qprof_ring *r, int n, uint32_t *at40, uint64_t *open31)
{
	QPROF_SCOPE("deep");
	if (n > 1) {
		deep(r, n - 1, at40, open31);
		return;
	}
	*at40 = r->depth;
	*open31 = r->open[QPROF_RING_OPEN - 1];
}

/* Version 2: the open scopes in the header (outermost first, at any
 * depth up to 32, depth never below 0) and QPROF_LOG's records. */
static void test_open_and_logs(void)
{
	struct qprof_ring *r;
	char text[300], big[301];
	uint64_t h, w, open31 = 0;
	uint32_t at40 = 0;
	const struct qprof_site *s;

	qprof_ring_semaphore = 1;
	{
		QPROF_SCOPE("o1");
		r = qprof__ring_tls;
		CHECK(r && r != QPROF__RING_NONE);
		if (!r || r == QPROF__RING_NONE)
			return;
		CHECK_INT(r->depth, 1);
		{
			QPROF_SCOPE("o2");
			CHECK_INT(r->depth, 2);
			CHECK_STR(((const struct qprof_site *)(uintptr_t)r->open[0])->name, "o1");
			CHECK_STR(((const struct qprof_site *)(uintptr_t)r->open[1])->name, "o2");
		}
		QPROF_SCOPE_BEGIN(SPAN);
		CHECK_INT(r->depth, 1);	/* a SCOPE_BEGIN span is on no open list */
		CHECK_STR(((const struct qprof_site *)(uintptr_t)r->open[0])->name, "o1");
		QPROF_SCOPE_END(SPAN);
		CHECK_INT(r->depth, 1);
	}
	CHECK_INT(r->depth, 0);
	deep(r, 40, &at40, &open31);
	CHECK_INT(at40, 40);
	CHECK_STR(((const struct qprof_site *)(uintptr_t)open31)->name, "deep");
	CHECK_INT(r->depth, 0);
	/* entered while lowered, left while raised: depth stays 0 */
	qprof_ring_semaphore = 0;
	{
		QPROF_SCOPE("before");
		qprof_ring_semaphore = 1;
	}
	CHECK_INT(r->depth, 0);

	/* logs: a head and the text, 15 bytes a record */
	qprof_log_semaphore = 1;
	h = r->head;
	QPROF_LOG("hello %d", 42);
	w = rec_at(r, h)->word;
	CHECK_INT(w & QPROF_REC_KIND_MASK, QPROF_REC_ARG);
	s = (const struct qprof_site *)(uintptr_t)QPROF_REC_LOG_SITE(w);
	CHECK_INT((uintptr_t)s & 15, 0);
	CHECK_INT(s->kind, QPROF_KIND_LOG);
	CHECK_INT(QPROF_REC_LOG_STORED(w), 8);
	CHECK_INT(QPROF_REC_LOG_LEN(w), 8);
	CHECK_INT(log_text(r, h, text), 2);
	CHECK_STR(text, "hello 42");
	CHECK_INT(r->head, h + 2);
	memset(big, 'a', 300);
	big[300] = '\0';
	h = r->head;
	QPROF_LOG("%s", big);
	w = rec_at(r, h)->word;
	CHECK_INT(QPROF_REC_LOG_STORED(w), 255);
	CHECK_INT(QPROF_REC_LOG_LEN(w), 300);
	CHECK_INT(log_text(r, h, text), 18);
	CHECK_INT(strlen(text), 255);
	CHECK(text[0] == 'a' && text[254] == 'a');
	CHECK_INT(r->head, h + 18);
	h = r->head;
	QPROF_LOG("%s", "");
	CHECK_INT(QPROF_REC_LOG_STORED(rec_at(r, h)->word), 0);
	CHECK_INT(r->head, h + 1);
	qprof_log_semaphore = 0;
	qprof_ring_semaphore = 0;
}

int main(void)
{
	test_idle_and_records();
	test_open_and_logs();
	test_threads();
	return test_done("ring_abi");
}

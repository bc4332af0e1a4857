/* test_model_logs.c - the log model's reader (model_logs.c) on a fake
 * store, a fake kernel loss counter and a fake registry namer (defined
 * here in place of logs.c's, collect_scopes.c's and target_names.c's):
 * batches in order, the gap of evicted messages reported once, no gap with
 * a pid filter, kernel losses before a since= request left out, sites
 * named (known, unknown, without a file), a reader that has seen
 * everything reads nothing, and what a wait reports. */
#include <errno.h>
#include <stdlib.h>
#include "testlib.h"
#include "collect/collect_scopes.h"
#include "model/model_logs.h"
#include "targets/target_names.h"
#include "targets/targets.h"

/* ---- the fake collectors and registry --------------------------------- */

#define CAP 200
static struct qp_log_entry store[CAP + 1];	/* by seq */
static uint64_t next_seq = 1, oldest = 1, kernel_lost;
static bool stopped;
static int lock_held_while_naming = -1;
static struct qp_registry reg;

size_t qp_logs_get(struct qp_logs *l, uint64_t since, int pid, struct qp_log_entry *out, size_t max,
		   uint64_t *last)
{
	uint64_t seq = since + 1 > oldest ? since + 1 : oldest;
	size_t n = 0;

	*last = since;
	for (; seq < next_seq && n < max; seq++) {
		*last = seq;
		if (pid > 0 && store[seq].pid != (uint32_t)pid)
			continue;
		out[n++] = store[seq];
	}
	return n;
}

bool qp_logs_wait(struct qp_logs *l, uint64_t since, int timeout_ms)
{
	return !stopped;
}

void qp_logs_stats(struct qp_logs *l, uint64_t *received, uint64_t *old)
{
	*received = next_seq - 1;
	*old = oldest;
}

uint64_t qp_scopes_counter(struct qp_scopes *s, unsigned int which)
{
	return which == QPROF_CNT_LOG_LOST ? kernel_lost : 0;
}

static struct qp_site_info site_a = { .line = 42, .name = "log", .file = "s.c", .function = "gen" };
static struct qp_site_info site_b = { .line = 7, .name = "log", .file = NULL, .function = "f" };

static const struct qp_site_info *fake_site(void *arg, uint32_t pid, uint64_t addr)
{
	/* the model asks with the registry lock held */
	int busy = pthread_mutex_trylock(&reg.lock);

	if (!busy)
		pthread_mutex_unlock(&reg.lock);
	lock_held_while_naming = busy != 0;
	return addr == 0xa0 ? &site_a : addr == 0xb0 ? &site_b : NULL;
}

void qp_registry_namer(struct qp_registry *r, struct qp_namer *out)
{
	memset(out, 0, sizeof(*out));
	out->site = fake_site;
	out->arg = r;
}

static void add(uint32_t pid, uint64_t site, const char *msg, int32_t len)
{
	struct qp_log_entry *e = &store[next_seq];

	memset(e, 0, sizeof(*e));
	e->seq = next_seq++;
	e->ts_ns = 1000 + e->seq;
	e->pid = pid;
	e->tid = pid + 1;
	e->site = site;
	e->len = len;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
}

/* ---- the checks -------------------------------------------------------- */

int main(void)
{
	struct qp_model_src src = { .reg = &reg, .logs = (struct qp_logs *)&store };
	struct qp_log_batch *b = calloc(1, sizeof(*b));
	struct qp_log_reader rd, rp;
	size_t i;

	CHECK(b != NULL);
	if (!b)
		return test_done("test_model_logs");
	pthread_mutex_init(&reg.lock, NULL);
	for (i = 0; i < 70; i++)
		add(i % 2 ? 20 : 10, i == 1 ? 0xb0 : i == 2 ? 0xc0 : 0xa0, "m", i == 3 ? 400 : 1);
	kernel_lost = 5;

	/* from the start: the kernel's 5 losses are news, then 64 lines */
	qp_log_reader_init(&src, &rd, 0, 0);
	CHECK_INT(qp_log_read(&src, &rd, b), 1);
	CHECK_INT(b->lost, 5);
	CHECK_INT(b->n, QP_LOG_BATCH);
	CHECK_INT(b->lines[0].e.seq, 1);
	CHECK_INT(b->lines[63].e.seq, 64);
	CHECK_INT(rd.since, 64);
	CHECK(b->lines[0].located && !strcmp(b->lines[0].file, "s.c") && !strcmp(b->lines[0].function, "gen"));
	CHECK_INT(b->lines[0].line, 42);
	CHECK(b->lines[1].located && b->lines[1].file == NULL && !strcmp(b->lines[1].function, "f"));
	CHECK_INT(b->lines[1].line, 7);
	CHECK(!b->lines[2].located && !b->lines[2].file && !b->lines[2].function);	/* unknown site */
	CHECK(b->lines[3].truncated && !b->lines[0].truncated);
	CHECK_INT(lock_held_while_naming, 1);
	qp_log_batch_clear(b);
	CHECK_INT(b->n, 0);

	/* the rest, no loss; then nothing new, and a wait says so */
	CHECK_INT(qp_log_read(&src, &rd, b), 1);
	CHECK_INT(b->lost, 0);
	CHECK_INT(b->n, 6);
	CHECK_INT(b->lines[5].e.seq, 70);
	qp_log_batch_clear(b);
	CHECK_INT(qp_log_read(&src, &rd, b), 0);
	CHECK_INT(b->n, 0);
	CHECK_INT(qp_log_wait(&src, &rd, 10), 0);

	/* pid 20's messages are seq 2, 4, ...: seq 1 skipped is not a loss */
	qp_log_reader_init(&src, &rp, 0, 20);
	CHECK_INT(qp_log_read(&src, &rp, b), 1);
	CHECK_INT(b->lost, 5);	/* the kernel's, from the start */
	CHECK_INT(b->n, 35);
	CHECK_INT(b->lines[0].e.seq, 2);
	CHECK_INT(b->lines[34].e.seq, 70);
	qp_log_batch_clear(b);

	/* 100 more, of which the store keeps the last 30: the reader at 70 is
	 * told of 70 evicted (71..140) and gets 141..170 */
	for (i = 0; i < 100; i++)
		add(10, 0xa0, "n", 1);
	oldest = 141;
	CHECK_INT(qp_log_wait(&src, &rd, 10), 1);
	CHECK_INT(qp_log_read(&src, &rd, b), 1);
	CHECK_INT(b->lost, 70);
	CHECK_INT(b->n, 30);
	CHECK_INT(b->lines[0].e.seq, 141);
	qp_log_batch_clear(b);

	/* a pid filter skips the others' messages: no gap reported for them */
	qp_log_reader_init(&src, &rp, 140, 20);
	CHECK_INT(qp_log_read(&src, &rp, b), 1);	/* it moved past 141..170 */
	CHECK_INT(b->n, 0);
	CHECK_INT(b->lost, 0);
	CHECK_INT(rp.since, 170);

	/* since= leaves the kernel's earlier losses out; new ones are news */
	CHECK_INT(rp.kernel_lost, 5);
	CHECK_INT(qp_log_read(&src, &rp, b), 0);
	kernel_lost = 8;
	CHECK_INT(qp_log_wait(&src, &rp, 10), 1);
	CHECK_INT(qp_log_read(&src, &rp, b), 1);
	CHECK_INT(b->lost, 3);
	CHECK_INT(b->n, 0);

	/* a stopped store ends the wait */
	stopped = true;
	CHECK_INT(qp_log_wait(&src, &rp, 10), -ECANCELED);
	free(b);
	pthread_mutex_destroy(&reg.lock);
	return test_done("test_model_logs");
}

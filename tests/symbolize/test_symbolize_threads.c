/* test_symbolize_threads.c - the symbolizer called from several threads at
 * once. Fixture programs (tests/symfix: PIE with a shared library, a binary
 * whose symbols are in a debug file found by build-id, a C++ program) run;
 * a single-threaded symbolizer names a list of addresses (their functions,
 * offsets inside them, anonymous memory, unmapped addresses that make
 * thousands of distinct "[unknown]+0x..." strings so that the interning
 * table grows, kernel addresses of a kallsyms fixture) as the reference.
 * Then a fresh symbolizer is shared by 4 threads that start together and
 * each name the whole list in its own order, 4 times, while one of them
 * also re-reads the processes' maps and asks qp_sym_any: every field of
 * every answer must equal the reference, and equal strings must be the
 * very same pointer in every thread (one interning table). 16 fresh
 * symbolizers in a row (the races are at the start: empty tables, first
 * maps, first files, kallsyms, the interning table growing). The same again
 * after the programs exited (names from the kept mappings; one process's
 * handed over with qp_sym_process_set_maps, as the registry does). No root.
 * Built a second time with -fsanitize=thread when clang can (unit.cmake). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/procfs.h"
#include "symbolize/symbolize.h"
#include "testlib.h"
#include "symfix_child.h"

#define NTHREADS 4
#define ROUNDS 4
#define FRESH 16	/* fresh symbolizers: each start is a race on empty tables */
#define NUNKNOWN 3000

static const char *arg_pie, *arg_bid, *arg_cxx, *arg_debugroot, *arg_kallsyms;

struct query {
	int pid;	/* 0: a kernel address */
	uint64_t addr;
};

static struct query *queries;
static size_t nqueries;
static struct qp_sym *reference;

static void add_query(int pid, uint64_t addr)
{
	queries[nqueries].pid = pid;
	queries[nqueries].addr = addr;
	nqueries++;
}

static void name(struct qp_symbolizer *s, const struct query *q, struct qp_sym *out)
{
	if (q->pid)
		qp_sym_user(s, q->pid, q->addr, out);
	else
		qp_sym_kernel(s, q->addr, out);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same(const struct qp_sym *a, const struct qp_sym *b)
{
	return same_str(a->name, b->name) && same_str(a->module, b->module) &&
	       same_str(a->path, b->path) && same_str(a->build_id, b->build_id) &&
	       a->offset == b->offset && a->file_off == b->file_off && a->map_start == b->map_start &&
	       a->map_limit == b->map_limit && a->map_offset == b->map_offset && a->found == b->found;
}

struct worker {
	struct qp_symbolizer *s;
	pthread_barrier_t *go;
	const int *pids;
	size_t npids;
	int id;
	const char **names;	/* this thread's name pointer per query (last round) */
	atomic_size_t *mismatches;
	size_t anys;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	size_t r, k, i, start = (size_t)w->id * nqueries / NTHREADS;

	pthread_barrier_wait(w->go);
	for (r = 0; r < ROUNDS; r++) {
		for (k = 0; k < nqueries; k++) {
			struct qp_sym out;

			/* each thread its own order: a rotation, odd ones backwards */
			i = (start + (w->id & 1 ? nqueries - k : k)) % nqueries;
			name(w->s, &queries[i], &out);
			if (!same(&out, &reference[i])) {
				if (atomic_fetch_add(w->mismatches, 1) < 5)
					fprintf(stderr, "thread %d: 0x%llx of pid %d: \"%s\", want \"%s\"\n",
						w->id, (unsigned long long)queries[i].addr, queries[i].pid,
						out.name, reference[i].name);
			}
			w->names[i] = out.name;
			if (w->id == 0 && k % 512 == 0) {
				size_t p;

				/* maps read again while others name addresses in them */
				for (p = 0; p < w->npids; p++)
					qp_sym_process_refresh(w->s, w->pids[p]);
				w->anys += qp_sym_any(w->s, queries[i].addr) != NULL;
			}
		}
	}
	return NULL;
}

/* S shared by NTHREADS threads; S is the caller's. */
static void run_threads(const char *phase, struct qp_symbolizer *s, const int *pids, size_t npids)
{
	struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	pthread_barrier_t go;
	atomic_size_t mismatches = 0;
	size_t i, t, diff_ptr = 0;

	pthread_barrier_init(&go, NULL, NTHREADS);
	for (t = 0; t < NTHREADS; t++) {
		w[t] = (struct worker){ .s = s, .go = &go, .pids = pids, .npids = npids, .id = (int)t,
					.names = calloc(nqueries, sizeof(char *)), .mismatches = &mismatches };
		CHECK(w[t].names != NULL);
		if (!w[t].names)
			exit(1);
		CHECK_INT(pthread_create(&th[t], NULL, work, &w[t]), 0);
	}
	for (t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	for (i = 0; i < nqueries; i++)
		for (t = 1; t < NTHREADS; t++)
			diff_ptr += w[t].names[i] != w[0].names[i];
	fprintf(stderr, "%s: %zu queries x %d rounds x %d threads: %zu mismatches, %zu names "
		"not interned once, qp_sym_any found %zu\n", phase, nqueries, ROUNDS, NTHREADS,
		(size_t)mismatches, diff_ptr, w[0].anys);
	CHECK_INT(mismatches, 0);
	CHECK_INT(diff_ptr, 0);
	for (t = 0; t < NTHREADS; t++)
		free(w[t].names);
	pthread_barrier_destroy(&go);
}

static void reference_names(void)
{
	struct qp_sym_opts o = { .debug_root = arg_debugroot, .kallsyms = arg_kallsyms };
	struct qp_symbolizer *s = qp_symbolizer_new(&o);
	size_t i, found = 0;

	CHECK(s != NULL);
	for (i = 0; s && i < nqueries; i++) {
		name(s, &queries[i], &reference[i]);
		found += reference[i].found;
	}
	/* the strings outlive this symbolizer: keep copies */
	for (i = 0; s && i < nqueries; i++) {
		struct qp_sym *r = &reference[i];

		r->name = strdup(r->name);
		r->module = strdup(r->module);
		r->path = r->path ? strdup(r->path) : NULL;
		r->build_id = strdup(r->build_id);
	}
	qp_symbolizer_free(s);
	/* the list is worth something: the functions named (54 here: the rest
	 * is unmapped on purpose, or past a function's end) */
	CHECK(found >= 40);
	CHECK_STR(reference[0].name, "sf_alpha");
	CHECK_INT(reference[0].offset, 0);
	fprintf(stderr, "reference: %zu of %zu addresses named\n", found, nqueries);
}

int main(int argc, char **argv)
{
	struct child c[3];
	const char *paths[3];
	int pids[3], i, k;
	bool ok = true;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "pie=", 4))
			arg_pie = a + 4;
		else if (!strncmp(a, "bid=", 4))
			arg_bid = a + 4;
		else if (!strncmp(a, "cxx=", 4))
			arg_cxx = a + 4;
		else if (!strncmp(a, "debugroot=", 10))
			arg_debugroot = a + 10;
		else if (!strncmp(a, "kallsyms=", 9))
			arg_kallsyms = a + 9;
	}
	if (!arg_pie || !arg_bid || !arg_cxx || !arg_debugroot || !arg_kallsyms) {
		fprintf(stderr, "usage: %s pie= bid= cxx= debugroot= kallsyms=\n", argv[0]);
		return 2;
	}
	paths[0] = arg_pie;
	paths[1] = arg_bid;
	paths[2] = arg_cxx;
	queries = calloc(3 * 64 + NUNKNOWN + 16, sizeof(*queries));
	reference = calloc(3 * 64 + NUNKNOWN + 16, sizeof(*reference));
	if (!queries || !reference)
		return 1;
	for (i = 0; i < 3; i++) {
		ok = ok && !spawn(paths[i], &c[i]);
		CHECK(ok);
		if (!ok)
			return test_done("test_symbolize_threads");
		pids[i] = c[i].pid;
		/* its functions (every printed address but the pid), inside and past them */
		for (k = 1; k < c[i].nv; k++) {
			static const uint64_t offs[] = { 0, 1, 4, 8, 16, 0x40, 0x100, 0x1000 };
			size_t j;

			if (!c[i].v[k] || c[i].v[k] < 0x1000)
				continue;	/* the variant number, or no library */
			for (j = 0; j < sizeof(offs) / sizeof(offs[0]); j++)
				add_query(c[i].pid, c[i].v[k] + offs[j]);
		}
	}
	for (k = 0; k < NUNKNOWN; k++)	/* mapped by none: distinct strings */
		add_query(c[k % 3].pid, 0x10000ull + 0x10ull * (uint64_t)k);
	{
		static const uint64_t kaddr[] = { 0xffffffff81002010ull, 0xffffffff81002500ull,
						  0xffffffff81000008ull, 0xffffffff81003001ull,
						  0xffffffff80000000ull };

		for (k = 0; k < 5; k++)
			add_query(0, kaddr[k]);
	}
	reference_names();
	{
		struct qp_sym_opts o = { .debug_root = arg_debugroot, .kallsyms = arg_kallsyms };
		struct qp_symbolizer *kept = qp_symbolizer_new(&o);

		CHECK(kept != NULL);
		if (!kept)
			return 1;
		for (k = 0; k < FRESH; k++) {
			struct qp_symbolizer *fresh = qp_symbolizer_new(&o);

			CHECK(fresh != NULL);
			if (!fresh)
				return 1;
			run_threads("while the programs run", fresh, pids, 3);
			qp_symbolizer_free(fresh);
		}
		/* read while they live, named from the kept mappings after they exit */
		for (i = 0; i < 3; i++) {
			struct qp_maps m;

			/* the first from mappings read by the caller, as the
			 * registry hands them over; the others read by it */
			if (i == 0 && !qp_maps_read(pids[i], &m)) {
				CHECK_INT(qp_sym_process_set_maps(kept, pids[i], &m), 0);
				qp_maps_free(&m);
			} else {
				CHECK_INT(qp_sym_process_refresh(kept, pids[i]), 0);
			}
		}
		for (i = 0; i < 3; i++)
			finish(&c[i]);
		run_threads("after the programs exited", kept, pids, 3);
		qp_symbolizer_free(kept);
	}
	return test_done("test_symbolize_threads");
}

/* test_cfi_walk.c - the oracle for the compiled CFI tables: this program
 * (built -O2 without frame pointers) compiles a table for every file it
 * maps (itself, glibc, libstdc++, libgcc_s, the vDSO), takes its own
 * registers and stack copies the way the sampler does, and walks each copy
 * twice: by the tables (cfi_walk.c) and by libdwfl (unwind.c held to
 * libdwfl alone). Where the tables walk to the end, the frames and the
 * result must be libdwfl's exactly; where a frame needs a rule the tables
 * do not hold, the frames before it must be libdwfl's first frames, and
 * the fallback is counted. Stacks: a plain chain, glibc's qsort calling
 * back, a signal handler (through the restorer's signal frame), a
 * std::thread (libstdc++'s thread start), a chain whose CFI is only in
 * .debug_frame (cfi_walk_dbg.c), then sweeps from every 61st byte
 * of glibc's and libstdc++'s code over a real stack. Also: the tables are
 * sorted and merged, the cache shares a file's table and evicts to its
 * budget (counted), a missing or non-ELF file is refused (counted). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <elfutils/libdw.h>
#include "testlib.h"
#include "collect/cfi_table.h"
#include "collect/cfi_walk.h"
#include "collect/unwind.h"
#include "self_stack.h"
#include "collect/unwind_fast.h"

#define MAX_FRAMES 127

static void *ra_l1, *ra_l2, *ra_l3, *ra_cmp, *ra_sig;
volatile uint64_t sink;


__attribute__((noinline, noclone)) void level3(void)
{
	ra_l3 = __builtin_return_address(0);
	CAPTURE();
	sink++;
}

__attribute__((noinline, noclone)) void level2(void)
{
	ra_l2 = __builtin_return_address(0);
	level3();
	sink++;
}

__attribute__((noinline, noclone)) void level1(void)
{
	ra_l1 = __builtin_return_address(0);
	level2();
	sink++;
}

__attribute__((noinline, noclone)) int cmp_capture(const void *a, const void *b)
{
	ra_cmp = __builtin_return_address(0);
	CAPTURE();
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline, noclone)) void sorter(void)
{
	int v[2] = { 2, 1 };

	qsort(v, 2, sizeof(v[0]), cmp_capture);
	sink += (uint64_t)v[0];
}

static void on_signal(int sig)
{
	(void)sig;
	CAPTURE();
	sink++;
}

__attribute__((noinline, noclone)) void sig_caller(void)
{
	ra_sig = __builtin_return_address(0);
	raise(SIGUSR1);
	sink++;
}

void cfi_cxx_thread(void (*fn)(void *), void *arg);

/* cfi_walk_dbg.c: CFI in .debug_frame only */
void dbg_level1(void (*leaf)(void));
void dbg_level2(void (*leaf)(void));
extern void *ra_d1, *ra_d2;

__attribute__((noinline, noclone)) void dbg_leaf(void)
{
	CAPTURE();
	sink++;
}

static void thread_body(void *arg)
{
	uint64_t main_top = stack_top;
	pthread_attr_t attr;
	void *addr;
	size_t size;

	(void)arg;
	pthread_getattr_np(pthread_self(), &attr);
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	stack_top = (uint64_t)(uintptr_t)addr + size;
	CAPTURE();
	stack_top = main_top;
	sink++;
}

/* ---- the tables of this process ----------------------------------------- */

static struct qp_cfi_cache *cache;
static struct qp_cfi_space space;
static struct qp_cfi_table *held[QP_CFI_MAPS_MAX];
static size_t nheld;
static uint64_t libc_lo, libc_hi, cxx_lo, cxx_hi;
static const struct qp_cfi_table *vdso_table;

static int map_cmp(const void *a, const void *b)
{
	const struct qp_cfi_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void build_space(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[400] = "";
		struct qp_cfi_map *m;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %399[^\n]", &lo, &hi, perms, &off, path) < 4 ||
		    perms[2] != 'x' || space.n == QP_CFI_MAPS_MAX)
			continue;
		m = &space.map[space.n];
		m->start = lo;
		m->end = hi;
		m->t = NULL;
		if (path[0] == '/') {
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;

			if (elf && qp_cfi_bias(elf, lo, off, &m->bias))
				m->t = held[nheld++] = qp_cfi_get_file(cache, path);
			if (elf)
				elf_end(elf);
			if (fd >= 0)
				close(fd);
			if (strstr(path, "/libc.so"))
				libc_lo = lo, libc_hi = hi;
			if (strstr(path, "/libstdc++.so"))
				cxx_lo = lo, cxx_hi = hi;
		} else if (!strcmp(path, "[vdso]")) {
			void *img = (void *)getauxval(AT_SYSINFO_EHDR);
			Elf *elf = img ? elf_memory(img, hi - lo) : NULL;

			if (elf && qp_cfi_bias(elf, lo, 0, &m->bias))
				m->t = vdso_table = held[nheld++] = qp_cfi_get_image(cache, img, hi - lo);
			if (elf)
				elf_end(elf);
		}
		space.n++;
	}
	if (f)
		fclose(f);
	qsort(space.map, space.n, sizeof(space.map[0]), map_cmp);
}

/* ---- the differential walk ----------------------------------------------- */

static struct qp_unwind *ref;
static uint64_t walks, full, prefix, by_end[6], by_why[QP_CFI_KINDS], mismatches;

static bool copy_read(void *ctx, uint64_t addr, uint64_t *out)
{
	const struct qp_unwind_in *in = ctx;

	return qp_unwind_copy_read(in, addr, out);
}

/* both walks of the copy; returns the tables' end, the frames in IPS */
static enum qp_cfi_end walk_both(uint64_t *ips, size_t *n)
{
	struct qp_unwind_in in = {
		.pid = (uint32_t)getpid(), .tid = (uint32_t)syscall(SYS_gettid),
		.regs = regs, .stack = copy, .len = copy_len,
	};
	struct qp_cfi_regs r = { .pc = regs[16], .sp = regs[7], .bp = regs[6], .sp_known = true, .bp_known = true };
	uint64_t rips[MAX_FRAMES];
	size_t rn = 0;
	uint8_t why = 0;
	enum qp_cfi_end end;
	int rret;
	bool ok;

	end = qp_cfi_walk(&space, &r, copy_read, &in, ips, MAX_FRAMES, n, &why);
	rret = qp_unwind_stack(ref, &in, rips, MAX_FRAMES, &rn);
	walks++;
	by_end[end]++;
	if (end == QP_CFI_END_FALLBACK || end == QP_CFI_END_NOMAP || end == QP_CFI_END_BAD) {
		/* the tables' frames: libdwfl's first ones (past a pc in no
		 * file libdwfl goes on by frame pointers) */
		ok = *n <= rn && !memcmp(ips, rips, *n * sizeof(*ips));
		if (end == QP_CFI_END_FALLBACK)
			by_why[why < QP_CFI_KINDS ? why : 0]++;
		prefix++;
	} else {
		ok = *n == rn && !memcmp(ips, rips, rn * sizeof(*ips));
		if (end == QP_CFI_END_COMPLETE)
			ok = ok && rret == 1;
		else if (end == QP_CFI_END_DEPTH || end == QP_CFI_END_LOOP)
			ok = ok && rret == 0;
		full++;
	}
	if (!ok) {
		if (mismatches < 5) {
			fprintf(stderr, "mismatch at pc %#llx: tables end %d, %zu frames; libdwfl %d, %zu frames\n",
				(unsigned long long)regs[16], (int)end, *n, rret, rn);
			for (size_t i = 0; i < (*n > rn ? *n : rn) && i < 12; i++)
				fprintf(stderr, "  %zu: %#llx %#llx\n", i, i < *n ? (unsigned long long)ips[i] : 0ull,
					i < rn ? (unsigned long long)rips[i] : 0ull);
		}
		mismatches++;
	}
	return end;
}

struct getter {
	struct qp_cfi_cache *c;
	const char *path;
	struct qp_cfi_table *t;
};

static void *getter_run(void *arg)
{
	struct getter *g = arg;

	g->t = qp_cfi_get_file(g->c, g->path);
	return NULL;
}

static bool has(const uint64_t *ips, size_t n, const void *addr)
{
	for (size_t i = 0; i < n; i++)
		if (ips[i] == (uint64_t)(uintptr_t)addr)
			return true;
	return false;
}

static void sweep(const char *name, uint64_t lo, uint64_t hi, uint64_t sp0)
{
	uint64_t ips[MAX_FRAMES], w0 = walks, f0 = full, p0 = prefix, fb0 = by_end[QP_CFI_END_FALLBACK];
	size_t n;

	for (uint64_t pc = lo; pc < hi; pc += 61) {
		memset(regs, 0, sizeof(regs));
		regs[7] = sp0;
		regs[6] = sp0 + 64;
		regs[16] = pc;
		walk_both(ips, &n);
	}
	printf("%s sweep: %llu walks, %llu walked to the end by the tables, %llu left to libdwfl "
	       "(%llu for a rule the tables lack)\n", name, (unsigned long long)(walks - w0),
	       (unsigned long long)(full - f0), (unsigned long long)(prefix - p0),
	       (unsigned long long)(by_end[QP_CFI_END_FALLBACK] - fb0));
	/* most walks meet no rule the tables lack (the others end on a
	 * "return address" in no file: a pc of the sweep's made-up stack) */
	CHECK((by_end[QP_CFI_END_FALLBACK] - fb0) * 5 < walks - w0);	/* 3-7 % seen */
	CHECK((full - f0) * 5 > walks - w0);	/* 25-38 % seen */
}

int main(int argc, char **argv)
{
	struct qp_unwind_opts ro = { .dwfl_only = true };
	struct qp_cfi_cache_stats cs;
	uint64_t ips[MAX_FRAMES], sp0;
	pthread_attr_t attr;
	void *addr;
	size_t n, size, i;
	enum qp_cfi_end end;

	elf_version(EV_CURRENT);
	ref = qp_unwind_new(&ro);
	cache = qp_cfi_cache_new(0);
	CHECK(ref != NULL && cache != NULL);
	if (!ref || !cache)
		return test_done("unit_cfi_walk");
	pthread_getattr_np(pthread_self(), &attr);
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	stack_top = (uint64_t)(uintptr_t)addr + size;
	cfi_cxx_thread(thread_body, NULL);	/* libstdc++ mapped and used before the maps are read */
	build_space();
	CHECK(libc_lo && cxx_lo);
	/* the vDSO's table, from its image in memory */
	CHECK(vdso_table != NULL && vdso_table->st.fdes >= 1 && vdso_table->st.by_kind[QP_CFI_CFA_SP] >= 1);
	if (vdso_table)
		printf("vdso: %llu FDEs, %u rows\n", (unsigned long long)vdso_table->st.fdes, vdso_table->nrows);
	qp_cfi_cache_stats(cache, &cs);
	printf("%llu tables, %llu bytes, built in %.1f ms\n", (unsigned long long)cs.tables,
	       (unsigned long long)cs.bytes, cs.build_ns / 1e6);

	/* every table: sorted, merged, the rows accounted */
	for (i = 0; i < nheld; i++) {
		const struct qp_cfi_table *t = held[i];
		uint64_t sum = 0;
		bool sorted = true, merged = true;
		uint32_t k;

		if (!t)
			continue;
		for (k = 1; k < t->nrows; k++) {
			const struct qp_cfi_row *a = &t->rows[k - 1], *b = &t->rows[k];

			sorted = sorted && a->addr < b->addr;
			merged = merged && (a->kind != b->kind || a->cfa_off != b->cfa_off || a->bp_off != b->bp_off);
		}
		for (k = 0; k < QP_CFI_KINDS; k++)
			sum += t->st.by_kind[k];
		CHECK(sorted);
		CHECK(merged);
		CHECK_INT(sum, t->nrows);
		CHECK(t->st.rows <= t->st.rows_pushed);
		/* the lookup of each row's first byte finds that row */
		for (k = 0; k + 1 < t->nrows; k += 97)
			CHECK(qp_cfi_lookup(t, t->base + t->rows[k].addr) == &t->rows[k] &&
			      qp_cfi_lookup(t, t->base + t->rows[k + 1].addr - 1) == &t->rows[k]);
		/* the last row: NONE from the end of the last FDE on */
		CHECK(t->nrows && t->base + t->rows[t->nrows - 1].addr == t->end &&
		      QP_CFI_KIND(t->rows[t->nrows - 1].kind) == QP_CFI_NONE);
		CHECK(qp_cfi_lookup(t, t->end) == NULL && qp_cfi_lookup(t, t->base - 1) == NULL);
	}
	/* glibc's table: rows merged, the restorer's signal frame and PLT
	 * entries recognized */
	for (i = 0; i < space.n; i++)
		if (space.map[i].start == libc_lo && space.map[i].t) {
			const struct qp_cfi_table *t = space.map[i].t;

			printf("libc: %llu FDEs (%llu refused), %llu rows read, %llu with the gaps, %u kept (%.1f%%), %zu bytes; "
			       "sp %llu bp %llu plt %llu signal %llu outermost %llu fallback %llu none %llu\n",
			       (unsigned long long)t->st.fdes, (unsigned long long)t->st.fdes_bad,
			       (unsigned long long)t->st.rows_read, (unsigned long long)t->st.rows_pushed, t->nrows,
			       100.0 * t->nrows / t->st.rows_pushed,
			       qp_cfi_table_bytes(t), (unsigned long long)t->st.by_kind[QP_CFI_CFA_SP],
			       (unsigned long long)t->st.by_kind[QP_CFI_CFA_BP], (unsigned long long)t->st.by_kind[QP_CFI_PLT],
			       (unsigned long long)t->st.by_kind[QP_CFI_SIGNAL],
			       (unsigned long long)t->st.by_kind[QP_CFI_OUTERMOST],
			       (unsigned long long)t->st.by_kind[QP_CFI_FALLBACK], (unsigned long long)t->st.by_kind[QP_CFI_NONE]);
			CHECK(t->st.fdes > 1000);
			CHECK(t->nrows < t->st.rows_pushed);	/* rows with the same rule merged */
			CHECK(t->st.by_kind[QP_CFI_SIGNAL] >= 1);
			CHECK(t->st.by_kind[QP_CFI_OUTERMOST] >= 1);
		}

	/* a plain chain: to the end, exactly libdwfl's frames */
	level1();
	end = walk_both(ips, &n);
	CHECK_INT(end, QP_CFI_END_COMPLETE);
	CHECK(n >= 5 && ips[1] == (uintptr_t)ra_l3 && ips[2] == (uintptr_t)ra_l2 && ips[3] == (uintptr_t)ra_l1);
	sp0 = regs[7];
	/* through glibc's qsort */
	sorter();
	end = walk_both(ips, &n);
	CHECK_INT(end, QP_CFI_END_COMPLETE);
	CHECK(n >= 5 && ips[1] == (uintptr_t)ra_cmp);
	/* a signal handler: on through the restorer to sig_caller's caller */
	signal(SIGUSR1, on_signal);
	sig_caller();
	signal(SIGUSR1, SIG_DFL);
	end = walk_both(ips, &n);
	CHECK_INT(end, QP_CFI_END_COMPLETE);
	CHECK(has(ips, n, ra_sig));
	/* a std::thread: libstdc++'s thread start, glibc's start_thread, clone3 */
	{
		cfi_cxx_thread(thread_body, NULL);
		end = walk_both(ips, &n);
		CHECK_INT(end, QP_CFI_END_COMPLETE);
		CHECK(n >= 4);
		for (i = 1; i < n; i++)
			if (ips[i] >= cxx_lo && ips[i] < cxx_hi)
				break;
		CHECK(i < n);	/* a frame in libstdc++ */
	}
	/* a chain whose CFI is only in .debug_frame (cfi_walk_dbg.c): libdw
	 * finds no .eh_frame entry for it, the table has its rules, and the
	 * walk goes through it to the end as libdwfl does */
	{
		const struct qp_cfi_map *m = qp_cfi_space_find(&space, (uintptr_t)dbg_level2);
		int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
		Dwarf_CFI *eh = elf ? dwarf_getcfi_elf(elf) : NULL;
		Dwarf_Frame *fr = NULL;
		const struct qp_cfi_row *row;

		CHECK(m != NULL && m->t != NULL);
		if (m && m->t) {
			uint64_t va = (uintptr_t)dbg_level2 - m->bias;

			CHECK(!eh || dwarf_cfi_addrframe(eh, va + 4, &fr) != 0);	/* not in .eh_frame */
			free(fr);
			row = qp_cfi_lookup(m->t, va + 4);	/* past its push */
			CHECK(row && QP_CFI_KIND(row->kind) == QP_CFI_CFA_SP && row->cfa_off >= 8);
		}
		if (eh)
			dwarf_cfi_end(eh);
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			close(fd);
		dbg_level1(dbg_leaf);
		end = walk_both(ips, &n);
		CHECK_INT(end, QP_CFI_END_COMPLETE);
		CHECK(has(ips, n, ra_d2) && has(ips, n, ra_d1));
	}
	/* hostile registers: pc 0, pc in no mapping, sp at the top */
	memset(regs, 0, sizeof(regs));
	copy_len = 0;
	CHECK_INT(walk_both(ips, &n), QP_CFI_END_BAD);
	regs[16] = 0xdead0000ull;
	regs[7] = ~0ull - 7;
	CHECK_INT(walk_both(ips, &n), QP_CFI_END_NOMAP);
	CHECK_INT(n, 1);
	regs[16] = (uint64_t)(uintptr_t)level3;
	regs[7] = ~0ull - 100;
	copy_len = sizeof(copy);
	for (i = 0; i < sizeof(copy); i++)
		copy[i] = (uint8_t)(i * 131 + 7);
	walk_both(ips, &n);
	CHECK(n <= MAX_FRAMES);

	/* the sweeps, over level3's stack copy */
	level1();
	sp0 = regs[7];
	{
		static uint8_t saved[sizeof(copy)];	/* not on main's stack: in the copy */
		size_t saved_len = copy_len;

		memcpy(saved, copy, sizeof(copy));
		sweep("glibc", libc_lo, libc_hi, sp0);
		memcpy(copy, saved, sizeof(copy));
		copy_len = saved_len;
		sweep("libstdc++", cxx_lo, cxx_hi, sp0);
	}
	/* every byte of every PLT row (the lazy .plt of each file), over
	 * level3's stack with two return addresses on top: ra_l3 where the
	 * CFA is sp + 8 (bytes 0-10 of a 16-byte entry: its jump and its
	 * push), ra_l2 where it is sp + 16 (bytes 11-15: the jump to PLT0,
	 * the index pushed), as libdwfl computes it from the PLT's CFA
	 * expression */
	{
		uint64_t w0 = walks, f0 = full, plt_pcs = 0, at8 = 0, at16 = 0;

		for (i = 0; i < space.n; i++) {
			const struct qp_cfi_table *t = space.map[i].t;

			for (uint32_t k = 0; t && k + 1 < t->nrows; k++) {
				if (QP_CFI_KIND(t->rows[k].kind) != QP_CFI_PLT)
					continue;
				for (uint64_t v = t->base + t->rows[k].addr;
				     v < t->base + t->rows[k + 1].addr && v < t->base + t->rows[k].addr + 512; v++) {
					uint64_t w8 = (uintptr_t)ra_l3, w16 = (uintptr_t)ra_l2;

					level1();
					memcpy(copy, &w8, 8);
					memcpy(copy + 8, &w16, 8);
					regs[16] = v + space.map[i].bias;
					walk_both(ips, &n);
					plt_pcs++;
					at8 += n >= 2 && ips[1] == w8;
					at16 += n >= 2 && ips[1] == w16;
				}
			}
		}
		printf("PLT: %llu pcs walked, %llu compared whole; return address at sp %llu times, at sp + 8 %llu\n",
		       (unsigned long long)plt_pcs, (unsigned long long)(full - f0), (unsigned long long)at8,
		       (unsigned long long)at16);
		CHECK(plt_pcs >= 64);
		CHECK_INT(walks - w0, plt_pcs);
		CHECK_INT(at8 + at16, plt_pcs);	/* every one by the PLT rule */
		CHECK(at16 > 0 && at16 * 2 < at8 && at16 * 4 > at8);	/* 5 bytes of 16 after the push */
	}
	printf("%llu walks: %llu compared whole, %llu up to a fallback; ends: complete %llu fallback %llu "
	       "nomap %llu bad %llu depth %llu loop %llu; fallbacks by rule: fallback %llu none %llu; "
	       "%llu mismatches\n",
	       (unsigned long long)walks, (unsigned long long)full, (unsigned long long)prefix,
	       (unsigned long long)by_end[0], (unsigned long long)by_end[1], (unsigned long long)by_end[2],
	       (unsigned long long)by_end[3], (unsigned long long)by_end[4], (unsigned long long)by_end[5],
	       (unsigned long long)by_why[QP_CFI_FALLBACK], (unsigned long long)by_why[QP_CFI_NONE],
	       (unsigned long long)mismatches);
	CHECK_INT(mismatches, 0);
	CHECK_INT(full + prefix, walks);

	/* the cache: a file's table shared, a budget kept by eviction */
	{
		struct qp_cfi_cache_stats a, b;
		struct qp_cfi_table *t1, *t2;
		char libc_path[400] = "", cxx_path[400] = "";
		FILE *f = fopen("/proc/self/maps", "re");
		char line[512];

		while (f && fgets(line, sizeof(line), f)) {
			char *p = strchr(line, '/');

			if (!p)
				continue;
			p[strcspn(p, "\n")] = 0;
			if (strstr(p, "/libc.so"))
				snprintf(libc_path, sizeof(libc_path), "%s", p);
			if (strstr(p, "/libstdc++.so"))
				snprintf(cxx_path, sizeof(cxx_path), "%s", p);
		}
		if (f)
			fclose(f);
		qp_cfi_cache_stats(cache, &a);
		t1 = qp_cfi_get_file(cache, libc_path);
		qp_cfi_cache_stats(cache, &b);
		CHECK(t1 != NULL);
		CHECK_INT(b.hits, a.hits + 1);
		CHECK_INT(b.builds, a.builds);
		qp_cfi_put(cache, t1);
		/* a budget one byte short of glibc's and libstdc++'s tables:
		 * libstdc++'s evicts glibc's */
		t2 = qp_cfi_get_file(cache, cxx_path);
		CHECK(t2 != NULL);
		{
			struct qp_cfi_cache *small =
				qp_cfi_cache_new(qp_cfi_table_bytes(t1) + (t2 ? qp_cfi_table_bytes(t2) : 0) - 1);

			qp_cfi_put(cache, t2);
			t1 = qp_cfi_get_file(small, libc_path);
			qp_cfi_put(small, t1);
			t2 = qp_cfi_get_file(small, cxx_path);
			qp_cfi_put(small, t2);
			qp_cfi_cache_stats(small, &b);
			CHECK(t1 && t2);
			CHECK_INT(b.builds, 2);
			CHECK_INT(b.evictions, 1);
			CHECK_INT(b.tables, 1);
			CHECK(t2 && b.bytes == qp_cfi_table_bytes(t2));
			qp_cfi_cache_free(small);
		}
		/* refused, counted: no such file, a file that is no ELF */
		CHECK(qp_cfi_get_file(cache, "/nonexistent/qprof") == NULL);
		CHECK(qp_cfi_get_file(cache, "/proc/self/cmdline") == NULL);
		{
			char tmp[] = "/tmp/qpcfiXXXXXX";
			int fd = mkstemp(tmp);

			CHECK(fd >= 0 && write(fd, "\177ELF garbage", 12) == 12);
			if (fd >= 0)
				close(fd);
			errno = 0;
			CHECK(qp_cfi_get_file(cache, tmp) == NULL && errno == EINVAL);
			unlink(tmp);
		}
		qp_cfi_cache_stats(cache, &b);
		CHECK_INT(b.refused, a.refused + 2);	/* the two that opened, no ELF (the missing one: ENOENT) */
	}
	/* a file without a build-id: keyed by device, inode, size, mtime */
	{
		char tmp[] = "/tmp/qpcfiXXXXXX", key1[80];
		struct qp_cfi_cache_stats a, b;
		struct qp_cfi_table *t1, *t2;
		int fd = mkstemp(tmp), in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		Elf *elf = NULL;
		bool cleared = false;
		static char buf[65536];	/* not in main's frame: its CFA offset must fit a row */
		ssize_t r;

		while (fd >= 0 && in >= 0 && (r = read(in, buf, sizeof(buf))) > 0)
			CHECK(write(fd, buf, (size_t)r) == r);
		if (in >= 0)
			close(in);
		/* the build-id note's type turned to 0: no build-id any more */
		elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
		for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE && sh.sh_size >= 16) {
				uint32_t type, zero = 0;

				if (pread(fd, &type, 4, (off_t)sh.sh_offset + 8) == 4 && type == NT_GNU_BUILD_ID)
					cleared = pwrite(fd, &zero, 4, (off_t)sh.sh_offset + 8) == 4;
			}
		}
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			close(fd);
		CHECK(cleared);
		qp_cfi_cache_stats(cache, &a);
		t1 = qp_cfi_get_file(cache, tmp);
		t2 = qp_cfi_get_file(cache, tmp);
		qp_cfi_cache_stats(cache, &b);
		CHECK(t1 && t1 == t2 && t1->key[0] == 'f');
		CHECK_INT(b.builds, a.builds + 1);
		CHECK_INT(b.hits, a.hits + 1);
		snprintf(key1, sizeof(key1), "%s", t1 ? t1->key : "");
		qp_cfi_put(cache, t1);
		qp_cfi_put(cache, t2);
		/* modified (another mtime): another file to the cache */
		{
			struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };

			CHECK(utimensat(AT_FDCWD, tmp, ts, 0) == 0);
		}
		t2 = qp_cfi_get_file(cache, tmp);
		qp_cfi_cache_stats(cache, &a);
		CHECK(t2 && strcmp(t2->key, key1) != 0);
		CHECK_INT(a.builds, b.builds + 1);
		qp_cfi_put(cache, t2);
		unlink(tmp);
	}

	/* four threads asking for one file at once: one table, all get it */
	{
		struct qp_cfi_cache *c4 = qp_cfi_cache_new(0);
		struct getter g[4];
		pthread_t th[4];
		struct qp_cfi_cache_stats s4;

		for (i = 0; i < 4; i++) {
			g[i] = (struct getter){ .c = c4, .path = "/proc/self/exe" };
			CHECK(pthread_create(&th[i], NULL, getter_run, &g[i]) == 0);
		}
		for (i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		qp_cfi_cache_stats(c4, &s4);
		CHECK_INT(s4.tables, 1);
		CHECK_INT(s4.builds + s4.hits, 4);
		for (i = 0; i < 4; i++) {
			CHECK(g[i].t != NULL && g[i].t == g[0].t);
			qp_cfi_put(c4, g[i].t);
		}
		qp_cfi_cache_free(c4);
	}
	/* hostile CFI (argv[1], found by fuzz_cfi_table): two FDEs whose
	 * programs libdw would run at great cost are refused, counted; the
	 * rest of the file compiles */
	if (argc > 1) {
		int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
		struct qp_cfi_stats hs;
		struct qp_cfi_table *t = elf ? qp_cfi_compile(elf, &hs) : NULL;

		CHECK(t != NULL);
		if (t) {
			printf("hostile: %llu FDEs, %llu refused, %u rows\n", (unsigned long long)hs.fdes,
			       (unsigned long long)hs.fdes_bad, t->nrows);
			CHECK_INT(hs.fdes, 123);
			CHECK_INT(hs.fdes_bad, 2);
		}
		qp_cfi_table_free(t);
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			close(fd);
	}
	for (i = 0; i < nheld; i++)
		qp_cfi_put(cache, held[i]);
	qp_cfi_cache_free(cache);
	qp_unwind_free(ref);
	return test_done("unit_cfi_walk");
}

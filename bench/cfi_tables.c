/* cfi_tables.c - the CFI table compiler's figures on real files
 * (bench/cfi_tables.sh): for each file given, the time to compile its
 * table, libdw's rows and the rows kept after merging, the table's bytes
 * in qprofd and packed as the kernel holds it (cfi_pack.h), and the time
 * to pack it, rows by kind; then the total, and the same files asked of
 * one cache again (all hits: nothing rebuilt). Not a test. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "collect/cfi_pack.h"
#include "collect/cfi_table.h"

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct qp_cfi_cache *c = qp_cfi_cache_new((size_t)1 << 30);
	struct qp_cfi_cache_stats cs;
	uint64_t rows_read = 0, rows = 0, fdes = 0, kbytes = 0, pack_ns = 0;
	int i, bad = 0;

	if (!c || argc < 2) {
		fprintf(stderr, "usage: %s ELF-FILE...\n", argv[0]);
		return 2;
	}
	printf("%-44s %7s %9s %9s %9s %6s %10s %10s %6s %8s %8s %8s  %s\n", "file", "fdes", "rows_read", "unmerged",
	       "rows", "kept%", "bytes", "kernel", "rules", "ms", "cpu_ms", "pack_ms",
	       "sp/bp/plt/signal/outermost/fallback/none");
	for (i = 1; i < argc; i++) {
		struct qp_cfi_table *t = qp_cfi_get_file(c, argv[i]);
		const struct qp_cfi_stats *s;
		uint64_t pk_ns, pk_bytes;
		uint32_t pk_rules;

		if (!t) {
			fprintf(stderr, "%s: refused (%s)\n", argv[i], strerror(errno));
			bad = 1;
			continue;
		}
		s = &t->st;
		{
			struct qp_cfi_packed p;
			uint64_t c0 = cpu_ns();

			if (qp_cfi_pack(t, &p)) {
				fprintf(stderr, "%s: cannot pack\n", argv[i]);
				bad = 1;
				qp_cfi_put(c, t);
				continue;
			}
			pk_ns = cpu_ns() - c0;
			pk_bytes = (uint64_t)p.nwords * 4;
			pk_rules = p.nrules;
			qp_cfi_packed_free(&p);
		}
		pack_ns += pk_ns;
		kbytes += pk_bytes;
		printf("%-44s %7llu %9llu %9llu %9u %5.1f%% %10zu %10llu %6u %8.1f %8.1f %8.1f  "
		       "%llu/%llu/%llu/%llu/%llu/%llu/%llu\n",
		       argv[i], (unsigned long long)s->fdes, (unsigned long long)s->rows_read,
		       (unsigned long long)s->rows_pushed, t->nrows,
		       s->rows_pushed ? 100.0 * t->nrows / s->rows_pushed : 0.0, qp_cfi_table_bytes(t),
		       (unsigned long long)pk_bytes, pk_rules, s->build_ns / 1e6, s->build_cpu_ns / 1e6, pk_ns / 1e6,
		       (unsigned long long)s->by_kind[QP_CFI_CFA_SP], (unsigned long long)s->by_kind[QP_CFI_CFA_BP],
		       (unsigned long long)s->by_kind[QP_CFI_PLT], (unsigned long long)s->by_kind[QP_CFI_SIGNAL],
		       (unsigned long long)s->by_kind[QP_CFI_OUTERMOST], (unsigned long long)s->by_kind[QP_CFI_FALLBACK],
		       (unsigned long long)s->by_kind[QP_CFI_NONE]);
		rows_read += s->rows_pushed;
		if (s->fdes_bad || s->unencodable)
			printf("  %s: %llu FDEs refused, %llu rules unencodable\n", argv[i],
			       (unsigned long long)s->fdes_bad, (unsigned long long)s->unencodable);
		rows += t->nrows;
		fdes += s->fdes;
		qp_cfi_put(c, t);
	}
	for (i = 1; i < argc; i++)
		qp_cfi_put(c, qp_cfi_get_file(c, argv[i]));
	qp_cfi_cache_stats(c, &cs);
	printf("total: %llu tables, %llu FDEs, %llu rows before merging, %llu kept (%.1f%%), %.2f MiB in qprofd, "
	       "%.2f MiB in the kernel (packed); built in %.3f s (%.3f s of CPU) and packed in %.3f s of CPU; "
	       "asked again: %llu hits, %llu builds\n",
	       (unsigned long long)cs.tables, (unsigned long long)fdes, (unsigned long long)rows_read,
	       (unsigned long long)rows, rows_read ? 100.0 * rows / rows_read : 0.0, cs.bytes / 1048576.0,
	       kbytes / 1048576.0, cs.build_ns / 1e9, cs.build_cpu_ns / 1e9, pack_ns / 1e9,
	       (unsigned long long)cs.hits, (unsigned long long)cs.builds);
	qp_cfi_cache_free(c);
	return bad;
}

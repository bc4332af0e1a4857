/* cfi_kmem.h - the kernel's copy of the CFI tables (cfi_bpf.h): which file
 * holds which file id, where its packed table (cfi_pack.h) is in the
 * shared rows array, how many processes map it. Private to cfi_bpf.c, whose worker thread alone
 * calls it (no locking here). */
#ifndef QPROF_CFI_KMEM_H
#define QPROF_CFI_KMEM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "cfi_bpf.h"

struct qp_cfi_table;

#define QP_KMEM_LOADS 16	/* PT_LOAD segments kept per file (for the bias) */

enum qp_kfile_state { QP_KF_FREE, QP_KF_LOADED, QP_KF_REFUSED, QP_KF_QUARANTINE };

struct qp_kfile {
	enum qp_kfile_state state;
	uint32_t fhash;		/* of fkey */
	char fkey[64];		/* "dev:ino:size:mtime" ("vdso" for the vDSO image) */
	char bkey[72];		/* "b:<build-id>", "" without one */
	uint32_t first, nwords;	/* LOADED, QUARANTINE: its words in the rows array */
	uint32_t nrows;
	uint32_t refs;		/* processes whose mappings name it */
	uint32_t gen;
	uint64_t last_use;	/* the registry's clock */
	uint64_t freed_ns;	/* QUARANTINE: when it was evicted */
	uint32_t nload;
	struct { uint64_t vaddr, offset, filesz; } load[QP_KMEM_LOADS];
};

struct qp_kmem {
	int rows_fd, files_fd;
	uint32_t *words;	/* the array map, mapped */
	size_t words_cap, map_bytes;
	struct qp_kfile f[QPROF_CFI_FILES];
	uint64_t clock;
	uint64_t rows_used;
	struct qp_cfi_bpf_stats st;	/* the table figures (files .. build_cpu_ns) */
};

/* ROWS_FD (BLOCKS elements of struct cfi_kblock) mapped; 0 or -errno. */
int qp_kmem_init(struct qp_kmem *m, int rows_fd, size_t blocks, int files_fd);
void qp_kmem_fini(struct qp_kmem *m);
/* The file id of the ELF file open at FD (or of the image IMG of LEN bytes,
 * FD < 0: the vDSO), compiled and loaded on first use; QPROF_CFI_NOFILE
 * when it has no table (refused, no room). */
uint32_t qp_kmem_get(struct qp_kmem *m, int fd, const void *img, size_t len);
/* The file id of a table made by qprofd itself (T, not compiled from a
 * file: the uprobe trampoline's), keyed by FKEY, loaded on first use;
 * QPROF_CFI_NOFILE when there is no room. */
uint32_t qp_kmem_get_table(struct qp_kmem *m, const char *fkey, const struct qp_cfi_table *t);
/* The load bias of file ID mapped at START from file offset OFFSET. */
bool qp_kmem_bias(const struct qp_kmem *m, uint32_t id, uint64_t start, uint64_t offset, uint64_t *bias);
/* One more (DELTA 1) or one less (-1) process names ID. */
void qp_kmem_ref(struct qp_kmem *m, uint32_t id, int delta);
#endif

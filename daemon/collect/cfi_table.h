/* cfi_table.h - CFI compiled into compact tables, one per ELF file, for a
 * walker that can run where libdw cannot (a BPF program; cfi_walk.h is its
 * user-space twin). The compiler reads .eh_frame (and .debug_frame where
 * .eh_frame has no FDE) through libdw, row by row, and keeps each row as
 * one of a few rule kinds: CFA = rsp or rbp + offset with the return
 * address at CFA - 8 and rbp undefined, the same, or saved at CFA + offset;
 * a lazy-binding PLT entry; the kernel's signal frame (glibc's restorer);
 * the outermost frame. Any other rule is FALLBACK, an address no FDE
 * covers is NONE: a walker stops there and leaves the stack to libdwfl.
 * Adjacent rows with the same rule are merged. A table is sorted by
 * address (file-relative: the ELF's own vaddrs minus the table's base) and
 * searched in at most QP_CFI_SEARCH_STEPS halvings.
 * Tables are keyed by the file (build-id, else device/inode/size/mtime) in
 * a cache shared by every process that maps the file, bounded in bytes;
 * the least recently used table is evicted (counted). The cache's lock is
 * held only to look up and insert, never while compiling. Documented in
 * docs/internals/cfi-tables.md. */
#ifndef QPROF_CFI_TABLE_H
#define QPROF_CFI_TABLE_H
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* rule kinds (the low 4 bits of qp_cfi_row.kind) */
enum qp_cfi_kind {
	QP_CFI_FALLBACK = 0,	/* a rule of another form: libdwfl must walk on */
	QP_CFI_NONE = 1,	/* no FDE covers the address */
	QP_CFI_CFA_SP = 2,	/* CFA = rsp + cfa_off */
	QP_CFI_CFA_BP = 3,	/* CFA = rbp + cfa_off */
	QP_CFI_PLT = 4,		/* lazy PLT: CFA = rsp + 8, + 8 when (pc & 15) >= bp_off */
	QP_CFI_SIGNAL = 5,	/* kernel signal frame: ucontext at rsp */
	QP_CFI_OUTERMOST = 6,	/* return address undefined: the walk is complete */
	QP_CFI_KINDS
};
/* rbp's rule (bits 4-5 of qp_cfi_row.kind) */
enum qp_cfi_bp { QP_CFI_BP_UNDEF = 0, QP_CFI_BP_SAME = 1, QP_CFI_BP_AT = 2 };

#define QP_CFI_KIND(k) ((k) & 0x0f)
#define QP_CFI_BPRULE(k) (((k) >> 4) & 0x03)

/* One row: the rule from ADDR to the next row's addr. 8 bytes. */
struct qp_cfi_row {
	uint32_t addr;		/* vaddr - table base */
	uint16_t cfa_off;	/* CFA = reg + cfa_off */
	uint8_t kind;		/* enum qp_cfi_kind | enum qp_cfi_bp << 4 */
	int8_t bp_off;		/* BP_AT: rbp at CFA + 8 * bp_off; PLT: the threshold */
};

/* struct sigcontext inside the ucontext the kernel puts at rsp when a
 * handler returns into the restorer (x86-64 rt_sigframe, after pretcode) */
#define QP_CFI_SIG_RBP 120
#define QP_CFI_SIG_RSP 160
#define QP_CFI_SIG_RIP 168

#define QP_CFI_ROWS_MAX (1u << 24)	/* a bigger table is refused (counted) */
#define QP_CFI_SEARCH_STEPS 25		/* log2(QP_CFI_ROWS_MAX) + 1 */

/* what compiling one file found (summed over files by the cache) */
struct qp_cfi_stats {
	uint64_t fdes;		/* FDEs read */
	uint64_t fdes_bad;	/* FDEs refused: encoding unknown, range hostile, rows out of order */
	uint64_t rows_read;	/* rows libdw gave */
	uint64_t rows_pushed;	/* rows before merging (libdw's and the gaps between FDEs) */
	uint64_t rows;		/* rows kept after merging */
	uint64_t by_kind[QP_CFI_KINDS];	/* kept rows by kind */
	uint64_t unencodable;	/* simple rules whose offsets do not fit a row: FALLBACK */
	uint64_t build_ns;	/* time spent compiling (wall clock) */
	uint64_t build_cpu_ns;	/* ... on the CPU (this thread's): the figure that load does not inflate */
};

struct qp_cfi_table {
	uint64_t base;		/* the lowest vaddr covered: rows are relative to it */
	uint64_t end;		/* one past the highest vaddr covered */
	uint32_t nrows;
	struct qp_cfi_row *rows;
	struct qp_cfi_stats st;
	char key[80];		/* "b:<build-id hex>" or "f:dev:ino:size:mtime" */
	/* cache bookkeeping (cfi_table.c) */
	uint32_t refs;
	uint64_t last_use;
	struct qp_cfi_table *next;
};

/* Compile ELF (a file or an image in memory: the vDSO). NULL with errno:
 * EINVAL the file has no usable CFI or is hostile (*ST says what was seen,
 * may be NULL), ENOMEM, E2BIG over QP_CFI_ROWS_MAX rows or a 4 GiB span. */
struct qp_cfi_table *qp_cfi_compile(Elf *elf, struct qp_cfi_stats *st);
void qp_cfi_table_free(struct qp_cfi_table *t);	/* accepts NULL */
size_t qp_cfi_table_bytes(const struct qp_cfi_table *t);	/* rows + header */

/* The row for VADDR (file-relative), or NULL outside the table; at most
 * QP_CFI_SEARCH_STEPS halvings. */
const struct qp_cfi_row *qp_cfi_lookup(const struct qp_cfi_table *t, uint64_t vaddr);

/* ---- the cache: tables shared by file ------------------------------------ */

struct qp_cfi_cache_stats {
	uint64_t tables;	/* held now */
	uint64_t bytes;		/* their qp_cfi_table_bytes */
	uint64_t builds;	/* compiled (one file compiled by two threads at once: 2, one kept) */
	uint64_t hits;		/* found already compiled */
	uint64_t refused;	/* files whose CFI was refused (no CFI, hostile, too big) */
	uint64_t evictions;	/* tables dropped to stay within the budget */
	uint64_t build_ns;	/* total compile time (wall clock) */
	uint64_t build_cpu_ns;	/* ... on the CPU */
};

struct qp_cfi_cache;

/* MAX_BYTES: the budget (0: 64 MiB). NULL on ENOMEM. */
struct qp_cfi_cache *qp_cfi_cache_new(size_t max_bytes);
void qp_cfi_cache_free(struct qp_cfi_cache *c);	/* every table must be put back */

/* The table of the file at PATH (opened here), compiled on first use; held
 * until qp_cfi_put. NULL with errno (as qp_cfi_compile, or open's). */
struct qp_cfi_table *qp_cfi_get_file(struct qp_cfi_cache *c, const char *path);
/* ... of an ELF image in memory (the vDSO), keyed by its build-id. */
struct qp_cfi_table *qp_cfi_get_image(struct qp_cfi_cache *c, const void *img, size_t len);
void qp_cfi_put(struct qp_cfi_cache *c, struct qp_cfi_table *t);	/* accepts NULL */
void qp_cfi_cache_stats(struct qp_cfi_cache *c, struct qp_cfi_cache_stats *out);

/* The load bias of the mapping of ELF at START from file offset OFFSET
 * (/proc/PID/maps): the vaddr of a byte plus the bias is its address. */
bool qp_cfi_bias(Elf *elf, uint64_t start, uint64_t offset, uint64_t *bias);
#endif

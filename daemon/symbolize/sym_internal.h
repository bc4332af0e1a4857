/* sym_internal.h - what the symbolizer's files share and nothing outside
 * uses: the symbolizer's state and its one lock, the string interning
 * (sym_intern.c), the parsed ELF files (sym_elf.c), the processes' mappings
 * (sym_maps.c) and the kernel's symbols (sym_kernel.c).
 *
 * Locking: s->lock guards every table of struct qp_symbolizer. It is held
 * only for lookups and inserts, never while a file is read: an ELF file, a
 * debug file, a maps file or kallsyms is read and parsed without it, then
 * put in under it (the first one in wins; a duplicate is freed). What is
 * handed out (strings, struct symfile) is never freed before the
 * symbolizer, so a result stays valid after the lock is dropped. */
#ifndef QPROF_SYM_INTERNAL_H
#define QPROF_SYM_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include "common/arena.h"
#include "common/hashtab.h"
#include "symbolize.h"
#include "common/util.h"

#define SYM_MAX_SYMS (1u << 24)		/* symbols kept from one table */
#define SYM_MAX_TEXT (256u << 20)	/* kallsyms text read */
#define SYM_MAX_NAME 4096		/* longest symbol name kept */
#define SYM_BUILD_ID_MAX 64		/* bytes of a build-id kept */
#define SYM_MAX_DWARF_FILES 1024u	/* files whose DWARF is held open (one fd each) */
#define SYM_MISS_REFRESH_NS 100000000ull /* re-read maps on a miss at most 10/s */
#define SYM_KEEP_UNMAPPED 256		/* unmapped file ranges a re-read keeps (names of unloaded libraries) */

/* ---- sym_intern.c: strings (the table: common/hashtab.h) ----------------- */

int sym_intern_init(struct qp_htab *t);

/* ---- sym_dwarf.c: a file's DWARF (libdw) ------------------------------- */

#include <libelf.h>
struct sym_dwarf;

/* What DWARF says of one link-time address. Strings live as long as the
 * sym_dwarf. */
struct sym_src {
	const char *file;	/* source file of the address in FUNC */
	uint32_t line;
	const char *func;	/* the subprogram's name, NULL when none */
	bool inl_truncated;
	size_t ninl;
	struct qp_sym_inline inl[QP_SYM_MAX_INLINE];	/* innermost first */
};

/* The ELF has a .debug_info that we read (sym_dwarf.c says what is refused). */
bool sym_elf_has_dwarf(Elf *elf);
/* The DWARF of the open file FD (dup'ed; FD stays the caller's; the caller
 * checked sym_elf_has_dwarf), read on the first lookup; NULL when out of
 * memory. An alt (dwz) file is looked for under DEBUG_ROOT (which must
 * outlive it) only. No lock held. */
struct sym_dwarf *sym_dwarf_open(int fd, const char *debug_root);
/* The same over ELF, taken over with FD (-1: an ELF in memory) on success
 * only. */
struct sym_dwarf *sym_dwarf_from_elf(Elf *elf, int fd, const char *debug_root);
/* Thread-safe (its own lock); false when DWARF says nothing of VA. */
bool sym_dwarf_lookup(struct sym_dwarf *d, uint64_t va, struct sym_src *out);
void sym_dwarf_free(struct sym_dwarf *d);	/* accepts NULL */

/* ---- sym_elf.c: one parsed ELF file ------------------------------------ */

struct sym_fsym {
	uint64_t addr, size;
	const char *name;	/* mangled, in the file's arena */
	const char *dem;	/* interned demangled name, set (under s->lock) on first use */
	uint8_t bind;
};

struct sym_fseg {
	uint64_t vaddr, memsz, offset, filesz;
};

/* One parsed ELF file (or one that could not be parsed: err != 0).
 * Immutable once in s->files, but for syms[].dem (s->lock). */
struct symfile {
	struct symfile *next;
	char build_id[2 * SYM_BUILD_ID_MAX + 1];
	const char *path;	/* as first seen, in names */
	const char *debug_path;	/* in names; where .symtab came from, NULL if here */
	struct sym_dwarf *dw;	/* its DWARF (here or in the debug file), NULL: none */
	bool dw_borrowed;	/* DW is an older parse's (freed with that one) */
	bool full_syms;		/* syms come from a .symtab (not .dynsym only) */
	/* the parse that stands for this one since its debug file was fetched
	 * (s->lock); lookups follow it: sym_file_current */
	struct symfile *newer;
	int err;
	size_t nsegs, nsyms;
	struct sym_fseg *segs;
	struct sym_fsym *syms;	/* sorted by addr, one per address */
	struct qp_arena *names;
};

/* dev+inode+mtime+size of a file already seen -> its parse. */
struct sym_fileid {
	struct sym_fileid *next;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	struct symfile *f;
};

/* ---- sym_maps.c: a process's mappings ----------------------------------- */

enum { SYM_MAP_FILE, SYM_MAP_ANON, SYM_MAP_SPECIAL };

struct symmap {
	uint64_t start, end, offset, inode;
	const char *path;	/* interned, " (deleted)" removed; NULL for anon */
	const char *module;	/* interned */
	struct symfile *file;	/* NULL: not executable or unreadable */
	int kind;
};

struct qp_sym_process {
	struct qp_sym_process *next;
	int pid;
	bool gone;
	uint64_t start;		/* its start time (clock ticks), 0: unknown */
	const char *exe;	/* interned path of its executable, NULL: unknown */
	uint64_t last_refresh_ns;
	uint64_t ticket;	/* of the mappings installed: an older read never replaces them */
	size_t n;
	struct symmap *v;	/* sorted by start, not overlapping */
};

/* ---- sym_kernel.c ------------------------------------------------------ */

struct sym_ksym {
	uint64_t addr;
	const char *name;
	const char *dem;	/* as sym_fsym's */
};

struct sym_kernel {
	bool loaded, restricted;
	const char *module;	/* "[kernel]", interned once loaded */
	size_t n;
	struct sym_ksym *v;
	struct qp_arena *names;
};

/* ---- the symbolizer ----------------------------------------------------- */

struct qp_symbolizer {
	char *kallsyms, *debug_root, *proc_root;	/* set at creation, read-only */
	char *fetched_root;				/* the same; NULL: none */
	bool no_lines;					/* the same */
	void (*want_debug)(void *ctx, const char *bid, const char *path);
	void *want_ctx;
	pthread_mutex_t lock;
	/* the vDSO: the same image in every process of this kernel, parsed
	 * from qprofd's own copy (getauxval(AT_SYSINFO_EHDR)) on first use */
	bool vdso_tried;
	struct symfile *vdso;
	struct qp_htab in;	/* interned strings; value: the demangled form */
	struct symfile *files;
	struct sym_fileid *ids;
	struct qp_sym_process *procs;
	uint64_t tickets;	/* mappings handed in so far (process_set) */
	struct sym_kernel k;	/* read on first use */
	unsigned dwarf_files;	/* DWARF held open (atomic) */
	unsigned dwarf_refused;	/* files past SYM_MAX_DWARF_FILES (atomic) */
	int stopping;		/* atomic: qp_symbolizer_stop was called */
};

/* s->lock held: */
const char *sym_intern_locked(struct qp_symbolizer *s, const char *str);
const char *sym_internf_locked(struct qp_symbolizer *s, const char *fmt, ...) __printf(2, 3);
const char *sym_demangle_locked(struct qp_symbolizer *s, const char *name);
struct symfile *sym_vdso_locked(struct qp_symbolizer *s);
struct sym_fsym *sym_file_lookup(const struct symfile *f, uint64_t off, uint64_t *vaddr);
/* File offset OFF as a link-time address (in a PT_LOAD segment); false: none. */
bool sym_file_vaddr(const struct symfile *f, uint64_t off, uint64_t *vaddr);

/* s->lock NOT held (taken inside for the cache): the parse of the open
 * regular file FD (stat ST), from the cache when the same file or the same
 * build-id was seen. DIRPATH: where to look for a .gnu_debuglink file
 * (NULL: nowhere). NULL only when out of memory. */
struct symfile *sym_file_get(struct qp_symbolizer *s, int fd, const struct stat *st,
			     const char *path, const char *dirpath);
void sym_file_free(struct symfile *f);
/* The parse F stands for now (F, or the newer one a fetched debug file
 * gave). s->lock held. */
static inline struct symfile *sym_file_current(struct symfile *f)
{
	while (f && f->newer)
		f = f->newer;
	return f;
}
struct symfile *sym_file_by_build_id_locked(struct qp_symbolizer *s, const char *bid);
/* Try PATH as the debug file of F (whose own file has stat ORIG): loads its
 * .symtab (WANT_SYMS) and its DWARF when F has none; true when it gave F
 * either. No lock held. */
bool sym_try_debug_file(struct qp_symbolizer *s, struct symfile *f, const struct stat *orig,
			const char *path, bool have_crc, uint32_t crc, bool want_syms);
void sym_procs_free(struct qp_symbolizer *s);
void sym_kernel_free(struct sym_kernel *k);
#endif

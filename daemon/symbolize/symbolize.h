/* symbolize.h - addresses to names, with libelf and libdw: user frames
 * through /proc/PID/maps and the ELF files (.symtab, else .dynsym; separate
 * debug files found by build-id under DEBUG_ROOT/.build-id/xx/rest.debug or
 * by .gnu_debuglink), with the source file:line and the inlined functions
 * from the DWARF of the file or of its debug file; kernel frames through
 * /proc/kallsyms; C++ names demangled. Each file is parsed once and cached by build-id (else path +
 * inode). A process keeps the mappings read while it lived, so it is still
 * symbolized after it exits. A frame that cannot be named is "module+0xoff"
 * and is never dropped. Thread-safe: any function may be called from
 * several threads at once (one lock of its own, never held while a file
 * is read); every string it returns lives as long as the symbolizer. */
#ifndef QPROF_SYMBOLIZE_H
#define QPROF_SYMBOLIZE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qp_symbolizer;
struct qp_sym_process;

struct qp_sym_opts {
	const char *kallsyms;	/* NULL: /proc/kallsyms */
	const char *debug_root;	/* NULL: /usr/lib/debug */
	const char *proc_root;	/* NULL: /proc (tests point it at fixtures) */
	bool no_lines;		/* symbols only: no DWARF read (bench/sym_cost's baseline) */
	/* debug files fetched by build-id (debuginfod.h): looked for under
	 * FETCHED_ROOT/.build-id/ after DEBUG_ROOT; a file with no .symtab, or
	 * no DWARF while lines are read, and found in neither, is asked of
	 * WANT_DEBUG(WANT_CTX, BID, PATH) (called with no lock held; it must
	 * not block). NULL: neither. */
	const char *fetched_root;
	void (*want_debug)(void *ctx, const char *bid, const char *path);
	void *want_ctx;
};

#define QP_SYM_MAX_INLINE 16	/* inlined levels kept per address (the innermost) */

/* A function inlined at an address, and where in it the address is. */
struct qp_sym_inline {
	const char *name;	/* demangled; NULL when DWARF gives none */
	const char *file;	/* source file, NULL when unknown */
	uint32_t line;		/* 0 when unknown */
};

struct qp_sym {
	const char *name;	/* demangled symbol, or "module+0xoff"; owned by the symbolizer */
	const char *module;	/* basename of the file ("[kernel]", "[unknown]", "[anon]") */
	const char *path;	/* full path of the file, NULL for the kernel / anonymous memory */
	const char *build_id;	/* hex, "" when none */
	uint64_t offset;	/* addr - symbol start (0 when unnamed) */
	uint64_t file_off;	/* addr as a file offset in its module (user frames) */
	uint64_t map_start, map_limit, map_offset; /* the mapping that holds addr */
	bool found;		/* a symbol was found (else name is module+0xoff) */
	/* From DWARF (user frames of files with DWARF; else NULL/0): where in
	 * NAME the address is (the call's line when inlined code is there),
	 * and the functions inlined there, inl[0] the innermost. */
	const char *src_file;
	uint32_t src_line;
	bool inl_truncated;	/* more than QP_SYM_MAX_INLINE levels: outer ones left out */
	size_t ninl;
	struct qp_sym_inline inl[QP_SYM_MAX_INLINE];
};

struct qp_symbolizer *qp_symbolizer_new(const struct qp_sym_opts *opts); /* NULL on OOM */
void qp_symbolizer_free(struct qp_symbolizer *s); /* accepts NULL */
/* A read of the kernel's symbols under way (seconds of CPU on a loaded
 * host) gives up and none is started: qprofd is stopping. Accepts NULL. */
void qp_symbolizer_stop(struct qp_symbolizer *s);

/* Read PID's mappings now (call while it lives; again when it maps more).
 * The result is cached in the symbolizer under PID until qp_sym_forget.
 * Executable file ranges of the list it replaces that nothing maps now (a
 * library unloaded since) are kept, up to 256, so that samples taken in
 * them before keep their names; a new mapping over one replaces it. */
int qp_sym_process_refresh(struct qp_symbolizer *s, int pid);
/* The same with mappings the caller read already (the registry's, so
 * /proc/PID/maps is not read twice); MAPS is copied and replaces the list
 * whole (the caller adds the unloaded ranges it keeps). 0 or -errno. */
struct qp_maps;
int qp_sym_process_set_maps(struct qp_symbolizer *s, int pid, const struct qp_maps *maps);
void qp_sym_forget(struct qp_symbolizer *s, int pid);
/* PID's executable as its mappings name it (PROC_ROOT/PID/exe, read with
 * the mappings; " (deleted)" removed), NULL when unknown. */
const char *qp_sym_process_exe(struct qp_symbolizer *s, int pid);

/* Name ADDR of process PID (its cached mappings; refreshed once on a miss
 * while the process lives). Always fills *out; returns 0. */
int qp_sym_user(struct qp_symbolizer *s, int pid, uint64_t addr, struct qp_sym *out);
int qp_sym_kernel(struct qp_symbolizer *s, uint64_t addr, struct qp_sym *out);
/* How many leaf frames of the kernel stack KIPS (NK frames, leaf first) are
 * the tracing machinery that took it (qprofd's program, bpf_trace_runN, the
 * tracepoint's iterator): 0 when none is among the first 6. Off-CPU stacks
 * leave them out. */
size_t qp_sym_kernel_tracing_depth(struct qp_symbolizer *s, const uint64_t *kips, size_t nk);

/* The debug file of build-id BID arrived at PATH (a fetch): the file of
 * that build-id, if parsed already, is parsed again with it (no lock held
 * while it is read) and stands for the old one from then on, so that later
 * lookups name what it names. Names handed out before stay valid. */
void qp_sym_debug_arrived(struct qp_symbolizer *s, const char *bid, const char *path);

/* Demangle NAME when it is a C++ (Itanium) name; otherwise NAME itself.
 * The result is owned by the symbolizer. */
const char *qp_sym_demangle(struct qp_symbolizer *s, const char *name);

/* For /pprof/symbol: name of ADDR in any process qprofd knows (first match),
 * or the kernel. NULL when unknown. */
const char *qp_sym_any(struct qp_symbolizer *s, uint64_t addr);
#endif

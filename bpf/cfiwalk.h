/* cfiwalk.h - the contract between the in-kernel CFI walker (cfiwalk.bpf.h)
 * and qprofd's side of it (daemon/collect/cfi_bpf.c): compiled CFI tables
 * packed into 32-bit words (daemon/collect/cfi_pack.h), one array of them
 * shared by every table, the table of each file (where its words are),
 * each process's executable mappings (which file, at what bias), how a
 * walk ended. Documented in docs/internals/cfi-tables.md. */
#ifndef QPROF_UNWIND_BPF_H
#define QPROF_UNWIND_BPF_H

#define QPROF_CFI_FILES 4096	/* tables loaded at once (file ids) */
#define QPROF_CFI_NOFILE 0xffffffffu	/* a mapping whose file has no table */
#define QPROF_CFI_MAPS 512	/* executable mappings of one process (a power of two) */
#define QPROF_CFI_MAP_STEPS 10	/* log2(QPROF_CFI_MAPS) + 1 */
#define QPROF_CFI_ROW_STEPS 17	/* log2(the rows of one bucket, at most 2^16) + 1 */
#define QPROF_CFI_PROCS 4096	/* processes with mappings (the CPU targets' bound) */
#define QPROF_CFI_BLOCK_WORDS 16	/* words of one cfi_rows element (64 bytes) */
#define QPROF_CFI_BLOCKS_DEFAULT (256u << 10)	/* cfi_rows elements: 16 MiB of kernel memory */
#define QPROF_CFI_WIN 512	/* bytes of stack the walker reads at once (a power of two) */

/* the rule kinds and rbp rules of cfi_table.h, as the walker reads them */
#define QPROF_CFI_K_FALLBACK 0
#define QPROF_CFI_K_NONE 1
#define QPROF_CFI_K_CFA_SP 2
#define QPROF_CFI_K_CFA_BP 3
#define QPROF_CFI_K_PLT 4
#define QPROF_CFI_K_SIGNAL 5
#define QPROF_CFI_K_OUTERMOST 6
/* the kernel's [uprobes-trampoline] page (a table qprofd makes, not a
 * compiled one): the probed nop5's call pushed its return address, then
 * the trampoline up to three registers before its uprobe system call */
#define QPROF_CFI_K_TRAMP 7
#define QPROF_CFI_TRAMP_BYTES 4096	/* the page; its entry at the start */
#define QPROF_CFI_BP_UNDEF 0
#define QPROF_CFI_BP_SAME 1
#define QPROF_CFI_BP_AT 2
#define QPROF_CFI_SIG_RBP 120	/* sigcontext offsets in the ucontext at rsp */
#define QPROF_CFI_SIG_RSP 160
#define QPROF_CFI_SIG_RIP 168

/* cfi_rows holds every table as 32-bit words, in blocks of 16 (an array
 * map rounds each element to 8 bytes: one word an element would cost
 * double). A table is packed (daemon/collect/cfi_pack.h): its span cut
 * into buckets of 2^shift bytes, then
 *   the index   nb + 1 words: the first row at or past each bucket's start;
 *   the rows    one word each, sorted: the row's offset in its bucket (low
 *               16 bits), the number of its rule (high 16 bits);
 *   the rules   one word each: cfa_off (bits 0-15), kind | bp rule << 4
 *               (bits 16-23), bp_off (bits 24-31, signed).
 * A row's rule holds from its address up to the next row's. */
struct cfi_kblock {
	__u32 w[QPROF_CFI_BLOCK_WORDS];
};

/* cfi_files[id]: the packed table of one file in cfi_rows (word offsets);
 * nb 0: none (not loaded, evicted). Row 0 starts at base; the last row is
 * NONE from the end of the last FDE. */
struct cfi_kfile {
	__u64 base;	/* the lowest vaddr the table covers */
	__u32 span;	/* end - base */
	__u32 index;	/* the bucket index's first word */
	__u32 rows;	/* the first row's word */
	__u32 rules;	/* the first rule's word */
	__u32 nb;	/* buckets */
	__u32 nrows;
	__u32 nrules;
	__u8 shift;	/* a bucket is 2^shift bytes (4..16) */
	__u8 pad[3];
	__u32 gen;	/* bumped each time the id is given to another file */
	__u32 pad2;
};

/* One executable mapping of a process: [start, end) holds FILE at BIAS
 * (the vaddr of a byte plus bias is its address). */
struct cfi_kmap {
	__u64 start, end, bias;
	__u32 file;	/* cfi_files index, or QPROF_CFI_NOFILE */
	__u32 pad;
};

/* cfi_procs[tgid]: its mappings, sorted by start, not overlapping. The
 * stamp (the process's mm start_stack and end_code, both read from
 * /proc/PID/stat when the mappings were) tells a process that has exec'd
 * since: its mappings are stale until read again. */
struct cfi_kproc {
	__u64 start_stack, end_code;
	__u32 n;
	__u32 pad;
	struct cfi_kmap map[QPROF_CFI_MAPS];
};

/* How a walk in the kernel ended (cpu_sample.walk). The first three keep
 * the walked stack; the others send the sample down the copy path. */
enum cfi_walk_end {
	QPROF_WALK_NONE = 0,	/* not walked in the kernel (fp, or the copy path asked) */
	QPROF_WALK_COMPLETE,	/* the outermost frame (or an unreadable caller) */
	QPROF_WALK_DEPTH,	/* QPROF_STACK_DEPTH frames */
	QPROF_WALK_LOOP,	/* sp did not rise */
	QPROF_WALK_FALLBACK,	/* a rule the tables do not hold (FALLBACK row) */
	QPROF_WALK_NOCFI,	/* an address no FDE covers (NONE row) */
	QPROF_WALK_NOMAP,	/* a pc in no mapping of the process */
	QPROF_WALK_NOTABLE,	/* a mapping whose file has no table (refused, no room, evicted) */
	QPROF_WALK_NOPROC,	/* the process's mappings are not loaded yet */
	QPROF_WALK_STALE,	/* the process exec'd since its mappings were read */
	QPROF_WALK_BAD,		/* a pc of 0, or no user registers */
	QPROF_WALK__MAX,
};
#define QPROF_WALK_KEPT(e) ((e) >= QPROF_WALK_COMPLETE && (e) <= QPROF_WALK_LOOP)
#endif

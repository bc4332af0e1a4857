/* elf_probes_priv.h - what elf_probes.c (headers, segments, notes) and
 * elf_sites.c (qprof site descriptors and their strings) share: the state of
 * one parse and its checked helpers. Nothing else includes it. */
#ifndef QPROF_ELF_PROBES_PRIV_H
#define QPROF_ELF_PROBES_PRIV_H
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include "elf_probes.h"

/* Only the descriptor layout is wanted, not the markers or their weak
 * semaphores: QPROF_DISABLE leaves just the types and constants. */
#ifndef QPROF_DISABLE
#define QPROF_DISABLE
#endif
#include "qprof/qprof.h"

#define QP_STR_MAX 4096		/* longest site string read, NUL included */
#define QP_SITE_SIZE64 40	/* struct qprof_site on LP64 */
#define QP_SITE_SIZE32 28	/* ... on ILP32 ... */
#define QP_SITE_STRIDE32 32	/* unused: descriptors are found through .qprof_refs */

/* An allocated section with file contents, for vaddr -> bytes lookups. */
struct qp_asec {
	uint64_t addr, size;
	Elf_Scn *scn;
	Elf_Data *data;	/* loaded on first use */
};

struct qp_rel {
	uint64_t offset, addend;
};

/* Everything one parse needs; lives on the stack of qp_elf_probes_open. */
struct qp_ctx {
	struct qp_elf_probes *p;
	char *err;
	size_t errlen;
	int fd;
	uint64_t fsize;
	Elf *elf;
	GElf_Ehdr ehdr;
	bool is64, msb;
	size_t shstrndx;
	struct qp_asec *secs;
	size_t nsecs, cap_secs;
	Elf_Scn **relas;	/* SHT_RELA sections, read only when needed */
	size_t nrelas, cap_relas;
	struct qp_rel *rels;
	size_t nrels;
	bool rels_loaded;
	Elf_Scn *sites_scn;
	bool have_base;
	uint64_t base_addr;	/* address of .stapsdt.base */
	size_t cap_notes;
};

__attribute__((format(printf, 3, 4))) int qp_elf_fail(struct qp_ctx *c, int err, const char *fmt, ...);
int qp_elf_fail_libelf(struct qp_ctx *c, const char *what);
/* Grow *v (of *cap elements of SZ bytes) to hold at least N+1 elements. */
int qp_elf_grow(void **v, size_t *cap, size_t n, size_t sz);
/* An N-byte field in the file's byte order. */
uint64_t qp_elf_rd(const struct qp_ctx *c, const unsigned char *b, size_t n);
/* Every descriptor listed in .qprof_refs, read into c->p->sites. */
int qp_elf_parse_sites(struct qp_ctx *c);
#endif

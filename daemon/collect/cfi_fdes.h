/* cfi_fdes.h - the FDE listing of the CFI table compiler (cfi_fdes.c),
 * shared by cfi_table.c only. */
#ifndef QPROF_CFI_FDES_H
#define QPROF_CFI_FDES_H
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>
#include "cfi_table.h"

struct fde_span {
	uint64_t lo, hi;	/* [lo, hi): the vaddrs one FDE covers */
	uint64_t off;		/* the FDE's offset in its section */
	bool debug;		/* from .debug_frame (else .eh_frame) */
};

/* An address range that .eh_frame_hdr's search table sends to an FDE that
 * was not accepted at that offset (or to no FDE): libdw would run bytes
 * that were never checked there, so those addresses are not asked of it. */
struct hdr_bad {
	uint64_t lo, hi;
};

/* The FDEs of .eh_frame (EH; DATA at vaddr SADDR) or .debug_frame (!EH)
 * whose programs pass the checks, sorted by lo; *N set; refusals counted
 * in ST. NULL with errno: ENOMEM, or EINVAL when none. */
struct fde_span *qp_cfi_list_fdes(Elf *elf, Elf_Data *data, uint64_t saddr, bool eh, size_t *n,
				  struct qp_cfi_stats *st);
/* The FDEs of .debug_frame (DBG, ND of them, sorted) that overlap none of
 * .eh_frame (EH, NE, sorted) appended to EH: one array sorted by lo, *N
 * its length; EH and DBG freed (either may be NULL). NULL with errno. */
/* The ranges of .eh_frame_hdr (HDR at vaddr HADDR) whose table entry does
 * not name an accepted .eh_frame FDE (FDES, N of them, sorted by lo; the
 * section at vaddr SADDR) at that FDE's offset and first address: sorted,
 * malloc'd into *BAD (free it), *NBAD of them. A table libdw would not
 * search (another encoding, a bad version) gives none; an unsorted one, or
 * one cut short, gives the whole address space. 0, or -ENOMEM. */
int qp_cfi_hdr_bad(const Elf_Data *hdr, uint64_t haddr, uint64_t saddr, const struct fde_span *fdes, size_t n,
		   struct hdr_bad **bad, size_t *nbad);
struct fde_span *qp_cfi_merge_fdes(struct fde_span *eh, size_t ne, struct fde_span *dbg, size_t nd, size_t *n);
#endif

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
	bool debug;		/* from .debug_frame (else .eh_frame) */
};

/* The FDEs of .eh_frame (EH; DATA at vaddr SADDR) or .debug_frame (!EH)
 * whose programs pass the checks, sorted by lo; *N set; refusals counted
 * in ST. NULL with errno: ENOMEM, or EINVAL when none. */
struct fde_span *qp_cfi_list_fdes(Elf *elf, Elf_Data *data, uint64_t saddr, bool eh, size_t *n,
				  struct qp_cfi_stats *st);
/* The FDEs of .debug_frame (DBG, ND of them, sorted) that overlap none of
 * .eh_frame (EH, NE, sorted) appended to EH: one array sorted by lo, *N
 * its length; EH and DBG freed (either may be NULL). NULL with errno. */
struct fde_span *qp_cfi_merge_fdes(struct fde_span *eh, size_t ne, struct fde_span *dbg, size_t nd, size_t *n);
#endif

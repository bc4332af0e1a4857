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
};

/* The FDEs of .eh_frame (DATA, at vaddr SADDR) whose programs pass the
 * checks, sorted by lo; *N set; refusals counted in ST. NULL with errno:
 * ENOMEM, or EINVAL when none. */
struct fde_span *qp_cfi_list_fdes(Elf *elf, Elf_Data *data, uint64_t saddr, size_t *n, struct qp_cfi_stats *st);
#endif

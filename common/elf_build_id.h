/* elf_build_id.h - the GNU build-id of an ELF file, as hex: the one parser
 * of build-id notes in the tree (elf_probes.c for attaching, the symbolizer
 * for naming and debug files). */
#ifndef QPROF_ELF_BUILD_ID_H
#define QPROF_ELF_BUILD_ID_H
#include <stdbool.h>
#include <stddef.h>
#include <gelf.h>

/* Is the note NH, whose name starts at NAME, an NT_GNU_BUILD_ID note with
 * a descriptor? */
bool qp_note_is_build_id(const GElf_Nhdr *nh, const char *name);
/* N bytes of DESC as lowercase hex in OUT (OUTLEN bytes, NUL included): a
 * longer id is cut to (OUTLEN - 1) / 2 bytes. */
void qp_build_id_hex(const unsigned char *desc, size_t n, char *out, size_t outlen);
/* The build-id of ELF from its note sections, else from its PT_NOTE
 * segments (a file without section headers). "" and false when none. */
bool qp_elf_build_id(Elf *elf, char *out, size_t outlen);
#endif

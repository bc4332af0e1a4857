/* elf_syms.h - defined functions of an ELF file found by name (.symtab and
 * .dynsym), as the file offsets a uprobe is put at: the heap profiler's
 * allocator entry points. The file is hostile input: libelf bounds every
 * read, and an offset is given only inside an executable load segment. */
#ifndef QPROF_ELF_SYMS_H
#define QPROF_ELF_SYMS_H
#include <stddef.h>
#include <stdint.h>

struct qp_elf_func {
	const char *name;	/* in: the symbol */
	uint64_t offset;	/* out: its file offset, 0 when not defined here */
};

/* Fill F[0..N)'s offsets from the open file FD (read with pread; not
 * closed). Global and weak FUNC symbols only: an undefined reference (the
 * executable's malloc@plt) or a local of the same name is not the
 * function. Returns how many were found, or -errno with err set (not an
 * ELF file, truncated). */
int qp_elf_find_funcs(int fd, struct qp_elf_func *f, size_t n, char *err, size_t errlen);
#endif

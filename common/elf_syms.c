/* elf_syms.c - see elf_syms.h. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include "elf_syms.h"

/* The file offset of link-time address V in an executable PT_LOAD, 0 when
 * no such segment holds it. */
static uint64_t exec_offset(Elf *e, uint64_t v)
{
	size_t i, nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &nph))
		return 0;
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (v >= ph.p_vaddr && v - ph.p_vaddr < ph.p_filesz)
			return v - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

static size_t scan(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct qp_elf_func *f, size_t n)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, j, nsym, found = 0;

	if (!d || !sh->sh_entsize)
		return 0;
	nsym = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < nsym; i++) {
		GElf_Sym s;
		const char *name;
		int bind;

		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
		    s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		bind = GELF_ST_BIND(s.st_info);
		if (bind != STB_GLOBAL && bind != STB_WEAK)
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name)
			continue;
		for (j = 0; j < n; j++) {
			if (f[j].offset || strcmp(name, f[j].name))
				continue;
			f[j].offset = exec_offset(e, s.st_value);
			found += f[j].offset != 0;
		}
	}
	return found;
}

int qp_elf_find_funcs(int fd, struct qp_elf_func *f, size_t n, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t found = 0, j;
	Elf *e;

	for (j = 0; j < n; j++)
		f[j].offset = 0;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(err, errlen, "not an ELF file");
		if (e)
			elf_end(e);
		return -ENOEXEC;
	}
	/* .dynsym first: what the dynamic linker binds; .symtab adds a static
	 * binary's own functions */
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			found += scan(e, scn, &sh, f, n);
	scn = NULL;
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			found += scan(e, scn, &sh, f, n);
	elf_end(e);
	return (int)found;
}

/* fuzz_dwarf.c - libFuzzer target for the symbolizer's DWARF reading
 * (daemon/symbolize/sym_dwarf.c through libdw): compile units and their
 * ranges, line programs, scopes, inlined subroutines, abstract origins,
 * call_file/call_line, names and their demangling. The input is the
 * contents of the .debug_* sections, one after the other, split at the
 * separator "QPDW|"; the harness wraps them in a well-formed ELF in memory,
 * so that the mutations land in the DWARF and not in the ELF around it
 * (fuzz_symbolize covers the ELF). Then it looks up addresses: 0x1000 to
 * 0x1400 by 4 (where the seeds' code lies), and eight taken from the
 * input's last 64 bytes, each twice (the second from the cache). A new
 * sym_dwarf per input, so that a leak shows. Seeds: tests/fuzz/dwarf_seeds.sh
 * cuts the sections out of the fixture programs built -g. */
#define _GNU_SOURCE
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/sym_internal.h"

static const char sep[] = "QPDW|";
static const char *const names[] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str",
	".debug_rnglists", ".debug_ranges", ".debug_aranges", ".debug_addr", ".debug_str_offsets",
	".debug_loclists",
};
#define NSEC (sizeof(names) / sizeof(names[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	elf_version(EV_CURRENT);
	return 0;
}

/* ELF64 little-endian: header, the sections' bytes, .shstrtab, then the
 * section headers (null, NSEC data sections, .shstrtab). */
static unsigned char *wrap(const uint8_t *data, size_t size, size_t *outlen)
{
	const uint8_t *part[NSEC];
	size_t plen[NSEC], i, off, strsz = 1, stroff, shoff, total;
	const uint8_t *p = data, *end = data + size;
	unsigned char *buf;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;

	for (i = 0; i < NSEC; i++) {
		const uint8_t *q = p < end ? memmem(p, (size_t)(end - p), sep, sizeof(sep) - 1) : NULL;

		part[i] = p;
		plen[i] = p < end ? (size_t)((q ? q : end) - p) : 0;
		p = q ? q + sizeof(sep) - 1 : end;
		strsz += strlen(names[i]) + 1;
	}
	strsz += sizeof(".shstrtab");
	off = sizeof(Elf64_Ehdr);
	for (i = 0; i < NSEC; i++)
		off += plen[i];
	stroff = off;
	shoff = (stroff + strsz + 7) & ~(size_t)7;
	total = shoff + (NSEC + 2) * sizeof(Elf64_Shdr);
	buf = calloc(1, total);
	if (!buf)
		return NULL;
	eh = (Elf64_Ehdr *)buf;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shoff = shoff;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = NSEC + 2;
	eh->e_shstrndx = NSEC + 1;
	sh = (Elf64_Shdr *)(buf + shoff);
	off = sizeof(Elf64_Ehdr);
	{
		size_t name_at = 1;

		for (i = 0; i < NSEC; i++) {
			memcpy(buf + off, part[i], plen[i]);
			memcpy(buf + stroff + name_at, names[i], strlen(names[i]) + 1);
			sh[i + 1] = (Elf64_Shdr){ .sh_name = (Elf64_Word)name_at, .sh_type = SHT_PROGBITS,
						  .sh_offset = off, .sh_size = plen[i], .sh_addralign = 1 };
			name_at += strlen(names[i]) + 1;
			off += plen[i];
		}
		memcpy(buf + stroff + name_at, ".shstrtab", sizeof(".shstrtab"));
		sh[NSEC + 1] = (Elf64_Shdr){ .sh_name = (Elf64_Word)name_at, .sh_type = SHT_STRTAB,
					     .sh_offset = stroff, .sh_size = strsz, .sh_addralign = 1 };
	}
	*outlen = total;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_dwarf *d;
	struct sym_src src;
	unsigned char *buf;
	size_t len, i, k;
	uint64_t va;
	Elf *elf;

	buf = wrap(data, size, &len);
	if (!buf)
		return 0;
	elf = elf_memory((char *)buf, len);
	d = elf ? sym_dwarf_from_elf(elf, -1, NULL) : NULL;
	if (!d && elf)
		elf_end(elf);
	for (k = 0; d && k < 2; k++) {
		for (va = 0x1000; va < 0x1400; va += 4) {
			if (sym_dwarf_lookup(d, va, &src) && src.ninl > QP_SYM_MAX_INLINE)
				abort();
		}
		for (i = 0; i < 8 && size >= 64; i++) {
			memcpy(&va, data + size - 64 + 8 * i, sizeof(va));
			sym_dwarf_lookup(d, va, &src);
		}
	}
	sym_dwarf_free(d);
	free(buf);
	return 0;
}

/* elf_build_id.c - see elf_build_id.h. Notes are walked with gelf_getnote,
 * which checks every header, name and descriptor against the data's size:
 * the file is untrusted. */
#include <string.h>
#include "elf_build_id.h"

bool qp_note_is_build_id(const GElf_Nhdr *nh, const char *name)
{
	return nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == sizeof(ELF_NOTE_GNU) &&
	       memcmp(name, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) == 0 && nh->n_descsz > 0;
}

void qp_build_id_hex(const unsigned char *desc, size_t n, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (!outlen)
		return;
	if (n > (outlen - 1) / 2)
		n = (outlen - 1) / 2;
	for (i = 0; i < n; i++) {
		out[2 * i] = hex[desc[i] >> 4];
		out[2 * i + 1] = hex[desc[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool notes_build_id(Elf_Data *d, char *out, size_t outlen)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf)
		return false;
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (qp_note_is_build_id(&nh, (const char *)d->d_buf + name_off)) {
			qp_build_id_hex((const unsigned char *)d->d_buf + desc_off, nh.n_descsz, out, outlen);
			return true;
		}
		off = next;
	}
	return false;
}

bool qp_elf_build_id(Elf *elf, char *out, size_t outlen)
{
	Elf_Scn *scn = NULL;
	size_t i, nph;

	if (!outlen)
		return false;
	out[0] = '\0';
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    notes_build_id(elf_getdata(scn, NULL), out, outlen))
			return true;
	}
	if (elf_getphdrnum(elf, &nph))
		return false;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (notes_build_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR),
				   out, outlen))
			return true;
	}
	return false;
}

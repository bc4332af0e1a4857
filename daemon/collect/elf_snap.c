/* elf_snap.c - see elf_snap.h. The parts are found by libelf on the file
 * read (ELF_C_READ: nothing mapped), then copied with pread into a memfd
 * of the file's size. That Elf is ended before anything asks libelf for the
 * whole file: libelf 0.188 loses the sections it had read before one
 * (elf_rawfile and ELF_C_FDREAD), and libdw asks for it on a file whose CFI
 * is found by program header only. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf_snap.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

#define MAX_RANGES 64
#define MAX_NOTES 8
#define CHUNK (256u << 10)

struct plan {
	struct {
		uint64_t off, len;
	} r[MAX_RANGES];
	unsigned int n;
	uint64_t size;		/* the file's */
	uint64_t bytes;		/* the ranges' */
	bool over;		/* a range did not fit */
};

/* [OFF, OFF+LEN) clipped to the file; past its end there is nothing to copy
 * (libelf refuses what lies past the end) */
static void plan_add(struct plan *p, uint64_t off, uint64_t len)
{
	if (off >= p->size || !len)
		return;
	if (len > p->size - off)
		len = p->size - off;
	if (p->n == MAX_RANGES) {
		p->over = true;
		return;
	}
	p->r[p->n].off = off;
	p->r[p->n++].len = len;
	p->bytes += len;
}

static bool named(const char *name)
{
	return name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".eh_frame_hdr") ||
			!strcmp(name, ".debug_frame"));
}

/* The segments: the notes, PT_GNU_EH_FRAME (and, when EH_FRAME_KNOWN is
 * false, what follows it in its load segment: libdw then reads .eh_frame
 * from the address in .eh_frame_hdr to the end of the file). */
static int plan_segments(Elf *e, struct plan *p, bool eh_frame_known)
{
	size_t i, phnum;
	GElf_Phdr ph, eh = { 0 };
	unsigned int notes = 0;

	if (elf_getphdrnum(e, &phnum))
		return 0;	/* none: the sections are all there is */
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_GNU_EH_FRAME) {
			eh = ph;
			plan_add(p, ph.p_offset, ph.p_filesz);
		} else if (ph.p_type == PT_NOTE && notes++ < MAX_NOTES) {
			plan_add(p, ph.p_offset, ph.p_filesz);
		}
	}
	if (eh_frame_known || eh.p_type != PT_GNU_EH_FRAME)
		return 0;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_LOAD && eh.p_offset >= ph.p_offset &&
		    eh.p_offset - ph.p_offset < ph.p_filesz)
			plan_add(p, eh.p_offset, ph.p_offset + ph.p_filesz - eh.p_offset);
	}
	return 0;
}

static int plan_make(int fd, struct plan *p)
{
	size_t shnum = 0, shstrndx = 0, phnum = 0;
	bool eh_frame = false;
	unsigned int notes = 0;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf *e;
	int ret = 0;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		elf_end(e);
		return -ENOEXEC;
	}
	plan_add(p, 0, gelf_fsize(e, ELF_T_EHDR, 1, EV_CURRENT));
	if (!elf_getphdrnum(e, &phnum))
		plan_add(p, eh.e_phoff, (uint64_t)phnum * gelf_fsize(e, ELF_T_PHDR, 1, EV_CURRENT));
	if (!elf_getshdrnum(e, &shnum) && shnum)
		plan_add(p, eh.e_shoff, (uint64_t)shnum * gelf_fsize(e, ELF_T_SHDR, 1, EV_CURRENT));
	if (shnum && !elf_getshdrstrndx(e, &shstrndx) && shstrndx && gelf_getshdr(elf_getscn(e, shstrndx), &sh))
		plan_add(p, sh.sh_offset, sh.sh_size);
	while (shstrndx && (scn = elf_nextscn(e, scn)) != NULL) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (named(name)) {
			eh_frame |= !strcmp(name, ".eh_frame");
			plan_add(p, sh.sh_offset, sh.sh_size);
		} else if (sh.sh_type == SHT_NOTE && notes++ < MAX_NOTES) {
			plan_add(p, sh.sh_offset, sh.sh_size);
		}
	}
	ret = plan_segments(e, p, eh_frame);
	elf_end(e);
	if (!ret && (p->over || p->bytes > QP_ELF_SNAP_MAX_BYTES))
		ret = -E2BIG;
	return ret;
}

/* SRC's [OFF, OFF+LEN) into DST at the same offset; -EIO when SRC is
 * shorter now than when planned */
static int copy_range(int src, int dst, uint64_t off, uint64_t len, char *buf)
{
	while (len) {
		size_t want = len < CHUNK ? (size_t)len : CHUNK, done = 0;

		while (done < want) {
			ssize_t n = pread(src, buf + done, want - done, (off_t)(off + done));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			done += (size_t)n;
		}
		for (done = 0; done < want;) {
			ssize_t n = pwrite(dst, buf + done, want - done, (off_t)(off + done));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			done += (size_t)n;
		}
		off += want;
		len -= want;
	}
	return 0;
}

static int memfd_new(void)
{
	int fd = memfd_create("qprof-elf", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);

	if (fd < 0 && errno == EINVAL)	/* a kernel before 6.3 */
		fd = memfd_create("qprof-elf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	return fd < 0 ? -errno : fd;
}

int qp_elf_snapshot(int fd, uint64_t *copied)
{
	struct plan p = { 0 };
	struct stat before, after;
	char *buf = NULL;
	unsigned int i;
	int m = -1, ret;

	if (copied)
		*copied = 0;
	if (fstat(fd, &before))
		return -errno;
	if (!S_ISREG(before.st_mode))
		return -ENOEXEC;
	p.size = (uint64_t)before.st_size;
	ret = plan_make(fd, &p);
	if (ret)
		return ret;
	m = memfd_new();
	if (m < 0)
		return m;
	buf = malloc(CHUNK);
	ret = buf ? 0 : -ENOMEM;
	if (!ret && ftruncate(m, (off_t)p.size))
		ret = -errno;
	for (i = 0; !ret && i < p.n; i++)
		ret = copy_range(fd, m, p.r[i].off, p.r[i].len, buf);
	free(buf);
	/* cut or rewritten meanwhile (the size or the time changed): refused */
	if (!ret && (fstat(fd, &after) || after.st_size != before.st_size ||
		     after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
		     after.st_mtim.tv_nsec != before.st_mtim.tv_nsec))
		ret = -EIO;
	/* nobody can shrink it under a mapping of it now, qprofd included */
	if (!ret && fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL))
		ret = -errno;
	if (ret) {
		close(m);
		return ret;
	}
	if (copied)
		*copied = p.bytes;
	return m;
}

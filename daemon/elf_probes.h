/* elf_probes.h - what an ELF file says about its probes, read with libelf:
 * every USDT note (.note.stapsdt, any provider) and every qprof site
 * descriptor (section "qprof_sites", struct qprof_site of qprof.h), plus the
 * load segments needed to turn file offsets into link-time addresses.
 * Used by qprofd (attach, name resolution) and qprof-cli probes. No root. */
#ifndef QPROF_ELF_PROBES_H
#define QPROF_ELF_PROBES_H
#include <stddef.h>
#include <stdint.h>

struct qp_usdt_note {
	char *provider;
	char *name;
	char *args;	/* argument spec, e.g. "8@%rax 8@$0" */
	uint64_t pc;	/* link-time address of the probe site */
	uint64_t base;	/* .stapsdt.base address recorded in the note */
	uint64_t sema;	/* semaphore address, 0 if none */
};

struct qp_site_info {
	uint64_t vaddr;	/* link-time address of the struct qprof_site */
	uint32_t kind;	/* enum qprof_site_kind */
	uint32_t line;
	char *name;	/* never NULL: "?" when unreadable */
	char *file;
	char *function;
};

struct qp_elf_segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;	/* PF_X | PF_W | PF_R */
};

struct qp_elf_probes {
	char *path;
	int e_type;		/* ET_EXEC or ET_DYN */
	char build_id[41];	/* hex, "" when the file has none */
	size_t nnotes;
	struct qp_usdt_note *notes;
	size_t nsites;		/* sorted by vaddr */
	struct qp_site_info *sites;
	size_t nsegs;		/* PT_LOAD segments */
	struct qp_elf_segment *segs;
	size_t nbad_sites;	/* qprof_sites records skipped: bad magic/version */
};

/* Open and parse PATH. 0 on success; -errno on failure with a one-line
 * reason in err (e.g. "not an ELF file", "no such file"). A file without
 * notes or sites is a success with nnotes == nsites == 0.
 * -ENOENT no such file, -EACCES, -EISDIR/-EINVAL not a regular file,
 * -ENOEXEC not an ELF file (or not ET_EXEC/ET_DYN), -EINVAL truncated or
 * corrupt ELF, -ENOMEM. */
int qp_elf_probes_open(const char *path, struct qp_elf_probes **out, char *err, size_t errlen);
void qp_elf_probes_free(struct qp_elf_probes *p); /* accepts NULL */

/* The site whose descriptor starts at VADDR, or NULL. */
const struct qp_site_info *qp_elf_site_at(const struct qp_elf_probes *p, uint64_t vaddr);

/* File offset -> link-time address through the PT_LOAD segments. 0 or -ENOENT. */
int qp_elf_offset_to_vaddr(const struct qp_elf_probes *p, uint64_t off, uint64_t *vaddr);

/* Number of notes whose provider is PROVIDER (NULL: all). */
size_t qp_elf_count_notes(const struct qp_elf_probes *p, const char *provider);

const char *qp_site_kind_name(uint32_t kind); /* "func", "scope", "span_begin", ... */
#endif

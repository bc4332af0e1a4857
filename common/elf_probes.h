/* elf_probes.h - what an ELF file says about its probes, read with libelf:
 * every USDT note (.note.stapsdt, any provider) and every qprof site
 * descriptor (section "qprof_sites", struct qprof_site of qprof.h), plus the
 * load segments needed to turn file offsets into link-time addresses.
 * Used by qprofd (attach, name resolution) and qprof-cli probes. No root. */
#ifndef QPROF_ELF_PROBES_H
#define QPROF_ELF_PROBES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/* The largest file qprofd parses: a bound on the time and memory one
 * request may cost. */
#define QP_ELF_MAX_SIZE (2ULL << 30)

/* What tells one version of a file from another: a rewrite in place keeps
 * dev and inode but changes size, mtime or ctime (and the build-id). */
struct qp_file_id {
	uint64_t dev, ino, size;
	struct timespec mtime, ctime;
};

struct qp_usdt_note {
	char *provider;
	char *name;
	char *args;	/* argument spec, e.g. "8@%rax 8@$0" */
	uint64_t pc;	/* link-time address of the probe site */
	uint64_t base;	/* .stapsdt.base address recorded in the note */
	uint64_t sema;	/* semaphore address, 0 if none */
	const char *bad; /* NULL: the site may be probed; else why not (static text) */
};

struct qp_site_info {
	uint64_t vaddr;	/* link-time address of the struct qprof_site */
	uint32_t kind;	/* enum qprof_site_kind */
	uint32_t line;
	char *name;	/* never NULL: "?" when unreadable */
	char *file;
	char *function;
	char *span;	/* QPROF_KIND_ASYNC_STEP: the span's name; NULL otherwise */
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
	struct qp_file_id id;	/* of the file as it was parsed */
	uint64_t build_id_off;	/* file offset of the build-id bytes (build_id_len of them) */
	uint32_t build_id_len;
	uint64_t probes_addr, probes_size; /* ".probes" (USDT semaphores), size 0 if none */
	size_t nbad_notes;	/* notes whose site or semaphore may not be probed (bad set) */
	size_t nbroken_notes;	/* stapsdt notes that could not be read at all (malformed
				 * descriptor, or a header past the section: the rest of
				 * that section is lost), counted not guessed at */
};

/* Open and parse PATH. 0 on success; -errno on failure with a one-line
 * reason in err (e.g. "not an ELF file", "no such file"). A file without
 * notes or sites is a success with nnotes == nsites == 0.
 * -ENOENT no such file, -EACCES, -EISDIR/-EINVAL not a regular file,
 * -ENOEXEC not an ELF file (or not ET_EXEC/ET_DYN), -EINVAL truncated or
 * corrupt ELF, -ENOMEM. */
int qp_elf_probes_open(const char *path, struct qp_elf_probes **out, char *err, size_t errlen);
void qp_elf_probes_free(struct qp_elf_probes *p); /* accepts NULL */
/* The same on an open file FD (not closed; read with pread only): PATH is
 * only its name. */
int qp_elf_probes_fdopen(int fd, const char *path, struct qp_elf_probes **out, char *err,
			 size_t errlen);

/* elf_file.c. Open PATH for reading only if it is a regular file of at most
 * QP_ELF_MAX_SIZE bytes: looked at through O_PATH first, so a FIFO, a device
 * or a directory is never opened for reading (no block, no side effect).
 * The fd in *fd; -ENOENT, -EACCES, -EISDIR, -EINVAL (not regular), -EFBIG. */
int qp_open_regular(const char *path, int *fd, char *err, size_t errlen);
/* The same without a size limit or messages, for the symbolizer, which
 * opens paths a target's maps and ELF notes name: the fd (O_RDONLY,
 * O_NONBLOCK, O_NOCTTY) and its stat in *st, or -errno (-EINVAL: not a
 * regular file, left unopened). Opening a device has effects of its own (a
 * watchdog arms, a tape rewinds, a tty becomes ours); a path read from
 * /proc/PID/maps is the process's view, which in another mount namespace
 * can name a device here. */
int qp_open_regular_st(const char *path, struct stat *st);
void qp_file_id_of(const struct stat *st, struct qp_file_id *id);
bool qp_file_id_eq(const struct qp_file_id *a, const struct qp_file_id *b);
/* 1 when FD is still the file P was parsed from (same identity and same
 * build-id bytes), 0 when it changed, -errno when it cannot be told. */
int qp_elf_same_file(const struct qp_elf_probes *p, int fd);
/* Check every note against the bytes of the file: its site must be in an
 * executable segment and hold the nop5 0f 1f 44 00 00 (qprof) or a nop
 * (0x90, <sys/sdt.h>; or nop5) for other providers; its semaphore must be
 * 2-byte aligned inside a writable segment's file bytes (and inside .probes
 * when the file has one). Sets note->bad and p->nbad_notes. */
void qp_elf_check_sites(struct qp_elf_probes *p, int fd);

/* The site whose descriptor starts at VADDR, or NULL. */
const struct qp_site_info *qp_elf_site_at(const struct qp_elf_probes *p, uint64_t vaddr);

/* File offset -> link-time address through the PT_LOAD segments. 0 or -ENOENT. */
int qp_elf_offset_to_vaddr(const struct qp_elf_probes *p, uint64_t off, uint64_t *vaddr);

/* Number of notes whose provider is PROVIDER (NULL: all). */
size_t qp_elf_count_notes(const struct qp_elf_probes *p, const char *provider);

const char *qp_site_kind_name(uint32_t kind); /* "func", "scope", "span_begin", ... */
#endif

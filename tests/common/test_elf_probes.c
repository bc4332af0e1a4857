/* test_elf_probes.c - elf_probes on fixture binaries built by the suite
 * (tests/fixtures): exact note counts per probe, every site's name, kind,
 * line, file and function (descriptors are plain statics in .data, found
 * through the unallocated list .qprof_refs, whose exact size is checked;
 * a repeated address is one site), probe pcs that land on the nop of the
 * probe in an executable segment, offset/vaddr conversion, build-ids, the
 * lld layout whose pointers live only in relocations, and the errors for
 * missing, non-ELF, truncated and mutated files (records and .qprof_refs
 * entries; mutations and a seeded byte-flip loop must give errors or "?"
 * strings, never a crash). Fixture paths come as key=path arguments from
 * tests/unit_elf.cmake. */
#define _GNU_SOURCE /* memmem */
#define QPROF_DISABLE
#include <qprof/qprof.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elf_probes.h"
#include "common/util.h"
#include "testlib.h"

struct fixtures {
	const char *pie, *nopie, *lld, *cxx, *lib, *sdt, *notelf, *truncated, *spans, *spans_cxx, *spans_off;
};

struct want_site {
	const char *name;
	uint32_t kind;
	uint32_t line;
	const char *function;
};

/* Lines of the markers in tests/fixtures/fx_markers.c. */
static const struct want_site markers_sites[] = {
	{ "fx_compute", QPROF_KIND_FUNC, 11, "fx_compute" },
	{ "sum", QPROF_KIND_SCOPE, 14, "fx_compute" },
	{ "total", QPROF_KIND_VALUE, 18, "fx_compute" },
	{ "log", QPROF_KIND_LOG, 19, "fx_compute" },
	{ "batch", QPROF_KIND_SPAN_BEGIN, 28, "main" },
	{ "batch", QPROF_KIND_SPAN_END, 30, "main" },
	{ "done", QPROF_KIND_MARK, 31, "main" },
};

/* fx_cxx.cpp: __func__ is the unqualified name in C++. reset() is defined
 * in the class body (inline, COMDAT), next to the ordinary step() and fx_run. */
static const struct want_site cxx_sites[] = {
	{ "reset", QPROF_KIND_FUNC, 17, "reset" },
	{ "reset", QPROF_KIND_MARK, 18, "reset" },
	{ "step", QPROF_KIND_FUNC, 25, "step" },
	{ "stepped", QPROF_KIND_MARK, 27, "step" },
	{ "run", QPROF_KIND_SCOPE, 34, "fx_run" },
};

static const struct want_site lib_sites[] = {
	{ "fx_lib_work", QPROF_KIND_FUNC, 13, "fx_lib_work" },
	{ "lib_tick", QPROF_KIND_MARK, 19, "fx_lib_tick" },
	{ "lib_shared", QPROF_KIND_MARK, 24, "fx_lib_shared" }, /* inlined twice */
	{ "?", QPROF_KIND_MARK, 2, "none" }, /* name runs off its section */
};

static char *read_all(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		exit(2);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		perror(path);
		exit(2);
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void write_all(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		perror(path);
		exit(2);
	}
	close(fd);
}

/* The section header named NAME of a little-endian ELF64 image, or NULL. */
static const Elf64_Shdr *shdr_named(const unsigned char *img, size_t len, const char *name)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sh, *strs;
	size_t i;

	if (len < sizeof(*eh) || eh->e_shoff > len ||
	    (len - eh->e_shoff) / sizeof(*sh) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum)
		return NULL;
	sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	for (i = 0; i < eh->e_shnum; i++)
		if (strs->sh_offset + sh[i].sh_name < len &&
		    !strcmp((const char *)img + strs->sh_offset + sh[i].sh_name, name))
			return &sh[i];
	return NULL;
}

/* The name of the allocated section holding VADDR, or "". */
static const char *section_of(const unsigned char *img, size_t len, uint64_t vaddr)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	const Elf64_Shdr *strs = &sh[eh->e_shstrndx];
	size_t i;

	for (i = 0; i < eh->e_shnum; i++)
		if ((sh[i].sh_flags & SHF_ALLOC) && vaddr >= sh[i].sh_addr &&
		    vaddr - sh[i].sh_addr < sh[i].sh_size)
			return (const char *)img + strs->sh_offset + sh[i].sh_name;
	return "";
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static size_t count_probe(const struct qp_elf_probes *p, const char *provider, const char *name)
{
	size_t i, n = 0;

	for (i = 0; i < p->nnotes; i++)
		if (!strcmp(p->notes[i].provider, provider) && !strcmp(p->notes[i].name, name))
			n++;
	return n;
}

static const struct qp_elf_segment *seg_of(const struct qp_elf_probes *p, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < p->nsegs; i++)
		if (vaddr >= p->segs[i].vaddr && vaddr - p->segs[i].vaddr < p->segs[i].memsz)
			return &p->segs[i];
	return NULL;
}

static struct qp_elf_probes *open_ok(const char *path)
{
	struct qp_elf_probes *p = NULL;
	char err[256];
	int ret = qp_elf_probes_open(path, &p, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "%s: %s (%d)\n", path, err, ret);
		CHECK_INT(ret, 0);
		exit(test_done("test_elf_probes"));
	}
	CHECK_STR(p->path, path);
	return p;
}

static void check_build_id(const struct qp_elf_probes *p)
{
	size_t i;

	CHECK_INT(strlen(p->build_id), 40);
	for (i = 0; i < strlen(p->build_id); i++)
		CHECK(strchr("0123456789abcdef", p->build_id[i]) != NULL);
}

/* Each site in WANT exactly once, with the fixture's file; sorted and found
 * again by address. NREFS: the exact number of .qprof_refs entries of the
 * file (addresses of inlined copies repeat). */
static void check_sites(const struct qp_elf_probes *p, const struct want_site *want, size_t n,
			const char *file_suffix, size_t nrefs)
{
	size_t i, j, hits, len;
	unsigned char *img = (unsigned char *)read_all(p->path, &len);
	const Elf64_Shdr *refs = shdr_named(img, len, ".qprof_refs");

	/* The list of descriptor addresses is in the file only: not loaded. */
	CHECK(refs != NULL);
	if (refs) {
		CHECK_INT(refs->sh_type, SHT_PROGBITS);
		CHECK_INT(refs->sh_flags & SHF_ALLOC, 0);
		CHECK_INT(refs->sh_addr, 0);
		CHECK_INT(refs->sh_size, nrefs * 8);
	}

	CHECK_INT(p->nsites, n);
	for (i = 1; i < p->nsites; i++)
		CHECK(p->sites[i - 1].vaddr < p->sites[i].vaddr);
	for (i = 0; i < n; i++) {
		hits = 0;
		for (j = 0; j < p->nsites; j++) {
			const struct qp_site_info *s = &p->sites[j];

			if (strcmp(s->name, want[i].name) || s->kind != want[i].kind)
				continue;
			hits++;
			CHECK_INT(s->line, want[i].line);
			CHECK_STR(s->function, want[i].function);
			if (!ends_with(s->file, file_suffix))
				fprintf(stderr, "site %s: file %s does not end with %s\n", s->name,
					s->file, file_suffix);
			CHECK(ends_with(s->file, file_suffix));
			CHECK(qp_elf_site_at(p, s->vaddr) == s);
			CHECK(qp_elf_site_at(p, s->vaddr + 1) == NULL);
			/* Descriptors are 8-byte aligned plain statics: ordinary
			 * writable data, no section of their own. */
			CHECK_INT(s->vaddr % 8, 0);
			CHECK(seg_of(p, s->vaddr) && (seg_of(p, s->vaddr)->flags & PF_W));
			if (strcmp(section_of(img, len, s->vaddr), ".data") &&
			    strncmp(section_of(img, len, s->vaddr), ".data.rel.local", 15)) {
				fprintf(stderr, "site %s: in section '%s'\n", s->name,
					section_of(img, len, s->vaddr));
				CHECK(!"site descriptor outside .data");
			}
		}
		if (hits != 1)
			fprintf(stderr, "site %s/%s: %zu hits\n", want[i].name,
				qp_site_kind_name(want[i].kind), hits);
		CHECK_INT(hits, 1);
	}
	free(img);
}

/* Every note of PROVIDER has its pc in an executable PT_LOAD segment, and
 * the file holds the probe's nop there (found back through the segment):
 * this checks pc, the segments and the offset -> vaddr direction at once. */
static void check_pcs(const struct qp_elf_probes *p, const char *path, const char *provider,
		      const unsigned char *nop, size_t noplen)
{
	size_t len, i, checked = 0;
	char *file = read_all(path, &len);

	for (i = 0; i < p->nnotes; i++) {
		const struct qp_usdt_note *n = &p->notes[i];
		const struct qp_elf_segment *s;
		uint64_t off, back = 0;

		if (strcmp(n->provider, provider))
			continue;
		s = seg_of(p, n->pc);
		CHECK(s != NULL);
		if (!s)
			continue;
		CHECK(s->flags & PF_X);
		CHECK(n->base != 0);
		/* every qprof probe's arg 1 is 8 bytes; ring_config has none
		 * (its nop is never probed: the note says where the ring size is) */
		if (!strcmp(provider, "qprof") && strcmp(n->name, "ring_config"))
			CHECK(!strncmp(n->args, "8@", 2));
		off = s->offset + (n->pc - s->vaddr);
		CHECK(off + noplen <= len);
		if (off + noplen > len)
			continue;
		CHECK(memcmp(file + off, nop, noplen) == 0);
		CHECK_INT(qp_elf_offset_to_vaddr(p, off, &back), 0);
		CHECK_INT(back, n->pc);
		checked++;
	}
	CHECK_INT(checked, qp_elf_count_notes(p, provider));
	free(file);
}

static const unsigned char nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* The marker fixture, whichever way it was linked. */
static void check_markers(const char *path, int e_type)
{
	struct qp_elf_probes *p;
	uint64_t v = 0;
	size_t i;

	if (!path || !*path)
		return;
	p = open_ok(path);
	CHECK_INT(p->e_type, e_type);
	check_build_id(p);
	CHECK_INT(p->nnotes, 11);
	CHECK_INT(qp_elf_count_notes(p, NULL), 11);
	CHECK_INT(qp_elf_count_notes(p, "qprof"), 11);
	CHECK_INT(qp_elf_count_notes(p, "fxprov"), 0);
	CHECK_INT(count_probe(p, "qprof", "scope_enter"), 3);
	CHECK_INT(count_probe(p, "qprof", "scope_exit"), 3);
	CHECK_INT(count_probe(p, "qprof", "value"), 1);
	CHECK_INT(count_probe(p, "qprof", "log"), 1);
	CHECK_INT(count_probe(p, "qprof", "mark"), 1);
	CHECK_INT(count_probe(p, "qprof", "ring_register"), 1); /* ABI 2: one per unit */
	CHECK_INT(count_probe(p, "qprof", "ring_config"), 1);
	/* Only value, log and ring_register are guarded by a semaphore, which
	 * is writable; ring_config's "semaphore" is the ring size qprofd may
	 * write, writable too. */
	for (i = 0; i < p->nnotes; i++) {
		const struct qp_usdt_note *n = &p->notes[i];
		bool guarded = !strcmp(n->name, "value") || !strcmp(n->name, "log") ||
			       !strcmp(n->name, "ring_register") || !strcmp(n->name, "ring_config");

		CHECK_INT(n->sema != 0, guarded);
		if (guarded)
			CHECK(seg_of(p, n->sema) && (seg_of(p, n->sema)->flags & PF_W));
	}
	check_pcs(p, path, "qprof", nop5, sizeof(nop5));
	/* One reference per probe but the two block-scope exits. */
	check_sites(p, markers_sites, QP_ARRAY_SIZE(markers_sites), "fixtures/fx_markers.c", 7);
	CHECK_INT(p->nbad_sites, 0);

	/* Offset 0 is the first byte of the first PT_LOAD. */
	CHECK(p->nsegs >= 2);
	CHECK_INT(qp_elf_offset_to_vaddr(p, 0, &v), 0);
	CHECK_INT(v, e_type == ET_EXEC ? 0x400000 : 0);
	for (i = 0; i < p->nsegs; i++) {
		const struct qp_elf_segment *s = &p->segs[i];

		if (s->filesz < 2)
			continue;
		CHECK_INT(qp_elf_offset_to_vaddr(p, s->offset + s->filesz - 1, &v), 0);
		CHECK_INT(v, s->vaddr + s->filesz - 1);
	}
	CHECK_INT(qp_elf_offset_to_vaddr(p, 1ull << 40, &v), -ENOENT);
	qp_elf_probes_free(p);
}

/* fx_spans.c (as C and as C++): three notes of three arguments each, the
 * step's descriptor followed by its span's name. */
static const struct want_site spans_sites[] = {
	{ "order_rt", QPROF_KIND_ASYNC_BEGIN, 14, "main" },
	{ "acked", QPROF_KIND_ASYNC_STEP, 15, "main" },
	{ "order_rt", QPROF_KIND_ASYNC_END, 16, "main" },
};

static void check_spans(const char *path)
{
	struct qp_elf_probes *p = open_ok(path);
	size_t i;

	/* the three markers, the ring's announcement (they write the ring) and
	 * its size note */
	CHECK_INT(p->nnotes, 5);
	CHECK_INT(count_probe(p, "qprof", "ring_config"), 1);
	CHECK_INT(count_probe(p, "qprof", "span_begin"), 1);
	CHECK_INT(count_probe(p, "qprof", "span_step"), 1);
	CHECK_INT(count_probe(p, "qprof", "span_end"), 1);
	CHECK_INT(count_probe(p, "qprof", "ring_register"), 1);
	for (i = 0; i < p->nnotes; i++) {
		const char *a = p->notes[i].args;

		if (!strcmp(p->notes[i].name, "ring_register")) {
			/* the third argument says the spans write the ring */
			CHECK(strstr(a, " 4@$2") != NULL);
			continue;
		}
		if (!strcmp(p->notes[i].name, "ring_config")) {
			CHECK_STR(a, "");
			continue;
		}
		/* three 8-byte arguments: descriptor, id, name (read from the
		 * descriptor: no instruction computes it) */
		CHECK(!strncmp(a, "8@", 2) && strstr(a, " 8@") && strstr(strstr(a, " 8@") + 1, " 8@"));
		CHECK(strstr(a, " 8@16(%") != NULL || strstr(a, " 8@40(%") != NULL);
	}
	check_pcs(p, path, "qprof", nop5, sizeof(nop5));
	check_sites(p, spans_sites, QP_ARRAY_SIZE(spans_sites), "fixtures/fx_spans.c", 3);
	for (i = 0; i < p->nsites; i++) {
		const struct qp_site_info *s = &p->sites[i];

		if (s->kind == QPROF_KIND_ASYNC_STEP)
			CHECK_STR(s->span, "order_rt");
		else
			CHECK(s->span == NULL);
	}
	CHECK_INT(p->nbad_sites, 0);
	qp_elf_probes_free(p);
}

/* fx_spans.c built with -DQPROF_DISABLE: nothing left of the markers. */
static void check_spans_off(const char *path)
{
	struct qp_elf_probes *p = open_ok(path);

	CHECK_INT(p->nnotes, 0);
	CHECK_INT(p->nsites, 0);
	qp_elf_probes_free(p);
}

static void check_cxx(const char *path)
{
	struct qp_elf_probes *p = open_ok(path);

	CHECK_INT(p->e_type, ET_DYN);
	check_build_id(p);
	CHECK_INT(p->nnotes, 10);
	CHECK_INT(count_probe(p, "qprof", "ring_register"), 1);
	CHECK_INT(count_probe(p, "qprof", "ring_config"), 1);
	CHECK_INT(count_probe(p, "qprof", "scope_enter"), 3);
	CHECK_INT(count_probe(p, "qprof", "scope_exit"), 3);
	CHECK_INT(count_probe(p, "qprof", "mark"), 2);
	check_pcs(p, path, "qprof", nop5, sizeof(nop5));
	check_sites(p, cxx_sites, QP_ARRAY_SIZE(cxx_sites), "fixtures/fx_cxx.cpp", 5);
	CHECK_INT(p->nbad_sites, 0);
	qp_elf_probes_free(p);
}

static void check_lib(const char *path)
{
	struct qp_elf_probes *p = open_ok(path);

	CHECK_INT(p->e_type, ET_DYN);
	check_build_id(p);
	CHECK_INT(p->nnotes, 7);
	CHECK_INT(count_probe(p, "qprof", "ring_register"), 1);
	CHECK_INT(count_probe(p, "qprof", "ring_config"), 1);
	CHECK_INT(count_probe(p, "qprof", "scope_enter"), 1);
	CHECK_INT(count_probe(p, "qprof", "scope_exit"), 1);
	CHECK_INT(count_probe(p, "qprof", "mark"), 3); /* lib_shared twice */
	check_pcs(p, path, "qprof", nop5, sizeof(nop5));
	/* 4 from the markers (lib_shared twice), 3 by hand (fx_bogus twice). */
	check_sites(p, lib_sites, QP_ARRAY_SIZE(lib_sites), "fixtures/fx_sitelib.c", 7);
	CHECK_INT(p->nbad_sites, 1); /* fx_bogus, counted once */
	qp_elf_probes_free(p);
}

static void check_sdt(const char *path)
{
	static const unsigned char nop1[] = { 0x90 }; /* <sys/sdt.h> emits "nop" */
	struct qp_elf_probes *p = open_ok(path);

	CHECK_INT(p->nnotes, 4);
	CHECK_INT(qp_elf_count_notes(p, "fxprov"), 4);
	CHECK_INT(qp_elf_count_notes(p, "qprof"), 0);
	CHECK_INT(count_probe(p, "fxprov", "start"), 1);
	CHECK_INT(count_probe(p, "fxprov", "tick"), 2);
	CHECK_INT(count_probe(p, "fxprov", "stop"), 1);
	CHECK_INT(p->nsites, 0);
	CHECK_INT(p->nbad_sites, 0);
	check_pcs(p, path, "fxprov", nop1, sizeof(nop1));
	qp_elf_probes_free(p);
}

static int open_err(const char *path, char *err, size_t errlen)
{
	struct qp_elf_probes *p = (struct qp_elf_probes *)&p; /* must be reset */
	int ret = qp_elf_probes_open(path, &p, err, errlen);

	CHECK(p == NULL || ret == 0);
	if (!ret)
		qp_elf_probes_free(p);
	return ret;
}

static void check_errors(const struct fixtures *fx, const char *dir)
{
	char err[256], path[512];

	CHECK_INT(open_err("/nonexistent/qprof/binary", err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "no such file");
	CHECK_INT(open_err(fx->notelf, err, sizeof(err)), -ENOEXEC);
	CHECK_STR(err, "not an ELF file");
	CHECK_INT(open_err(fx->truncated, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "truncated") != NULL);
	CHECK_INT(open_err(dir, err, sizeof(err)), -EISDIR);
	CHECK_INT(open_err("", err, sizeof(err)), -EINVAL);
	/* A NULL or tiny error buffer is fine. */
	CHECK_INT(open_err(fx->notelf, NULL, 0), -ENOEXEC);
	CHECK_INT(open_err(fx->notelf, err, 4), -ENOEXEC);
	CHECK_STR(err, "not");

	snprintf(path, sizeof(path), "%s/empty", dir);
	write_all(path, "", 0);
	CHECK_INT(open_err(path, err, sizeof(err)), -ENOEXEC);
	CHECK_STR(err, "not an ELF file");
	snprintf(path, sizeof(path), "%s/magic_only", dir);
	write_all(path, "\177ELF\002\001", 6);
	CHECK_INT(open_err(path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "truncated") != NULL);
	/* A relocatable object is ELF but has no load addresses. */
	{
		size_t len;
		char *img = read_all(fx->pie, &len);

		img[16] = ET_REL;
		snprintf(path, sizeof(path), "%s/rel", dir);
		write_all(path, img, len);
		CHECK_INT(open_err(path, err, sizeof(err)), -ENOEXEC);
		free(img);
	}
}

static unsigned char *find_bytes(unsigned char *hay, size_t len, const void *needle, size_t n)
{
	return memmem(hay, len, needle, n);
}

static void put_u64(unsigned char *b, uint64_t v)
{
	memcpy(b, &v, 8); /* the fixtures are little-endian x86-64 */
}

/* Targeted damage to a copy of the PIE fixture. */
static void check_mutations(const char *pie, const char *dir)
{
	static const unsigned char rec_magic[] = { 0x51, 0x50, 0x52, 0x46, 0x02, 0x00 };
	struct qp_elf_probes *p;
	char err[256], path[512];
	unsigned char *img, *rec, *rec2, *note;
	const Elf64_Shdr *refs;
	uint64_t rec_vaddr = 0;
	Elf64_Ehdr eh;
	size_t len;

	snprintf(path, sizeof(path), "%s/mut", dir);
	img = (unsigned char *)read_all(pie, &len);
	memcpy(&eh, img, sizeof(eh));

	/* Section header table past the end of the file. */
	((Elf64_Ehdr *)img)->e_shoff = len + 100;
	write_all(path, img, len);
	CHECK_INT(open_err(path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "truncated") != NULL);
	((Elf64_Ehdr *)img)->e_shoff = UINT64_MAX - 10; /* wraps when added */
	write_all(path, img, len);
	CHECK_INT(open_err(path, err, sizeof(err)), -EINVAL);
	((Elf64_Ehdr *)img)->e_shoff = eh.e_shoff;
	((Elf64_Ehdr *)img)->e_shnum = 0xfff0;
	write_all(path, img, len);
	CHECK_INT(open_err(path, err, sizeof(err)), -EINVAL);
	((Elf64_Ehdr *)img)->e_shnum = eh.e_shnum;
	((Elf64_Ehdr *)img)->e_phnum = 0xfff0;
	write_all(path, img, len);
	CHECK_INT(open_err(path, err, sizeof(err)), -EINVAL);
	((Elf64_Ehdr *)img)->e_phnum = eh.e_phnum;

	/* The first site record in the file (a descriptor of the markers, in
	 * .data) and its link-time address, which .qprof_refs lists. */
	rec = find_bytes(img, len, rec_magic, sizeof(rec_magic));
	CHECK(rec != NULL);
	if (!rec)
		goto out;
	rec2 = find_bytes(rec + 1, len - (size_t)(rec + 1 - img), rec_magic, sizeof(rec_magic));
	CHECK(rec2 != NULL);
	if (!rec2)
		goto out;
	CHECK_INT(qp_elf_probes_open(pie, &p, err, sizeof(err)), 0);
	CHECK_INT(qp_elf_offset_to_vaddr(p, (uint64_t)(rec - img), &rec_vaddr), 0);
	CHECK(qp_elf_site_at(p, rec_vaddr) != NULL);
	qp_elf_probes_free(p);

	/* .qprof_refs: an address in no section is a bad site; an address
	 * listed twice (as inlined copies of a marker do) is one site. */
	refs = shdr_named(img, len, ".qprof_refs");
	CHECK(refs && refs->sh_size == 7 * 8 && refs->sh_offset + refs->sh_size <= len);
	if (refs && refs->sh_size == 7 * 8 && refs->sh_offset + refs->sh_size <= len) {
		unsigned char *r = img + refs->sh_offset, save[16];

		memcpy(save, r, 16);
		put_u64(r, 0x7fffffff0000ull);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK_INT(p->nsites, 6);
		CHECK_INT(p->nbad_sites, 1);
		qp_elf_probes_free(p);
		memcpy(r, r + 8, 8);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK_INT(p->nsites, 6);
		CHECK_INT(p->nbad_sites, 0);
		qp_elf_probes_free(p);
		/* Pointing into the middle of a descriptor: its bytes are not
		 * a record. */
		put_u64(r, rec_vaddr + 8);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK_INT(p->nbad_sites, 1);
		qp_elf_probes_free(p);
		memcpy(r, save, 16);
	}

	/* Zeroed pointers are found again through the R_X86_64_RELATIVE
	 * relocations GNU ld also emits for a PIE. */
	{
		unsigned char save[24];
		const struct qp_site_info *s;

		memcpy(save, rec + 16, 24);
		memset(rec + 16, 0, 24);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK_INT(p->nsites, 7);
		s = qp_elf_site_at(p, rec_vaddr);
		CHECK(s && strcmp(s->name, "?") && strcmp(s->file, "?") && strcmp(s->function, "?"));
		qp_elf_probes_free(p);

		/* Pointers to nowhere give "?". */
		put_u64(rec + 16, 0x7fffffff0000ull);
		put_u64(rec + 24, UINT64_MAX - 3);
		put_u64(rec + 32, UINT64_MAX);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK_INT(p->nsites, 7);
		s = qp_elf_site_at(p, rec_vaddr);
		CHECK(s && !strcmp(s->name, "?") && !strcmp(s->file, "?") && !strcmp(s->function, "?"));
		qp_elf_probes_free(p);

		/* Address 1 is in no section but in the first PT_LOAD of the
		 * PIE (the ELF header): read through the segment. */
		put_u64(rec + 16, 1);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		s = qp_elf_site_at(p, rec_vaddr);
		CHECK(s && !strncmp(s->name, "ELF", 3));
		qp_elf_probes_free(p);
		memcpy(rec + 16, save, 24);

		/* A wrong magic and a future version are skipped and counted. */
		rec[0] ^= 0xff;
		rec2[4] = 3;
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK_INT(p->nsites, 5);
		CHECK_INT(p->nbad_sites, 2);
		CHECK(qp_elf_site_at(p, rec_vaddr) == NULL);
		qp_elf_probes_free(p);
		rec[0] ^= 0xff;
		rec2[4] = 1;
	}

	/* A note whose descriptor size runs past its section: that note and
	 * the rest are dropped, the file still opens. */
	note = find_bytes(img, len, "stapsdt", 8);
	CHECK(note != NULL && note - img >= 12);
	if (note && note - img >= 12) {
		uint32_t huge = 0xfffffff0, save;

		/* intact: nothing unreadable */
		CHECK_INT(qp_elf_probes_open(pie, &p, err, sizeof(err)), 0);
		CHECK_INT(p->nbroken_notes, 0);
		qp_elf_probes_free(p);
		memcpy(&save, note - 8, 4);
		memcpy(note - 8, &huge, 4);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK(p->nnotes < 9);
		CHECK_INT(p->nsites, 7);
		/* counted, not silently dropped (a plugin so damaged is refused) */
		CHECK_INT(p->nbroken_notes, 1);
		qp_elf_probes_free(p);
		/* a descriptor too short for its three addresses and strings */
		huge = 20;
		memcpy(note - 8, &huge, 4);
		write_all(path, img, len);
		CHECK_INT(qp_elf_probes_open(path, &p, err, sizeof(err)), 0);
		CHECK(p->nbroken_notes >= 1);
		qp_elf_probes_free(p);
		memcpy(note - 8, &save, 4);
	}
out:
	free(img);
}

/* Seeded byte flips, half of them in the headers: whatever comes out must
 * be a clean success or a clean error with a message. */
static void check_fuzz(const char *pie, const char *dir)
{
	unsigned int seed = 12345;
	char err[256], path[512];
	unsigned char *orig, *img;
	size_t len, i, ok = 0, bad = 0;
	uint64_t shoff;
	int it, k;

	snprintf(path, sizeof(path), "%s/fuzz", dir);
	orig = (unsigned char *)read_all(pie, &len);
	img = malloc(len);
	memcpy(&shoff, orig + offsetof(Elf64_Ehdr, e_shoff), sizeof(shoff));
	for (it = 0; it < 3000; it++) {
		struct qp_elf_probes *p = NULL;
		int ret;

		memcpy(img, orig, len);
		for (k = 0; k < 1 + it % 8; k++) {
			size_t lo = 0, span = len;

			if (k % 3 == 0) {		/* ELF and program headers, notes */
				span = len < 4096 ? len : 4096;
			} else if (k % 3 == 1 && shoff < len) {	/* section headers */
				lo = shoff;
				span = len - shoff;
			}
			i = lo + (size_t)rand_r(&seed) % span;
			img[i] = (unsigned char)rand_r(&seed);
		}
		write_all(path, img, len);
		ret = qp_elf_probes_open(path, &p, err, sizeof(err));
		if (ret) {
			bad++;
			CHECK(p == NULL && err[0] != '\0');
		} else {
			ok++;
			for (i = 0; i < p->nsites; i++)
				CHECK(p->sites[i].name && p->sites[i].file && p->sites[i].function);
			qp_elf_probes_free(p);
		}
	}
	printf("fuzz: %zu opened, %zu rejected\n", ok, bad);
	CHECK_INT(ok + bad, 3000);
	free(img);
	free(orig);
}

static void check_kind_names(void)
{
	CHECK_STR(qp_site_kind_name(QPROF_KIND_FUNC), "func");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_SCOPE), "scope");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_SPAN_BEGIN), "span_begin");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_SPAN_END), "span_end");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_VALUE), "value");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_LOG), "log");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_MARK), "mark");
	CHECK_STR(qp_site_kind_name(0), "unknown");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_ASYNC_BEGIN), "async_begin");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_ASYNC_STEP), "async_step");
	CHECK_STR(qp_site_kind_name(QPROF_KIND_ASYNC_END), "async_end");
	CHECK_STR(qp_site_kind_name(11), "unknown");
	CHECK(qp_elf_site_at(NULL, 0) == NULL);
	CHECK_INT(qp_elf_count_notes(NULL, NULL), 0);
	qp_elf_probes_free(NULL);
}

int main(int argc, char **argv)
{
	struct fixtures fx = { 0 };
	char dir[] = "/tmp/qprof-test-elf-XXXXXX";
	char cmd[600];
	int i;

	for (i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		const char **slot = NULL;

		if (!eq)
			continue;
		*eq = '\0';
#define SLOT(k) else if (!strcmp(argv[i], #k)) slot = &fx.k
		if (0)
			;
		SLOT(pie); SLOT(nopie); SLOT(lld); SLOT(cxx); SLOT(lib); SLOT(sdt);
		SLOT(notelf); SLOT(truncated); SLOT(spans); SLOT(spans_cxx); SLOT(spans_off);
#undef SLOT
		if (slot)
			*slot = eq + 1;
	}
	if (!fx.pie || !fx.nopie || !fx.cxx || !fx.lib || !fx.sdt || !fx.notelf || !fx.truncated ||
	    !fx.spans || !fx.spans_cxx || !fx.spans_off) {
		fprintf(stderr, "usage: %s pie=F nopie=F [lld=F] cxx=F lib=F sdt=F notelf=F truncated=F "
			"spans=F spans_cxx=F spans_off=F\n",
			argv[0]);
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}

	check_kind_names();
	check_markers(fx.pie, ET_DYN);
	check_markers(fx.nopie, ET_EXEC);
	if (fx.lld && *fx.lld)
		check_markers(fx.lld, ET_DYN);
	else
		printf("no lld fixture: relocation-only layout not tested\n");
	check_cxx(fx.cxx);
	check_spans(fx.spans);
	check_spans(fx.spans_cxx);
	check_spans_off(fx.spans_off);
	check_lib(fx.lib);
	check_sdt(fx.sdt);
	check_errors(&fx, dir);
	check_mutations(fx.pie, dir);
	check_fuzz(fx.pie, dir);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done("test_elf_probes");
}

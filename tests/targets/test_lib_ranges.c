/* test_lib_ranges.c - daemon/targets/lib_ranges.c on a real library (the
 * fx_sitelib fixture) mapped in hand-made /proc/PID/maps snapshots: whole
 * (one mapping per PT_LOAD, as ld.so maps it), caught during a dlclose (only
 * its first two mappings left, as a snapshot of integration_dlopen_cycles'
 * rapid phase caught it), and caught during a dlopen (the first mmap spans
 * the library from file offset 0). What an unloaded library keeps must name
 * its sites, whose descriptors are in its data segment: taken from the
 * snapshot of the dlclose, as it was before, it does not hold them.
 * usage: test_lib_ranges lib=PATH */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/elf_probes.h"
#include "targets/lib_ranges.h"
#include "common/procfs.h"
#include "testlib.h"

#define INO 4242
#define LIB "/opt/strategies/s3.so"

static uint64_t pg;

static uint64_t down(uint64_t x)
{
	return x & ~(pg - 1);
}

static uint64_t up(uint64_t x)
{
	return (x + pg - 1) & ~(pg - 1);
}

/* Maps text of ELF loaded at BASE: a libc before it, an anonymous mapping
 * and the stack after it. WHICH: 0 whole, 1 during its dlclose (its first
 * two mappings left), 2 during its dlopen (one mapping from offset 0). */
static int snapshot(const struct qp_elf_probes *elf, uint64_t base, int which, struct qp_maps *out)
{
	char text[4096];
	size_t n = 0, k;
	int kept = 0;

	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "7f0000000000-7f0000028000 r-xp 00000000 fd:01 77 /usr/lib/libc.so.6\n");
	if (which == 2) {
		const struct qp_elf_segment *l = &elf->segs[elf->nsegs - 1];

		n += (size_t)snprintf(text + n, sizeof(text) - n, "%llx-%llx r--p 00000000 fd:01 %d %s\n",
				      (unsigned long long)(base + down(elf->segs[0].vaddr)),
				      (unsigned long long)(base + up(l->vaddr + l->memsz)), INO, LIB);
	}
	for (k = 0; which != 2 && k < elf->nsegs; k++) {
		const struct qp_elf_segment *s = &elf->segs[k];

		if (!s->filesz || (which == 1 && kept == 2))
			continue;
		kept++;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%llx-%llx %c%c%cp %08llx fd:01 %d %s\n",
				      (unsigned long long)(base + down(s->vaddr)),
				      (unsigned long long)(base + up(s->vaddr + s->filesz)),
				      s->flags & 4 ? 'r' : '-', s->flags & 2 ? 'w' : '-', s->flags & 1 ? 'x' : '-',
				      (unsigned long long)down(s->offset), INO, LIB);
	}
	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "7f7000000000-7f7000021000 rw-p 00000000 00:00 0\n"
			      "7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0 [stack]\n");
	return qp_maps_parse(text, n, out);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 && !strncmp(argv[1], "lib=", 4) ? argv[1] + 4 : NULL;
	uint64_t base = 0x7f1000000000ull, moved = 0x7f2000000000ull, site, bias = 0;
	struct qp_maps whole_snap = { 0 }, closing = { 0 }, opening = { 0 }, elsewhere = { 0 };
	struct qp_maps whole = { 0 }, gone = { 0 }, old_way = { 0 };
	struct qp_elf_probes *elf = NULL;
	char err[256];
	size_t k, nlib = 0;

	pg = (uint64_t)sysconf(_SC_PAGESIZE);
	if (!path || qp_elf_probes_open(path, &elf, err, sizeof(err))) {
		fprintf(stderr, "usage: test_lib_ranges lib=PATH (%s)\n", path ? err : "no path");
		return 2;
	}
	CHECK(elf->nsites > 0 && elf->nsegs >= 2);
	if (!elf->nsites || elf->nsegs < 2)
		return test_done("test_lib_ranges");
	site = base + elf->sites[0].vaddr;	/* a site is its descriptor's address */
	for (k = 0; k < elf->nsegs; k++)
		nlib += elf->segs[k].filesz ? 1 : 0;	/* its mappings when whole */
	CHECK_INT(snapshot(elf, base, 0, &whole_snap), 0);
	CHECK_INT(snapshot(elf, base, 1, &closing), 0);
	CHECK_INT(snapshot(elf, base, 2, &opening), 0);
	CHECK_INT(snapshot(elf, moved, 1, &elsewhere), 0);

	/* the whole library, at its load bias; the other snapshots are not */
	CHECK_INT(qp_lib_whole(elf, &whole_snap, INO, LIB, &bias), 0);
	CHECK(bias == base);
	CHECK_INT(qp_lib_whole(elf, &closing, INO, LIB, NULL), -ENOENT);
	CHECK_INT(qp_lib_whole(elf, &opening, INO, LIB, NULL), -ENOENT);
	CHECK_INT(qp_lib_whole(elf, &whole_snap, INO + 1, LIB, NULL), -ENOENT);
	CHECK_INT(qp_lib_whole(elf, &whole_snap, INO, "/other.so", NULL), -ENOENT);

	/* its mappings: the library's only, in address order */
	CHECK_INT(qp_lib_ranges(&whole_snap, INO, LIB, &old_way), 0);
	CHECK(old_way.n >= 2 && old_way.v[0].start == base && qp_maps_find(&old_way, site));
	qp_maps_free(&old_way);

	/* noted when whole, not replaced by a snapshot that is not */
	CHECK_INT(qp_lib_note_whole(elf, &whole_snap, INO, LIB, &whole), 0);
	CHECK(whole.n >= 2 && qp_maps_find(&whole, site));
	CHECK_INT(qp_lib_note_whole(elf, &opening, INO, LIB, &whole), 0);
	CHECK_INT(qp_lib_note_whole(elf, &closing, INO, LIB, &whole), 0);
	CHECK_INT(whole.n, nlib);
	CHECK(whole.n && whole.v[0].start == base && qp_maps_find(&whole, site));

	/* unloaded after a snapshot caught its dlclose: what the snapshot has
	 * of it (what an unload kept before) misses the descriptors ... */
	CHECK_INT(qp_lib_ranges(&closing, INO, LIB, &old_way), 0);
	CHECK_INT(old_way.n, 2);
	CHECK(!qp_maps_find(&old_way, site));
	/* ... what it keeps now names them: its mappings when seen whole */
	CHECK_INT(qp_lib_gone(elf, &closing, INO, LIB, &whole, &gone), 0);
	CHECK(qp_maps_find(&gone, site) != NULL);
	CHECK_INT(whole.n, 0);	/* moved */
	qp_maps_free(&gone);

	/* a snapshot that holds it whole is kept as it is */
	CHECK_INT(qp_lib_note_whole(elf, &whole_snap, INO, LIB, &whole), 0);
	CHECK_INT(qp_lib_gone(elf, &whole_snap, INO, LIB, &whole, &gone), 0);
	CHECK_INT(gone.n, nlib);
	CHECK(qp_maps_find(&gone, site) != NULL);
	CHECK(whole.n > 0);	/* not needed, not moved */
	qp_maps_free(&gone);

	/* loaded again elsewhere and caught during its dlclose before a whole
	 * snapshot of that load: the old load's mappings would name the wrong
	 * addresses, what is left of the new one is kept */
	CHECK_INT(qp_lib_gone(elf, &elsewhere, INO, LIB, &whole, &gone), 0);
	CHECK_INT(gone.n, 2);
	CHECK(gone.v[0].start == moved && !qp_maps_find(&gone, site));
	qp_maps_free(&gone);

	/* no segments known (a library without markers): the snapshot's */
	CHECK_INT(qp_lib_gone(NULL, &closing, INO, LIB, &whole, &gone), 0);
	CHECK_INT(gone.n, 2);
	CHECK(whole.n > 0);

	qp_maps_free(&gone);
	qp_maps_free(&whole);
	qp_maps_free(&old_way);
	qp_maps_free(&whole_snap);
	qp_maps_free(&closing);
	qp_maps_free(&opening);
	qp_maps_free(&elsewhere);
	qp_elf_probes_free(elf);
	return test_done("test_lib_ranges");
}

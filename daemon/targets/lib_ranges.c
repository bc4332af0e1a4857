/* lib_ranges.c - see lib_ranges.h: one library's mappings in a snapshot of
 * a target's mappings, and whether the snapshot holds all of it. The
 * mappings an unloaded library keeps for its names (target_libs.c) are
 * taken from a snapshot that held it whole: a site's descriptor is in the
 * library's data segment, which a snapshot read during a dlclose (an
 * unload is not held) may have lost already. Pure: tested without root. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib_ranges.h"

static bool of_lib(const struct qp_map *m, uint64_t ino, const char *path)
{
	return m->inode == ino && !strcmp(m->path, path);
}

int qp_lib_ranges(const struct qp_maps *maps, uint64_t ino, const char *path, struct qp_maps *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->v = calloc(maps->n ? maps->n : 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (i = 0; i < maps->n; i++) {
		if (!of_lib(&maps->v[i], ino, path))
			continue;
		out->v[out->n] = maps->v[i];
		out->v[out->n].path = strdup(maps->v[i].path);
		if (!out->v[out->n].path) {
			qp_maps_free(out);
			return -ENOMEM;
		}
		out->n++;
	}
	return 0;
}

/* Every file byte of every PT_LOAD segment of ELF, at load bias BIAS, in a
 * mapping of the library whose file offset matches. */
static bool covered(const struct qp_elf_probes *elf, const struct qp_maps *maps, uint64_t ino,
		    const char *path, uint64_t bias, uint64_t mask)
{
	size_t k;

	for (k = 0; k < elf->nsegs; k++) {
		const struct qp_elf_segment *s = &elf->segs[k];
		uint64_t lo = (s->vaddr & mask) + bias, hi = s->vaddr + s->filesz + bias;
		uint64_t delta = lo - (s->offset & mask);	/* start - offset of its mappings */
		uint64_t a = lo;

		if (!s->filesz)
			continue;
		while (a < hi) {
			const struct qp_map *m = qp_maps_find(maps, a);

			if (!m || !of_lib(m, ino, path) || m->start - m->offset != delta)
				return false;
			a = m->end;
		}
	}
	return true;
}

int qp_lib_whole(const struct qp_elf_probes *elf, const struct qp_maps *maps, uint64_t ino,
		 const char *path, uint64_t *bias)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t mask = ~(uint64_t)((pg > 0 ? pg : 4096) - 1);
	size_t i, k;

	if (!elf || !elf->nsegs)
		return -EINVAL;
	/* each mapping of the file, taken as each segment that starts at its
	 * file offset, proposes a bias (two segments may share a page offset:
	 * read-only data, then the first page of writable data) */
	for (i = 0; i < maps->n; i++) {
		const struct qp_map *m = &maps->v[i];

		if (!of_lib(m, ino, path))
			continue;
		for (k = 0; k < elf->nsegs; k++) {
			const struct qp_elf_segment *s = &elf->segs[k];
			uint64_t b = m->start - (s->vaddr & mask);

			if (!s->filesz || (s->offset & mask) != m->offset)
				continue;
			if (covered(elf, maps, ino, path, b, mask)) {
				if (bias)
					*bias = b;
				return 0;
			}
		}
	}
	return -ENOENT;
}

bool qp_lib_within(const struct qp_maps *part, const struct qp_maps *whole, uint64_t ino,
		   const char *path)
{
	size_t i;
	bool any = false;

	if (!whole->n)
		return false;
	for (i = 0; i < part->n; i++) {
		const struct qp_map *m = &part->v[i];

		if (!of_lib(m, ino, path))
			continue;
		if (m->start < whole->v[0].start || m->end > whole->v[whole->n - 1].end)
			return false;
		any = true;
	}
	return any;
}

/* WHOLE is exactly the mappings of the library in NOW. */
static bool same_ranges(const struct qp_maps *whole, const struct qp_maps *now, uint64_t ino,
			const char *path)
{
	size_t i, k = 0;

	for (i = 0; i < now->n; i++) {
		const struct qp_map *m = &now->v[i], *w = &whole->v[k];

		if (!of_lib(m, ino, path))
			continue;
		if (k == whole->n || w->start != m->start || w->end != m->end || w->offset != m->offset ||
		    strcmp(w->perms, m->perms))
			return false;
		k++;
	}
	return k == whole->n;
}

int qp_lib_note_whole(const struct qp_elf_probes *elf, const struct qp_maps *now, uint64_t ino,
		      const char *path, struct qp_maps *whole)
{
	struct qp_maps w;
	int ret;

	if (qp_lib_whole(elf, now, ino, path, NULL) || same_ranges(whole, now, ino, path))
		return 0;
	ret = qp_lib_ranges(now, ino, path, &w);
	if (ret)
		return ret;
	qp_maps_free(whole);
	*whole = w;
	return 0;
}

int qp_lib_gone(const struct qp_elf_probes *elf, const struct qp_maps *old, uint64_t ino,
		const char *path, struct qp_maps *whole, struct qp_maps *gone)
{
	struct qp_maps part;
	int ret;

	qp_maps_free(gone);
	ret = qp_lib_ranges(old, ino, path, &part);
	if (ret)
		return ret;
	if (elf && whole->n && qp_lib_whole(elf, old, ino, path, NULL) &&
	    (!part.n || qp_lib_within(&part, whole, ino, path))) {
		qp_maps_free(&part);
		*gone = *whole;
		memset(whole, 0, sizeof(*whole));
		return 0;
	}
	*gone = part;
	return 0;
}

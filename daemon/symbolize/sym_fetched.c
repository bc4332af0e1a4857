/* sym_fetched.c - a debug file that arrived after its file was parsed (a
 * debuginfod fetch): the file is parsed again with it, without the lock,
 * as a new symfile that keeps the old one's segments and takes the debug
 * file's .symtab and DWARF; under the lock the old one points at it
 * (symfile.newer), and every lookup goes through sym_file_current, so the
 * processes' mappings need no change. The old parse is kept (names handed
 * out from it stay valid) and freed with the symbolizer. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "sym_internal.h"

/* A copy of OLD's symbols into F's arena (the debug file gave DWARF only). */
static int copy_syms(struct symfile *f, const struct symfile *old)
{
	size_t i;

	if (!old->nsyms)
		return 0;
	f->syms = calloc(old->nsyms, sizeof(*f->syms));
	if (!f->syms)
		return -1;
	for (i = 0; i < old->nsyms; i++) {
		const struct sym_fsym *o = &old->syms[i];	/* not o->dem: written under the lock */

		f->syms[i] = (struct sym_fsym){ .addr = o->addr, .size = o->size, .bind = o->bind,
						.name = qp_arena_strndup(f->names, o->name, strlen(o->name)) };
		if (!f->syms[i].name)
			return -1;
	}
	f->nsyms = old->nsyms;
	f->full_syms = old->full_syms;
	return 0;
}

/* A new parse of OLD with the debug file PATH, NULL when the file gives it
 * nothing OLD lacks (or out of memory). No lock held: OLD is immutable but
 * for its symbols' demangled names, which are not read here. */
static struct symfile *reparse(struct qp_symbolizer *s, const struct symfile *old, const char *path)
{
	struct stat none = { 0 };	/* no real file has inode 0: never "the file itself" */
	struct symfile *f = calloc(1, sizeof(*f));
	bool want_syms = !old->full_syms;

	if (!f)
		return NULL;
	memcpy(f->build_id, old->build_id, sizeof(f->build_id));
	f->names = qp_arena_new();
	f->path = f->names ? qp_arena_strndup(f->names, old->path, strlen(old->path)) : NULL;
	f->segs = calloc(old->nsegs ? old->nsegs : 1, sizeof(*f->segs));
	if (!f->path || !f->segs)
		goto fail;
	memcpy(f->segs, old->segs, old->nsegs * sizeof(*f->segs));
	f->nsegs = old->nsegs;
	if (!sym_try_debug_file(s, f, &none, path, false, 0, want_syms))
		goto fail;
	if (!(want_syms && f->nsyms) && !(f->dw && !old->dw))
		goto fail;	/* nothing new */
	if (!f->nsyms && copy_syms(f, old))
		goto fail;
	if (!f->dw && old->dw) {
		f->dw = old->dw;	/* the old parse keeps it open; both live as long as the symbolizer */
		f->dw_borrowed = true;
	}
	return f;
fail:
	sym_file_free(f);
	return NULL;
}

void qp_sym_debug_arrived(struct qp_symbolizer *s, const char *bid, const char *path)
{
	struct symfile *old, *f;

	if (!s || !bid || !path)
		return;
	pthread_mutex_lock(&s->lock);
	old = sym_file_by_build_id_locked(s, bid);
	pthread_mutex_unlock(&s->lock);
	/* not parsed yet: its first parse finds the file where it was put */
	if (!old || !(f = reparse(s, old, path)))
		return;
	pthread_mutex_lock(&s->lock);
	if (old->newer) {	/* another arrival of the same file was first */
		pthread_mutex_unlock(&s->lock);
		sym_file_free(f);
		return;
	}
	f->next = s->files;
	s->files = f;
	old->newer = f;
	pthread_mutex_unlock(&s->lock);
}

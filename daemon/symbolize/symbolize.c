/* symbolize.c - the symbolizer's life: options, creation and freeing. The
 * work is done by its four parts: sym_intern.c (strings, demangling),
 * sym_elf.c (ELF files, debug files, the vDSO, the file cache),
 * sym_maps.c (processes' mappings, user addresses) and sym_kernel.c
 * (kallsyms). One lock (sym_internal.h) makes it safe to call from several
 * threads at once; no file is read while it is held. */
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include "sym_internal.h"

static char *dup_opt(const char *v, const char *def)
{
	const char *src = v && *v ? v : def;
	size_t n = strlen(src);
	char *r;

	/* "/a/b/" and "/a/b" are the same root. */
	while (n > 1 && src[n - 1] == '/')
		n--;
	r = malloc(n + 1);
	if (r) {
		memcpy(r, src, n);
		r[n] = '\0';
	}
	return r;
}

struct qp_symbolizer *qp_symbolizer_new(const struct qp_sym_opts *opts)
{
	struct qp_symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	s->kallsyms = dup_opt(opts ? opts->kallsyms : NULL, "/proc/kallsyms");
	s->debug_root = dup_opt(opts ? opts->debug_root : NULL, "/usr/lib/debug");
	s->proc_root = dup_opt(opts ? opts->proc_root : NULL, "/proc");
	s->no_lines = opts && opts->no_lines;
	if (opts && opts->fetched_root && opts->fetched_root[0] &&
	    !(s->fetched_root = dup_opt(opts->fetched_root, NULL))) {
		qp_symbolizer_free(s);
		return NULL;
	}
	s->want_debug = opts ? opts->want_debug : NULL;
	s->want_ctx = opts ? opts->want_ctx : NULL;
	if (!s->kallsyms || !s->debug_root || !s->proc_root || sym_intern_init(&s->in)) {
		qp_symbolizer_free(s);
		return NULL;
	}
	return s;
}

void qp_symbolizer_free(struct qp_symbolizer *s)
{
	if (!s)
		return;
	sym_procs_free(s);
	while (s->files) {
		struct symfile *f = s->files;

		s->files = f->next;
		sym_file_free(f);
	}
	while (s->ids) {
		struct sym_fileid *id = s->ids;

		s->ids = id->next;
		free(id);
	}
	sym_kernel_free(&s->k);
	qp_htab_free(&s->in);
	free(s->kallsyms);
	free(s->debug_root);
	free(s->proc_root);
	free(s->fetched_root);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

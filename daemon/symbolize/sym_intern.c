/* sym_intern.c - the symbolizer's strings: arenas of NUL-terminated copies
 * that never move, one interning table (a name is stored once; the pointer
 * handed out stays valid for the symbolizer's life), and C++ demangling
 * with libstdc++'s __cxa_demangle, remembered per interned name. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sym_internal.h"

/* libstdc++ (abi::__cxa_demangle has C linkage). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define SYM_ARENA_CHUNK 65536

struct sym_arena {
	struct sym_arena *next;
	size_t used, cap;
	char data[];
};

char *sym_arena_strndup(struct sym_arena **head, const char *s, size_t len)
{
	struct sym_arena *a = *head;
	char *r;

	if (len >= SIZE_MAX / 2)
		return NULL;
	if (!a || a->cap - a->used < len + 1) {
		size_t cap = len + 1 > SYM_ARENA_CHUNK / 4 ? len + 1 : SYM_ARENA_CHUNK;

		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->used = 0;
		a->cap = cap;
		/* A big one-off string goes behind the current chunk so that
		 * the chunk keeps being filled. */
		if (*head && cap != SYM_ARENA_CHUNK) {
			a->next = (*head)->next;
			(*head)->next = a;
		} else {
			a->next = *head;
			*head = a;
		}
	}
	r = a->data + a->used;
	memcpy(r, s, len);
	r[len] = '\0';
	a->used += len + 1;
	return r;
}

void sym_arena_free(struct sym_arena *a)
{
	while (a) {
		struct sym_arena *n = a->next;

		free(a);
		a = n;
	}
}

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

static int intern_grow(struct sym_intern *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024, i;
	struct sym_istr *nv = calloc(ncap, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->v[i].s)
			continue;
		j = t->v[i].h & (ncap - 1);
		while (nv[j].s)
			j = (j + 1) & (ncap - 1);
		nv[j] = t->v[i];
	}
	free(t->v);
	t->v = nv;
	t->cap = ncap;
	return 0;
}

int sym_intern_init(struct sym_intern *t)
{
	memset(t, 0, sizeof(*t));
	return intern_grow(t);
}

void sym_intern_free(struct sym_intern *t)
{
	free(t->v);
	sym_arena_free(t->arena);
	memset(t, 0, sizeof(*t));
}

/* The entry of S (LEN bytes), made when new. Valid until the next insert. */
static struct sym_istr *intern_entry(struct sym_intern *t, const char *s, size_t len)
{
	uint64_t h = hash_str(s, len);
	size_t j;

	if ((t->n + 1) * 2 > t->cap && intern_grow(t))
		return NULL;
	j = h & (t->cap - 1);
	while (t->v[j].s) {
		if (t->v[j].h == h && strncmp(t->v[j].s, s, len) == 0 && t->v[j].s[len] == '\0')
			return &t->v[j];
		j = (j + 1) & (t->cap - 1);
	}
	t->v[j].s = sym_arena_strndup(&t->arena, s, len);
	if (!t->v[j].s)
		return NULL;
	t->v[j].h = h;
	t->v[j].dem = NULL;
	t->n++;
	return &t->v[j];
}

const char *sym_intern_locked(struct qp_symbolizer *s, const char *str)
{
	struct sym_istr *e = intern_entry(&s->in, str, strlen(str));

	return e ? e->s : "?";
}

const char *sym_internf_locked(struct qp_symbolizer *s, const char *fmt, ...)
{
	char buf[PATH_MAX + 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return sym_intern_locked(s, buf);
}

const char *sym_demangle_locked(struct qp_symbolizer *s, const char *name)
{
	struct sym_istr *e;

	e = intern_entry(&s->in, name, strnlen(name, SYM_MAX_NAME));
	if (!e)
		return name;
	if (!e->dem) {
		e->dem = e->s;
		if (strncmp(name, "_Z", 2) == 0) {
			int status = -1;
			char *d = __cxa_demangle(e->s, NULL, NULL, &status);

			if (d && status == 0) {
				const char *v = sym_intern_locked(s, d);

				/* interning may have moved the table */
				e = intern_entry(&s->in, name, strnlen(name, SYM_MAX_NAME));
				if (e && strcmp(v, "?"))
					e->dem = v;
			}
			free(d);
			if (!e)
				return name;
		}
	}
	return e->dem;
}

const char *qp_sym_demangle(struct qp_symbolizer *s, const char *name)
{
	const char *r;

	if (!s || !name)
		return name;
	pthread_mutex_lock(&s->lock);
	r = sym_demangle_locked(s, name);
	pthread_mutex_unlock(&s->lock);
	return r;
}

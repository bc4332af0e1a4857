/* sym_intern.c - the symbolizer's strings: one interning table (common/
 * hashtab.h: a name is stored once, in the table's arena, and the pointer
 * handed out stays valid for the symbolizer's life), and C++ demangling
 * with libstdc++'s __cxa_demangle, remembered per interned name. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/hashtab.h"
#include "sym_internal.h"

/* libstdc++ (abi::__cxa_demangle has C linkage). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

int sym_intern_init(struct qp_htab *t)
{
	qp_htab_init(t, sizeof(const char *));	/* the value: the demangled form */
	return 0;
}

const char *sym_intern_locked(struct qp_symbolizer *s, const char *str)
{
	int64_t i = qp_htab_add(&s->in, str, strlen(str), NULL);

	return i < 0 ? "?" : qp_htab_key(&s->in, (size_t)i, NULL);
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
	int64_t i = qp_htab_add(&s->in, name, strnlen(name, SYM_MAX_NAME), NULL);
	const char **dem, *key;

	if (i < 0)
		return name;
	key = qp_htab_key(&s->in, (size_t)i, NULL);
	dem = qp_htab_value(&s->in, (size_t)i);
	if (!*dem) {
		*dem = key;
		if (strncmp(key, "_Z", 2) == 0) {
			int status = -1;
			char *d = __cxa_demangle(key, NULL, NULL, &status);

			if (d && status == 0) {
				const char *v = sym_intern_locked(s, d);

				/* interning may have moved the values */
				dem = qp_htab_value(&s->in, (size_t)i);
				if (strcmp(v, "?"))
					*dem = v;
			}
			free(d);
		}
	}
	return *dem;
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

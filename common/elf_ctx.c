/* elf_ctx.c - the helpers of an ELF parse (struct qp_ctx, elf_probes_priv.h)
 * that the file's reader (elf_probes.c) and the site parser (elf_sites.c)
 * both use: the error message, array growth, raw fields in the file's byte
 * order. */
#include "elf_probes_priv.h"

#include <errno.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int qp_elf_fail(struct qp_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

int qp_elf_fail_libelf(struct qp_ctx *c, const char *what)
{
	return qp_elf_fail(c, -EINVAL, "corrupt ELF file: %s: %s", what, elf_errmsg(-1));
}

int qp_elf_grow(void **v, size_t *cap, size_t n, size_t sz)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / sz)
		return -ENOMEM;
	nv = realloc(*v, ncap * sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* Raw fields of the file (note descriptors, qprof_sites records) are in the
 * file's byte order; libelf only converts the ELF structures themselves. */
uint64_t qp_elf_rd(const struct qp_ctx *c, const unsigned char *b, size_t n)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		size_t k = c->msb ? i : n - 1 - i;

		v = (v << 8) | b[k];
	}
	return v;
}

/* sym_kernel.c - kernel addresses to names: the text symbols of kallsyms
 * (read on first use, without the symbolizer's lock, then put in under
 * it), the nearest lower one for an address; "[kernel]+0xaddr" when
 * kptr_restrict hides the addresses (every one reads 0). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sym_internal.h"

static int cmp_ksym(const void *a, const void *b)
{
	const struct sym_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);	/* aliases: a stable choice */
}

void qp_symbolizer_stop(struct qp_symbolizer *s)
{
	if (s)
		__atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
}

static bool stopping(const struct qp_symbolizer *s)
{
	return __atomic_load_n(&s->stopping, __ATOMIC_RELAXED);
}

/* PATH whole into *TEXT (NUL-terminated), in reads of 256 KiB at most (the
 * kernel formats kallsyms as it is read): between two, a stop gives up. */
static int read_kallsyms(const struct qp_symbolizer *s, const char *path, char **text, size_t *len)
{
	size_t cap = 1u << 20, n = 0;
	char *b = malloc(cap), *nb;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	while (!err && b && fd >= 0) {
		ssize_t r;

		if (cap - n < 2) {
			nb = cap < SYM_MAX_TEXT ? realloc(b, cap * 2) : NULL;
			if (!nb) {
				err = cap < SYM_MAX_TEXT ? -ENOMEM : -EFBIG;
				break;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n - 1 < (256u << 10) ? cap - n - 1 : (256u << 10));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : 0;
			break;
		}
		n += (size_t)r;
		if (stopping(s))
			err = -ECANCELED;
	}
	if (fd < 0 || !b)
		err = fd < 0 ? -errno : -ENOMEM;
	if (fd >= 0)
		close(fd);
	if (err) {
		free(b);
		return err;
	}
	b[n] = '\0';
	*text = b;
	*len = n;
	return 0;
}

/* "ffffffff81000000 T _stext" or "... t name\t[module]". Text symbols only. */
static void kernel_load(const struct qp_symbolizer *s, struct sym_kernel *k)
{
	size_t len, cap = 0, n = 0, nzero = 0, i, j;
	char *text, *p, *end;

	k->loaded = true;
	if (!(k->names = qp_arena_new()))
		return;
	if (read_kallsyms(s, s->kallsyms, &text, &len))
		return;
	p = text;
	end = text + len;
	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p)), *q, *name;
		unsigned long long a;
		size_t nlen;
		char type;

		if (!eol)
			eol = end;
		*eol = '\0';
		q = p;
		p = eol + 1;
		for (nlen = 0; q + nlen < eol && ((q[nlen] >= '0' && q[nlen] <= '9') ||
						  (q[nlen] >= 'a' && q[nlen] <= 'f') ||
						  (q[nlen] >= 'A' && q[nlen] <= 'F'));
		     nlen++)
			;
		if (nlen == 0 || nlen > 16 || eol - q < (ptrdiff_t)nlen + 4 || q[nlen] != ' ' ||
		    q[nlen + 2] != ' ')
			continue;
		type = q[nlen + 1];
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		a = strtoull(q, NULL, 16);
		name = q + nlen + 3;
		nlen = strcspn(name, " \t");
		if (!nlen || nlen >= SYM_MAX_NAME)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			struct sym_ksym *nv;

			if (ncap > SYM_MAX_SYMS)
				break;
			nv = realloc(k->v, ncap * sizeof(*nv));
			if (!nv)
				break;
			k->v = nv;
			cap = ncap;
		}
		k->v[n].addr = a;
		k->v[n].dem = NULL;
		k->v[n].name = qp_arena_strndup(k->names, name, nlen);
		if (!k->v[n].name)
			break;
		if (!a)
			nzero++;
		n++;
	}
	free(text);
	if (n && nzero == n)
		k->restricted = true;
	if (n)
		qsort(k->v, n, sizeof(*k->v), cmp_ksym);
	for (i = j = 0; i < n; i++)
		if (k->v[i].addr && (!j || k->v[j - 1].addr != k->v[i].addr))
			k->v[j++] = k->v[i];
	k->n = j;
}

void sym_kernel_free(struct sym_kernel *k)
{
	free(k->v);
	qp_arena_free(k->names);
	memset(k, 0, sizeof(*k));
}

int qp_sym_kernel(struct qp_symbolizer *s, uint64_t addr, struct qp_sym *out)
{
	size_t lo = 0, hi;

	memset(out, 0, sizeof(*out));
	out->build_id = "";
	if (!s) {
		out->name = out->module = "[kernel]";
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	if (!s->k.loaded) {
		struct sym_kernel k = { 0 };

		/* kallsyms is large: read without the lock; the first in wins */
		pthread_mutex_unlock(&s->lock);
		kernel_load(s, &k);
		pthread_mutex_lock(&s->lock);
		if (!s->k.loaded && !stopping(s))
			s->k = k;	/* cut short by a stop: not kept */
		else
			sym_kernel_free(&k);
	}
	if (!s->k.module)
		s->k.module = sym_intern_locked(s, "[kernel]");
	out->module = s->k.module;
	out->file_off = addr;
	hi = s->k.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->k.v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || s->k.restricted) {
		out->name = sym_internf_locked(s, "[kernel]+0x%" PRIx64, addr);
	} else {
		struct sym_ksym *k = &s->k.v[lo - 1];

		if (!k->dem)
			k->dem = sym_demangle_locked(s, k->name);
		out->name = k->dem;
		out->offset = addr - s->k.v[lo - 1].addr;
		out->found = true;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* The kernel stack of an off-CPU interval is taken inside qprofd's own
 * sched_switch program, so its leaf frames are that program, bpf_trace_runN
 * and the tracepoint's iterator (__traceiter_* when several programs share
 * the tracepoint, __bpf_trace_* when one is called directly), above
 * __schedule. The program itself may be misnamed (a BPF program loaded
 * after kallsyms was read takes the name of the symbol below it), so what
 * is counted is every frame up to the deepest machinery frame among the
 * first few. */
size_t qp_sym_kernel_tracing_depth(struct qp_symbolizer *s, const uint64_t *kips, size_t nk)
{
	static const char *const machinery[] = { "bpf_trace_run", "__traceiter_", "__bpf_trace_" };
	size_t i, depth = 0;

	for (i = 0; i < nk && i < 6; i++) {
		struct qp_sym y;
		size_t m;

		if (qp_sym_kernel(s, i ? kips[i] - 1 : kips[i], &y) || !y.name)
			continue;
		for (m = 0; m < sizeof(machinery) / sizeof(machinery[0]); m++)
			if (!strncmp(y.name, machinery[m], strlen(machinery[m])))
				depth = i + 1;
	}
	return depth;
}

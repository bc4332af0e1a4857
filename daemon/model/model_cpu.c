/* model_cpu.c - the arena behind a CPU profile (see model_cpu.h): chunks
 * of memory handed out in order and freed together. */
#include <stdlib.h>
#include <string.h>
#include "model_cpu.h"

#define CHUNK (64 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, size;
	_Alignas(16) unsigned char mem[];
};

struct qp_arena {
	struct chunk *head;
};

struct qp_arena *qp_arena_new(void) { return calloc(1, sizeof(struct qp_arena)); }

void qp_arena_free(struct qp_arena *a)
{
	struct chunk *c, *n;

	if (!a)
		return;
	for (c = a->head; c; c = n) {
		n = c->next;
		free(c);
	}
	free(a);
}

void *qp_arena_alloc(struct qp_arena *a, size_t n)
{
	struct chunk *c = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	void *p;

	if (n > (size_t)1 << 40)
		return NULL;
	if (!c || c->size - c->used < need) {
		size_t size = need > CHUNK ? need : CHUNK;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	p = c->mem + c->used;
	c->used += need;
	memset(p, 0, n);
	return p;
}

const char *qp_arena_strdup(struct qp_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = qp_arena_alloc(a, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

void qp_cpu_profile_free(struct qp_cpu_profile *p)
{
	if (!p)
		return;
	qp_arena_free(p->arena);
	memset(p, 0, sizeof(*p));
}

uint64_t qp_cpu_profile_total(const struct qp_cpu_profile *p)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < p->nsamples; i++)
		t += p->samples[i].count;
	return t;
}

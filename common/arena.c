/* arena.c - the arena of arena.h: a list of chunks, the head being the one
 * filled; big requests get their own chunk linked behind the head. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "arena.h"

struct chunk {
	struct chunk *next;
	size_t used, size;
	_Alignas(16) unsigned char mem[];
};

struct qp_arena {
	struct chunk *head;	/* the chunk small requests are cut from */
	size_t used, reserved;
};

struct qp_arena *qp_arena_new(void)
{
	return calloc(1, sizeof(struct qp_arena));
}

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

static struct chunk *chunk_new(struct qp_arena *a, size_t size)
{
	struct chunk *c = malloc(sizeof(*c) + size);

	if (!c)
		return NULL;
	c->size = size;
	c->used = 0;
	a->reserved += size;
	return c;
}

/* N bytes at ALIGN (a power of two up to 16), not zeroed. */
static void *take(struct qp_arena *a, size_t n, size_t align)
{
	struct chunk *c = a->head;
	size_t off;

	if (n > QP_ARENA_MAX)
		return NULL;
	if (!n)
		n = 1;	/* distinct pointers for empty requests */
	if (n > QP_ARENA_CHUNK / 4) {
		c = chunk_new(a, n);
		if (!c)
			return NULL;
		c->used = n;
		if (a->head) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = NULL;
			a->head = c;
		}
		a->used += n;
		return c->mem;
	}
	off = c ? (c->used + align - 1) & ~(align - 1) : 0;
	if (!c || off + n > c->size) {
		c = chunk_new(a, QP_ARENA_CHUNK);
		if (!c)
			return NULL;
		c->next = a->head;
		a->head = c;
		off = 0;
	}
	a->used += off + n - c->used;
	c->used = off + n;
	return c->mem + off;
}

void *qp_arena_alloc(struct qp_arena *a, size_t n)
{
	void *p = take(a, n, 16);

	if (p)
		memset(p, 0, n);
	return p;
}

char *qp_arena_strndup(struct qp_arena *a, const char *s, size_t len)
{
	char *p;

	if (len >= QP_ARENA_MAX)
		return NULL;
	p = take(a, len + 1, 1);
	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

const char *qp_arena_strdup(struct qp_arena *a, const char *s)
{
	return qp_arena_strndup(a, s, strlen(s));
}

size_t qp_arena_used(const struct qp_arena *a)
{
	return a->used;
}

size_t qp_arena_reserved(const struct qp_arena *a)
{
	return a->reserved;
}

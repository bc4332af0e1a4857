/* cfi_cache.c - the cache of compiled CFI tables (cfi_table.h): tables
 * shared by file identity (build-id, else device/inode/size/mtime), held
 * while in use, bounded in bytes by evicting the least recently used table
 * no one holds (counted). The lock is taken to look up and to insert only;
 * compiling runs outside it, and of two threads that compiled one file at
 * once the first table is kept. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cfi_table.h"
#include "common/elf_build_id.h"

struct qp_cfi_cache {
	pthread_mutex_t lock;
	struct qp_cfi_table *head;	/* every table held */
	size_t max_bytes;
	uint64_t clock;
	struct qp_cfi_cache_stats st;
};

struct qp_cfi_cache *qp_cfi_cache_new(size_t max_bytes)
{
	struct qp_cfi_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->max_bytes = max_bytes ? max_bytes : 64u << 20;
	return c;
}

void qp_cfi_cache_free(struct qp_cfi_cache *c)
{
	struct qp_cfi_table *t, *next;

	if (!c)
		return;
	for (t = c->head; t; t = next) {
		next = t->next;
		qp_cfi_table_free(t);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct qp_cfi_table *find_locked(struct qp_cfi_cache *c, const char *key, bool hit)
{
	struct qp_cfi_table *t;

	for (t = c->head; t; t = t->next)
		if (!strcmp(t->key, key)) {
			t->refs++;
			t->last_use = ++c->clock;
			c->st.hits += hit;
			return t;
		}
	return NULL;
}

/* drop least recently used unheld tables until BYTES more fit */
static void evict_locked(struct qp_cfi_cache *c, size_t bytes)
{
	while (c->st.bytes + bytes > c->max_bytes) {
		struct qp_cfi_table **pp, **victim = NULL, *t;

		for (pp = &c->head; *pp; pp = &(*pp)->next)
			if (!(*pp)->refs && (!victim || (*pp)->last_use < (*victim)->last_use))
				victim = pp;
		if (!victim)
			return;	/* all held: over budget until one is put back */
		t = *victim;
		*victim = t->next;
		c->st.bytes -= qp_cfi_table_bytes(t);
		c->st.tables--;
		c->st.evictions++;
		qp_cfi_table_free(t);
	}
}

static struct qp_cfi_table *get_elf(struct qp_cfi_cache *c, Elf *elf, const char *key)
{
	struct qp_cfi_table *t, *other;
	struct qp_cfi_stats st;
	int err;

	pthread_mutex_lock(&c->lock);
	t = find_locked(c, key, true);
	pthread_mutex_unlock(&c->lock);
	if (t)
		return t;
	t = qp_cfi_compile(elf, &st);	/* off the lock */
	err = errno;
	pthread_mutex_lock(&c->lock);
	c->st.build_ns += st.build_ns;
	c->st.build_cpu_ns += st.build_cpu_ns;
	if (!t) {
		c->st.refused++;
		pthread_mutex_unlock(&c->lock);
		errno = err;
		return NULL;
	}
	c->st.builds++;
	other = find_locked(c, key, false);	/* made meanwhile by another thread: a build, not a hit */
	if (other) {
		pthread_mutex_unlock(&c->lock);
		qp_cfi_table_free(t);
		return other;
	}
	snprintf(t->key, sizeof(t->key), "%s", key);
	evict_locked(c, qp_cfi_table_bytes(t));
	t->refs = 1;
	t->last_use = ++c->clock;
	t->next = c->head;
	c->head = t;
	c->st.tables++;
	c->st.bytes += qp_cfi_table_bytes(t);
	pthread_mutex_unlock(&c->lock);
	return t;
}

struct qp_cfi_table *qp_cfi_get_file(struct qp_cfi_cache *c, const char *path)
{
	struct qp_cfi_table *t = NULL;
	char key[80], id[65];
	struct stat sb;
	Elf *elf;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL); /* read, not mapped: a file rewritten under us must not SIGBUS qprofd */
	if (!elf) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if (qp_elf_build_id(elf, id, sizeof(id)))
		snprintf(key, sizeof(key), "b:%s", id);
	else
		snprintf(key, sizeof(key), "f:%llx:%llu:%lld:%lld.%09ld", (unsigned long long)sb.st_dev,
			 (unsigned long long)sb.st_ino, (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
			 sb.st_mtim.tv_nsec);
	t = get_elf(c, elf, key);
	err = errno;
	elf_end(elf);
	close(fd);
	errno = err;
	return t;
}

struct qp_cfi_table *qp_cfi_get_image(struct qp_cfi_cache *c, const void *img, size_t len)
{
	struct qp_cfi_table *t;
	char key[80], id[65];
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img, len);
	if (!elf) {
		errno = EINVAL;
		return NULL;
	}
	if (!qp_elf_build_id(elf, id, sizeof(id))) {
		elf_end(elf);
		errno = EINVAL;	/* no identity to share it by */
		return NULL;
	}
	snprintf(key, sizeof(key), "b:%s", id);
	t = get_elf(c, elf, key);
	err = errno;
	elf_end(elf);
	errno = err;
	return t;
}

void qp_cfi_put(struct qp_cfi_cache *c, struct qp_cfi_table *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&c->lock);
	if (t->refs)
		t->refs--;
	evict_locked(c, 0);
	pthread_mutex_unlock(&c->lock);
}

void qp_cfi_cache_stats(struct qp_cfi_cache *c, struct qp_cfi_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	pthread_mutex_unlock(&c->lock);
}

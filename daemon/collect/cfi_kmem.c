/* cfi_kmem.c - see cfi_kmem.h. A file is known by its identity on disk
 * (device, inode, size, mtime), else by its build-id (one library copied
 * into two containers is one table); it is compiled once and stays loaded
 * while any process maps it. Rows are placed first-fit in the shared
 * array; a table that does not fit evicts the least recently used tables
 * no process maps. An evicted table's entry is emptied first (walks then
 * find no table) and its rows stay reserved for QUARANTINE_NS, longer than
 * any walk that read the old entry can last, before they are given to
 * another table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <gelf.h>
#include "cfi_kmem.h"
#include "cfi_pack.h"
#include "cfi_table.h"
#include "common/elf_build_id.h"
#include "common/util.h"

#define QUARANTINE_NS 1000000000ull

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int qp_kmem_init(struct qp_kmem *m, int rows_fd, size_t blocks, int files_fd)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	memset(m, 0, sizeof(*m));
	m->rows_fd = rows_fd;
	m->files_fd = files_fd;
	m->words_cap = blocks * QPROF_CFI_BLOCK_WORDS;
	m->map_bytes = (blocks * sizeof(struct cfi_kblock) + (size_t)page - 1) & ~((size_t)page - 1);
	p = mmap(NULL, m->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, rows_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->words = p;
	m->st.bytes_cap = blocks * sizeof(struct cfi_kblock);
	m->st.rows_cap = m->st.bytes_cap / sizeof(uint32_t);	/* at 4 bytes a row, less the index and rules */
	return 0;
}

void qp_kmem_fini(struct qp_kmem *m)
{
	if (m->words)
		munmap(m->words, m->map_bytes);
	m->words = NULL;
}

static uint32_t fnv(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static bool held(const struct qp_kfile *f)
{
	return f->state == QP_KF_LOADED || f->state == QP_KF_REFUSED;
}

static int find(struct qp_kmem *m, const char *fkey, const char *bkey)
{
	uint32_t h = fkey ? fnv(fkey) : 0;
	int i;

	for (i = 0; i < QPROF_CFI_FILES; i++) {
		const struct qp_kfile *f = &m->f[i];

		if (!held(f))
			continue;
		if (fkey && f->fhash == h && !strcmp(f->fkey, fkey))
			return i;
		if (bkey && bkey[0] && !strcmp(f->bkey, bkey))
			return i;
	}
	return -1;
}

/* the kernel's entry of ID: its table T packed as P, or none (nb 0) */
static void publish(struct qp_kmem *m, uint32_t id, const struct qp_cfi_table *t, const struct qp_cfi_packed *p)
{
	struct cfi_kfile v = { 0 };

	if (t) {
		v.base = t->base;
		v.span = (uint32_t)(t->end - t->base);
		v.index = m->f[id].first;
		v.rows = m->f[id].first + p->rows_at;
		v.rules = m->f[id].first + p->rules_at;
		v.nb = p->nb;
		v.nrows = p->nrows;
		v.nrules = p->nrules;
		v.shift = p->shift;
	}
	v.gen = m->f[id].gen;
	bpf_map_update_elem(m->files_fd, &id, &v, BPF_ANY);
}

static void evict(struct qp_kmem *m, int i, uint64_t now)
{
	struct qp_kfile *f = &m->f[i];

	if (f->state == QP_KF_LOADED) {
		publish(m, (uint32_t)i, NULL, NULL);
		m->st.files--;
		m->st.rows -= f->nrows;
		m->st.bytes -= (uint64_t)f->nwords * sizeof(uint32_t);
		f->state = QP_KF_QUARANTINE;
		f->freed_ns = now;
		m->st.evictions++;
	} else {
		f->state = QP_KF_FREE;
	}
	f->fkey[0] = f->bkey[0] = 0;
}

/* the least recently used table no process maps, -1 when none */
static int victim(struct qp_kmem *m)
{
	int i, v = -1;

	for (i = 0; i < QPROF_CFI_FILES; i++)
		if (held(&m->f[i]) && !m->f[i].refs && (v < 0 || m->f[i].last_use < m->f[v].last_use))
			v = i;
	return v;
}

static int ext_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* first fit for N words among the words in use (and those in quarantine) */
static bool place(struct qp_kmem *m, uint32_t n, uint64_t now, uint32_t *first)
{
	static uint64_t ext[QPROF_CFI_FILES];	/* first << 32 | nwords (the worker alone) */
	uint64_t at = 0;
	size_t k = 0, i;

	for (i = 0; i < QPROF_CFI_FILES; i++) {
		struct qp_kfile *f = &m->f[i];

		if (f->state == QP_KF_QUARANTINE && now - f->freed_ns >= QUARANTINE_NS)
			f->state = QP_KF_FREE;
		if (f->state == QP_KF_LOADED || f->state == QP_KF_QUARANTINE)
			ext[k++] = (uint64_t)f->first << 32 | f->nwords;
	}
	qsort(ext, k, sizeof(ext[0]), ext_cmp);
	for (i = 0; i <= k; i++) {
		uint64_t next = i < k ? ext[i] >> 32 : m->words_cap;

		if (next >= at && next - at >= n) {
			*first = (uint32_t)at;
			return true;
		}
		if (i < k && (ext[i] >> 32) + (uint32_t)ext[i] > at)
			at = (ext[i] >> 32) + (uint32_t)ext[i];
	}
	return false;
}

static int free_slot(struct qp_kmem *m, uint64_t now)
{
	int i, v;

	for (i = 0; i < QPROF_CFI_FILES; i++)
		if (m->f[i].state == QP_KF_FREE ||
		    (m->f[i].state == QP_KF_QUARANTINE && now - m->f[i].freed_ns >= QUARANTINE_NS))
			return i;
	v = victim(m);
	if (v >= 0)
		evict(m, v, now);
	/* a quarantined slot's rows stay reserved; the slot itself waits too */
	return v >= 0 && m->f[v].state == QP_KF_FREE ? v : -1;
}

static void keep_loads(struct qp_kfile *f, Elf *elf)
{
	size_t n, i;

	f->nload = 0;
	if (elf_getphdrnum(elf, &n))
		return;
	for (i = 0; i < n && f->nload < QP_KMEM_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->load[f->nload].vaddr = ph.p_vaddr;
		f->load[f->nload].offset = ph.p_offset;
		f->load[f->nload].filesz = ph.p_filesz;
		f->nload++;
	}
}

/* T packed (P) into the words (evicting for room), then its entry;
 * false: no room */
static bool load(struct qp_kmem *m, int i, const struct qp_cfi_table *t, const struct qp_cfi_packed *p,
		 uint64_t now)
{
	struct qp_kfile *f = &m->f[i];
	uint32_t first;
	int v;

	if (p->nwords > m->words_cap)
		return false;
	f->refs = 1;	/* not its own victim */
	while (!place(m, p->nwords, now, &first)) {
		v = victim(m);
		if (v < 0) {
			f->refs = 0;
			return false;
		}
		evict(m, v, now);
	}
	f->refs = 0;
	memcpy(&m->words[first], p->words, (size_t)p->nwords * sizeof(uint32_t));
	f->first = first;
	f->nwords = p->nwords;
	f->nrows = p->nrows;
	f->state = QP_KF_LOADED;
	publish(m, (uint32_t)i, t, p);
	m->st.files++;
	m->st.rows += p->nrows;
	m->st.bytes += (uint64_t)p->nwords * sizeof(uint32_t);
	return true;
}

uint32_t qp_kmem_get(struct qp_kmem *m, int fd, const void *img, size_t len)
{
	char fkey[64], bkey[72] = "", id[65];
	struct qp_cfi_table *t;
	struct qp_cfi_stats cst = { 0 };
	uint64_t now = qp_now_ns();
	struct stat sb;
	Elf *elf;
	int i;

	if (fd >= 0) {
		if (fstat(fd, &sb) || !S_ISREG(sb.st_mode))
			return QPROF_CFI_NOFILE;
		snprintf(fkey, sizeof(fkey), "%llx:%llu:%lld:%lld.%09ld", (unsigned long long)sb.st_dev,
			 (unsigned long long)sb.st_ino, (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
			 sb.st_mtim.tv_nsec);
	} else {
		snprintf(fkey, sizeof(fkey), "vdso");
	}
	i = find(m, fkey, NULL);
	if (i < 0) {
		elf_version(EV_CURRENT);
		/* read, not mapped: a file rewritten under us must not SIGBUS qprofd */
		elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : elf_memory((char *)img, len);
		if (!elf)
			return QPROF_CFI_NOFILE;
		if (qp_elf_build_id(elf, id, sizeof(id)))
			snprintf(bkey, sizeof(bkey), "b:%s", id);
		i = find(m, NULL, bkey);
		if (i < 0) {
			i = free_slot(m, now);
			if (i < 0) {
				m->st.no_room++;
				elf_end(elf);
				return QPROF_CFI_NOFILE;
			}
			t = qp_cfi_compile(elf, &cst);
			m->st.build_ns += cst.build_ns;
			m->st.build_cpu_ns += cst.build_cpu_ns;
			memset(&m->f[i], 0, offsetof(struct qp_kfile, gen));
			m->f[i].gen++;
			snprintf(m->f[i].fkey, sizeof(m->f[i].fkey), "%s", fkey);
			m->f[i].fhash = fnv(fkey);
			snprintf(m->f[i].bkey, sizeof(m->f[i].bkey), "%s", bkey);
			keep_loads(&m->f[i], elf);
			m->f[i].last_use = ++m->clock;
			if (!t) {
				m->st.refused++;
				m->f[i].state = QP_KF_REFUSED;
			} else {
				struct qp_cfi_packed p;
				uint64_t p0 = qp_now_ns(), c0 = thread_cpu_ns();

				m->st.builds++;
				m->f[i].state = QP_KF_REFUSED;	/* until loaded */
				if (qp_cfi_pack(t, &p)) {
					m->st.refused++;	/* stays refused: no table */
				} else {
					if (!load(m, i, t, &p, now)) {
						m->st.no_room++;
						m->f[i].state = QP_KF_FREE;
						i = -1;
					} else {
						m->st.rows_no_rule += p.rules_lost;
					}
					qp_cfi_packed_free(&p);
				}
				m->st.build_ns += qp_now_ns() - p0;
				m->st.build_cpu_ns += thread_cpu_ns() - c0;
				qp_cfi_table_free(t);
			}
			elf_end(elf);
			if (i < 0)
				return QPROF_CFI_NOFILE;
			return m->f[i].state == QP_KF_LOADED ? (uint32_t)i : QPROF_CFI_NOFILE;
		}
		elf_end(elf);
	}
	m->st.hits++;
	m->f[i].last_use = ++m->clock;
	return m->f[i].state == QP_KF_LOADED ? (uint32_t)i : QPROF_CFI_NOFILE;
}

uint32_t qp_kmem_get_table(struct qp_kmem *m, const char *fkey, const struct qp_cfi_table *t)
{
	uint64_t now = qp_now_ns();
	int i = find(m, fkey, NULL);

	if (i >= 0) {
		m->st.hits++;
	} else {
		i = free_slot(m, now);
		if (i < 0) {
			m->st.no_room++;
			return QPROF_CFI_NOFILE;
		}
		memset(&m->f[i], 0, offsetof(struct qp_kfile, gen));
		m->f[i].gen++;
		snprintf(m->f[i].fkey, sizeof(m->f[i].fkey), "%s", fkey);
		m->f[i].fhash = fnv(fkey);
		m->f[i].state = QP_KF_REFUSED;	/* until loaded */
		{
			struct qp_cfi_packed p;
			bool ok;

			if (qp_cfi_pack(t, &p)) {
				m->st.refused++;	/* stays refused: no table */
				return QPROF_CFI_NOFILE;
			}
			ok = load(m, i, t, &p, now);
			if (ok)
				m->st.rows_no_rule += p.rules_lost;
			qp_cfi_packed_free(&p);
			if (!ok) {
				m->st.no_room++;
				m->f[i].state = QP_KF_FREE;
				return QPROF_CFI_NOFILE;
			}
		}
	}
	m->f[i].last_use = ++m->clock;
	return m->f[i].state == QP_KF_LOADED ? (uint32_t)i : QPROF_CFI_NOFILE;
}

bool qp_kmem_bias(const struct qp_kmem *m, uint32_t id, uint64_t start, uint64_t offset, uint64_t *bias)
{
	const struct qp_kfile *f;
	uint32_t k;

	if (id >= QPROF_CFI_FILES)
		return false;
	f = &m->f[id];
	/* the segment this mapping starts in (page-aligned offsets), as qp_cfi_bias */
	for (k = 0; k < f->nload; k++) {
		uint64_t po = f->load[k].offset & ~0xfffull;

		if (po <= offset && offset < f->load[k].offset + f->load[k].filesz) {
			*bias = start - ((f->load[k].vaddr & ~0xfffull) + (offset - po));
			return true;
		}
	}
	return false;
}

void qp_kmem_ref(struct qp_kmem *m, uint32_t id, int delta)
{
	if (id >= QPROF_CFI_FILES)
		return;
	if (delta > 0)
		m->f[id].refs++;
	else if (m->f[id].refs)
		m->f[id].refs--;
}

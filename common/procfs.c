/* procfs.c - checked readers of /proc/PID/{maps,comm,exe,stat}. The daemon
 * uses them to find where a target's binaries are mapped (to turn a probe's
 * link-time address into a runtime one and back), to name targets, and to
 * tell a process from a later one that reuses its pid (starttime). The text
 * from /proc is parsed field by field with strtoull and explicit range and
 * separator checks: a line that does not look exactly like a maps line is
 * skipped, never half-trusted. Paths may hold spaces; they run to the end of
 * the line. */
#include "procfs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* A maps file of a large process is a few MB; anything far beyond is not a
 * maps file we want to hold in memory. */
#define QP_PROC_FILE_MAX (256u << 20)

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Parse a number in BASE that must start at *p (no blanks, no sign) and stop
 * before END. Advances *p. */
static int parse_num(const char **p, const char *end, int base, uint64_t *out)
{
	char tmp[32];
	const char *s = *p;
	size_t n = 0;
	unsigned long long v;
	char *e;

	while (s + n < end && (base == 16 ? is_hex(s[n]) : (s[n] >= '0' && s[n] <= '9')))
		n++;
	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	/* Copy: the line is not NUL-terminated where the number ends. */
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	v = strtoull(tmp, &e, base);
	if (errno || *e)
		return -ERANGE;
	*out = v;
	*p = s + n;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

/* "start-end perms offset major:minor inode [path]" */
static int parse_line(const char *s, const char *end, struct qp_map *m)
{
	uint64_t dev_major, dev_minor;
	const char *path;
	size_t plen;
	int i;

	if (parse_num(&s, end, 16, &m->start) || expect(&s, end, '-') ||
	    parse_num(&s, end, 16, &m->end) || expect(&s, end, ' '))
		return -EINVAL;
	if (m->end <= m->start)
		return -EINVAL;
	if (end - s < 4)
		return -EINVAL;
	for (i = 0; i < 4; i++) {
		if (!strchr("rwxps-", s[i]) || s[i] == '\0')
			return -EINVAL;
		m->perms[i] = s[i];
	}
	m->perms[4] = '\0';
	s += 4;
	if (expect(&s, end, ' ') || parse_num(&s, end, 16, &m->offset) || expect(&s, end, ' ') ||
	    parse_num(&s, end, 16, &dev_major) || expect(&s, end, ':') ||
	    parse_num(&s, end, 16, &dev_minor) || expect(&s, end, ' ') ||
	    parse_num(&s, end, 10, &m->inode))
		return -EINVAL;
	if (dev_major > 0xfff || dev_minor > 0xfffff)
		return -EINVAL;
	m->dev = makedev((unsigned int)dev_major, (unsigned int)dev_minor);
	/* The kernel pads with spaces up to the path column; anonymous
	 * mappings end right after the inode (or after the padding). */
	if (s < end && *s != ' ')
		return -EINVAL;
	while (s < end && *s == ' ')
		s++;
	path = s;
	plen = (size_t)(end - path);
	if (memchr(path, '\0', plen))
		return -EINVAL;
	m->path = malloc(plen + 1);
	if (!m->path)
		return -ENOMEM;
	memcpy(m->path, path, plen);
	m->path[plen] = '\0';
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	const struct qp_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int qp_maps_parse(const char *text, size_t len, struct qp_maps *out)
{
	const char *p = text, *end = text + len, *eol;
	bool any_text = false, sorted = true;
	struct qp_maps m = { 0 };
	size_t cap = 0;
	int err;

	if (!out || (!text && len))
		return -EINVAL;
	while (p < end) {
		struct qp_map map = { 0 };

		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		if (eol > p)
			any_text = true;
		err = parse_line(p, eol, &map);
		p = eol + (eol < end);
		if (err == -ENOMEM)
			goto fail;
		if (err)
			continue;
		if (m.n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct qp_map *nv = realloc(m.v, ncap * sizeof(*nv));

			if (!nv) {
				free(map.path);
				err = -ENOMEM;
				goto fail;
			}
			m.v = nv;
			cap = ncap;
		}
		if (m.n && m.v[m.n - 1].start > map.start)
			sorted = false;
		m.v[m.n++] = map;
	}
	if (!m.n && any_text)
		return -EINVAL;
	/* The kernel lists mappings in address order; qp_maps_find relies on
	 * it, so hand-made text is brought into the same order. */
	if (!sorted)
		qsort(m.v, m.n, sizeof(*m.v), cmp_map);
	*out = m;
	return 0;
fail:
	qp_maps_free(&m);
	return err;
}

int qp_maps_copy(const struct qp_maps *from, struct qp_maps *to)
{
	memset(to, 0, sizeof(*to));
	to->v = calloc(from->n ? from->n : 1, sizeof(*to->v));
	if (!to->v)
		return -ENOMEM;
	for (; to->n < from->n; to->n++) {
		to->v[to->n] = from->v[to->n];
		to->v[to->n].path = strdup(from->v[to->n].path);
		if (!to->v[to->n].path) {
			qp_maps_free(to);
			return -ENOMEM;
		}
	}
	return 0;
}

void qp_maps_free(struct qp_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

const struct qp_map *qp_maps_find(const struct qp_maps *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!m || !m->n)
		return NULL;
	hi = m->n;
	/* Last mapping whose start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (addr < m->v[lo - 1].end)
		return &m->v[lo - 1];
	return NULL;
}

/* A vanished process shows as ENOENT on its /proc files; callers want to
 * tell "gone" from other failures. */
static int proc_errno(int e)
{
	return e == ENOENT ? -ESRCH : -e;
}

/* Read all of /proc/PID/NAME (see qp_read_file). */
static int read_proc_file(int pid, const char *name, char **buf, size_t *len)
{
	char path[64];
	int err;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	err = qp_read_file(path, QP_PROC_FILE_MAX, buf, len);
	return err == -ENOENT ? -ESRCH : err;
}

int qp_maps_read_at(const char *proc_root, int pid, struct qp_maps *out)
{
	char path[PATH_MAX];
	size_t len;
	char *text;
	int err;

	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%d/maps", proc_root, pid) >= sizeof(path))
		return -ENAMETOOLONG;
	err = qp_read_file(path, QP_PROC_FILE_MAX, &text, &len);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	err = qp_maps_parse(text, len, out);
	free(text);
	return err;
}

int qp_maps_read(int pid, struct qp_maps *out)
{
	return qp_maps_read_at("/proc", pid, out);
}

int qp_proc_comm(int pid, char *buf, size_t len)
{
	size_t n;
	char *text;
	int err;

	if (!buf || !len)
		return -EINVAL;
	err = read_proc_file(pid, "comm", &text, &n);
	if (err)
		return err;
	if (n && text[n - 1] == '\n')
		text[--n] = '\0';
	if (n >= len) {
		free(text);
		return -ENAMETOOLONG;
	}
	memcpy(buf, text, n + 1);
	free(text);
	return 0;
}

int qp_proc_file_line(int pid, const char *name, char *buf, size_t len)
{
	size_t n;
	char *text, *nl;
	int err;

	if (!buf || !len || strstr(name, ".."))
		return -EINVAL;
	err = read_proc_file(pid, name, &text, &n);
	if (err)
		return err;
	/* the first line, cut to fit: the text is the process's to choose */
	nl = memchr(text, '\n', n);
	if (nl)
		n = (size_t)(nl - text);
	if (n >= len)
		n = len - 1;
	memcpy(buf, text, n);
	buf[n] = '\0';
	free(text);
	return 0;
}

int qp_proc_exe(int pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (pid <= 0 || !buf || !len)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, len);
	if (n < 0)
		return proc_errno(errno);
	/* readlink does not terminate and silently truncates. */
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

int qp_stat_parse_starttime(const char *text, uint64_t *ticks)
{
	const char *p, *end;
	uint64_t v;
	int field;

	if (!text || !ticks)
		return -EINVAL;
	/* comm (field 2) may hold anything but is at most 16 bytes and comes
	 * before the last ')'. */
	p = strrchr(text, ')');
	if (!p)
		return -EINVAL;
	p++;
	end = p + strlen(p);
	/* Field 3 (state) follows ") "; skip to field 22. */
	for (field = 3; field < 22; field++) {
		const char *tok;

		if (expect(&p, end, ' '))
			return -EINVAL;
		tok = p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		if (p == tok)
			return -EINVAL;
	}
	if (expect(&p, end, ' ') || parse_num(&p, end, 10, &v))
		return -EINVAL;
	if (p < end && *p != ' ' && *p != '\n')
		return -EINVAL;
	*ticks = v;
	return 0;
}

int qp_proc_starttime(int pid, uint64_t *ticks)
{
	size_t len;
	char *text;
	int err;

	err = read_proc_file(pid, "stat", &text, &len);
	if (err)
		return err;
	/* A NUL inside would hide the tail from strrchr. */
	if (strlen(text) != len)
		err = -EINVAL;
	else
		err = qp_stat_parse_starttime(text, ticks);
	free(text);
	return err;
}

int qp_proc_thread_start_ns(int pid, uint32_t tid, uint64_t *ns)
{
	struct timespec boot, mono;
	uint64_t ticks, boot_ns, mono_ns, at, off;
	char name[40];
	size_t len;
	char *text;
	long hz = sysconf(_SC_CLK_TCK);
	int err;

	snprintf(name, sizeof(name), "task/%u/stat", tid);
	err = read_proc_file(pid, name, &text, &len);
	if (err)
		return err;
	err = strlen(text) != len ? -EINVAL : qp_stat_parse_starttime(text, &ticks);
	free(text);
	if (err)
		return err;
	if (hz <= 0 || clock_gettime(CLOCK_MONOTONIC, &mono) || clock_gettime(CLOCK_BOOTTIME, &boot))
		return -EINVAL;
	boot_ns = (uint64_t)boot.tv_sec * 1000000000ull + (uint64_t)boot.tv_nsec;
	mono_ns = (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec;
	at = ticks / (uint64_t)hz * 1000000000ull + ticks % (uint64_t)hz * (1000000000ull / (uint64_t)hz);
	/* boottime counts the suspended time too: take it off (the two clocks
	 * were read one after the other: never a negative offset) */
	off = boot_ns > mono_ns ? boot_ns - mono_ns : 0;
	*ns = at > off ? at - off : 0;
	return 0;
}

int qp_proc_thread_name_at(int pid, uint32_t tid, uint64_t at_ns, char *buf, size_t len)
{
	char name[40];
	uint64_t start;
	int err;

	if (at_ns) {
		err = qp_proc_thread_start_ns(pid, tid, &start);
		if (err)
			return err;
		if (start > at_ns)
			return -ESRCH;	/* a later thread on the tid */
	}
	snprintf(name, sizeof(name), "task/%u/comm", tid);
	return qp_proc_file_line(pid, name, buf, len);
}

int qp_statm_parse_rss(const char *text, uint64_t *pages)
{
	const char *p = text, *end = text + strlen(text);
	uint64_t size;

	if (parse_num(&p, end, 10, &size) || expect(&p, end, ' ') || parse_num(&p, end, 10, pages))
		return -EINVAL;
	return 0;
}

int qp_proc_self_usage(uint64_t *rss_bytes, uint64_t *cpu_ns)
{
	struct timespec ts;
	char line[256];
	uint64_t pages;
	long psz = sysconf(_SC_PAGESIZE);
	int ret;

	*rss_bytes = *cpu_ns = 0;
	ret = qp_proc_file_line(getpid(), "statm", line, sizeof(line));
	if (ret)
		return ret;
	if (qp_statm_parse_rss(line, &pages) || psz <= 0)
		return -EINVAL;
	*rss_bytes = pages * (uint64_t)psz;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return -errno;
	*cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

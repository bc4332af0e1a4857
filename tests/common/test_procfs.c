/* test_procfs.c - procfs: maps text with a path holding spaces, a deleted
 * file, anonymous and special mappings, malformed and overflowing lines,
 * unsorted and empty input; stat lines whose comm holds spaces and ')';
 * and the live readers on /proc/self. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/procfs.h"
#include "testlib.h"

static const char maps_text[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234567                    /usr/bin/my prog\n"
	"55d0c0a02000-55d0c0a05000 r-xp 00002000 08:01 1234567                    /usr/bin/my prog\n"
	"7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 \n"
	"7f1e2d000000-7f1e2d100000 r-xp 00010000 fd:00 42                         /tmp/lib.so (deleted)\n"
	"garbage line\n"
	"\n"
	"7f1e2e000000-7f1e2d000000 r-xp 00000000 00:00 0\n"		/* end < start */
	"zzzz-7f1e2f000000 r-xp 00000000 00:00 0\n"			/* bad start */
	"1ffffffffffffffff-2ffffffffffffffff r-xp 00000000 00:00 0\n"	/* overflow */
	"7f0000000000-7f0000001000 r-xp 00000000 00:00 99999999999999999999999 /ovf\n"
	"7f0000000000-7f0000001000 rwzp 00000000 00:00 1 /badperms\n"
	"7f0000000000-7f0000001000 r-xp 00000000 00:00 1x /badinode\n"
	"7f0000000000-7f0000001000 r-xp 00000000 0000 1 /baddev\n"
	"7f0000000000 r-xp 00000000 00:00 1 /noend\n"
	"7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

static void test_maps_parse(void)
{
	struct qp_maps m = { 0 };
	const struct qp_map *f;

	CHECK_INT(qp_maps_parse(maps_text, strlen(maps_text), &m), 0);
	CHECK_INT(m.n, 6);
	if (m.n != 6)
		goto out;
	CHECK(m.v[0].start == 0x55d0c0a00000ull && m.v[0].end == 0x55d0c0a02000ull);
	CHECK_STR(m.v[0].perms, "r--p");
	CHECK_STR(m.v[0].path, "/usr/bin/my prog");
	CHECK_INT(m.v[0].inode, 1234567);
	CHECK_STR(m.v[1].perms, "r-xp");
	CHECK_INT(m.v[1].offset, 0x2000);
	CHECK_STR(m.v[1].path, "/usr/bin/my prog");
	CHECK_STR(m.v[2].path, "");
	CHECK_STR(m.v[2].perms, "rw-p");
	CHECK_INT(m.v[2].inode, 0);
	CHECK_STR(m.v[3].path, "/tmp/lib.so (deleted)");
	CHECK_INT(m.v[3].offset, 0x10000);
	CHECK_INT(m.v[3].inode, 42);
	CHECK_STR(m.v[4].path, "[stack]");
	CHECK_STR(m.v[5].path, "[vsyscall]");
	CHECK(m.v[5].start == 0xffffffffff600000ull);
	CHECK_STR(m.v[5].perms, "--xp");

	f = qp_maps_find(&m, 0x55d0c0a02000ull);
	CHECK(f == &m.v[1]);
	f = qp_maps_find(&m, 0x55d0c0a04fffull);
	CHECK(f == &m.v[1]);
	CHECK(qp_maps_find(&m, 0x55d0c0a05000ull) == NULL); /* end is exclusive */
	CHECK(qp_maps_find(&m, 0x1000) == NULL);
	CHECK(qp_maps_find(&m, 0x7f1e2d0fffffull) == &m.v[3]);
	CHECK(qp_maps_find(&m, UINT64_MAX) == NULL);
	CHECK(qp_maps_find(NULL, 0) == NULL);
out:
	qp_maps_free(&m);
	CHECK(m.n == 0 && m.v == NULL);
	qp_maps_free(&m); /* twice is fine */
}

/* A forked child that exited is adopted with its parent's mappings. */
static void test_maps_copy(void)
{
	struct qp_maps m = { 0 }, c, e = { 0 };
	size_t i;

	CHECK_INT(qp_maps_parse(maps_text, strlen(maps_text), &m), 0);
	CHECK_INT(qp_maps_copy(&m, &c), 0);
	CHECK_INT(c.n, m.n);
	for (i = 0; i < c.n && i < m.n; i++) {
		CHECK(c.v[i].start == m.v[i].start && c.v[i].end == m.v[i].end);
		CHECK(c.v[i].offset == m.v[i].offset && c.v[i].inode == m.v[i].inode);
		CHECK_STR(c.v[i].perms, m.v[i].perms);
		CHECK_STR(c.v[i].path, m.v[i].path);
		CHECK(c.v[i].path != m.v[i].path);	/* its own strings */
	}
	qp_maps_free(&m);
	CHECK(qp_maps_find(&c, 0x55d0c0a02000ull) == &c.v[1]);	/* still valid */
	qp_maps_free(&c);
	CHECK_INT(qp_maps_copy(&e, &c), 0);	/* empty */
	CHECK_INT(c.n, 0);
	qp_maps_free(&c);
}

static void test_maps_edge(void)
{
	static const char unsorted[] = "3000-4000 r-xp 00000000 00:00 0 /b\n"
				       "1000-2000 r-xp 00000000 00:00 0 /a\n";
	struct qp_maps m = { 0 };
	char *big;
	size_t i, off = 0;

	CHECK_INT(qp_maps_parse("", 0, &m), 0);
	CHECK_INT(m.n, 0);
	CHECK_INT(qp_maps_parse("\n\n", 2, &m), 0);
	CHECK_INT(m.n, 0);
	CHECK_INT(qp_maps_parse("garbage\n", 8, &m), -EINVAL);
	CHECK_INT(qp_maps_parse(NULL, 0, &m), 0);
	/* The length is the limit, not the NUL: the second line is cut. */
	CHECK_INT(qp_maps_parse(unsorted, 36, &m), 0);
	CHECK_INT(m.n, 1);
	CHECK_STR(m.n ? m.v[0].path : NULL, "/b");
	qp_maps_free(&m);

	CHECK_INT(qp_maps_parse(unsorted, strlen(unsorted), &m), 0);
	CHECK_INT(m.n, 2);
	CHECK_STR(m.n == 2 ? m.v[0].path : NULL, "/a");
	CHECK(qp_maps_find(&m, 0x3500) && !strcmp(qp_maps_find(&m, 0x3500)->path, "/b"));
	qp_maps_free(&m);

	/* Many lines: the array grows, lookups stay right. */
	big = malloc(20000 * 64);
	for (i = 0; i < 20000; i++)
		off += (size_t)sprintf(big + off, "%zx-%zx r--p 00000000 00:00 %zu /f%zu\n",
				       (i + 1) * 0x10000, (i + 1) * 0x10000 + 0x1000, i, i);
	CHECK_INT(qp_maps_parse(big, off, &m), 0);
	CHECK_INT(m.n, 20000);
	CHECK(qp_maps_find(&m, 12345 * 0x10000 + 0x10800) &&
	      qp_maps_find(&m, 12345 * 0x10000 + 0x10800)->inode == 12345);
	CHECK(qp_maps_find(&m, 12345 * 0x10000 + 0x11000) == NULL);
	qp_maps_free(&m);
	free(big);
}

static void test_stat(void)
{
	uint64_t t = 7;

	CHECK_INT(qp_stat_parse_starttime("1234 (bash) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 "
					  "20 0 1 0 987654 12345678 300 18446744073709551615\n", &t), 0);
	CHECK_INT(t, 987654);
	/* comm with spaces and ')' — only the last ')' counts. */
	CHECK_INT(qp_stat_parse_starttime("99 (my (weird) proc) S 1 99 99 0 -1 0 0 0 0 0 0 0 0 0 "
					  "20 0 1 0 555 0 0\n", &t), 0);
	CHECK_INT(t, 555);
	/* A comm that imitates the fields: "x) S 1 1 ... 777". */
	CHECK_INT(qp_stat_parse_starttime("5 (x) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 777) R 1 5 5 0 -1 0 "
					  "0 0 0 0 0 0 0 0 20 0 1 0 31337 0 0", &t), 0);
	CHECK_INT(t, 31337);
	/* Starttime is the last field present. */
	CHECK_INT(qp_stat_parse_starttime("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42", &t), 0);
	CHECK_INT(t, 42);
	t = 7;
	CHECK_INT(qp_stat_parse_starttime("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0", &t), -EINVAL);
	CHECK_INT(qp_stat_parse_starttime("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4x 0", &t), -EINVAL);
	CHECK_INT(qp_stat_parse_starttime("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -4 0", &t), -EINVAL);
	CHECK_INT(qp_stat_parse_starttime("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
					  "99999999999999999999999 0", &t), -EINVAL);
	CHECK_INT(qp_stat_parse_starttime("1 (a) S 1  1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42", &t), -EINVAL);
	CHECK_INT(qp_stat_parse_starttime("1 a S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42", &t), -EINVAL);
	CHECK_INT(qp_stat_parse_starttime("", &t), -EINVAL);
	CHECK_INT(qp_stat_parse_starttime(NULL, &t), -EINVAL);
	CHECK_INT(t, 7);
}

static void test_self(void)
{
	struct qp_maps m = { 0 };
	const struct qp_map *f;
	char comm[64], exe[4096], tiny[4];
	uint64_t st = 0, st2 = 0;
	int pid = getpid();
	const char *slash;

	CHECK_INT(qp_proc_comm(pid, comm, sizeof(comm)), 0);
	CHECK_STR(comm, "test_procfs");
	CHECK_INT(qp_proc_comm(pid, tiny, sizeof(tiny)), -ENAMETOOLONG);
	CHECK_INT(qp_proc_exe(pid, exe, sizeof(exe)), 0);
	slash = strrchr(exe, '/');
	CHECK_STR(slash, "/test_procfs");
	CHECK_INT(qp_proc_exe(pid, tiny, sizeof(tiny)), -ENAMETOOLONG);
	CHECK_INT(qp_proc_starttime(pid, &st), 0);
	CHECK(st > 0);
	CHECK_INT(qp_proc_starttime(pid, &st2), 0);
	CHECK_INT(st2, st);
	CHECK_INT(qp_proc_starttime(1, &st2), 0);
	CHECK(st2 <= st);

	CHECK_INT(qp_maps_read(pid, &m), 0);
	CHECK(m.n > 5);
	f = qp_maps_find(&m, (uint64_t)(uintptr_t)&test_self);
	CHECK(f != NULL);
	if (f) {
		CHECK(f->perms[2] == 'x');
		CHECK_STR(f->path, exe);
	}
	f = qp_maps_find(&m, (uint64_t)(uintptr_t)&m);
	CHECK(f && !strcmp(f->path, "[stack]"));
	qp_maps_free(&m);

	/* Beyond pid_max (at most 2^22): never a process. */
	CHECK_INT(qp_maps_read(0x3fffffff, &m), -ESRCH);
	CHECK_INT(qp_proc_comm(0x3fffffff, comm, sizeof(comm)), -ESRCH);
	CHECK_INT(qp_proc_exe(0x3fffffff, exe, sizeof(exe)), -ESRCH);
	CHECK_INT(qp_proc_starttime(0x3fffffff, &st), -ESRCH);
	CHECK_INT(qp_maps_read(0, &m), -EINVAL);
	CHECK_INT(qp_proc_comm(-1, comm, sizeof(comm)), -EINVAL);
}

/* /proc/self/statm: the resident pages are field 2; and this process's own. */
static void test_statm(void)
{
	uint64_t pages = 0, rss = 0, cpu = 0;

	CHECK_INT(qp_statm_parse_rss("2345 678 90 1 0 300 0", &pages), 0);
	CHECK_INT(pages, 678);
	CHECK_INT(qp_statm_parse_rss("2345", &pages), -EINVAL);
	CHECK_INT(qp_statm_parse_rss("x 1", &pages), -EINVAL);
	CHECK_INT(qp_statm_parse_rss("1  2", &pages), -EINVAL);
	CHECK_INT(qp_proc_self_usage(&rss, &cpu), 0);
	CHECK(rss > 0 && rss % 4096 == 0);
	CHECK(cpu > 0);
}

int main(void)
{
	test_statm();
	test_maps_parse();
	test_maps_copy();
	test_maps_edge();
	test_stat();
	test_self();
	return test_done("test_procfs");
}

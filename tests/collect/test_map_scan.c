/* test_map_scan.c - the full map read both polls fall back on
 * (qp_map_scan in daemon/collect/dirty_keys.c), on maps made here: a hash
 * map read by batches, the same by batches of one (a hash bucket of two
 * entries answers ENOSPC: the key-by-key walk takes over), an LPM trie
 * (the kernel's generic batches, whose token is a whole key, not a hash
 * map's u32 bucket), an error of the callback, an empty map. Needs root and BPF: exit 77 (skipped) without them. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collect_internal.h"
#include "testlib.h"

#define N 3000
#define NTRIE 500

struct key {
	__u32 a, b;
};

struct val {
	__u64 x, y;
};

struct trie_key {
	__u32 prefixlen;
	__u32 addr;
};

struct seen {
	unsigned calls, bad, fail_at;
	unsigned char hits[N];
};

/* a hash entry: key {i, ~i}, value {i * 3, i + 7} */
static int put_hash(void *ctx, const void *key, const void *val)
{
	struct seen *s = ctx;
	struct key k;
	struct val v;

	memcpy(&k, key, sizeof(k));
	memcpy(&v, val, sizeof(v));
	s->calls++;
	if (s->fail_at && s->calls == s->fail_at)
		return -E2BIG;
	if (k.a >= N || k.b != ~k.a || v.x != k.a * 3ull || v.y != k.a + 7ull)
		s->bad++;
	else if (s->hits[k.a] < 255)
		s->hits[k.a]++;
	return 0;
}

/* a trie entry: key {32, i}, value {i, 0} */
static int put_trie(void *ctx, const void *key, const void *val)
{
	struct seen *s = ctx;
	struct trie_key k;
	struct val v;

	memcpy(&k, key, sizeof(k));
	memcpy(&v, val, sizeof(v));
	s->calls++;
	if (k.prefixlen != 32 || k.addr >= NTRIE || v.x != k.addr || v.y)
		s->bad++;
	else if (s->hits[k.addr] < 255)
		s->hits[k.addr]++;
	return 0;
}

/* how many of the first N entries were put exactly once, at least once */
static void count_hits(const struct seen *s, unsigned n, unsigned *once, unsigned *any)
{
	unsigned i;

	*once = *any = 0;
	for (i = 0; i < n; i++) {
		*once += s->hits[i] == 1;
		*any += s->hits[i] >= 1;
	}
}

int main(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, trie_opts, .map_flags = BPF_F_NO_PREALLOC);
	static struct seen s;
	unsigned once, any;
	uint64_t nread;
	int fd, tfd, efd;
	__u32 i;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: needs root for BPF\n");
		return 77;
	}
	libbpf_set_print(NULL);
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "qp_scan_t", sizeof(struct key), sizeof(struct val), N, NULL);
	tfd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "qp_scan_trie", sizeof(struct trie_key), sizeof(struct val),
			     NTRIE, &trie_opts);
	efd = bpf_map_create(BPF_MAP_TYPE_HASH, "qp_scan_e", sizeof(struct key), sizeof(struct val), 16, NULL);
	if (fd < 0 || tfd < 0 || efd < 0) {
		fprintf(stderr, "SKIP: cannot create BPF maps: %s\n", strerror(errno));
		return 77;
	}
	for (i = 0; i < N; i++) {
		struct key k = { i, ~i };
		struct val v = { i * 3ull, i + 7ull };

		CHECK_INT(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST), 0);
	}
	for (i = 0; i < NTRIE; i++) {
		struct trie_key k = { 32, i };
		struct val v = { i, 0 };

		CHECK_INT(bpf_map_update_elem(tfd, &k, &v, BPF_NOEXIST), 0);
	}

	/* by batches: every entry once, each counted once */
	nread = 0;
	CHECK_INT(qp_map_scan(fd, sizeof(struct key), sizeof(struct val), 1024, put_hash, &s, &nread), 0);
	count_hits(&s, N, &once, &any);
	CHECK_INT(s.calls, N);
	CHECK_INT(s.bad, 0);
	CHECK_INT(once, N);
	CHECK_INT(nread, N);

	/* batches of one: ENOSPC at the first bucket of two, then the walk
	 * reads every entry (again those the batches read: puts overwrite) */
	memset(&s, 0, sizeof(s));
	nread = 0;
	CHECK_INT(qp_map_scan(fd, sizeof(struct key), sizeof(struct val), 1, put_hash, &s, &nread), 0);
	count_hits(&s, N, &once, &any);
	CHECK_INT(s.bad, 0);
	CHECK_INT(any, N);
	CHECK_INT(nread, s.calls);
	CHECK(s.calls >= N && s.calls < 2 * N);

	/* an LPM trie: batches of 64 whose token is an 8-byte key (a u32 token
	 * would be overrun, and cut short would loop), every entry once */
	memset(&s, 0, sizeof(s));
	nread = 0;
	CHECK_INT(qp_map_scan(tfd, sizeof(struct trie_key), sizeof(struct val), 64, put_trie, &s, &nread), 0);
	count_hits(&s, NTRIE, &once, &any);
	CHECK_INT(s.calls, NTRIE);
	CHECK_INT(s.bad, 0);
	CHECK_INT(once, NTRIE);
	CHECK_INT(nread, NTRIE);

	/* the callback's error ends the scan and is returned */
	memset(&s, 0, sizeof(s));
	s.fail_at = 10;
	CHECK_INT(qp_map_scan(fd, sizeof(struct key), sizeof(struct val), 1024, put_hash, &s, NULL), -E2BIG);
	CHECK_INT(s.calls, 10);
	memset(&s, 0, sizeof(s));
	s.fail_at = 10;
	CHECK_INT(qp_map_scan(tfd, sizeof(struct trie_key), sizeof(struct val), 64, put_hash, &s, NULL), -E2BIG);
	CHECK_INT(s.calls, 10);

	/* an empty map; a batch of none is refused */
	memset(&s, 0, sizeof(s));
	nread = 0;
	CHECK_INT(qp_map_scan(efd, sizeof(struct key), sizeof(struct val), 1024, put_hash, &s, &nread), 0);
	CHECK_INT(s.calls, 0);
	CHECK_INT(nread, 0);
	CHECK_INT(qp_map_scan(efd, sizeof(struct key), sizeof(struct val), 0, put_hash, &s, NULL), -EINVAL);

	close(fd);
	close(tfd);
	close(efd);
	return test_done("map_scan");
}

/* test_ring_tnames.c - the ring collector's thread names by tid and start
 * time (daemon/collect/ring_read.c): a record is named by the thread that
 * had the tid at its time, a tid taken again never gives a record the
 * earlier thread's name, and a live thread not noted yet is not named by
 * an older entry. */
#include <string.h>
#include "collect/ring_internal.h"
#include "testlib.h"

#define MS 1000000ull

static const char *at(const struct ring_tnames *t, uint64_t at_ns, uint64_t live)
{
	const char *c = qp_ring_tnames_at(t, at_ns, live);

	return c ? c : "(none)";
}

int main(void)
{
	struct ring_tnames t;
	char c[16];
	int i;

	memset(&t, 0, sizeof(t));
	CHECK_STR(at(&t, 0, 0), "(none)");
	memset(c, 0, sizeof(c));
	strcpy(c, "old-thread");
	qp_ring_tnames_note(&t, 100 * MS, c);
	CHECK_INT(t.n, 1);
	/* the same thread read again, renamed meanwhile: one entry, the new name */
	strcpy(c, "old-renamed");
	qp_ring_tnames_note(&t, 100 * MS, c);
	CHECK_INT(t.n, 1);
	CHECK_STR(at(&t, 150 * MS, 100 * MS), "old-renamed");
	/* a record before any thread of the tid had started: nobody's */
	CHECK_STR(at(&t, 50 * MS, 0), "(none)");
	/* the tid taken again by a thread started at 300 ms, not noted yet:
	 * its records are not named by the old one; the old one's still are */
	CHECK_STR(at(&t, 350 * MS, 300 * MS), "(none)");
	CHECK_STR(at(&t, 0, 300 * MS), "(none)");
	CHECK_STR(at(&t, 200 * MS, 300 * MS), "old-renamed");
	/* noted: each record by its own thread */
	memset(c, 0, sizeof(c));
	strcpy(c, "new-thread");
	qp_ring_tnames_note(&t, 300 * MS, c);
	CHECK_INT(t.n, 2);
	CHECK_STR(at(&t, 350 * MS, 300 * MS), "new-thread");
	CHECK_STR(at(&t, 350 * MS, 0), "new-thread");
	CHECK_STR(at(&t, 0, 0), "new-thread");
	CHECK_STR(at(&t, 200 * MS, 300 * MS), "old-renamed");
	CHECK_STR(at(&t, 200 * MS, 0), "old-renamed");
	/* a thread found late (between the two) goes in start order */
	strcpy(c, "middle");
	qp_ring_tnames_note(&t, 250 * MS, c);
	CHECK_INT(t.n, 3);
	CHECK_STR(at(&t, 260 * MS, 300 * MS), "middle");
	CHECK_STR(at(&t, 240 * MS, 300 * MS), "old-renamed");
	/* full: the oldest goes, the newest stay */
	for (i = 0; i < RING_NAMES_PER_TID; i++) {
		snprintf(c, sizeof(c), "t%d", i);
		qp_ring_tnames_note(&t, (400 + 100 * (uint64_t)i) * MS, c);
	}
	CHECK_INT(t.n, RING_NAMES_PER_TID);
	CHECK_STR(at(&t, 450 * MS, 0), "t0");
	CHECK_STR(at(&t, 10000 * MS, 0), "t3");
	CHECK_STR(at(&t, 350 * MS, 0), "(none)");
	return test_done("unit_ring_tnames");
}

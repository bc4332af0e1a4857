/* phases.h - the phases of qprofd's start-up and shutdown, timed for the
 * log: where the time goes (bench/lifecycle.sh reads these lines). */
#ifndef QPROF_PHASES_H
#define QPROF_PHASES_H
#include <stddef.h>
#include <stdint.h>

#define MAX_PHASES 24

struct phases {
	const char *name[MAX_PHASES];
	uint64_t ns[MAX_PHASES];
	size_t n;
	uint64_t t0, last;
};

/* Start timing (forgets the phases before). */
void phase_begin(struct phases *p);
/* The phase NAME (a static string) ends now. */
void phase_mark(struct phases *p, const char *name);
/* "WHAT in T ms (ms: name t, ...)" at info. */
void phase_log(const struct phases *p, const char *what);
#endif

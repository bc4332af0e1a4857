/* collect_calibrate.h - the BPF collector's own cost inside a measured
 * duration, measured at start: qprofd attaches its scope programs to an
 * empty QPROF_SCOPE of its own binary, runs it many times, records every
 * instance through a trace session and takes the median as the part of
 * the enter and exit probes that falls between their two timestamps. That
 * correction is then subtracted (in BPF) from every measured duration. */
#ifndef QPROF_COLLECT_CALIBRATE_H
#define QPROF_COLLECT_CALIBRATE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qp_scopes;
struct qp_tracer;

struct qp_calibration {
	bool done;		/* false: no correction (err says why, or turned off) */
	uint64_t correction_ns;	/* subtracted from every duration */
	uint64_t samples;	/* empty scopes measured */
	uint64_t p10_ns, p50_ns, p90_ns;	/* their measured durations */
	uint64_t mean_ns;	/* their mean, the slowest 1 % left out */
	char error[160];
};

/* Measure and apply the correction (qp_scopes_set_calibration). ROUNDS x
 * ITERS empty scopes on the calling thread. 0 or -errno (out->error says
 * why; the correction stays 0). */
int qp_calibrate(struct qp_scopes *s, struct qp_tracer *t, unsigned int rounds, unsigned int iters,
		 struct qp_calibration *out);
#endif

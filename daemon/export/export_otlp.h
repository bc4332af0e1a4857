/* export_otlp.h - profiles (model_cpu.h) as one OpenTelemetry
 * ExportProfilesServiceRequest (opentelemetry-proto, profiles
 * v1development, the signal's Alpha), protobuf, uncompressed: the body of
 * a POST to /v1development/profiles. A pure function like the other
 * exporters (export.h).
 *
 * One ResourceProfiles per resource (a process: its attributes given by
 * the caller), one ScopeProfiles "qprof" in each, one Profile per
 * (profile, value) the caller lists, holding that resource's samples only.
 * Every table of the shared dictionary starts with its zero element and
 * holds no duplicates (entries are deduplicated by their encoded bytes).
 * A sample's attributes: thread.name and thread.id when the thread is
 * known, and inside a qprof scope qprof.scope (the innermost, a string)
 * and qprof.scopes (all open ones, innermost first, an array of strings).
 * Locations are leaf first; a frame and the frames inlined into it are one
 * Location whose lines run innermost first. Mappings carry the build id as
 * the attribute process.executable.build_id.gnu. A sample taken while a
 * QPROF_SPAN was open on its thread has the attribute qprof.span (the
 * span's name) and a Link: trace_id 16 zero bytes (qprof's spans belong to
 * no trace), span_id the span's id, 8 bytes, most significant first. */
#ifndef QPROF_EXPORT_OTLP_H
#define QPROF_EXPORT_OTLP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/buf.h"
#include "model/model_cpu.h"

struct qp_otlp_attr {
	const char *key;
	const char *str;	/* NULL: the number */
	int64_t num;
};

/* One Profile: P's samples of the resource's pid, weighed by value VALUE
 * (P->nvalues > 0) or by count * WEIGHT (no values: count, or with WEIGHT
 * the period, for nanoseconds). */
struct qp_otlp_profile {
	const struct qp_cpu_profile *p;
	size_t value;
	uint64_t weight;		/* 0: 1 */
	const char *type, *unit;	/* sample_type */
	const char *period_type, *period_unit;
	int64_t period;
};

struct qp_otlp_resource {
	uint32_t pid;			/* the samples of this process (0: all) */
	const struct qp_otlp_attr *attrs;
	size_t nattrs;
	const struct qp_otlp_profile *profiles;
	size_t nprofiles;
};

/* The request for resources R[0..N) into OUT (appended); SCOPE_VERSION
 * names qprof's version. 0 or -ENOMEM. Profiles with no sample of a
 * resource are left out of it. */
int qp_export_otlp(const struct qp_otlp_resource *r, size_t n, const char *scope_version,
		   struct qp_buf *out);
#endif

/* pb_wire.h - the protobuf wire format both protobuf exporters write
 * (export_pprof.c: pprof; metrics_writer.c: Prometheus' protobuf
 * exposition): varints, fields by wire type, submessages built in a
 * scratch buffer. A failed allocation is B's `failed`, as in qp_buf. */
#ifndef QPROF_PB_WIRE_H
#define QPROF_PB_WIRE_H
#include <stddef.h>
#include <stdint.h>
#include "common/buf.h"

void qp_pb_varint(struct qp_buf *b, uint64_t v);
/* A varint field, written even when V is 0 (proto2). */
void qp_pb_uint(struct qp_buf *b, int field, uint64_t v);
/* A double field (wire type 1, little-endian). */
void qp_pb_double(struct qp_buf *b, int field, double v);
/* A fixed64 field (wire type 1, little-endian). */
void qp_pb_fixed64(struct qp_buf *b, int field, uint64_t v);
/* A length-delimited field of the N bytes at P. */
void qp_pb_bytes(struct qp_buf *b, int field, const void *p, size_t n);
/* Append scratch M as submessage FIELD of B and empty M. */
void qp_pb_msg(struct qp_buf *b, int field, struct qp_buf *m);
/* The zigzag form of a signed value (sint64). */
static inline uint64_t qp_pb_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
#endif

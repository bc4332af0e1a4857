/* pb_wire.c - see pb_wire.h: the protobuf wire format. */
#include <string.h>
#include "pb_wire.h"

void qp_pb_varint(struct qp_buf *b, uint64_t v)
{
	unsigned char x[10];
	size_t n = 0;

	do {
		x[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	qp_buf_add(b, x, n);
}

void qp_pb_uint(struct qp_buf *b, int field, uint64_t v)
{
	qp_pb_varint(b, (uint64_t)field << 3);
	qp_pb_varint(b, v);
}

void qp_pb_double(struct qp_buf *b, int field, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	qp_pb_fixed64(b, field, u);
}

void qp_pb_fixed64(struct qp_buf *b, int field, uint64_t u)
{
	unsigned char x[8];
	int i;

	for (i = 0; i < 8; i++)
		x[i] = (unsigned char)(u >> (8 * i));
	qp_pb_varint(b, (uint64_t)field << 3 | 1);
	qp_buf_add(b, x, sizeof(x));
}

void qp_pb_bytes(struct qp_buf *b, int field, const void *p, size_t n)
{
	qp_pb_varint(b, (uint64_t)field << 3 | 2);
	qp_pb_varint(b, n);
	if (n)
		qp_buf_add(b, p, n);
}

void qp_pb_msg(struct qp_buf *b, int field, struct qp_buf *m)
{
	qp_pb_bytes(b, field, m->data, m->len);
	b->failed |= m->failed;
	m->len = 0;
	m->failed = false;
}

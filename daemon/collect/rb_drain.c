/* rb_drain.c - see rb_drain.h: a BPF ring buffer and its drain thread. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "rb_drain.h"

int qp_rb_drain_start(struct qp_rb_drain *d, int ring_fd, ring_buffer_sample_fn on_record,
		      void *(*loop)(void *), void *ctx, const char *what, char *err, size_t errlen)
{
	int ret;

	d->rb = ring_buffer__new(ring_fd, on_record, ctx, NULL);
	if (!d->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the %s ring buffer: %s", what, strerror(errno));
		return ret;
	}
	ret = -pthread_create(&d->thread, NULL, loop, ctx);
	if (ret) {
		snprintf(err, errlen, "cannot start the %s thread: %s", what, strerror(-ret));
		return ret;
	}
	d->started = true;
	return 0;
}

void qp_rb_drain_join(struct qp_rb_drain *d)
{
	if (d->started)
		pthread_join(d->thread, NULL);
	d->started = false;
	ring_buffer__free(d->rb);
	d->rb = NULL;
}

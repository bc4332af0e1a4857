/* model_src.c - see model_src.h: a window's wait, with what its caller
 * passed in (the stop flag, the reader's test). */
#include <time.h>
#include "model_src.h"

bool qp_model_wait(const struct qp_model_src *src, unsigned int seconds)
{
	unsigned int s;

	for (s = 0; s < seconds; s++) {
		if (src->stop) {
			if (!qp_stop_wait(src->stop, 1))
				return false;
		} else {
			struct timespec ts = { 1, 0 };

			while (nanosleep(&ts, &ts))
				;
		}
		if (src->gave_up && src->gave_up(src->gave_up_arg))
			return false;
	}
	return true;
}

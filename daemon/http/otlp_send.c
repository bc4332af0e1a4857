/* otlp_send.c - the OTLP push's sender thread (otlp_push.h): POSTs the
 * oldest request of the queue with libcurl, and on a failure puts it back
 * at the head with its next try's time, or drops it, counted. A 429 or 503
 * answer's Retry-After (seconds or an HTTP date) is waited when it is
 * longer than the back-off, up to RETRY_AFTER_MAX_S. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <curl/curl.h>
#include "otlp_internal.h"
#include "common/util.h"

static size_t discard(char *ptr, size_t size, size_t n, void *arg)
{
	(void)ptr;
	(void)arg;
	return size * n;
}

static int abort_on_stop(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t e)
{
	struct qp_otlp *p = arg;
	bool stop;

	(void)a, (void)b, (void)c, (void)e;
	pthread_mutex_lock(&p->lock);
	stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

/* The seconds of a Retry-After header line (delay-seconds or an HTTP
 * date), 0 when it is not one. */
static size_t retry_after(char *line, size_t size, size_t n, void *arg)
{
	static const char name[] = "retry-after:";
	size_t len = size * n, k = sizeof(name) - 1;
	uint64_t *out = arg;
	char v[128];
	int64_t secs;

	if (len <= k || len - k >= sizeof(v) || strncasecmp(line, name, k))
		return len;
	memcpy(v, line + k, len - k);
	v[len - k] = '\0';
	v[strcspn(v, "\r\n")] = '\0';
	if (!qp_parse_i64(v + strspn(v, " \t"), 0, INT64_MAX / 2, &secs)) {
		*out = (uint64_t)secs;
	} else {
		time_t when = curl_getdate(v + strspn(v, " \t"), NULL), now = time(NULL);

		*out = when > now ? (uint64_t)(when - now) : 0;
	}
	return len;
}

/* POST B; 0 done, 1 retry, 2 rejected. *WAIT_S: the Retry-After of a
 * 429 or 503 answer (0: none). */
static int post(struct qp_otlp *p, CURL *c, const struct batch *b, char *why, size_t whylen,
		uint64_t *wait_s)
{
	long status = 0;
	CURLcode rc;

	*wait_s = 0;
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, b->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, wait_s);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(why, whylen, "%s", curl_easy_strerror(rc));
		return 1;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 429 && status != 503)
		*wait_s = 0;	/* only a throttling answer is taken at its word */
	pthread_mutex_lock(&p->lock);
	p->last_status = status;
	p->throttled += status == 429 || status == 503;
	pthread_mutex_unlock(&p->lock);
	if (status >= 200 && status < 300)
		return 0;
	snprintf(why, whylen, "HTTP %ld from the receiver", status);
	return status == 429 || status >= 500 ? 1 : 2;
}

void *otlp_sender_main(void *arg)
{
	struct qp_otlp *p = arg;
	CURL *c = curl_easy_init();

	if (c) {
		curl_easy_setopt(c, CURLOPT_URL, p->url);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->headers);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)p->timeout_ms);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)p->timeout_ms);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, retry_after);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
	}
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct batch b;
		char why[256] = "cannot start libcurl";
		uint64_t wait_s = 0, delay_ns;
		int ret;

		while (!p->stop && !p->qn)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop)
			break;
		if (!otlp_wait_until(p, p->q[p->qhead].next_ns))
			break;
		if (!p->qn)	/* dropped while waiting (the queue filled) */
			continue;
		b = p->q[p->qhead];	/* sent out of the queue, without the lock */
		p->qhead = (p->qhead + 1) % p->qcap;
		p->qn--;
		pthread_mutex_unlock(&p->lock);
		ret = c ? post(p, c, &b, why, sizeof(why), &wait_s) : 1;
		pthread_mutex_lock(&p->lock);
		if (!ret) {
			p->pushes++;
			p->pushed_bytes += b.len;
			p->pushed_samples += b.samples;
			p->last_ok_ns = qp_now_ns();
			free(b.body);
			continue;
		}
		p->failures++;
		snprintf(p->last_error, sizeof(p->last_error), "%s", why);
		if (ret == 2) {
			otlp_drop(p, &b, &p->dropped_rejected);
		} else if (++b.tries >= MAX_TRIES || p->stop) {
			otlp_drop(p, &b, &p->dropped_tries);
		} else if (p->qn == p->qcap) {	/* no room to wait in: the oldest of all goes */
			otlp_drop(p, &b, &p->dropped_full);
		} else {	/* back at the head, after 1, 2, 4, 8 s or as the receiver asks */
			p->retries++;
			delay_ns = 1000000000ull << (b.tries - 1);
			if (wait_s) {
				wait_s = wait_s < RETRY_AFTER_MAX_S ? wait_s : RETRY_AFTER_MAX_S;
				p->last_retry_after_s = wait_s;
				if (wait_s * 1000000000ull > delay_ns) {
					delay_ns = wait_s * 1000000000ull;
					p->retry_after_honoured++;
				}
			}
			b.next_ns = qp_now_ns() + delay_ns;
			p->qhead = (p->qhead + p->qcap - 1) % p->qcap;
			p->q[p->qhead] = b;
			p->qn++;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}


/* SPDX-License-Identifier: MIT */
/* strategy.c - a mean-reversion strategy on a simulated market, marked for qprof.
 *
 * Each thread trades one simulated instrument: a deterministic random price
 * series (xorshift64* noise around a slowly drifting fair value, with rare
 * jumps), a 20-period moving average over a ring buffer, and the rule of the
 * tutorial: price more than 2% above the average -> SELL, more than 2% below
 * -> BUY, otherwise HOLD. Orders pass a risk check, go through a simulated
 * exchange and land in a small position/PnL book. A gateway thread, shared
 * by all instruments, takes each order off its instrument's wire ring,
 * waits for the simulated venue's acknowledgement and fill report (~30 us)
 * and reports them: the span "order_to_fill" (QPROF_SPAN_BEGIN on the
 * instrument's thread, its steps and QPROF_SPAN_END on the gateway's,
 * keyed by the order) measures that round trip across threads.
 *
 * It runs until SIGINT/SIGTERM (or --ticks N) and then prints a summary.
 * Nothing in here knows about the profiler: the QPROF_* markers are nops
 * until qprofd attaches. Then, with the default collector (the ring), each
 * marker writes a 16-byte record into its thread's ring in this process's
 * memory, which qprofd reads from outside; qprofd --collector bpf would
 * trap into a uprobe at each marker instead (tens of times dearer).
 *
 *   strategy [--ticks N] [--rate N] [--threads N] [--seed N]
 */
#define _GNU_SOURCE
#include <qprof/qprof.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MA_PERIOD 20       /* moving-average length, in ticks */
#define THRESHOLD 0.02     /* deviation from the average that triggers */
#define LOT 100            /* units per order */
#define MAX_POSITION 1000  /* |position| limit, in units */
#define MAX_NOTIONAL 2.0e5 /* per-order notional limit */
#define SPIN_NS 20000      /* pacing: sleep until this close, then spin */
#define WIRE_LEN 256       /* orders in flight to the gateway, per instrument */
#define VENUE_NS 30000     /* the simulated venue's acknowledgement latency */

static atomic_int stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- deterministic randomness ------------------------------------------ */

struct rng {
	uint64_t s;
};

static void rng_seed(struct rng *r, uint64_t seed)
{
	/* splitmix64 step, so that close seeds give unrelated streams and the
	 * state is never 0 */
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	r->s = z ? z : 1;
}

static inline uint64_t rng_next(struct rng *r) /* xorshift64* */
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

static inline double rng_uniform(struct rng *r) /* [0, 1) */
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

static inline double rng_normal(struct rng *r) /* ~N(0,1), Irwin-Hall of 4 */
{
	double s = rng_uniform(r) + rng_uniform(r) + rng_uniform(r) + rng_uniform(r);
	return (s - 2.0) * 1.7320508075688772; /* variance 4/12 -> 1 */
}

/* ---- one instrument: market, strategy, book ---------------------------- */

enum signal { SIGNAL_SELL = -1, SIGNAL_HOLD = 0, SIGNAL_BUY = 1 };

struct order {
	uint64_t id;
	int qty; /* > 0 buy, < 0 sell */
	double limit;
	unsigned char wire[32]; /* what would go to the exchange */
	uint32_t checksum;
};

struct book {
	long position; /* units, signed */
	double cash;
	uint64_t orders, fills, exchange_rejects, risk_rejects;
};

struct instrument {
	int id;
	char symbol[16];
	struct rng rng;
	double fair, price;
	double ring[MA_PERIOD];
	unsigned head, filled;
	uint64_t ticks, next_order_id;
	uint64_t signals[3]; /* indexed by signal + 1 */
	struct book book;
	uint64_t max_ticks; /* 0 = until stopped */
	uint64_t period_ns; /* 0 = as fast as possible */
	pthread_t thread;
	/* orders on the wire to the gateway: single producer (this thread),
	 * single consumer (the gateway) */
	uint64_t wire[WIRE_LEN];
	_Atomic uint32_t wire_head, wire_tail;
	uint64_t wire_full; /* orders not sent to the gateway: ring full */
};

/* BEGIN and END of a span must name the same string object. */
static const char ORDER_PATH[] __attribute__((unused)) = "order_path";
static const char ORDER_TO_FILL[] __attribute__((unused)) = "order_to_fill";

/* An order's id across threads: instrument in the top 16 bits. */
static uint64_t order_key(const struct instrument *in, uint64_t order_id)
{
	return (uint64_t)in->id << 48 | order_id;
}

static void market_step(struct instrument *in)
{
	struct rng *r = &in->rng;

	in->fair *= 1.0 + 0.0005 * rng_normal(r);
	in->price += 0.05 * (in->fair - in->price) + 0.004 * in->price * rng_normal(r);
	if (rng_uniform(r) < 0.002) /* news */
		in->price *= rng_uniform(r) < 0.5 ? 0.97 : 1.03;
	if (in->price < 1.0)
		in->price = 1.0;
}

static __attribute__((noinline)) enum signal generate_signal(struct instrument *in)
{
	QPROF_FUNC();
	double last = in->ring[(in->head + MA_PERIOD - 1) % MA_PERIOD];
	double ma;

	QPROF_VALUE("last_price", last);
	{
		QPROF_SCOPE("calc_ma");
		double sum = 0.0;
		for (unsigned i = 0; i < MA_PERIOD; i++)
			sum += in->ring[i];
		ma = sum / MA_PERIOD;
	}
	double deviation = (last - ma) / ma;
	QPROF_VALUE("deviation", deviation);

	enum signal sig = SIGNAL_HOLD;
	if (deviation > THRESHOLD)
		sig = SIGNAL_SELL; /* too far above the average: expect it to fall */
	else if (deviation < -THRESHOLD)
		sig = SIGNAL_BUY;
	if (sig != SIGNAL_HOLD) {
		QPROF_LOG("%s %s price=%.4f ma=%.4f deviation=%+.2f%%", in->symbol,
			  sig == SIGNAL_BUY ? "BUY" : "SELL", last, ma, deviation * 100.0);
		QPROF_MARK("signal_emitted");
	}
	return sig;
}

static __attribute__((noinline)) int risk_ok(const struct instrument *in, int qty)
{
	long after = in->book.position + qty;
	double notional = (qty < 0 ? -qty : qty) * in->price;

	return after <= MAX_POSITION && after >= -MAX_POSITION && notional <= MAX_NOTIONAL;
}

static __attribute__((noinline)) void on_fill(struct instrument *in, const struct order *o,
					      double px)
{
	in->book.position += o->qty;
	in->book.cash -= o->qty * px;
	in->book.fills++;
	QPROF_SCOPE_END(ORDER_PATH);
}

static __attribute__((noinline)) void on_exchange_reject(struct instrument *in)
{
	in->book.exchange_rejects++;
	QPROF_SCOPE_END(ORDER_PATH);
}

/* The simulated venue: fills at the touch plus a little slippage, unless the
 * slippage crosses the limit. */
static __attribute__((noinline)) void exchange_handle(struct instrument *in, const struct order *o)
{
	double slip = in->price * 0.0005 * rng_uniform(&in->rng);
	double px = o->qty > 0 ? in->price + slip : in->price - slip;

	if ((o->qty > 0 && px > o->limit) || (o->qty < 0 && px < o->limit))
		on_exchange_reject(in);
	else
		on_fill(in, o, px);
}

static __attribute__((noinline)) void send_order(struct instrument *in, int qty)
{
	QPROF_SCOPE_BEGIN(ORDER_PATH);
	struct order o = {
		.id = ++in->next_order_id,
		.qty = qty,
		.limit = qty > 0 ? in->price * 1.0004 : in->price * 0.9996,
	};
	/* encode and checksum, as a gateway would */
	memcpy(o.wire, &o.id, sizeof(o.id));
	memcpy(o.wire + 8, &o.qty, sizeof(o.qty));
	memcpy(o.wire + 12, &o.limit, sizeof(o.limit));
	memcpy(o.wire + 20, in->symbol, 12);
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < sizeof(o.wire); i++)
		h = (h ^ o.wire[i]) * 16777619u;
	o.checksum = h;
	in->book.orders++;
	exchange_handle(in, &o);
	/* to the gateway, which reports the venue's answer on its own thread */
	uint32_t head = atomic_load_explicit(&in->wire_head, memory_order_relaxed);
	if (head - atomic_load_explicit(&in->wire_tail, memory_order_acquire) >= WIRE_LEN) {
		in->wire_full++;
		return;
	}
	QPROF_SPAN_BEGIN(ORDER_TO_FILL, order_key(in, o.id));
	in->wire[head % WIRE_LEN] = o.id;
	atomic_store_explicit(&in->wire_head, head + 1, memory_order_release);
}

static __attribute__((noinline)) void on_tick(struct instrument *in)
{
	QPROF_FUNC();
	market_step(in);
	in->ring[in->head] = in->price;
	in->head = (in->head + 1) % MA_PERIOD;
	in->ticks++;
	if (in->filled < MA_PERIOD) {
		in->filled++;
		return;
	}

	enum signal sig = generate_signal(in);
	in->signals[sig + 1]++;
	if (sig == SIGNAL_HOLD)
		return;

	int qty = sig == SIGNAL_BUY ? LOT : -LOT;
	int ok;
	{
		QPROF_SCOPE("risk_check");
		ok = risk_ok(in, qty);
	}
	if (!ok) {
		in->book.risk_rejects++;
		return;
	}
	send_order(in, qty);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void pace_until(uint64_t deadline)
{
	uint64_t now = now_ns();

	if (deadline > now + SPIN_NS) {
		uint64_t wake = deadline - SPIN_NS;
		struct timespec ts = { .tv_sec = (time_t)(wake / 1000000000u),
				       .tv_nsec = (long)(wake % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
		       !atomic_load_explicit(&stop_requested, memory_order_relaxed))
			;
	}
	while (now_ns() < deadline &&
	       !atomic_load_explicit(&stop_requested, memory_order_relaxed))
		cpu_relax();
}

static void *run_instrument(void *arg)
{
	struct instrument *in = arg;
	uint64_t next = now_ns();

	while (!atomic_load_explicit(&stop_requested, memory_order_relaxed) &&
	       (in->max_ticks == 0 || in->ticks < in->max_ticks)) {
		on_tick(in);
		if (in->period_ns) {
			next += in->period_ns;
			uint64_t now = now_ns();
			if (now > next + 100000000u) /* 100 ms behind: do not burst */
				next = now;
			pace_until(next);
		}
	}
	return NULL;
}

/* ---- the gateway: one thread for every instrument's orders -------------- */

struct gateway {
	struct instrument *ins;
	uint64_t n;
	atomic_int stop;	/* set once the instrument threads are done */
	uint64_t reports;
	pthread_t thread;
};

static void sleep_ns(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

static __attribute__((noinline)) void gateway_report(struct instrument *in, uint64_t order_id)
{
	uint64_t key = order_key(in, order_id);

	QPROF_SPAN_STEP(ORDER_TO_FILL, key, "on_wire");
	sleep_ns(VENUE_NS);	/* the venue's round trip */
	QPROF_SPAN_STEP(ORDER_TO_FILL, key, "acked");
	QPROF_SPAN_END(ORDER_TO_FILL, key);
}

static void *run_gateway(void *arg)
{
	struct gateway *g = arg;

	for (;;) {
		int idle = 1;

		for (uint64_t i = 0; i < g->n; i++) {
			struct instrument *in = &g->ins[i];
			uint32_t tail = atomic_load_explicit(&in->wire_tail, memory_order_relaxed);

			if (atomic_load_explicit(&in->wire_head, memory_order_acquire) == tail)
				continue;
			idle = 0;
			gateway_report(in, in->wire[tail % WIRE_LEN]);
			atomic_store_explicit(&in->wire_tail, tail + 1, memory_order_release);
			g->reports++;
		}
		if (idle) {
			if (atomic_load(&g->stop))
				return NULL; /* drained after the last order */
			sleep_ns(50000);
		}
	}
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [--ticks N] [--rate N] [--threads N] [--seed N]\n"
		"\n"
		"A mean-reversion strategy (%d-period moving average, %.0f%% threshold)\n"
		"on simulated prices, instrumented with qprof markers. Runs until\n"
		"SIGINT/SIGTERM or N ticks, then prints a summary.\n"
		"\n"
		"  --ticks N    stop after N ticks per thread (default: run until stopped)\n"
		"  --rate N     ticks per second per thread, 0 = flat out (default 2000)\n"
		"  --threads N  threads, each trading its own instrument (default 1)\n"
		"  --seed N     seed of the price series (default 1)\n"
		"  --help       this text\n",
		argv0, MA_PERIOD, THRESHOLD * 100.0);
}

static int parse_u64(const char *s, const char *what, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, "strategy: bad %s '%s'\n", what, s);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t ticks = 0, rate = 2000, threads = 1, seed = 1;
	static const struct option opts[] = {
		{ "ticks", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'r' },
		{ "threads", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "t:r:j:s:h", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 't': bad = parse_u64(optarg, "--ticks", UINT64_MAX, &ticks); break;
		case 'r': bad = parse_u64(optarg, "--rate", 1000000000u, &rate); break;
		case 'j': bad = parse_u64(optarg, "--threads", 256, &threads); break;
		case 's': bad = parse_u64(optarg, "--seed", UINT64_MAX, &seed); break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
		if (bad)
			return 2;
	}
	if (optind < argc || threads == 0) {
		usage(stderr, argv[0]);
		return 2;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct instrument *ins = calloc(threads, sizeof(*ins));
	if (!ins) {
		perror("strategy: calloc");
		return 1;
	}
	for (uint64_t i = 0; i < threads; i++) {
		struct instrument *in = &ins[i];
		in->id = (int)i;
		snprintf(in->symbol, sizeof(in->symbol), "SIM%02d", (int)i);
		rng_seed(&in->rng, seed * 1000003u + i);
		in->fair = in->price = 100.0;
		in->max_ticks = ticks;
		in->period_ns = rate ? 1000000000u / rate : 0;
	}

	printf("strategy: pid %d, %" PRIu64 " thread(s), %s%" PRIu64 " ticks/s per thread, "
	       "MA %d, threshold %.0f%%, seed %" PRIu64 "\n",
	       (int)getpid(), threads, rate ? "" : "unpaced, ", rate, MA_PERIOD,
	       THRESHOLD * 100.0, seed);
	fflush(stdout);

	uint64_t t0 = now_ns();
	uint64_t started = 0;
	struct gateway gw = { .ins = ins, .n = threads };
	int gw_err = pthread_create(&gw.thread, NULL, run_gateway, &gw);
	if (gw_err) {
		fprintf(stderr, "strategy: pthread_create: %s\n", strerror(gw_err));
		free(ins);
		return 1;
	}
	for (; started < threads; started++) {
		int err = pthread_create(&ins[started].thread, NULL, run_instrument, &ins[started]);
		if (err) {
			fprintf(stderr, "strategy: pthread_create: %s\n", strerror(err));
			atomic_store(&stop_requested, 1);
			break;
		}
	}
	for (uint64_t i = 0; i < started; i++)
		pthread_join(ins[i].thread, NULL);
	gw.n = started;
	atomic_store(&gw.stop, 1);
	pthread_join(gw.thread, NULL);
	double secs = (double)(now_ns() - t0) / 1e9;

	uint64_t total = 0;
	double pnl_total = 0.0;
	printf("\n%-6s %10s %8s %8s %8s %8s %8s %8s %8s %10s %12s\n", "symbol", "ticks", "buy",
	       "sell", "orders", "fills", "x-rej", "risk-rej", "position", "last", "pnl");
	for (uint64_t i = 0; i < started; i++) {
		const struct instrument *in = &ins[i];
		double pnl = in->book.cash + (double)in->book.position * in->price;
		total += in->ticks;
		pnl_total += pnl;
		printf("%-6s %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		       " %8" PRIu64 " %8" PRIu64 " %8ld %10.4f %12.2f\n",
		       in->symbol, in->ticks, in->signals[SIGNAL_BUY + 1],
		       in->signals[SIGNAL_SELL + 1], in->book.orders, in->book.fills,
		       in->book.exchange_rejects, in->book.risk_rejects, in->book.position,
		       in->price, pnl);
	}
	uint64_t wire_full = 0;
	for (uint64_t i = 0; i < started; i++)
		wire_full += ins[i].wire_full;
	printf("gateway: %" PRIu64 " orders reported, %" PRIu64 " not sent (wire full)\n", gw.reports,
	       wire_full);
	printf("\n%" PRIu64 " ticks in %.3f s (%.0f ticks/s), pnl %.2f%s\n", total, secs,
	       secs > 0 ? (double)total / secs : 0.0, pnl_total,
	       atomic_load(&stop_requested) ? ", stopped by signal" : "");
	free(ins);
	return started == threads ? 0 : 1;
}

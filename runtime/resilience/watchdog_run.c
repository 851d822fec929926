/* watchdog_run.c: the communication watchdog's thread: samples the bracket
 * comm_mpi.c keeps (watchdog.h) every period on the monotonic clock and,
 * when watchdog.c says a call waited past the deadline, writes one line to
 * stderr and ends the process with LLMT_EXIT_TRANSIENT. */
#include "watchdog.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "llmt/exitcodes.h"

struct llmt_wd_slot llmt_wd_slot_;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int running, stop, rank;
	double timeout;
	_Atomic int64_t limit_us;   /* the deadline in force, 0: disarmed */
} wd = { .mu = PTHREAD_MUTEX_INITIALIZER };

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The call in flight as seq (odd) names it; 0 when it changed meanwhile. */
static int sample(uint64_t *seq, llmt_wd_call *c)
{
	struct llmt_wd_slot *s = &llmt_wd_slot_;
	uint64_t a = atomic_load_explicit(&s->seq, memory_order_acquire);

	c->op = atomic_load_explicit(&s->op, memory_order_relaxed);
	c->group = atomic_load_explicit(&s->group, memory_order_relaxed);
	c->size = atomic_load_explicit(&s->size, memory_order_relaxed);
	c->peer = atomic_load_explicit(&s->peer, memory_order_relaxed);
	c->bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	*seq = a;
	return atomic_load_explicit(&s->seq, memory_order_relaxed) == a;
}

static void fire(const llmt_wd_call *c, double waited, double limit)
{
	char line[512];
	int n = llmt_wd_describe(line, sizeof(line), wd.rank, c, waited, limit, wd.timeout);

	if (n > 0) {
		size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
		ssize_t w = write(STDERR_FILENO, line, len);
		(void)w;
	}
	/* the main thread is blocked inside MPI: no exit handlers, no
	 * MPI_Finalize (it would wait for the lost peer too) */
	_exit(LLMT_EXIT_TRANSIENT);
}

static void *watch(void *arg)
{
	llmt_wd_obs obs = { 0, 0 };
	double period = llmt_wd_period(wd.timeout);

	(void)arg;
	pthread_mutex_lock(&wd.mu);
	while (!wd.stop) {
		llmt_wd_call c;
		uint64_t seq;
		double waited, limit;

		llmt_timedwait_s(&wd.cv, &wd.mu, CLOCK_MONOTONIC, period);
		if (wd.stop)
			break;
		if (!sample(&seq, &c))
			continue;   /* the call ended while read: nothing is stuck */
		limit = 1e-6 * (double)atomic_load(&wd.limit_us);
		waited = llmt_wd_observe(&obs, seq, mono(), limit);
		if (waited > 0)
			fire(&c, waited, limit);
	}
	pthread_mutex_unlock(&wd.mu);
	return NULL;
}

int llmt_timedwait_s(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clk, double s)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	ts.tv_sec += (time_t)s;
	ts.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_cond_timedwait(cv, mu, &ts);
}

int llmt_wd_start(double timeout_s, int rank)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	if (wd.running || !(timeout_s > 0))
		return 0;
	wd.timeout = timeout_s;
	wd.rank = rank;
	wd.stop = 0;
	atomic_store(&wd.limit_us, 0);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd.cv, &ca);
	pthread_condattr_destroy(&ca);
	/* signals (SIGUSR1/SIGTERM: preemption) stay with the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&wd.th, NULL, watch, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		fprintf(stderr, "llm-train: rank %d: cannot start the communication watchdog: %s\n", rank,
			strerror(rc));
		pthread_cond_destroy(&wd.cv);
		return -1;
	}
	wd.running = 1;
	return 0;
}

void llmt_wd_stop(void)
{
	if (!wd.running)
		return;
	pthread_mutex_lock(&wd.mu);
	wd.stop = 1;
	pthread_cond_signal(&wd.cv);
	pthread_mutex_unlock(&wd.mu);
	pthread_join(wd.th, NULL);
	pthread_cond_destroy(&wd.cv);
	wd.running = 0;
	wd.timeout = 0;
	atomic_store(&wd.limit_us, 0);
}

double llmt_wd_arm(double limit_s)
{
	int64_t us = limit_s > 0 ? (int64_t)(limit_s * 1e6) : 0;

	return 1e-6 * (double)atomic_exchange(&wd.limit_us, us);
}

double llmt_wd_timeout(void)
{
	return wd.running ? wd.timeout : 0;
}

int llmt_wd_active(void)
{
	return wd.running && atomic_load(&wd.limit_us) > 0;
}

/* watchdog.h: the communication watchdog of the runtime. comm_mpi.c
 * brackets every blocking MPI call with llmt_wd_enter/llmt_wd_leave (a few
 * atomic stores: no clock read, no syscall); a thread samples the bracket
 * and ends the process with LLMT_EXIT_TRANSIENT and one stderr line when
 * one call has waited longer than the deadline in force. The training loop
 * arms LLM_TRAIN_COMM_TIMEOUT where a wait is bounded by a step, and that
 * plus LLM_TRAIN_CKPT_TIMEOUT in checkpoint saves (doc/contracts.md). */
#ifndef LLMT_WATCHDOG_H
#define LLMT_WATCHDOG_H
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define LLMT_WD_DEFAULT_S 300.0

/* ---- pure part (watchdog.c) ------------------------------------------------ */
/* One call as the bracket describes it. peer < 0: a collective. */
typedef struct {
	const char *op;       /* "MPI_Allgather" ... */
	const char *group;    /* "world", "all", "tp", "pp", "dp" */
	int size;             /* ranks in the group */
	int peer;             /* rank in the group of a send/recv, else -1 */
	size_t bytes;         /* payload of this call (0 when not one number) */
} llmt_wd_call;

/* What the sampler remembers between samples. Zero it to start. */
typedef struct {
	uint64_t seq;         /* the call being timed (odd), 0: none */
	double since;         /* when it was first seen in flight */
} llmt_wd_obs;

/* Pure: feed one sample taken at `now` (seconds, monotonic): seq is the
 * bracket's counter (odd while a call is in flight), limit_s the deadline
 * in force (<= 0: disarmed). Returns how long the call in flight has been
 * seen waiting when that exceeds limit_s, else 0. A call is timed from
 * the first sample that sees it armed, so the verdict is never early: it
 * comes between limit_s and limit_s + 2 sampling periods after the call
 * began (or was armed). */
double llmt_wd_observe(llmt_wd_obs *o, uint64_t seq, double now, double limit_s);

/* Pure: the deadline from the value of LLM_TRAIN_COMM_TIMEOUT (seconds,
 * >= 0, 0 = off; NULL or "" = dflt). -1 with err naming the bad value. */
double llmt_wd_timeout_from(const char *value, double dflt, char *err, size_t errlen);

/* Pure: how often the thread samples for a deadline: a tenth of it, in
 * [0.05, 1] s. */
double llmt_wd_period(double timeout_s);

/* Pure: the one line printed when the deadline fires (with newline):
 * limit_s the deadline that fired, comm_s LLM_TRAIN_COMM_TIMEOUT (a larger
 * limit is a checkpoint's: comm_s + LLM_TRAIN_CKPT_TIMEOUT). */
int llmt_wd_describe(char *buf, size_t len, int rank, const llmt_wd_call *c, double waited_s,
	double limit_s, double comm_s);

/* ---- the watchdog (watchdog_run.c) ------------------------------------------ */
/* Start the sampling thread for this rank (timeout_s <= 0: no thread).
 * Starts disarmed. 0, or -1 with a message on stderr. */
int llmt_wd_start(double timeout_s, int rank);
/* Stop the thread (joins it). Safe to call when not started. */
void llmt_wd_stop(void);
/* pthread_cond_timedwait for s seconds from now on clock clk (the clock
 * cv was made with): the sampling threads' sleep (watchdog_run.c, heartbeat.c). */
int llmt_timedwait_s(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clk, double s);
/* The deadline in force from now on, in seconds (0: disarmed); returns
 * the previous one, so a section can change it and restore it. */
double llmt_wd_arm(double limit_s);
/* LLM_TRAIN_COMM_TIMEOUT as started (0: off or not started). */
double llmt_wd_timeout(void);
/* Whether a deadline bounds the waits now (started and armed). */
int llmt_wd_active(void);

/* The bracket: written by the one thread that calls MPI (MPI_THREAD_FUNNELED),
 * read by the sampler as a sequence lock: seq odd while a call is in
 * flight; the fields are written before seq turns odd. */
struct llmt_wd_slot {
	_Atomic uint64_t seq;
	_Atomic(const char *) op;
	_Atomic(const char *) group;
	_Atomic int size;
	_Atomic int peer;
	_Atomic size_t bytes;
};
extern struct llmt_wd_slot llmt_wd_slot_;

static inline void llmt_wd_enter(const char *op, const char *group, int size, int peer, size_t bytes)
{
	struct llmt_wd_slot *s = &llmt_wd_slot_;
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->op, op, memory_order_relaxed);
	atomic_store_explicit(&s->group, group, memory_order_relaxed);
	atomic_store_explicit(&s->size, size, memory_order_relaxed);
	atomic_store_explicit(&s->peer, peer, memory_order_relaxed);
	atomic_store_explicit(&s->bytes, bytes, memory_order_relaxed);
	atomic_store_explicit(&s->seq, q | 1, memory_order_release);
}

/* The bracket's counter: odd while a call is in flight; the same odd
 * value at two reads means one call spans them. */
static inline uint64_t llmt_wd_seq(void)
{
	return atomic_load_explicit(&llmt_wd_slot_.seq, memory_order_acquire);
}

static inline void llmt_wd_leave(void)
{
	struct llmt_wd_slot *s = &llmt_wd_slot_;
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, (q | 1) + 1, memory_order_release);
}

#endif

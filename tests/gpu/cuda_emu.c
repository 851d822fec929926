/* cuda_emu.c: for the host-only emulation test (test_gpu_emu): the CUDA
 * runtime calls the GPU model makes, on host memory (operations complete
 * at once, except what a real device could still have in flight when the
 * host looks: held back until the host synchronises, see below; host<->device bytes
 * and device allocations are counted for LLMT_EMU_STATS and
 * llmt_emu_dev_bytes), events on an emulated clock (llmt_emu_clock_ms,
 * which cublaslt_emu.c's products advance), and NCCL
 * groups carried over their MPI communicators (cuda_emu_nccl.c), so the GPU model's
 * orchestration (gmodel.c, gmodel_step.c) runs unchanged on a machine
 * without a GPU, in one process or as an MPI job. Linked only into the
 * emulation builds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "cuda_emu_int.h"

/* ---- streams, events and what real CUDA leaves pending -----------------
 * Every operation completes at once here, except what a real device may
 * still have in flight when the host looks, which is held back so that a
 * missing synchronisation shows as wrong bytes:
 * - the legacy default stream's work (cudaMemset, cudaMemcpy from pageable
 *   host memory or device to device, any *Async on stream 0) is applied
 *   only when something orders it: cudaDeviceSynchronize, a synchronous
 *   cudaMemcpy to the host, cudaFree/cudaFreeHost, a wait on it, or work on
 *   the legacy or a blocking stream; the model's non-blocking streams do
 *   not wait for it (cudaStreamNonBlocking);
 * - a copy to pinned host memory (cudaMallocHost, cudaHostRegister) on a
 *   stream poisons its destination (0xff bytes: NaN) and lands when the
 *   host synchronises with that stream (cudaStreamSynchronize, an event
 *   after it, cudaStreamQuery, cudaDeviceSynchronize, llmt_nccl_wait);
 * - a copy from pinned host memory on a stream remembers a hash of its
 *   source; the source must not change or be freed until the host has
 *   synchronised with that stream (checked: abort with a message).
 * cudaMalloc and cudaMallocHost fill their memory with 0xff bytes (a GPU
 * does not zero it). */
enum { OP_COPY, OP_SET, OP_CHECK, OP_DEP };
struct emu_stream;
typedef struct {
	int kind;
	unsigned long seq;
	void *dst;
	const void *src;           /* OP_CHECK: the host source */
	unsigned char *data;       /* OP_COPY: the bytes, as they were */
	size_t n;
	int val;                   /* OP_SET */
	uint64_t hash;             /* OP_CHECK */
	struct emu_stream *dep;    /* OP_DEP: flush dep up to dep_seq */
	unsigned long dep_seq;
	const void *dsrc;          /* OP_COPY from the device: its source, */
	uint64_t dsrc_hash;        /* what it held, */
	unsigned long at;          /* the stream's op count when queued */
} emu_op;
/* device-side order: w[i] of a stream (or of the host) is how far it is
 * known to follow stream wk[i] (that stream's op count), through
 * cudaStreamWaitEvent (joined transitively) or a host synchronisation */
#define EMU_WAITS 256
struct emu_order {
	struct emu_stream *wk[EMU_WAITS];
	unsigned long w[EMU_WAITS];
	int nw;
};
struct emu_stream {
	int blocking;              /* synchronises with the legacy stream */
	emu_op *op;
	size_t nop, cap;
	unsigned long seq;
	unsigned long now;         /* operations issued on it */
	struct emu_order ord;
};
struct emu_event { struct emu_stream *s; unsigned long seq, now; struct emu_order ord; double ms; };
double llmt_emu_clock_ms;             /* the emulated clock cudaEventElapsedTime reads */
static struct emu_stream legacy = {.blocking = 1};
static struct emu_order host_ord;      /* what the host has synchronised with */
static struct emu_stream *prev_st;    /* the stream of the last operation */
static struct emu_stream **all_streams;
static size_t nstreams;

static struct emu_stream *stream_of(cudaStream_t st)
{
	/* 0, cudaStreamLegacy and cudaStreamPerThread: the legacy stream */
	if ((uintptr_t)st <= 2)
		return &legacy;
	return (struct emu_stream *)(void *)st;
}

static unsigned long known(const struct emu_order *o, const struct emu_stream *x)
{
	for (int i = 0; i < o->nw; i++)
		if (o->wk[i] == x)
			return o->w[i];
	return 0;
}
static void know(struct emu_order *o, struct emu_stream *x, unsigned long at)
{
	for (int i = 0; i < o->nw; i++)
		if (o->wk[i] == x) {
			o->w[i] = at > o->w[i] ? at : o->w[i];
			return;
		}
	if (o->nw == EMU_WAITS) {
		fprintf(stderr, "cuda_emu: more than %d streams\n", EMU_WAITS);
		abort();
	}
	o->wk[o->nw] = x;
	o->w[o->nw++] = at;
}
static void join(struct emu_order *o, const struct emu_order *from)
{
	for (int i = 0; i < from->nw; i++)
		know(o, from->wk[i], from->w[i]);
}
static void forget(struct emu_order *o, const struct emu_stream *x)
{
	for (int i = 0; i < o->nw; i++)
		if (o->wk[i] == x) {
			o->wk[i] = o->wk[--o->nw];
			o->w[i] = o->w[o->nw];
			return;
		}
}
/* y's work from now on follows op number at of x */
static int follows(const struct emu_stream *y, struct emu_stream *x, unsigned long at)
{
	return y == x || known(&y->ord, x) >= at || known(&host_ord, x) >= at;
}

static void die(const char *what, const void *p, size_t n)
{
	if (n)
		fprintf(stderr, "cuda_emu: %s (memory at %p, %zu bytes): a real GPU would race here\n",
				what, p, n);
	else
		fprintf(stderr, "cuda_emu: %s: a real GPU would race here\n", what);
	abort();
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static emu_op *push(struct emu_stream *s, int kind)
{
	if (s->nop == s->cap) {
		size_t nc = s->cap ? 2 * s->cap : 16;
		emu_op *o = realloc(s->op, nc * sizeof *o);
		if (!o) {
			fprintf(stderr, "cuda_emu: out of memory\n");
			abort();
		}
		s->op = o;
		s->cap = nc;
	}
	emu_op *o = &s->op[s->nop++];
	memset(o, 0, sizeof *o);
	o->kind = kind;
	o->seq = ++s->seq;
	return o;
}

/* apply s's held-back work up to seq (in order). Each op leaves the queue
 * before it runs: an OP_DEP may flush a stream that waits on s in turn
 * (streams waiting on each other, one event after another), which re-enters
 * this function on s. */
static void flush_to(struct emu_stream *s, unsigned long seq)
{
	while (s->nop && s->op[0].seq <= seq) {
		emu_op op = s->op[0], *o = &op;
		memmove(s->op, s->op + 1, (s->nop - 1) * sizeof *s->op);
		s->nop--;
		switch (o->kind) {
		case OP_COPY:
			memcpy(o->dst, o->data, o->n);
			free(o->data);
			break;
		case OP_SET:
			memset(o->dst, o->val, o->n);
			break;
		case OP_CHECK:
			if (hash_bytes(o->src, o->n) != o->hash)
				die("the pinned source of a cudaMemcpyAsync changed before the host "
					"synchronised with its stream", o->src, o->n);
			break;
		case OP_DEP:
			flush_to(o->dep, o->dep_seq);
			break;
		}
	}
}
static void check_sources(void);
static void flush(struct emu_stream *s)
{
	check_sources();
	flush_to(s, s->seq);
	know(&host_ord, s, s->now);
}
static void flush_all(void)
{
	flush(&legacy);
	for (size_t i = 0; i < nstreams; i++)
		flush(all_streams[i]);
}

/* work is issued on st: the legacy stream's pending work comes first when
 * st is the legacy stream or a blocking one */
/* a copy from the device held back on stream x reads its source until
 * it completes: a change of that source by the work of another stream
 * that does not follow the copy (cudaStreamWaitEvent on an event after
 * it) is a race on a device. The change is found at the next operation
 * or synchronisation, and charged to the stream of the last operation. */
static void check_sources(void)
{
	for (size_t k = 0; k <= nstreams; k++) {
		struct emu_stream *x = k < nstreams ? all_streams[k] : &legacy;
		for (size_t j = 0; j < x->nop; j++) {
			emu_op *o = &x->op[j];
			if (o->kind != OP_COPY || !o->dsrc || hash_bytes(o->dsrc, o->n) == o->dsrc_hash)
				continue;
			if (!prev_st || !follows(prev_st, x, o->at))
				die("the device source of a copy still in flight on one stream was changed by "
					"another stream that does not wait for it (cudaStreamWaitEvent)", o->dsrc,
					o->n);
			o->dsrc = NULL;     /* ordered after the copy: no longer its business */
		}
	}
}

void llmt_emu_stream_use(cudaStream_t st)
{
	struct emu_stream *s = stream_of(st);
	check_sources();
	if (s->blocking)
		flush(&legacy);
	s->now++;
	prev_st = s;
}

/* an NCCL collective on st consumes the work queued just before it (here
 * always so): when that work went to another stream, st must follow it
 * (for cuda_emu_nccl.c) */
void llmt_emu_collective(cudaStream_t st)
{
	struct emu_stream *s = stream_of(st);
	/* the legacy stream and a blocking stream are ordered with each other */
	int implicit = prev_st && ((s == &legacy && prev_st->blocking) ||
							   (prev_st == &legacy && s->blocking));
	if (prev_st && prev_st != s && !implicit && !follows(s, prev_st, prev_st->now))
		die("an NCCL call on a stream that does not wait for the work just queued on another "
			"stream (a missing cudaEventRecord + cudaStreamWaitEvent)", st, 0);
	llmt_emu_stream_use(st);
}

/* pinned host memory: cudaMallocHost blocks and cudaHostRegister ranges */
static struct { const char *p; size_t n; } *pins;
static size_t npins, cappins;
static int pinned(const void *p, size_t n)
{
	for (size_t i = 0; i < npins; i++)
		if ((const char *)p >= pins[i].p && (const char *)p + n <= pins[i].p + pins[i].n)
			return 1;
	return 0;
}
static int pin_add(const void *p, size_t n)
{
	if (npins == cappins) {
		size_t nc = cappins ? 2 * cappins : 16;
		void *q = realloc(pins, nc * sizeof *pins);
		if (!q)
			return -1;
		pins = q;
		cappins = nc;
	}
	pins[npins].p = p;
	pins[npins].n = n;
	npins++;
	return 0;
}
/* a pinned range goes away: no copy may still read it; its size */
static size_t pin_drop(const void *p)
{
	for (size_t i = 0; i < npins; i++) {
		if (pins[i].p != p)
			continue;
		for (size_t k = 0; k < nstreams + 1; k++) {
			struct emu_stream *s = k < nstreams ? all_streams[k] : &legacy;
			for (size_t j = 0; j < s->nop; j++) {
				const char *a = s->op[j].kind == OP_CHECK ? s->op[j].src : s->op[j].dst;
				if ((s->op[j].kind == OP_CHECK || s->op[j].kind == OP_COPY) &&
					a >= pins[i].p && a < pins[i].p + pins[i].n)
					die("pinned host memory freed or unregistered while a cudaMemcpyAsync "
						"on it may be in flight", p, pins[i].n);
			}
		}
		size_t n = pins[i].n;
		pins[i] = pins[--npins];
		return n;
	}
	return 0;
}

int llmt_emu_last_error;
const char *cudaGetErrorString(cudaError_t e)
{
	return e == cudaSuccess ? "no error"
		   : e == cudaErrorInvalidConfiguration ? "invalid configuration argument (emulated)"
												: "emulated error";
}
cudaError_t cudaGetLastError(void)
{
	cudaError_t e = (cudaError_t)llmt_emu_last_error;
	llmt_emu_last_error = 0;
	return e;
}
cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
/* device memory accounting: each cudaMalloc block carries its size in a
 * header; llmt_emu_dev_bytes gives the bytes allocated now and at peak */
#define DEV_HDR 64
static size_t dev_now, dev_peak;
size_t llmt_emu_dev_bytes(size_t *peak)
{
	if (peak)
		*peak = dev_peak;
	return dev_now;
}
cudaError_t cudaMalloc(void **p, size_t n)
{
	char *b = malloc(n + DEV_HDR);
	*p = NULL;
	if (!b)
		return cudaErrorMemoryAllocation;
	memcpy(b, &n, sizeof n);
	memset(b + DEV_HDR, 0xff, n);        /* not zeroed on a GPU either */
	dev_now += n;
	dev_peak = dev_now > dev_peak ? dev_now : dev_peak;
	*p = b + DEV_HDR;
	return cudaSuccess;
}
/* pinned host memory of cudaMallocHost, counted (llmt_emu_pinned_bytes) */
static size_t pin_now;
size_t llmt_emu_pinned_bytes(void) { return pin_now; }
cudaError_t cudaMallocHost(void **p, size_t n)
{
	*p = malloc(n ? n : 1);
	if (!*p || pin_add(*p, n)) {
		free(*p);
		*p = NULL;
		return cudaErrorMemoryAllocation;
	}
	memset(*p, 0xff, n);
	pin_now += n;
	return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
	size_t n;
	if (!p)
		return cudaSuccess;
	flush_all();            /* cudaFree synchronises the device */
	memcpy(&n, (char *)p - DEV_HDR, sizeof n);
	dev_now -= n;
	free((char *)p - DEV_HDR);
	return cudaSuccess;
}
cudaError_t cudaHostRegister(void *p, size_t n, unsigned f)
{
	(void)f;
	return pin_add(p, n) ? cudaErrorMemoryAllocation : cudaSuccess;
}
cudaError_t cudaHostUnregister(void *p)
{
	pin_drop(p);
	return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p)
{
	flush_all();
	pin_now -= pin_drop(p);
	free(p);
	return cudaSuccess;
}
unsigned long long llmt_emu_memset_bytes;   /* bytes of every memset (for tests) */
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st)
{
	llmt_emu_memset_bytes += n;
	llmt_emu_stream_use(st);
	if (stream_of(st) == &legacy) {
		emu_op *o = push(&legacy, OP_SET);
		o->dst = p;
		o->val = v;
		o->n = n;
	} else {
		memset(p, v, n);
	}
	return cudaSuccess;
}
/* on the legacy stream, asynchronous for device memory */
cudaError_t cudaMemset(void *p, int v, size_t n) { return cudaMemsetAsync(p, v, n, 0); }
/* transfer accounting for tests: with LLMT_EMU_STATS=FILE set, each
 * process appends "h2d_bytes d2h_bytes dev_peak_bytes" to FILE at exit */
static unsigned long long h2d, d2h;
unsigned long long llmt_emu_h2d_bytes(void) { return h2d; }
static void stats_write(void)
{
	FILE *f = fopen(getenv("LLMT_EMU_STATS"), "a");
	if (f) {
		fprintf(f, "%llu %llu %zu\n", h2d, d2h, dev_peak);
		fclose(f);
	}
}
static void count(size_t n, enum cudaMemcpyKind k)
{
	static int armed;
	if (!armed && getenv("LLMT_EMU_STATS")) {
		armed = 1;
		atexit(stats_write);
	}
	if (k == cudaMemcpyHostToDevice)
		h2d += n;
	else if (k == cudaMemcpyDeviceToHost)
		d2h += n;
}
/* hold a copy back on s: its bytes as they are now */
static void hold(struct emu_stream *s, void *d, const void *src, size_t n, int from_device)
{
	emu_op *o = push(s, OP_COPY);
	o->dst = d;
	o->n = n;
	if (from_device) {
		o->dsrc = src;
		o->dsrc_hash = hash_bytes(src, n);
		o->at = s->now;
	}
	if (!(o->data = malloc(n ? n : 1))) {
		fprintf(stderr, "cuda_emu: out of memory\n");
		abort();
	}
	memcpy(o->data, src, n);
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st)
{
	struct emu_stream *q = stream_of(st);
	count(n, k);
	llmt_emu_stream_use(st);
	if (k == cudaMemcpyDeviceToHost) {
		if (pinned(d, n)) {            /* truly asynchronous */
			hold(q, d, s, n, 1);
			memset(d, 0xff, n);
		} else {                       /* to pageable memory: returns when done */
			flush(q);
			memmove(d, s, n);
		}
	} else if (q == &legacy && !(k == cudaMemcpyHostToDevice && pinned(s, n))) {
		hold(q, d, s, n, 0);           /* pageable source: staged, lands later */
	} else {
		memmove(d, s, n);
		if (k == cudaMemcpyHostToDevice && pinned(s, n)) {
			emu_op *o = push(q, OP_CHECK);
			o->src = s;
			o->n = n;
			o->hash = hash_bytes(s, n);
		}
	}
	return cudaSuccess;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k)
{
	if (k == cudaMemcpyDeviceToHost || (k == cudaMemcpyHostToDevice && pinned(s, n))) {
		count(n, k);
		flush(&legacy);                /* synchronous with the host */
		memmove(d, s, n);
		return cudaSuccess;
	}
	return cudaMemcpyAsync(d, s, n, k, 0);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f)
{
	struct emu_stream *q = calloc(1, sizeof *q);
	void *a = realloc(all_streams, (nstreams + 1) * sizeof *all_streams);
	if (!q || !a) {
		free(q);
		return cudaErrorMemoryAllocation;
	}
	all_streams = a;
	all_streams[nstreams++] = q;
	q->blocking = !(f & cudaStreamNonBlocking);
	*s = (cudaStream_t)(void *)q;
	return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	struct emu_stream *q = stream_of(s);
	if (q == &legacy)
		return cudaErrorInvalidResourceHandle;
	flush_all();            /* its work still completes (and what waits on it) */
	for (size_t i = 0; i < nstreams; i++)
		if (all_streams[i] == q) {
			all_streams[i] = all_streams[--nstreams];
			break;
		}
	for (size_t i = 0; i < nstreams; i++)
		forget(&all_streams[i]->ord, q);
	forget(&host_ord, q);
	forget(&legacy.ord, q);
	if (prev_st == q)
		prev_st = NULL;
	free(q->op);
	free(q);
	return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	struct emu_stream *q = stream_of(s);
	if (q->blocking)
		flush(&legacy);
	flush(q);
	return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void)
{
	flush_all();
	return cudaSuccess;
}
/* complete here, so the answer is yes (and the host may now look) */
cudaError_t cudaStreamQuery(cudaStream_t s) { return cudaStreamSynchronize(s); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f)
{
	(void)f;
	struct emu_event *v = calloc(1, sizeof *v);
	if (!v)
		return cudaErrorMemoryAllocation;
	*e = (cudaEvent_t)(void *)v;
	return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	struct emu_event *v = (struct emu_event *)(void *)e;
	llmt_emu_stream_use(s);
	v->s = stream_of(s);
	v->seq = v->s->seq;
	v->now = v->s->now;
	v->ord = v->s->ord;
	v->ms = llmt_emu_clock_ms;
	return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	const struct emu_event *x = (const void *)a, *y = (const void *)b;
	if (!x->s || !y->s)
		return cudaErrorInvalidResourceHandle;
	*ms = (float)(y->ms - x->ms);
	return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f)
{
	(void)f;
	struct emu_event *v = (struct emu_event *)(void *)e;
	struct emu_stream *q = stream_of(s);
	llmt_emu_stream_use(s);
	if (!v->s || v->s == q)
		return cudaSuccess;
	know(&q->ord, v->s, v->now);
	join(&q->ord, &v->ord);
	if (v->s == &legacy) {
		flush_to(&legacy, v->seq);     /* device work that s now follows */
	} else {
		emu_op *o = push(q, OP_DEP);
		o->dep = v->s;
		o->dep_seq = v->seq;
	}
	return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	struct emu_event *v = (struct emu_event *)(void *)e;
	if (v->s) {
		check_sources();
		flush_to(v->s, v->seq);
		know(&host_ord, v->s, v->now);
	}
	return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	free((void *)e);
	return cudaSuccess;
}

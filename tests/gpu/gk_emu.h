/* gk_emu.h: runs the CUDA kernels of runtime/gpu/gk_*.cu on CPU threads
 * (built by the host C++ compiler with -DGK_EMULATE), so their indexing,
 * formulas and block reductions are tested on machines without a GPU.
 * Each CUDA thread of a block is a fiber on one OS thread (on x86-64 a
 * hand-written switch of the callee-saved registers, ~20x cheaper than
 * swapcontext, which also makes a sigprocmask system call; ucontext
 * elsewhere); blocks run one after another; __shared__ becomes static (one
 * block at a time), __syncthreads a barrier over the block,
 * __shfl_xor_sync an exchange between two barriers over its warp only.
 * Stricter than a lucky GPU, so races and undefined behaviour show here:
 * GK_EMU_ORDER=forward|reverse|shuffle (GK_EMU_SEED) sets the order in
 * which the scheduler resumes threads after a barrier and runs the blocks
 * (forward: ascending, a warp released from a shuffle queues behind the
 * others; reverse: descending, such a warp runs on at once, so warps
 * drift apart; shuffle: random, and threads are also preempted at bf16
 * loads and stores); fresh shared
 * memory (static and dynamic) is filled with 0xff bytes (NaN) at every
 * block; a launch beyond the device limits (1024 threads, grid y/z 65535,
 * 48 KiB of shared memory without opt-in) fails as on a GPU, through
 * GK_LAST_ERROR/cudaGetLastError; a full-mask shuffle in a warp with a
 * missing or exited lane, and a __syncthreads reached after some thread
 * of the block returned, stop the program with a message. Written by
 * hand: no library emulates CUDA kernels. */
#ifndef LLMT_GK_EMU_H
#define LLMT_GK_EMU_H
#include <cuda_runtime_api.h>
#include <ucontext.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#undef __global__
#undef __device__
#undef __shared__
#undef __forceinline__
#define __global__
#define __device__
#define __launch_bounds__(...)
/* static shared arrays live in one section, poisoned at every block; the
 * device helpers get internal linkage, so that their shared arrays are not
 * COMDAT (which could not share the section with the kernels' own) */
#define __shared__ static __attribute__((section("gk_emu_shared"), used))
#define __forceinline__ static inline
using std::min;
using std::max;

inline uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

/* cuda_emu.c: the last error (cudaGetLastError) and the stream a launch
 * runs on (the legacy stream's deferred work is ordered before it) */
extern "C" int llmt_emu_last_error;
extern "C" void llmt_emu_stream_use(cudaStream_t st);
/* the bounds of the gk_emu_shared section (the linker makes them; weak:
 * a program whose kernels have no static shared arrays has no section) */
extern "C" char __start_gk_emu_shared[] __attribute__((weak));
extern "C" char __stop_gk_emu_shared[] __attribute__((weak));

namespace gk_emu {

enum { STACK = 128 * 1024 };

#if defined(__x86_64__)
/* gk_emu_switch(from, to): push the callee-saved registers and the SSE/x87
 * control words, store the stack pointer in *from, load to, pop the same
 * from there and return into that fiber. Weak: every translation unit
 * that includes this header carries the same copy. */
extern "C" void gk_emu_switch(void **from, void *to);
asm(".text\n.weak gk_emu_switch\n.type gk_emu_switch,@function\ngk_emu_switch:\n"
	"pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
	"subq $8, %rsp\nstmxcsr (%rsp)\nfnstcw 4(%rsp)\n"
	"movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
	"ldmxcsr (%rsp)\nfldcw 4(%rsp)\naddq $8, %rsp\n"
	"popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n"
	".size gk_emu_switch,.-gk_emu_switch\n");
struct context {
	void *sp;
};
#else
struct context {
	ucontext_t uc;
};
#endif

/* where a thread is: runnable, waiting at its warp's barrier (a shuffle),
 * at the block's barrier (__syncthreads), or returned */
enum { RUN, AT_WARP, AT_BLOCK, DONE };
enum { FORWARD, REVERSE, SHUFFLE };

struct fiber {
	context ctx;
	std::vector<char> stack;
	int st;
};

/* dynamic shared memory in 128-byte pieces: aligned as a GPU's (wmma
 * wants 32 bytes) */
struct alignas(128) dyn_piece {
	unsigned char b[128];
};

/* what a lane brings to a warp-collective wmma call (gk_emu_wmma.h) */
struct wmma_slot {
	const void *p;
	unsigned ldm;
};

struct state {
	context sched;
	std::vector<fiber> f;
	std::vector<float> shfl;
	std::vector<wmma_slot> wm;       /* a lane's pointer and ldm */
	std::vector<float> wma, wmb;     /* a warp's mma operands, 256 each */
	std::vector<dyn_piece> dyn;
	std::vector<unsigned> q;        /* runnable threads, in resume order */
	size_t qh;                      /* head of q (forward, reverse) */
	const std::function<void()> *body;
	unsigned cur, nt;
	int order;
	uint64_t rng;
	bool ready;
};
inline state S;

[[noreturn]] inline void fail(const char *what)
{
	fprintf(stderr, "gk_emu: block (%u,%u,%u) thread %u: %s\n", blockIdx.x, blockIdx.y,
			blockIdx.z, S.cur, what);
	abort();
}

inline uint64_t rnd()
{
	S.rng ^= S.rng << 13;
	S.rng ^= S.rng >> 7;
	S.rng ^= S.rng << 17;
	return S.rng;
}

/* tests: the order without the environment */
inline void set_order(int order, unsigned long long seed)
{
	S.ready = true;
	S.order = order;
	S.rng = 0x9e3779b97f4a7c15ull ^ (seed * 0xbf58476d1ce4e5b9ull);
	if (!S.rng)
		S.rng = 1;
}

/* GK_EMU_ORDER and GK_EMU_SEED, read once */
inline void setup()
{
	if (S.ready)
		return;
	const char *o = getenv("GK_EMU_ORDER"), *sd = getenv("GK_EMU_SEED");
	int order = FORWARD;
	if (o && *o && strcmp(o, "forward")) {
		if (!strcmp(o, "reverse"))
			order = REVERSE;
		else if (!strcmp(o, "shuffle"))
			order = SHUFFLE;
		else {
			fprintf(stderr, "gk_emu: GK_EMU_ORDER='%s' is not forward, reverse or shuffle\n", o);
			exit(64);
		}
	}
	char *end = nullptr;
	unsigned long long seed = sd && *sd ? strtoull(sd, &end, 10) : 1;
	if (sd && *sd && *end) {
		fprintf(stderr, "gk_emu: GK_EMU_SEED='%s' is not a number\n", sd);
		exit(64);
	}
	set_order(order, seed);
}

inline void jump(context &from, context &to)
{
#if defined(__x86_64__)
	gk_emu_switch(&from.sp, to.sp);
#else
	swapcontext(&from.uc, &to.uc);
#endif
}

/* a CUDA thread: run the kernel body, then hand back to the scheduler for
 * good (a finished fiber is never resumed) */
inline void entry()
{
	(*S.body)();
	S.f[S.cur].st = DONE;
	jump(S.f[S.cur].ctx, S.sched);
}

/* make f start in entry() when first jumped to */
inline void start(fiber &f)
{
	if (f.stack.empty())
		f.stack.resize(STACK);
#if defined(__x86_64__)
	/* what gk_emu_switch pops: control words, six registers, then the
	 * return address entry() (its frame as if called: rsp % 16 == 8) */
	uintptr_t top = ((uintptr_t)(f.stack.data() + f.stack.size())) & ~(uintptr_t)15;
	void **sp = (void **)top;
	*--sp = nullptr;                          /* entry() never returns */
	*--sp = (void *)&entry;
	for (int i = 0; i < 6; i++)
		*--sp = nullptr;
	unsigned cw[2] = {0, 0};
	asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(cw[0]), "=m"(cw[1]));
	*--sp = (void *)((uintptr_t)cw[0] | (uintptr_t)(cw[1] & 0xffff) << 32);
	f.ctx.sp = sp;
#else
	getcontext(&f.ctx.uc);
	f.ctx.uc.uc_stack.ss_sp = f.stack.data();
	f.ctx.uc.uc_stack.ss_size = f.stack.size();
	f.ctx.uc.uc_link = nullptr;
	makecontext(&f.ctx.uc, entry, 0);
#endif
	f.st = RUN;
}

/* threads t of a released barrier become runnable, in the resume order */
inline void wake(unsigned lo, unsigned hi)
{
	if (S.order == REVERSE)
		for (unsigned t = hi; t-- > lo;)
			S.q.push_back(t);
	else
		for (unsigned t = lo; t < hi; t++)
			S.q.push_back(t);
}

/* the next thread to resume, or -1 when none is runnable */
inline int pick()
{
	if (S.order == SHUFFLE) {
		size_t n = S.q.size();
		if (!n)
			return -1;
		size_t i = (size_t)(rnd() % n);
		unsigned t = S.q[i];
		S.q[i] = S.q[n - 1];
		S.q.pop_back();
		return (int)t;
	}
	if (S.qh == S.q.size()) {
		S.q.clear();
		S.qh = 0;
		return -1;
	}
	return (int)S.q[S.qh++];
}

/* yield to the scheduler in state st (RUN: preempted, resumes later) */
inline void yield_as(int st)
{
	S.f[S.cur].st = st;
	if (st == RUN)
		S.q.push_back(S.cur);
	jump(S.f[S.cur].ctx, S.sched);
}

/* __syncthreads: wait until every thread of the block has arrived */
inline void sync() { yield_as(AT_BLOCK); }

/* the warp barrier of a full-mask shuffle (or of op): all 32 lanes must
 * be there */
inline void warp_sync(const char *op = "__shfl_xor_sync")
{
	unsigned w = S.cur / 32;
	char why[160];
	if ((w + 1) * 32 > S.nt) {
		snprintf(why, sizeof why, "full-mask %s in a partial warp (block size not a multiple of 32)", op);
		fail(why);
	}
	for (unsigned t = w * 32; t < w * 32 + 32; t++)
		if (S.f[t].st == DONE) {
			snprintf(why, sizeof why, "full-mask %s in a warp where a lane has returned", op);
			fail(why);
		}
	yield_as(AT_WARP);
}

/* shuffle order only: a chance for another thread to run here */
inline void point()
{
	if (S.order == SHUFFLE && S.nt > 1 && rnd() % 8 == 0)
		yield_as(RUN);
}

inline void *dyn() { return S.dyn.data(); }

/* run one block's threads to the end */
inline void run_block(unsigned nt)
{
	memset(__start_gk_emu_shared, 0xff, (size_t)(__stop_gk_emu_shared - __start_gk_emu_shared));
	memset(static_cast<void *>(S.dyn.data()), 0xff, S.dyn.size() * sizeof(dyn_piece));
	S.q.clear();
	S.qh = 0;
	for (unsigned t = 0; t < nt; t++)
		start(S.f[t]);
	wake(0, nt);
	for (;;) {
		int t = pick();
		if (t < 0) {
			/* nobody runnable: every live thread waits at a barrier */
			unsigned live = 0, at_block = 0;
			for (unsigned i = 0; i < nt; i++) {
				live += S.f[i].st != DONE;
				at_block += S.f[i].st == AT_BLOCK;
			}
			if (!live)
				return;
			if (at_block != live)
				fail("deadlock: threads at a warp shuffle while others wait at __syncthreads");
			if (live != nt)
				fail("__syncthreads reached after other threads of the block returned");
			for (unsigned i = 0; i < nt; i++)
				S.f[i].st = RUN;
			wake(0, nt);
			continue;
		}
		S.cur = (unsigned)t;
		threadIdx = make_uint3(S.cur % blockDim.x, (S.cur / blockDim.x) % blockDim.y,
							   S.cur / (blockDim.x * blockDim.y));
		jump(S.sched, S.f[S.cur].ctx);
		if (S.f[S.cur].st == AT_WARP) {
			unsigned w0 = S.cur / 32 * 32, k = 0;
			while (k < 32 && S.f[w0 + k].st == AT_WARP)
				k++;
			if (k == 32) {
				for (unsigned i = w0; i < w0 + 32; i++)
					S.f[i].st = RUN;
				if (S.order == REVERSE) {
					/* the warp runs on at once: warps drift apart */
					std::vector<unsigned> l;
					for (unsigned i = w0 + 32; i-- > w0;)
						l.push_back(i);
					S.q.insert(S.q.begin() + (ptrdiff_t)S.qh, l.begin(), l.end());
				} else {
					wake(w0, w0 + 32);
				}
			}
		}
	}
}

struct launch {
	dim3 g, b;
	size_t sh;
	launch(dim3 g_, dim3 b_, size_t sh_) : g(g_), b(b_), sh(sh_) {}
	/* the device's limits (compute capability 7.0 and later): a launch
	 * beyond them does not run and leaves cudaErrorInvalidConfiguration */
	bool valid() const
	{
		size_t stat = (size_t)(__stop_gk_emu_shared - __start_gk_emu_shared);
		unsigned long long nt = (unsigned long long)b.x * b.y * b.z;
		const char *why = !nt || !g.x || !g.y || !g.z ? "an empty grid or block"
						  : b.x > 1024 || b.y > 1024 || b.z > 64 || nt > 1024
							  ? "more than 1024 threads per block (or a block dimension too large)"
						  : g.x > 2147483647u || g.y > 65535 || g.z > 65535
							  ? "grid y or z above 65535"
						  : sh + stat > 48 * 1024
							  ? "more than 48 KiB of shared memory without cudaFuncSetAttribute"
							  : nullptr;
		if (!why)
			return true;
		fprintf(stderr, "gk_emu: invalid launch: grid (%u,%u,%u), block (%u,%u,%u), %zu bytes "
						"of dynamic shared memory: %s\n", g.x, g.y, g.z, b.x, b.y, b.z, sh, why);
		llmt_emu_last_error = (int)cudaErrorInvalidConfiguration;
		return false;
	}
	void run(const std::function<void()> &body) const
	{
		setup();
		if (!valid())
			return;
		unsigned nt = b.x * b.y * b.z;
		if (S.f.size() < nt)
			S.f.resize(nt);
		S.nt = nt;
		S.shfl.assign(nt, 0.f);
		S.wm.assign(nt, wmma_slot{nullptr, 0});
		S.wma.assign((nt + 31) / 32 * 256, 0.f);
		S.wmb.assign((nt + 31) / 32 * 256, 0.f);
		S.dyn.assign(sh ? (sh + sizeof(dyn_piece) - 1) / sizeof(dyn_piece) : 1, dyn_piece{});
		S.body = &body;
		blockDim = b;
		gridDim = g;
		/* blocks in order, reversed, or shuffled (they may run in any order
		 * on a GPU: a kernel that depends on it is wrong) */
		size_t nb = (size_t)g.x * g.y * g.z;
		std::vector<size_t> ord;
		if (S.order == SHUFFLE) {
			ord.resize(nb);
			for (size_t i = 0; i < nb; i++)
				ord[i] = i;
			for (size_t i = nb; i > 1; i--)
				std::swap(ord[i - 1], ord[(size_t)(rnd() % i)]);
		}
		for (size_t k = 0; k < nb; k++) {
			size_t i = S.order == SHUFFLE ? ord[k] : S.order == REVERSE ? nb - 1 - k : k;
			blockIdx = make_uint3((unsigned)(i % g.x), (unsigned)(i / g.x % g.y),
								  (unsigned)(i / ((size_t)g.x * g.y)));
			run_block(nt);
		}
	}
	template <class K> auto operator()(K k) const
	{
		launch self = *this;
		return [self, k](auto... a) { self.run([&] { k(a...); }); };
	}
};

inline cudaError_t take_error()
{
	cudaError_t e = (cudaError_t)llmt_emu_last_error;
	llmt_emu_last_error = 0;
	return e;
}

} // namespace gk_emu

static inline void __syncthreads() { gk_emu::sync(); }

static inline float __shfl_xor_sync(unsigned mask, float v, int o)
{
	if (mask != 0xffffffffu)
		gk_emu::fail("__shfl_xor_sync with a partial mask (the emulation knows full warps only)");
	gk_emu::S.shfl[gk_emu::S.cur] = v;
	gk_emu::warp_sync();
	float r = gk_emu::S.shfl[gk_emu::S.cur ^ ((unsigned)o & 31u)];
	gk_emu::warp_sync();
	return r;
}

static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
	if (mask != 0xffffffffu)
		gk_emu::fail("__syncwarp with a partial mask (the emulation knows full warps only)");
	gk_emu::warp_sync("__syncwarp");
}

/* integer atomics: a block's threads are fibers on one OS thread, switched
 * at barriers and GK_EMU_POINT only, and blocks run one after another, so
 * a read-modify-write is never interrupted */
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
	unsigned long long o = *p;
	*p = o + v;
	return o;
}

#define GK_LAUNCH(k, grid, block, shmem, st) \
	(llmt_emu_stream_use(st), gk_emu::launch(dim3(grid), dim3(block), (shmem)))(k)
#define GK_DYN_SHARED(T, name) T *name = static_cast<T *>(gk_emu::dyn())
#define GK_LAST_ERROR() gk_emu::take_error()
#define GK_EMU_POINT() gk_emu::point()
/* p must be n-byte aligned (a GPU faults on a misaligned vector load) */
#define GK_EMU_ALIGNED(p, n) \
	((uintptr_t)(p) % (n) ? gk_emu::fail("a vector load or store through a misaligned pointer") : (void)0)
#define GK_DYN_SHARED_AL(T, name) GK_DYN_SHARED(T, name)

#include "gk_emu_wmma.h"

#endif

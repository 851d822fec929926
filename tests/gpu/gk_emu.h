/* gk_emu.h: runs the CUDA kernels of runtime/gpu/gk_*.cu on CPU threads
 * (built by the host C++ compiler with -DGK_EMULATE), so their indexing,
 * formulas and block reductions are tested on machines without a GPU.
 * Each CUDA thread of a block is a fiber on one OS thread (on x86-64 a
 * hand-written switch of the callee-saved registers, ~20x cheaper than
 * swapcontext, which also makes a sigprocmask system call; ucontext
 * elsewhere); blocks run one after another; __shared__ becomes static (one block at a time),
 * __syncthreads a yield to a round-robin scheduler (a barrier over the
 * block's live threads: every caller in this code is block-uniform),
 * __shfl_xor_sync an exchange through a block buffer between two
 * barriers. Written by hand: no library emulates CUDA kernels. */
#ifndef LLMT_GK_EMU_H
#define LLMT_GK_EMU_H
#include <cuda_runtime_api.h>
#include <ucontext.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#undef __global__
#undef __device__
#undef __shared__
#undef __forceinline__
#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
using std::min;
using std::max;

inline uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

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

struct fiber {
    context ctx;
    std::vector<char> stack;
    bool done;
};

struct state {
    context sched;
    std::vector<fiber> f;
    std::vector<float> shfl;
    std::vector<unsigned char> dyn;
    const std::function<void()> *body;
    unsigned cur;
};
inline state S;

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
    S.f[S.cur].done = true;
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
    f.done = false;
}

/* __syncthreads: yield; the scheduler resumes everyone once every live
 * thread of the block has arrived (round robin over the threads) */
inline void sync() { jump(S.f[S.cur].ctx, S.sched); }

inline void *dyn() { return S.dyn.data(); }

struct launch {
    dim3 g, b;
    size_t sh;
    launch(dim3 g_, dim3 b_, size_t sh_) : g(g_), b(b_), sh(sh_) {}
    void run(const std::function<void()> &body) const
    {
        unsigned nt = b.x * b.y * b.z;
        if (S.f.size() < nt)
            S.f.resize(nt);
        S.shfl.assign(nt, 0.f);
        S.dyn.assign(sh ? sh : 1, 0);
        S.body = &body;
        blockDim = b;
        gridDim = g;
        for (unsigned z = 0; z < g.z; z++)
            for (unsigned y = 0; y < g.y; y++)
                for (unsigned x = 0; x < g.x; x++) {
                    blockIdx = make_uint3(x, y, z);
                    for (unsigned t = 0; t < nt; t++)
                        start(S.f[t]);
                    for (bool live = true; live;) {
                        live = false;
                        for (unsigned t = 0; t < nt; t++) {
                            if (S.f[t].done)
                                continue;
                            S.cur = t;
                            threadIdx = make_uint3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                            jump(S.sched, S.f[t].ctx);
                            live = live || !S.f[t].done;
                        }
                    }
                }
    }
    template <class K> auto operator()(K k) const
    {
        launch self = *this;
        return [self, k](auto... a) { self.run([&] { k(a...); }); };
    }
};

} // namespace gk_emu

static inline void __syncthreads() { gk_emu::sync(); }

static inline float __shfl_xor_sync(unsigned, float v, int o)
{
    gk_emu::S.shfl[gk_emu::S.cur] = v;
    gk_emu::sync();
    float r = gk_emu::S.shfl[gk_emu::S.cur ^ (unsigned)o];
    gk_emu::sync();
    return r;
}

#define GK_LAUNCH(k, grid, block, shmem, st) \
    ((void)(st), gk_emu::launch(dim3(grid), dim3(block), (shmem)))(k)
#define GK_DYN_SHARED(T, name) T *name = static_cast<T *>(gk_emu::dyn())
#define GK_LAST_ERROR() cudaSuccess

#endif

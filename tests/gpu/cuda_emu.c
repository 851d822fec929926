/* cuda_emu.c: for the host-only emulation test (test_gpu_emu): the CUDA
 * runtime calls the GPU model makes, on host memory (every operation
 * completes at once, streams and events are tokens; host<->device bytes
 * and device allocations are counted for LLMT_EMU_STATS and
 * llmt_emu_dev_bytes), gmm() as a plain
 * column-major product of the mapping gmm_plan gives cuBLASLt, and NCCL
 * groups carried over their MPI communicators, so the GPU model's
 * orchestration (gmodel.c, gmodel_step.c) runs unchanged on a machine
 * without a GPU, in one process or as an MPI job. Linked only into the
 * emulation builds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "bf16.h"
#include "gpu/gmm.h"

static char token;

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
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
    dev_now += n;
    dev_peak = dev_now > dev_peak ? dev_now : dev_peak;
    *p = b + DEV_HDR;
    return cudaSuccess;
}
/* pinned host memory, counted the same way (llmt_emu_pinned_bytes) */
static size_t pin_now;
size_t llmt_emu_pinned_bytes(void) { return pin_now; }
cudaError_t cudaMallocHost(void **p, size_t n)
{
    char *b = malloc(n + DEV_HDR);
    *p = NULL;
    if (!b)
        return cudaErrorMemoryAllocation;
    memcpy(b, &n, sizeof n);
    pin_now += n;
    *p = b + DEV_HDR;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    size_t n;
    if (!p)
        return cudaSuccess;
    memcpy(&n, (char *)p - DEV_HDR, sizeof n);
    dev_now -= n;
    free((char *)p - DEV_HDR);
    return cudaSuccess;
}
cudaError_t cudaHostRegister(void *p, size_t n, unsigned f)
{
    (void)p; (void)n; (void)f;
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void *p) { (void)p; return cudaSuccess; }
cudaError_t cudaFreeHost(void *p)
{
    size_t n;
    if (!p)
        return cudaSuccess;
    memcpy(&n, (char *)p - DEV_HDR, sizeof n);
    pin_now -= n;
    free((char *)p - DEV_HDR);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    (void)s;
    return cudaMemset(p, v, n);
}
/* transfer accounting for tests: with LLMT_EMU_STATS=FILE set, each
 * process appends "h2d_bytes d2h_bytes dev_peak_bytes" to FILE at exit */
static unsigned long long h2d, d2h;
static void stats_write(void)
{
    FILE *f = fopen(getenv("LLMT_EMU_STATS"), "a");
    if (f) {
        fprintf(f, "%llu %llu %zu\n", h2d, d2h, dev_peak);
        fclose(f);
    }
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k)
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
    memmove(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st)
{
    (void)st;
    return cudaMemcpy(d, s, n, k);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f)
{
    (void)f;
    *s = (cudaStream_t)(void *)&token;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f)
{
    (void)s; (void)e; (void)f;
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f)
{
    (void)f;
    *e = (cudaEvent_t)(void *)&token;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { (void)e; (void)s; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { (void)e; return cudaSuccess; }

/* ---- gmm on the host, through the cuBLASLt mapping ---------------------- */
struct gmm_ctx { int unused; };
gmm_ctx *gmm_create(cudaStream_t st, size_t ws)
{
    (void)st; (void)ws;
    return calloc(1, sizeof(gmm_ctx));
}
void gmm_free(gmm_ctx *g) { free(g); }
void gmm_set_stream(gmm_ctx *g, cudaStream_t st) { (void)g; (void)st; }

static float ld(const void *p, size_t i, llmt_dt t)
{
    return t == LLMT_DT_BF16 ? bf16_to_f32(((const bf16 *)p)[i]) : ((const float *)p)[i];
}

int gmm_ld(gmm_ctx *g, int batch, int M, int N, int K, const void *A, int lda, long long sa,
           int ta, const void *B, int ldb, long long sb, int tb, llmt_dt at, void *C, int ldc,
           long long sc, llmt_dt ct, float alpha, int accumulate)
{
    (void)g;
    gmm_colmajor p;
    gmm_plan_ld(M, N, K, ta, tb, lda, sa, ldb, sb, ldc, sc, &p);
    for (int b = 0; b < batch; b++) {
        size_t oa = (size_t)b * (size_t)p.stride_a, ob = (size_t)b * (size_t)p.stride_b;
        size_t oc = (size_t)b * (size_t)p.stride_c;
        for (int i = 0; i < p.m; i++)
            for (int j = 0; j < p.n; j++) {
                float s = 0.f;   /* fp32 accumulation, as CUBLAS_COMPUTE_32F */
                for (int k = 0; k < p.k; k++) {
                    size_t ia = p.trans_a ? k + (size_t)i * p.lda : i + (size_t)k * p.lda;
                    size_t ib = p.trans_b ? j + (size_t)k * p.ldb : k + (size_t)j * p.ldb;
                    s += ld(B, oa + ia, at) * ld(A, ob + ib, at);   /* A' = our B */
                }
                size_t ic = oc + i + (size_t)j * p.ldc;
                float v = alpha * s + (accumulate ? ld(C, ic, ct) : 0.f);
                if (ct == LLMT_DT_BF16)
                    ((bf16 *)C)[ic] = f32_to_bf16(v);
                else
                    ((float *)C)[ic] = v;
            }
    }
    return 0;
}

/* ---- NCCL over the group's MPI communicator ----------------------------
 * Device buffers are host memory here, so each NCCL call is the comm.h
 * collective on the same group (deterministic, as the runtime's MPI
 * backend); a NULL group is a one-rank communicator (single-process tests). */
#include "comm_nccl.h"

struct llmt_nccl { llmt_comm *c; int rank, size; };

llmt_nccl *llmt_nccl_create(llmt_comm *group, double timeout_s)
{
    (void)timeout_s;
    llmt_nccl *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->c = group;
    n->rank = group ? llmt_comm_rank(group) : 0;
    n->size = group ? llmt_comm_size(group) : 1;
    return n;
}
void llmt_nccl_free(llmt_nccl *n) { free(n); }
int llmt_nccl_rank(const llmt_nccl *n) { return n->rank; }
int llmt_nccl_size(const llmt_nccl *n) { return n->size; }
static int allreduce_f32(llmt_nccl *n, const float *s, float *r, size_t c)
{
    memmove(r, s, c * 4);
    return n->size > 1 ? llmt_comm_allreduce_sum_f32(n->c, r, c) : 0;
}
long llmt_nccl_emu_allreduces;   /* calls of llmt_nccl_allreduce_sum_f32 (for tests) */
int llmt_nccl_allreduce_sum_f32(llmt_nccl *n, const float *s, float *r, size_t c, cudaStream_t st)
{
    (void)st;
    llmt_nccl_emu_allreduces++;
    return allreduce_f32(n, s, r, c);
}
int llmt_nccl_allreduce_sum_f64(llmt_nccl *n, const double *s, double *r, size_t c, cudaStream_t st)
{
    (void)st;
    memmove(r, s, c * 8);
    return n->size > 1 ? llmt_comm_allreduce_sum_f64(n->c, r, c) : 0;
}
int llmt_nccl_reduce_scatter_sum_f32(llmt_nccl *n, const float *s, float *r, size_t c,
                                     cudaStream_t st)
{
    (void)st;
    if (n->size == 1)
        return allreduce_f32(n, s, r, c);
    return llmt_comm_reduce_scatter_sum_f32(n->c, s, r, c);
}
int llmt_nccl_allgather_f32(llmt_nccl *n, const float *s, float *r, size_t c, cudaStream_t st)
{
    (void)st;
    if (n->size == 1)
        return allreduce_f32(n, s, r, c);
    if (s == r + (size_t)n->rank * c) {   /* in place, as NCCL allows */
        float *tmp = malloc(c ? c * 4 : 1);
        if (!tmp)
            return -1;
        memcpy(tmp, s, c * 4);
        int rc = llmt_comm_allgather_f32(n->c, tmp, r, c);
        free(tmp);
        return rc;
    }
    return llmt_comm_allgather_f32(n->c, s, r, c);
}
int llmt_nccl_bcast_bytes(llmt_nccl *n, void *b, size_t bytes, int root, cudaStream_t st)
{
    (void)st;
    return n->size > 1 ? llmt_comm_bcast_bytes(n->c, b, bytes, root) : 0;
}
int llmt_nccl_send_bytes(llmt_nccl *n, const void *b, size_t bytes, int peer, cudaStream_t st)
{
    (void)st;
    return n->size > 1 ? llmt_comm_send_bytes(n->c, b, bytes, peer, 311) : -1;
}
int llmt_nccl_recv_bytes(llmt_nccl *n, void *b, size_t bytes, int peer, cudaStream_t st)
{
    (void)st;
    return n->size > 1 ? llmt_comm_recv_bytes(n->c, b, bytes, peer, 311) : -1;
}
int llmt_nccl_wait(llmt_nccl *n, cudaStream_t st)
{
    (void)n; (void)st;
    return 0;
}

/* test_gk_emu.cc: the emulation itself is strict enough to show the bugs
 * that a GPU would (gk_emu.h, cuda_emu.c): a missing __syncthreads gives
 * wrong results in one of the thread orders (forward and reverse each
 * catch one direction of a race, shuffle both); a kernel that depends on
 * the order of its blocks fails in reverse; a shuffle does not order the
 * warps of a block; fresh shared and device memory read as NaN; launches
 * beyond the device limits fail with cudaErrorInvalidConfiguration; a
 * full-mask shuffle in a partial warp and a __syncthreads after a return
 * stop the program; work on the legacy stream is not seen by a
 * non-blocking stream before it is ordered; a copy into pinned memory is
 * not there before the host synchronises; a pinned source changed before
 * that stops the program, and so do a device source changed by a stream
 * that does not wait for the copy, and an NCCL call on a stream that does
 * not wait for the work just queued on another. wmma (gk_emu_wmma.h):
 * a product is exact against fused multiply-adds in k order, in both
 * operand layouts; a lane that reads another lane's part of a store
 * without __syncwarp reads a stale value; a misaligned pointer, an ldm that
 * is not 16 bytes' multiple, lanes with different pointers and a call in
 * a warp where a lane returned stop the program. Exit 0 when all hold. */
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu/dev_common.cuh"
extern "C" {
#include "gpu/comm_nccl.h"
}

using namespace nvcuda;

static int fails;
static void check(const char *what, bool ok)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", what);
	fails += !ok;
}

/* out[i] = what the neighbour above (up) or below wrote to shared memory */
__global__ void k_neighbour(float *out, int up, int sync)
{
	__shared__ float s[256];
	int i = threadIdx.x, n = blockDim.x;
	s[i] = (float)(i + 1000 * blockIdx.x);
	if (sync)
		__syncthreads();
	int j = up ? min(i + 1, n - 1) : max(i - 1, 0);
	out[blockIdx.x * n + i] = s[j];
}

static bool neighbour_ok(float *out, int nb, int n, int up)
{
	for (int b = 0; b < nb; b++)
		for (int i = 0; i < n; i++) {
			int j = up ? std::min(i + 1, n - 1) : std::max(i - 1, 0);
			if (out[b * n + i] != (float)(j + 1000 * b))
				return false;
		}
	return true;
}

/* wrong on a GPU: block b reads what block b - 1 wrote in the same launch */
__global__ void k_chain(float *x)
{
	if (threadIdx.x == 0)
		x[blockIdx.x] = blockIdx.x ? x[blockIdx.x - 1] + 1.f : 1.f;
}

/* warp 0 writes s[0] before a shuffle, warp 1 reads it after one: a
 * shuffle orders the lanes of one warp only */
__global__ void k_warps(float *out)
{
	__shared__ float s[1];
	if (threadIdx.x == 0)
		s[0] = 7.f;
	float v = __shfl_xor_sync(0xffffffffu, (float)threadIdx.x, 1);
	out[threadIdx.x] = s[0] + 0.f * v;
}

/* reads shared memory nobody wrote */
__global__ void k_fresh(float *out)
{
	__shared__ float s[64];
	GK_DYN_SHARED(float, d);
	out[threadIdx.x] = s[threadIdx.x];
	out[64 + threadIdx.x] = d[threadIdx.x];
}

__global__ void k_sum(const float *x, float *out)
{
	float v = block_sum(x[threadIdx.x]);
	if (threadIdx.x == 0)
		out[0] = v;
}

__global__ void k_early(float *out)
{
	if (threadIdx.x == 5)
		return;
	__syncthreads();
	out[threadIdx.x] = 1.f;
}

__global__ void k_copy(const float *x, float *y, int n)
{
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		y[i] = x[i];
}

__global__ void k_nop(float *out)
{
	if (out && threadIdx.x == 0 && blockIdx.x == 0)
		out[0] = 1.f;
}

static bool all_nan(const float *x, int n)
{
	for (int i = 0; i < n; i++)
		if (!std::isnan(x[i]))
			return false;
	return true;
}

/* runs fn() in a child process; its wait status */
static int in_child(void (*fn)())
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		fn();
		_exit(0);
	}
	int st = 0;
	waitpid(p, &st, 0);
	return st;
}

/* c = a b + c of one 16 x 16 x 16 tile (b column-major when bcol; c
 * loaded and stored column-major when ccol), by one warp, through shared
 * memory, read back shifted by one element; sync 0 leaves out the
 * __syncwarp between the store and those reads */
__global__ void k_wmma(const gk_bf16 *a, const gk_bf16 *b, float *c, int bcol, int ccol, int sync,
					   int shift, int ldm, int vary)
{
	__shared__ __attribute__((aligned(128))) bf_t sa[256 + 64], sb[256];
	__shared__ __attribute__((aligned(128))) float sc[256];
	int l = threadIdx.x;
	for (int e = l; e < 256; e += 32) {
		sa[e] = reinterpret_cast<const bf_t *>(a)[e];
		sb[e] = reinterpret_cast<const bf_t *>(b)[e];
		sc[e] = c[e];
	}
	__syncwarp();
	if (vary < 0 && l == 5)
		return;     /* a lane gone before the warp's call */
	wmma::fragment<wmma::matrix_a, 16, 16, 16, bf_t, wmma::row_major> fa;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
	wmma::load_matrix_sync(fa, sa + shift + (vary > 0 && (l & 1) ? 16 : 0), (unsigned)ldm);
	wmma::load_matrix_sync(fc, sc, 16, ccol ? wmma::mem_col_major : wmma::mem_row_major);
	if (bcol) {
		wmma::fragment<wmma::matrix_b, 16, 16, 16, bf_t, wmma::col_major> fb;
		wmma::load_matrix_sync(fb, sb, 16);
		wmma::mma_sync(fc, fa, fb, fc);
	} else {
		wmma::fragment<wmma::matrix_b, 16, 16, 16, bf_t, wmma::row_major> fb;
		wmma::load_matrix_sync(fb, sb, 16);
		wmma::mma_sync(fc, fa, fb, fc);
	}
	wmma::store_matrix_sync(sc, fc, 16, ccol ? wmma::mem_col_major : wmma::mem_row_major);
	if (sync)
		__syncwarp();
	for (int e = l; e < 256; e += 32)
		c[e] = sc[(e + 1) % 256];       /* another lane's part (a fragment's layout is opaque) */
}

static gk_bf16 bf_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (gk_bf16)(u >> 16);      /* exact for the small integers used */
}

/* the tile product against fmaf in k order on the host: the same bits */
static void wmma_product()
{
	gk_bf16 a[256], b[256];
	float c[256], want[256];
	for (int i = 0; i < 256; i++) {
		a[i] = bf_of((float)((i * 7) % 13 - 6) / 8.f);
		b[i] = bf_of((float)((i * 5) % 11 - 5) / 4.f);
	}
	for (int bcol = 0; bcol < 2; bcol++)
		for (int ccol = 0; ccol < 2; ccol++) {
			for (int i = 0; i < 256; i++)
				c[i] = (float)(i % 17) / 3.f;
			for (int m = 0; m < 16; m++)
				for (int n = 0; n < 16; n++) {
					float s = c[ccol ? n * 16 + m : m * 16 + n];
					for (int k = 0; k < 16; k++) {
						uint32_t ua = (uint32_t)a[m * 16 + k] << 16;
						uint32_t ub = (uint32_t)b[bcol ? n * 16 + k : k * 16 + n] << 16;
						float fa, fb;
						memcpy(&fa, &ua, 4);
						memcpy(&fb, &ub, 4);
						s = fmaf(fa, fb, s);
					}
					want[ccol ? n * 16 + m : m * 16 + n] = s;
				}
			float c0[256], got[256];
			memcpy(c0, c, sizeof c);
			GK_LAUNCH(k_wmma, 1, 32, 0, 0)(a, b, c, bcol, ccol, 1, 0, 16, 0);
			for (int i = 0; i < 256; i++)
				got[(i + 1) % 256] = c[i];
			char what[120];
			snprintf(what, sizeof what, "wmma: a 16x16x16 product (b %s, c %s) is fmaf in k order",
					 bcol ? "col-major" : "row-major", ccol ? "col-major" : "row-major");
			check(what, !memcmp(got, want, sizeof got));
			if (bcol || ccol)
				continue;
			int stale = 0;
			memcpy(c, c0, sizeof c);
			GK_LAUNCH(k_wmma, 1, 32, 0, 0)(a, b, c, 0, 0, 0, 0, 16, 0);
			for (int i = 0; i < 256; i++)
				stale += c[i] != want[(i + 1) % 256];
			check("wmma: another lane's part of a store read without __syncwarp is stale", stale > 0);
		}
}

static void wmma_at(int shift, int ldm, int vary)
{
	gk_bf16 a[256] = {0}, b[256] = {0};
	float c[256] = {0};
	GK_LAUNCH(k_wmma, 1, 32, 0, 0)(a, b, c, 0, 0, 1, shift, ldm, vary);
}
static void wmma_misaligned() { wmma_at(1, 16, 0); }
static void wmma_bad_ldm() { wmma_at(0, 12, 0); }
static void wmma_lanes_differ() { wmma_at(0, 16, 1); }
static void wmma_lane_gone() { wmma_at(0, 16, -1); }

/* fn() must end the process with abort() (the emulation's message) */
static void dies(const char *what, void (*fn)())
{
	int st = in_child(fn);
	check(what, WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

static void partial_warp()
{
	float x[48] = {0}, out[1];
	GK_LAUNCH(k_sum, 1, 48, 0, 0)(x, out);
}

static void sync_after_return()
{
	float out[64];
	GK_LAUNCH(k_early, 1, 64, 0, 0)(out);
}

static void pinned_source_changed()
{
	float *h, *d;
	cudaStream_t st;
	cudaMallocHost((void **)&h, 64);
	cudaMalloc((void **)&d, 64);
	cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
	memset(h, 0, 64);
	cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, st);
	h[3] = 1.f;                        /* before the stream passed the copy */
	cudaStreamSynchronize(st);
}

/* a copy to pinned memory in flight on s2; a kernel on s1 overwrites its
 * device source, after waiting for the copy (wait) or not */
static void source_race(int wait)
{
	float *a, *b, *pin;
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	cudaMalloc((void **)&a, 256);
	cudaMalloc((void **)&b, 256);
	cudaMallocHost((void **)&pin, 256);
	cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
	cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
	cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
	cudaMemsetAsync(b, 0, 256, s1);
	cudaEventRecord(ev, s1);
	cudaStreamWaitEvent(s2, ev, 0);
	cudaMemcpyAsync(pin, a, 256, cudaMemcpyDeviceToHost, s2);
	if (wait) {
		cudaEventRecord(ev, s2);
		cudaStreamWaitEvent(s1, ev, 0);
	}
	GK_LAUNCH(k_copy, 1, 64, 0, s1)(b, a, 64);
	cudaStreamSynchronize(s2);
	cudaStreamSynchronize(s1);
}
static void source_race_waited() { source_race(1); }
static void source_race_unwaited() { source_race(0); }

/* a kernel on s1 makes a buffer, an all-reduce on s2 sums it */
static void nccl_order(int wait)
{
	float *a;
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	cudaMalloc((void **)&a, 256);
	cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
	cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
	cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
	llmt_nccl *n = llmt_nccl_create(NULL, 0);
	cudaMemsetAsync(a, 0, 256, s1);
	if (wait) {
		cudaEventRecord(ev, s1);
		cudaStreamWaitEvent(s2, ev, 0);
	}
	llmt_nccl_allreduce_sum_f32(n, a, a, 64, s2);
	llmt_nccl_wait(n, s2);
	llmt_nccl_free(n);
}
static void nccl_waited() { nccl_order(1); }
static void nccl_unwaited() { nccl_order(0); }

/* fn() must return normally */
static void lives(const char *what, void (*fn)())
{
	int st = in_child(fn);
	check(what, WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void orders()
{
	const int nb = 3, n = 64;
	float out[nb * n];
	static const char *name[3] = {"forward", "reverse", "shuffle"};
	for (int o = 0; o < 3; o++) {
		char what[160];
		gk_emu::set_order(o, 1);
		for (int up = 0; up < 2; up++) {
			GK_LAUNCH(k_neighbour, nb, n, 0, 0)(out, up, 1);
			snprintf(what, sizeof what, "%s order: with __syncthreads, each thread reads the "
					 "neighbour %s", name[o], up ? "above" : "below");
			check(what, neighbour_ok(out, nb, n, up));
			GK_LAUNCH(k_neighbour, nb, n, 0, 0)(out, up, 0);
			/* forward runs lower threads first: it shows a read of a
			 * higher thread's write; reverse the other way; shuffle both */
			bool caught = !neighbour_ok(out, nb, n, up);
			bool want = o == 2 || (o == 0) == (up == 1);
			snprintf(what, sizeof what, "%s order: without it, the race on the neighbour %s %s",
					 name[o], up ? "above" : "below", want ? "shows" : "hides (by luck)");
			check(what, caught == want);
		}
		float x[8];
		GK_LAUNCH(k_chain, 8, 32, 0, 0)(x);
		bool chain_ok = true;
		for (int b = 0; b < 8; b++)
			chain_ok = chain_ok && x[b] == (float)(b + 1);
		snprintf(what, sizeof what, "%s order: a kernel that needs its blocks in order %s",
				 name[o], o ? "fails" : "passes (by luck)");
		check(what, chain_ok == (o == 0));
	}
	float w[64];
	gk_emu::set_order(gk_emu::REVERSE, 1);
	GK_LAUNCH(k_warps, 1, 64, 0, 0)(w);
	check("reverse order: warp 1 does not see warp 0's write across a shuffle",
		  all_nan(w + 32, 32) && w[0] == 7.f);
	gk_emu::set_order(gk_emu::FORWARD, 1);
}

static void memory_and_limits()
{
	float f[128];
	GK_LAUNCH(k_fresh, 1, 64, 64 * sizeof(float), 0)(f);
	check("fresh static and dynamic shared memory read as NaN", all_nan(f, 128));
	float *d;
	cudaMalloc((void **)&d, 256);
	float h[64];
	cudaMemcpy(h, d, 256, cudaMemcpyDeviceToHost);
	check("fresh cudaMalloc memory reads as NaN", all_nan(h, 64));

	GK_LAUNCH(k_nop, 1, 1024, 0, 0)(nullptr);
	check("1024 threads per block launch", GK_LAST_ERROR() == cudaSuccess);
	GK_LAUNCH(k_nop, 1, 2048, 0, 0)(nullptr);
	check("2048 threads per block: cudaErrorInvalidConfiguration",
		  GK_LAST_ERROR() == cudaErrorInvalidConfiguration);
	check("the error is read once", cudaGetLastError() == cudaSuccess);
	GK_LAUNCH(k_nop, 1, dim3(32, 33), 0, 0)(nullptr);
	check("32 x 33 threads: cudaGetLastError says so",
		  cudaGetLastError() == cudaErrorInvalidConfiguration);
	GK_LAUNCH(k_nop, dim3(1, 70000), 32, 0, 0)(nullptr);
	check("grid.y of 70000: invalid", GK_LAST_ERROR() == cudaErrorInvalidConfiguration);
	GK_LAUNCH(k_nop, 1, 32, 49152, 0)(nullptr);
	check("48 KiB of dynamic shared memory without opt-in: invalid",
		  GK_LAST_ERROR() == cudaErrorInvalidConfiguration);
	float x[64], one = 0.f;
	for (int i = 0; i < 64; i++)
		x[i] = 1.f;
	GK_LAUNCH(k_sum, 1, 64, 0, 0)(x, &one);
	check("block_sum over two full warps", one == 64.f);
	cudaFree(d);
}

static void streams()
{
	const int n = 64;
	float *a, *b, *pin, host[n];
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	cudaMalloc((void **)&a, n * 4);
	cudaMalloc((void **)&b, n * 4);
	cudaMallocHost((void **)&pin, n * 4);
	cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
	cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
	cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);

	cudaMemset(a, 0, n * 4);            /* legacy stream */
	GK_LAUNCH(k_copy, 1, 64, 0, s1)(a, b, n);
	cudaMemcpy(host, b, n * 4, cudaMemcpyDeviceToHost);
	check("a non-blocking stream does not wait for the legacy stream's cudaMemset",
		  all_nan(host, n));
	cudaDeviceSynchronize();
	GK_LAUNCH(k_copy, 1, 64, 0, s1)(a, b, n);
	cudaMemcpy(host, b, n * 4, cudaMemcpyDeviceToHost);
	check("after cudaDeviceSynchronize it does", host[0] == 0.f && host[n - 1] == 0.f);
	cudaMemsetAsync(a, 0, n * 4, s1);
	cudaMemcpy(host, a, n * 4, cudaMemcpyDeviceToHost);
	check("cudaMemsetAsync on the stream: in stream order", host[0] == 0.f);

	cudaMemcpyAsync(pin, a, n * 4, cudaMemcpyDeviceToHost, s1);
	check("a copy into pinned memory is not there before a synchronisation",
		  all_nan(pin, n));
	cudaStreamSynchronize(s1);
	check("cudaStreamSynchronize lands it", pin[0] == 0.f && pin[n - 1] == 0.f);

	for (int i = 0; i < n; i++)
		host[i] = 2.f;
	cudaMemcpy(b, host, n * 4, cudaMemcpyHostToDevice);   /* legacy, pageable */
	GK_LAUNCH(k_copy, 1, 64, 0, s1)(b, a, n);
	cudaMemcpy(host, a, n * 4, cudaMemcpyDeviceToHost);
	check("nor for a cudaMemcpy from pageable memory", host[0] == 0.f);
	cudaDeviceSynchronize();
	cudaMemsetAsync(a, 0, n * 4, s1);
	cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s1);
	check("a copy into pageable memory is there at once", host[0] == 0.f);
	cudaMemcpyAsync(pin, b, n * 4, cudaMemcpyDeviceToHost, s1);
	cudaEventRecord(ev, s1);
	cudaStreamWaitEvent(s2, ev, 0);
	check("not there before s2 (which waits for it) is synchronised", all_nan(pin, n));
	cudaStreamSynchronize(s2);
	check("a synchronisation of s2 lands s1's copy before the event", pin[0] == 2.f);
	cudaMemcpyAsync(pin, a, n * 4, cudaMemcpyDeviceToHost, s2);
	check("cudaStreamQuery says done and lands it",
		  cudaStreamQuery(s2) == cudaSuccess && pin[0] == 0.f);
	cudaEventDestroy(ev);
	cudaStreamDestroy(s1);
	cudaStreamDestroy(s2);
	cudaFreeHost(pin);
	cudaFree(a);
	cudaFree(b);
}

int main()
{
	orders();
	memory_and_limits();
	streams();
	wmma_product();
	dies("wmma: a pointer not 32-byte aligned stops the program", wmma_misaligned);
	dies("wmma: an ldm of 12 bf16 (24 bytes) stops the program", wmma_bad_ldm);
	dies("wmma: lanes of a warp with different pointers stop the program", wmma_lanes_differ);
	dies("wmma: a call in a warp where a lane returned stops the program", wmma_lane_gone);
	dies("a full-mask shuffle in a partial warp (48 threads) stops the program", partial_warp);
	dies("a __syncthreads after a thread returned stops the program", sync_after_return);
	dies("a pinned source changed before its stream was synchronised stops the program",
		 pinned_source_changed);
	lives("a stream that waits for a copy may then overwrite its source", source_race_waited);
	dies("a stream that does not wait for a copy in flight and overwrites its source stops "
		 "the program", source_race_unwaited);
	lives("an NCCL call on a stream that waits for the work it sums", nccl_waited);
	dies("an NCCL call on a stream that does not wait for the work just queued on another "
		 "stops the program", nccl_unwaited);
	printf("%s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

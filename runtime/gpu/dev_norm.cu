/* dev_norm.cu: RMSNorm forward and backward (deterministic weight gradient
 * through fixed row chunks), the column-sum finisher, and the
 * sum-of-squares used by the global gradient norm. */
#include "dev_common.cuh"

__global__ void k_rms_fwd(const float *x, const float *w, gk_bf16 *out, float *rstd, int d,
						  float eps)
{
	size_t m = blockIdx.x;
	const float *xr = x + m * d;
	float ss = 0.f;
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		ss += xr[i] * xr[i];
	ss = block_sum(ss);
	float r = rsqrtf(ss / (float)d + eps);
	if (threadIdx.x == 0)
		rstd[m] = r;
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		st_bf(out, m * d + i, xr[i] * r * w[i]);
}

extern "C" cudaError_t gk_rmsnorm_fwd(const float *x, const float *w, gk_bf16 *out, float *rstd,
									  int M, int d, float eps, cudaStream_t st)
{
	GK_LAUNCH(k_rms_fwd, M, gk_row_threads(d) > 256 ? 256 : gk_row_threads(d), 0, st)(x, w, out, rstd,
																			  d, eps);
	return GK_LAST_ERROR();
}

__global__ void k_rms_bwd_dx(const float *x, const float *w, const float *rstd, const float *dy,
							 float *dx, int d)
{
	size_t m = blockIdx.x;
	const float *xr = x + m * d, *g = dy + m * d;
	float r = rstd[m], dot = 0.f;
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		dot += g[i] * w[i] * xr[i];
	dot = block_sum(dot);
	float c = dot * r * r / (float)d;
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		dx[m * d + i] += r * (g[i] * w[i] - xr[i] * c);
}

/* part[chunk][j] = sum over the chunk's rows (in order) of dy*x*rstd */
__global__ void k_rms_bwd_dw(const float *x, const float *rstd, const float *dy, float *part,
							 int M, int d)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
	if (j >= d)
		return;
	int per = (M + GK_COLSUM_CHUNKS - 1) / GK_COLSUM_CHUNKS;
	int lo = c * per, hi = min(M, lo + per);
	float s = 0.f;
	for (int m = lo; m < hi; m++)
		s += dy[(size_t)m * d + j] * x[(size_t)m * d + j] * rstd[m];
	part[(size_t)c * d + j] = s;
}

__global__ void k_colsum_finish(const float *part, float *out, int w, int chunks, int acc)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= w)
		return;
	float s = 0.f;
	for (int c = 0; c < chunks; c++)
		s += part[(size_t)c * w + j];
	out[j] = acc ? out[j] + s : s;
}

void gk_colsum(const float *part, float *out, int w, int chunks, int acc, cudaStream_t st)
{
	GK_LAUNCH(k_colsum_finish, (w + 127) / 128, 128, 0, st)(part, out, w, chunks, acc);
}

extern "C" cudaError_t gk_rmsnorm_bwd(const float *x, const float *w, const float *rstd,
									  const float *dy, float *dx, float *dw, float *part, int M,
									  int d, int acc, cudaStream_t st)
{
	GK_LAUNCH(k_rms_bwd_dx, M, 256, 0, st)(x, w, rstd, dy, dx, d);
	dim3 g((d + 127) / 128, GK_COLSUM_CHUNKS);
	GK_LAUNCH(k_rms_bwd_dw, g, 128, 0, st)(x, rstd, dy, part, M, d);
	gk_colsum(part, dw, d, GK_COLSUM_CHUNKS, acc, st);
	return GK_LAST_ERROR();
}

__global__ void k_sumsq(const float *x, size_t n, double *partial, int vec)
{
	/* block b covers a fixed contiguous range (a multiple of 4 elements);
	 * threads stride inside it, 16-byte loads where x is aligned */
	size_t per = ((n + gridDim.x - 1) / gridDim.x + 3) / 4 * 4;
	size_t lo = (size_t)blockIdx.x * per;
	size_t hi = lo >= n ? lo : lo + per < n ? lo + per : n;
	double s = 0.0;
	size_t v0 = lo;
	if (vec) {
		const float4 *x4 = reinterpret_cast<const float4 *>(x);
		for (size_t i = lo / 4 + threadIdx.x; i < hi / 4; i += blockDim.x) {
			float4 f = x4[i];
			s += (double)f.x * f.x + (double)f.y * f.y + (double)f.z * f.z + (double)f.w * f.w;
		}
		v0 = hi / 4 * 4 > lo ? hi / 4 * 4 : lo;
	}
	for (size_t i = v0 + threadIdx.x; i < hi; i += blockDim.x)
		s += (double)x[i] * (double)x[i];
	__shared__ double red[256];
	red[threadIdx.x] = s;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o >>= 1) {
		if ((int)threadIdx.x < o)
			red[threadIdx.x] += red[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partial[blockIdx.x] = red[0];
}

extern "C" cudaError_t gk_sumsq(const float *x, size_t n, double *partial, cudaStream_t st)
{
	GK_LAUNCH(k_sumsq, GK_SUMSQ_BLOCKS, 256, 0, st)(x, n, partial, ((uintptr_t)x & 15) == 0);
	return GK_LAST_ERROR();
}

/* part[c][j] = sum over rows of chunk c (in order) of rows[r][j] */
__global__ void k_colpart(const float *rows, int nrows, int w, float *part)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
	if (j >= w)
		return;
	int per = (nrows + gridDim.y - 1) / gridDim.y;
	int lo = c * per, hi = min(nrows, lo + per);
	float s = 0.f;
	for (int r = lo; r < hi; r++)
		s += rows[(size_t)r * w + j];
	part[(size_t)c * w + j] = s;
}

void gk_colsum_rows(const float *rows, int nrows, int w, float *part, float *out,
					cudaStream_t st)
{
	/* about 128 rows a chunk, at most GK_COLSUM_MAX chunks: the count
	 * depends on the shape only, so the order of the sums is fixed */
	int chunks = nrows / 128;
	chunks = chunks < 1 ? 1 : (chunks > GK_COLSUM_MAX ? GK_COLSUM_MAX : chunks);
	dim3 g((w + 127) / 128, (unsigned)chunks);
	GK_LAUNCH(k_colpart, g, 128, 0, st)(rows, nrows, w, part);
	gk_colsum(part, out, w, chunks, 1, st);
}

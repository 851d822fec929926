/* matmul.c: oneDNN matmul primitives for llmt_mm, created once per shape
 * and type combination and cached; memory objects are re-pointed at the
 * caller's buffers on each call. bf16 fallback widens to fp32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>
#include "bf16.h"
#include "cpu.h"
#include "matmul.h"

struct entry {
	int batch, M, N, K, ta, tb, at, ct, acc;
	float alpha;
	dnnl_primitive_t prim;
	dnnl_memory_t a, b, c;
};

static dnnl_engine_t eng;
static dnnl_stream_t strm;
static struct entry *cache;
static int ncache, capcache;
static int native = -1;
static int perturb;

void llmt_mm_set_perturb(int on)
{
	perturb = on;
}

/* the wrongmath fault: flip the top mantissa bit of C's middle element */
static void perturb_out(void *C, llmt_dt ct, size_t n)
{
	if (ct == LLMT_DT_F32) {
		uint32_t u;
		memcpy(&u, (float *)C + n / 2, 4);
		u ^= 0x00400000u;
		memcpy((float *)C + n / 2, &u, 4);
	} else
		((uint16_t *)C)[n / 2] ^= 0x0040u;
}

int llmt_mm_bf16_native(void)
{
	if (native < 0) {
		const char *e = getenv("LLMT_NO_BF16");
		native = llmt_cpu_avx512() && !(e && *e && strcmp(e, "0"));
	}
	return native;
}

static int chk(dnnl_status_t s, const char *what)
{
	if (s == dnnl_success)
		return 0;
	fprintf(stderr, "llm-train: oneDNN %s failed (status %d)\n", what, (int)s);
	return -1;
}

static void md3(dnnl_memory_desc_t *md, int batch, int rows, int cols, int trans, dnnl_data_type_t dt)
{
	/* logical rows x cols; stored row-major as rows x cols, or as cols x rows
	 * when trans */
	dnnl_dims_t dims = { batch, rows, cols };
	dnnl_dims_t str;
	str[0] = (dnnl_dim_t)rows * cols;
	if (trans) {
		str[1] = 1;
		str[2] = rows;
	} else {
		str[1] = cols;
		str[2] = 1;
	}
	dnnl_memory_desc_init_by_strides(md, 3, dims, dt, str);
}

static struct entry *get(int batch, int M, int N, int K, int ta, int tb, int at, int ct,
						 float alpha, int acc)
{
	for (int i = 0; i < ncache; i++) {
		struct entry *e = &cache[i];
		if (e->batch == batch && e->M == M && e->N == N && e->K == K && e->ta == ta &&
			e->tb == tb && e->at == at && e->ct == ct && e->acc == acc && e->alpha == alpha)
			return e;
	}
	if (!eng) {
		if (chk(dnnl_engine_create(&eng, dnnl_cpu, 0), "engine_create") ||
			chk(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags), "stream_create"))
			return NULL;
	}
	if (ncache == capcache) {
		int nc = capcache ? 2 * capcache : 32;
		struct entry *p = realloc(cache, sizeof *p * (size_t)nc);
		if (!p)
			return NULL;
		cache = p;
		capcache = nc;
	}
	dnnl_data_type_t adt = at == LLMT_DT_BF16 ? dnnl_bf16 : dnnl_f32;
	dnnl_data_type_t cdt = ct == LLMT_DT_BF16 ? dnnl_bf16 : dnnl_f32;
	dnnl_memory_desc_t amd, bmd, cmd;
	md3(&amd, batch, M, K, ta, adt);
	md3(&bmd, batch, K, N, tb, adt);
	md3(&cmd, batch, M, N, 0, cdt);
	dnnl_matmul_desc_t d;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	struct entry e = { batch, M, N, K, ta, tb, at, ct, acc, alpha, NULL, NULL, NULL, NULL };
	int bad = chk(dnnl_matmul_desc_init(&d, &amd, &bmd, NULL, &cmd), "matmul_desc_init") ||
			  chk(dnnl_primitive_attr_create(&attr), "attr_create");
	if (!bad && alpha != 1.0f)
		bad = chk(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha), "set_output_scales");
	if (!bad && acc) {
		bad = chk(dnnl_post_ops_create(&po), "post_ops_create") ||
			  chk(dnnl_post_ops_append_sum(po, 1.0f), "append_sum") ||
			  chk(dnnl_primitive_attr_set_post_ops(attr, po), "set_post_ops");
	}
	if (!bad)
		bad = chk(dnnl_primitive_desc_create(&pd, &d, attr, eng, NULL), "primitive_desc_create") ||
			  chk(dnnl_primitive_create(&e.prim, pd), "primitive_create") ||
			  chk(dnnl_memory_create(&e.a, &amd, eng, DNNL_MEMORY_NONE), "memory_create") ||
			  chk(dnnl_memory_create(&e.b, &bmd, eng, DNNL_MEMORY_NONE), "memory_create") ||
			  chk(dnnl_memory_create(&e.c, &cmd, eng, DNNL_MEMORY_NONE), "memory_create");
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (bad)
		return NULL;
	cache[ncache] = e;
	return &cache[ncache++];
}

static int run(int batch, int M, int N, int K, const void *A, int ta, const void *B, int tb,
			   llmt_dt at, void *C, llmt_dt ct, float alpha, int acc)
{
	struct entry *e = get(batch, M, N, K, ta, tb, at, ct, alpha, acc);
	if (!e)
		return -1;
	dnnl_memory_set_data_handle(e->a, (void *)A);
	dnnl_memory_set_data_handle(e->b, (void *)B);
	dnnl_memory_set_data_handle(e->c, C);
	dnnl_exec_arg_t args[3] = {
		{ DNNL_ARG_SRC, e->a }, { DNNL_ARG_WEIGHTS, e->b }, { DNNL_ARG_DST, e->c } };
	if (chk(dnnl_primitive_execute(e->prim, strm, 3, args), "matmul execute"))
		return -1;
	return chk(dnnl_stream_wait(strm), "stream_wait");
}

static float *widen(const void *src, size_t n)
{
	float *f = malloc((n ? n : 1) * sizeof *f);
	if (!f)
		return NULL;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i += 4096)
		bf16_to_f32_n(f + i, (const bf16 *)src + i, n - i < 4096 ? n - i : 4096);
	return f;
}

static int mm(int batch, int M, int N, int K, const void *A, int ta, const void *B, int tb,
			  llmt_dt at, void *C, llmt_dt ct, float alpha, int accumulate);

int llmt_mm(int batch, int M, int N, int K, const void *A, int ta, const void *B, int tb,
			llmt_dt at, void *C, llmt_dt ct, float alpha, int accumulate)
{
	int rc = mm(batch, M, N, K, A, ta, B, tb, at, C, ct, alpha, accumulate);
	if (!rc && perturb && M > 0 && N > 0)
		perturb_out(C, ct, (size_t)M * N);
	return rc;
}

static int mm(int batch, int M, int N, int K, const void *A, int ta, const void *B, int tb,
			  llmt_dt at, void *C, llmt_dt ct, float alpha, int accumulate)
{
	if (at == LLMT_DT_F32 || llmt_mm_bf16_native())
		return run(batch, M, N, K, A, ta, B, tb, at, C, ct, alpha, accumulate);
	/* fallback: CPU without bf16 dot products: widen, multiply in fp32 */
	size_t na = (size_t)batch * M * K, nb = (size_t)batch * K * N, nc = (size_t)batch * M * N;
	float *fa = widen(A, na), *fb = widen(B, nb), *fc = NULL;
	int rc = -1;
	if (!fa || !fb)
		goto out;
	if (ct == LLMT_DT_F32) {
		rc = run(batch, M, N, K, fa, ta, fb, tb, LLMT_DT_F32, C, LLMT_DT_F32, alpha, accumulate);
		goto out;
	}
	fc = accumulate ? widen(C, nc) : malloc((nc ? nc : 1) * sizeof *fc);
	if (!fc)
		goto out;
	rc = run(batch, M, N, K, fa, ta, fb, tb, LLMT_DT_F32, fc, LLMT_DT_F32, alpha, accumulate);
	if (!rc)
		f32_to_bf16_n(C, fc, nc);
out:
	if (rc && (!fa || !fb || (ct == LLMT_DT_BF16 && !fc)))
		fprintf(stderr, "llm-train: out of memory in the fp32 fallback matmul\n");
	free(fa);
	free(fb);
	free(fc);
	return rc;
}

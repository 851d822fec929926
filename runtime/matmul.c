/* matmul.c: oneDNN matmul primitives for llmt_mm and llmt_mm_strided,
 * created once per shape, stride and type combination and cached; memory
 * objects are re-pointed at the caller's buffers on each call. bf16
 * fallback widens to fp32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>
#include "bf16.h"
#include "matmul.h"

struct shape {  /* everything a primitive depends on: the cache key */
    int batch, M, N, K, ta, tb, at, ct, acc;
    long lda, sa, ldb, sb, ldc, sc;
    float alpha;
};

struct entry {
    struct shape k;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
};

static dnnl_engine_t eng;
static dnnl_stream_t strm;
static struct entry *cache;
static int ncache, capcache;
static int native = -1;

int llmt_mm_bf16_native(void)
{
    if (native < 0) {
        const char *e = getenv("LLMT_NO_BF16");
        __builtin_cpu_init();
        native = __builtin_cpu_supports("avx512bf16") && !(e && *e && strcmp(e, "0"));
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

static void md3(dnnl_memory_desc_t *md, int batch, int rows, int cols, int trans, long ld,
                long bs, dnnl_data_type_t dt)
{
    /* logical rows x cols; stored row-major as rows x cols (row stride ld),
     * or as cols x rows when trans; batches bs elements apart */
    dnnl_dims_t dims = { batch, rows, cols };
    dnnl_dims_t str;
    str[0] = bs;
    if (trans) {
        str[1] = 1;
        str[2] = ld;
    } else {
        str[1] = ld;
        str[2] = 1;
    }
    dnnl_memory_desc_init_by_strides(md, 3, dims, dt, str);
}

static int same(const struct shape *x, const struct shape *y)
{
    return x->batch == y->batch && x->M == y->M && x->N == y->N && x->K == y->K &&
           x->ta == y->ta && x->tb == y->tb && x->at == y->at && x->ct == y->ct &&
           x->acc == y->acc && x->lda == y->lda && x->sa == y->sa && x->ldb == y->ldb &&
           x->sb == y->sb && x->ldc == y->ldc && x->sc == y->sc && x->alpha == y->alpha;
}

static struct entry *get(const struct shape *k)
{
    for (int i = 0; i < ncache; i++)
        if (same(&cache[i].k, k))
            return &cache[i];
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
    dnnl_data_type_t adt = k->at == LLMT_DT_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_data_type_t cdt = k->ct == LLMT_DT_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t amd, bmd, cmd;
    md3(&amd, k->batch, k->M, k->K, k->ta, k->lda, k->sa, adt);
    md3(&bmd, k->batch, k->K, k->N, k->tb, k->ldb, k->sb, adt);
    md3(&cmd, k->batch, k->M, k->N, 0, k->ldc, k->sc, cdt);
    float alpha = k->alpha;
    dnnl_matmul_desc_t d;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    struct entry e = { *k, NULL, NULL, NULL, NULL };
    int bad = chk(dnnl_matmul_desc_init(&d, &amd, &bmd, NULL, &cmd), "matmul_desc_init") ||
              chk(dnnl_primitive_attr_create(&attr), "attr_create");
    if (!bad && alpha != 1.0f)
        bad = chk(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha), "set_output_scales");
    if (!bad && k->acc) {
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

static int run(const struct shape *k, const void *A, const void *B, void *C)
{
    struct entry *e = get(k);
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

/* elements from the first to one past the last of a strided batch of
 * rows x cols views (stored transposed when trans) */
static size_t extent(int batch, int rows, int cols, int trans, long ld, long bs)
{
    if (trans) {
        int t = rows;
        rows = cols;
        cols = t;
    }
    return (size_t)(batch - 1) * (size_t)bs + (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
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

int llmt_mm_strided(int batch, int M, int N, int K, const void *A, int ta, long lda, long sa,
                    const void *B, int tb, long ldb, long sb, llmt_dt at, void *C, long ldc,
                    long sc, llmt_dt ct, float alpha, int accumulate)
{
    struct shape k = { batch, M, N, K, ta, tb, at, ct, accumulate, lda, sa, ldb, sb, ldc, sc,
                       alpha };
    if (at == LLMT_DT_F32 || llmt_mm_bf16_native())
        return run(&k, A, B, C);
    /* fallback: CPU without bf16 dot products: widen the spans the views
     * cover (same strides), multiply in fp32 */
    size_t na = extent(batch, M, K, ta, lda, sa), nb = extent(batch, K, N, tb, ldb, sb);
    size_t nc = extent(batch, M, N, 0, ldc, sc);
    float *fa = widen(A, na), *fb = widen(B, nb), *fc = NULL;
    int rc = -1;
    k.at = LLMT_DT_F32;
    if (!fa || !fb)
        goto out;
    if (ct == LLMT_DT_F32) {
        rc = run(&k, fa, fb, C);
        goto out;
    }
    /* the span may hold elements outside the views: widen it whole so
     * they go back unchanged (bf16 -> fp32 -> bf16 is exact) */
    fc = widen(C, nc);
    if (!fc)
        goto out;
    k.ct = LLMT_DT_F32;
    rc = run(&k, fa, fb, fc);
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

int llmt_mm(int batch, int M, int N, int K, const void *A, int ta, const void *B, int tb,
            llmt_dt at, void *C, llmt_dt ct, float alpha, int accumulate)
{
    return llmt_mm_strided(batch, M, N, K, A, ta, ta ? M : K, (long)M * K, B, tb, tb ? K : N,
                           (long)K * N, at, C, N, (long)M * N, ct, alpha, accumulate);
}

void llmt_mm_clear_cache(void)
{
    for (int i = 0; i < ncache; i++) {
        dnnl_primitive_destroy(cache[i].prim);
        dnnl_memory_destroy(cache[i].a);
        dnnl_memory_destroy(cache[i].b);
        dnnl_memory_destroy(cache[i].c);
    }
    free(cache);
    cache = NULL;
    ncache = capcache = 0;
}

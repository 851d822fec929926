/* kernels.c: element-wise and row kernels of the model (see kernels.h),
 * written by hand because they are fused per row to stay in cache; the
 * matrix products go through oneDNN (matmul.c). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

void k_rmsnorm_fwd(const float *x, const float *w, void *out, float *rstd, int M, int d,
                   float eps, int bf)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        const float *xr = x + (size_t)m * d;
        float ss = 0.f;
        for (int i = 0; i < d; i++)
            ss += xr[i] * xr[i];
        float r = 1.0f / sqrtf(ss / (float)d + eps);
        rstd[m] = r;
        if (bf) {
            bf16 *o = (bf16 *)out + (size_t)m * d;
            for (int i = 0; i < d; i++)
                o[i] = f32_to_bf16(xr[i] * r * w[i]);
        } else {
            float *o = (float *)out + (size_t)m * d;
            for (int i = 0; i < d; i++)
                o[i] = xr[i] * r * w[i];
        }
    }
}

void k_rmsnorm_bwd(const float *x, const float *w, const float *rstd, const float *dy,
                   float *dx, float *dw, int M, int d)
{
    int nt = omp_get_max_threads();
    float *part = calloc((size_t)nt * d, sizeof *part);
#pragma omp parallel num_threads(nt)
    {
        float *pw = part ? part + (size_t)omp_get_thread_num() * d : NULL;
#pragma omp for schedule(static)
        for (int m = 0; m < M; m++) {
            const float *xr = x + (size_t)m * d, *g = dy + (size_t)m * d;
            float *o = dx + (size_t)m * d;
            float r = rstd[m], dot = 0.f;
            for (int i = 0; i < d; i++)
                dot += g[i] * w[i] * xr[i];
            float c = dot * r * r / (float)d;
            for (int i = 0; i < d; i++)
                o[i] += r * (g[i] * w[i] - xr[i] * c);
            if (pw)
                for (int i = 0; i < d; i++)
                    pw[i] += g[i] * xr[i] * r;
        }
    }
    if (!part) { /* out of memory: serial, still correct */
        for (int m = 0; m < M; m++)
            for (int i = 0; i < d; i++)
                dw[i] += dy[(size_t)m * d + i] * x[(size_t)m * d + i] * rstd[m];
        return;
    }
    for (int t = 0; t < nt; t++)
        for (int i = 0; i < d; i++)
            dw[i] += part[(size_t)t * d + i];
    free(part);
}

/* normalise (optional) then rotate one head vector v[hd] in place */
static void head_fwd(float *v, int hd, const float *w, float *rs, float eps, const float *c,
                     const float *s)
{
    if (w) {
        float ss = 0.f;
        for (int i = 0; i < hd; i++)
            ss += v[i] * v[i];
        float r = 1.0f / sqrtf(ss / (float)hd + eps);
        *rs = r;
        for (int i = 0; i < hd; i++)
            v[i] = v[i] * r * w[i];
    }
    int h2 = hd / 2;
    for (int i = 0; i < h2; i++) {
        float a = v[i], b = v[i + h2];
        v[i] = a * c[i] - b * s[i];
        v[i + h2] = b * c[i] + a * s[i];
    }
}

void k_attn_prep_fwd(const float *qkv, void *q, void *k, void *v, int B, int T, int H, int KV,
                     int hd, const float *qw, const float *kw, float *qr, float *kr, float eps,
                     const float *cos_t, const float *sin_t, int bf)
{
    int W = (H + 2 * KV) * hd, G = H / KV;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float tmp[1024];
            size_t m = (size_t)b * T + t;
            const float *row = qkv + m * W;
            const float *c = cos_t + (size_t)t * (hd / 2), *s = sin_t + (size_t)t * (hd / 2);
            for (int h = 0; h < H; h++) {
                memcpy(tmp, row + (size_t)h * hd, sizeof(float) * hd);
                head_fwd(tmp, hd, qw, qr ? &qr[m * H + h] : NULL, eps, c, s);
                size_t o = (((size_t)b * H + h) * T + t) * hd;
                for (int i = 0; i < hd; i++)
                    act_st(q, o + i, tmp[i], bf);
            }
            for (int g = 0; g < KV; g++) {
                memcpy(tmp, row + (size_t)(H + g) * hd, sizeof(float) * hd);
                head_fwd(tmp, hd, kw, kr ? &kr[m * KV + g] : NULL, eps, c, s);
                const float *vv = row + (size_t)(H + KV + g) * hd;
                for (int j = 0; j < G; j++) {
                    size_t o = (((size_t)b * H + g * G + j) * T + t) * hd;
                    for (int i = 0; i < hd; i++) {
                        act_st(k, o + i, tmp[i], bf);
                        act_st(v, o + i, vv[i], bf);
                    }
                }
            }
        }
}

/* backward of head_fwd: g[hd] = dL/d(out) in, dL/d(in) out; x = input
 * before the norm (raw projection) */
static void head_bwd(float *g, const float *x, int hd, const float *w, float r, float *dw,
                     const float *c, const float *s)
{
    int h2 = hd / 2;
    for (int i = 0; i < h2; i++) { /* inverse rotation */
        float a = g[i], b = g[i + h2];
        g[i] = a * c[i] + b * s[i];
        g[i + h2] = b * c[i] - a * s[i];
    }
    if (w) {
        float dot = 0.f;
        for (int i = 0; i < hd; i++) {
            dot += g[i] * w[i] * x[i];
            dw[i] += g[i] * x[i] * r;
        }
        float cc = dot * r * r / (float)hd;
        for (int i = 0; i < hd; i++)
            g[i] = r * (g[i] * w[i] - x[i] * cc);
    }
}

void k_attn_prep_bwd(const float *dq, const float *dk, const float *dv, void *dqkv,
                     const float *qkv, int B, int T, int H, int KV, int hd, const float *qw,
                     const float *kw, const float *qr, const float *kr, float *dqw, float *dkw,
                     const float *cos_t, const float *sin_t, int bf)
{
    int W = (H + 2 * KV) * hd, G = H / KV;
    int nt = omp_get_max_threads();
    float *part = qw ? calloc((size_t)nt * 2 * hd, sizeof *part) : NULL;
    int qn = qw && part;
#pragma omp parallel num_threads(nt)
    {
        float *pq = qn ? part + (size_t)omp_get_thread_num() * 2 * hd : NULL;
        float *pk = pq ? pq + hd : NULL;
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                float g[1024], gv[1024];
                size_t m = (size_t)b * T + t;
                const float *row = qkv ? qkv + m * W : NULL;
                const float *c = cos_t + (size_t)t * (hd / 2), *s = sin_t + (size_t)t * (hd / 2);
                for (int h = 0; h < H; h++) {
                    memcpy(g, dq + (((size_t)b * H + h) * T + t) * hd, sizeof(float) * hd);
                    head_bwd(g, row ? row + (size_t)h * hd : NULL, hd, qn ? qw : NULL,
                             qn ? qr[m * H + h] : 0.f, pq, c, s);
                    for (int i = 0; i < hd; i++)
                        act_st(dqkv, m * W + (size_t)h * hd + i, g[i], bf);
                }
                for (int kvh = 0; kvh < KV; kvh++) {
                    memset(g, 0, sizeof(float) * hd);
                    memset(gv, 0, sizeof(float) * hd);
                    for (int j = 0; j < G; j++) {
                        size_t o = (((size_t)b * H + kvh * G + j) * T + t) * hd;
                        for (int i = 0; i < hd; i++) {
                            g[i] += dk[o + i];
                            gv[i] += dv[o + i];
                        }
                    }
                    head_bwd(g, row ? row + (size_t)(H + kvh) * hd : NULL, hd, qn ? kw : NULL,
                             qn ? kr[m * KV + kvh] : 0.f, pk, c, s);
                    for (int i = 0; i < hd; i++) {
                        act_st(dqkv, m * W + (size_t)(H + kvh) * hd + i, g[i], bf);
                        act_st(dqkv, m * W + (size_t)(H + KV + kvh) * hd + i, gv[i], bf);
                    }
                }
            }
    }
    if (qn) {
        for (int t = 0; t < nt; t++)
            for (int i = 0; i < hd; i++) {
                dqw[i] += part[(size_t)t * 2 * hd + i];
                dkw[i] += part[(size_t)t * 2 * hd + hd + i];
            }
    }
    free(part);
}

void k_softmax_causal_fwd(const float *S, void *P, int n, int T, int bf)
{
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < n; b++)
        for (int i = 0; i < T; i++) {
            size_t o = ((size_t)b * T + i) * T;
            const float *s = S + o;
            float mx = -INFINITY;
            for (int j = 0; j <= i; j++)
                mx = s[j] > mx ? s[j] : mx;
            float sum = 0.f;
            float e[4096];
            for (int j = 0; j <= i; j++) {
                e[j] = expf(s[j] - mx);
                sum += e[j];
            }
            float inv = 1.0f / sum;
            if (bf) {
                bf16 *p = (bf16 *)P + o;
                for (int j = 0; j <= i; j++)
                    p[j] = f32_to_bf16(e[j] * inv);
                memset(p + i + 1, 0, sizeof(bf16) * (size_t)(T - i - 1));
            } else {
                float *p = (float *)P + o;
                for (int j = 0; j <= i; j++)
                    p[j] = e[j] * inv;
                memset(p + i + 1, 0, sizeof(float) * (size_t)(T - i - 1));
            }
        }
}

void k_softmax_causal_bwd(const void *P, const float *dP, void *dS, int n, int T, int bf)
{
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < n; b++)
        for (int i = 0; i < T; i++) {
            size_t o = ((size_t)b * T + i) * T;
            float dot = 0.f;
            for (int j = 0; j <= i; j++)
                dot += act_ld(P, o + j, bf) * dP[o + j];
            for (int j = 0; j <= i; j++)
                act_st(dS, o + j, act_ld(P, o + j, bf) * (dP[o + j] - dot), bf);
            for (int j = i + 1; j < T; j++)
                act_st(dS, o + j, 0.f, bf);
        }
}

void k_heads_to_tokens(const void *o, void *att, int B, int T, int H, int hd, int bf)
{
    size_t es = bf ? 2 : 4;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                memcpy((char *)att + (((size_t)b * T + t) * H + h) * hd * es,
                       (const char *)o + (((size_t)b * H + h) * T + t) * hd * es, hd * es);
}

void k_tokens_to_heads(const float *datt, void *dO, int B, int T, int H, int hd, int bf)
{
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                const float *src = datt + (((size_t)b * T + t) * H + h) * hd;
                size_t o = (((size_t)b * H + h) * T + t) * hd;
                if (bf)
                    f32_to_bf16_n((bf16 *)dO + o, src, hd);
                else
                    memcpy((float *)dO + o, src, sizeof(float) * hd);
            }
}

void k_swiglu_fwd(const void *gu, void *a, int M, int F, int bf)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++)
        for (int j = 0; j < F; j++) {
            float g = act_ld(gu, (size_t)m * 2 * F + j, bf);
            float u = act_ld(gu, (size_t)m * 2 * F + F + j, bf);
            act_st(a, (size_t)m * F + j, g / (1.0f + expf(-g)) * u, bf);
        }
}

void k_swiglu_bwd(const void *gu, const float *da, void *dgu, int M, int F, int bf)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++)
        for (int j = 0; j < F; j++) {
            size_t ig = (size_t)m * 2 * F + j, iu = ig + F;
            float g = act_ld(gu, ig, bf), u = act_ld(gu, iu, bf);
            float sg = 1.0f / (1.0f + expf(-g));
            float d = da[(size_t)m * F + j];
            act_st(dgu, ig, d * u * sg * (1.0f + g * (1.0f - sg)), bf);
            act_st(dgu, iu, d * g * sg, bf);
        }
}

void k_embed_fwd(const float *E, const int32_t *tok, float *x, int M, int d)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++)
        memcpy(x + (size_t)m * d, E + (size_t)tok[m] * d, sizeof(float) * d);
}

void k_embed_bwd(float *dE, const int32_t *tok, const float *dx, int M, int d)
{
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int lo = (int)((int64_t)d * id / nt), hi = (int)((int64_t)d * (id + 1) / nt);
        for (int m = 0; m < M; m++) {
            float *dst = dE + (size_t)tok[m] * d;
            const float *src = dx + (size_t)m * d;
            for (int i = lo; i < hi; i++)
                dst[i] += src[i];
        }
    }
}

double k_xent_fwd(const float *logits, const int32_t *tgt, void *dlogits, int M, int V,
                  float z, int bf)
{
    double total = 0.0;
    float invM = 1.0f / (float)M;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int m = 0; m < M; m++) {
        const float *l = logits + (size_t)m * V;
        float mx = -INFINITY;
        for (int j = 0; j < V; j++)
            mx = l[j] > mx ? l[j] : mx;
        double sum = 0.0;
        for (int j = 0; j < V; j++)
            sum += exp((double)(l[j] - mx));
        double lse = mx + log(sum);
        total += lse - l[tgt[m]] + z * lse * lse;
        float coef = (float)(1.0 + 2.0 * z * lse) * invM;
        for (int j = 0; j < V; j++) {
            float p = (float)exp((double)l[j] - lse);
            float g = p * coef - (j == tgt[m] ? invM : 0.f);
            act_st(dlogits, (size_t)m * V + j, g, bf);
        }
    }
    return total / M;
}

void k_add(float *x, const float *r, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        x[i] += r[i];
}

void k_to_act(const float *src, void *dst, size_t n, int bf)
{
    if (!bf) {
        if (dst != src)
            memcpy(dst, src, n * sizeof(float));
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += 4096)
        f32_to_bf16_n((bf16 *)dst + i, src + i, n - i < 4096 ? n - i : 4096);
}

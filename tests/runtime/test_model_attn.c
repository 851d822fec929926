/* test_model_attn.c: attn.h's blocked causal attention against a float64
 * reference computed from the same bf16 inputs: P, the output, dq, dk and
 * dv, on shapes with T a multiple of the 64-block and not (1, 63, 100,
 * 130), head_dim 16/32/64; P is zero past the diagonal; results are
 * bit-identical on 1 and 3 threads. Skips (77) without AVX-512 BF16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attn.h"

static int fails;

static void expect(int ok, const char *what, double got, double lim)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s: %.3g (limit %.3g)\n", what, got, lim);
        fails++;
    }
}

static unsigned rng = 12345;
static float urand(void) /* [-1, 1) */
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(99);
    }
    return p;
}

/* max |a - ref| / max |ref| over n (a fp32 or bf16) */
static double relerr(const void *a, int abf, const double *ref, size_t n)
{
    double e = 0, mx = 1e-30;
    for (size_t i = 0; i < n; i++) {
        double v = abf ? bf16_to_f32(((const bf16 *)a)[i]) : ((const float *)a)[i];
        e = fmax(e, fabs(v - ref[i]));
        mx = fmax(mx, fabs(ref[i]));
    }
    return e / mx;
}

struct run {
    bf16 *P, *att, *dS;
    float *dq, *dk, *dv;
};

static void run_attn(struct run *r, int nt, const bf16 *q, const bf16 *k, const bf16 *v,
                     const bf16 *datt, int B, int H, int T, int hd)
{
    int BH = B * H, ld = attn_ld(T);
    size_t nq = (size_t)BH * T * hd, np = (size_t)BH * T * ld;
    r->P = xalloc(np * 2), r->dS = xalloc(np * 2), r->att = xalloc(nq * 2);
    r->dq = xalloc(nq * 4), r->dk = xalloc(nq * 4), r->dv = xalloc(nq * 4);
    attn_ws *w = attn_ws_new(BH, T, hd, nt);
    if (!w) {
        fprintf(stderr, "out of memory\n");
        exit(99);
    }
    float sc = 1.0f / sqrtf((float)hd);
    attn_fwd(w, q, k, v, r->P, r->att, B, H, T, hd, sc);
    attn_bwd(w, q, k, v, r->P, datt, r->dS, r->dq, r->dk, r->dv, B, H, T, hd, sc);
    attn_ws_free(w);
}

static void free_run(struct run *r)
{
    free(r->P), free(r->dS), free(r->att), free(r->dq), free(r->dk), free(r->dv);
}

static void check(int B, int H, int T, int hd)
{
    int BH = B * H, ld = attn_ld(T);
    size_t nq = (size_t)BH * T * hd;
    char tag[96];
    bf16 *q = xalloc(nq * 2), *k = xalloc(nq * 2), *v = xalloc(nq * 2);
    bf16 *datt = xalloc(nq * 2);
    for (size_t i = 0; i < nq; i++) { /* scores of a few units: peaked rows */
        q[i] = f32_to_bf16(2.0f * urand());
        k[i] = f32_to_bf16(2.0f * urand());
        v[i] = f32_to_bf16(urand());
        datt[i] = f32_to_bf16(urand());
    }
    struct run r1, r3;
    run_attn(&r1, 1, q, k, v, datt, B, H, T, hd);
    run_attn(&r3, 3, q, k, v, datt, B, H, T, hd);

    /* float64 reference, head by head; P, O token-major like the kernel */
    double sc = 1.0 / sqrt((double)hd);
    double *P = xalloc((size_t)T * T * 8), *dP = xalloc((size_t)T * T * 8);
    double *rP = xalloc((size_t)BH * T * T * 8), *rO = xalloc(nq * 8);
    double *rdq = xalloc(nq * 8), *rdk = xalloc(nq * 8), *rdv = xalloc(nq * 8);
    double zero_bad = 0;
    for (int bh = 0; bh < BH; bh++) {
        int b = bh / H, h = bh % H;
        const bf16 *Q = q + (size_t)bh * T * hd, *K = k + (size_t)bh * T * hd;
        const bf16 *V = v + (size_t)bh * T * hd;
#define X(p, i) ((double)bf16_to_f32((p)[i]))
#define DO(t, c) X(datt, (((size_t)b * T + (t)) * H + h) * hd + (c))
        for (int i = 0; i < T; i++) {
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j <= i; j++) {
                double s = 0;
                for (int c = 0; c < hd; c++)
                    s += X(Q, (size_t)i * hd + c) * X(K, (size_t)j * hd + c);
                P[(size_t)i * T + j] = s * sc;
                mx = fmax(mx, s * sc);
            }
            for (int j = 0; j <= i; j++)
                sum += (P[(size_t)i * T + j] = exp(P[(size_t)i * T + j] - mx));
            for (int j = 0; j < T; j++) {
                P[(size_t)i * T + j] = j <= i ? P[(size_t)i * T + j] / sum : 0.0;
                rP[((size_t)bh * T + i) * T + j] = P[(size_t)i * T + j];
            }
            /* the kernel's P: zeros from the diagonal to its written end */
            int zend = (((i / 64 + 1) * 64 < T ? (i / 64 + 1) * 64 : T) + 1) & ~1;
            for (int j = i + 1; j < zend; j++)
                zero_bad = fmax(zero_bad, fabs(bf16_to_f32(r1.P[((size_t)bh * T + i) * ld + j])));
            for (int c = 0; c < hd; c++) {
                double o = 0;
                for (int j = 0; j <= i; j++)
                    o += P[(size_t)i * T + j] * X(V, (size_t)j * hd + c);
                rO[(((size_t)b * T + i) * H + h) * hd + c] = o;
            }
        }
        for (int i = 0; i < T; i++) {
            double dot = 0;
            for (int j = 0; j <= i; j++) {
                double s = 0;
                for (int c = 0; c < hd; c++)
                    s += DO(i, c) * X(V, (size_t)j * hd + c);
                dP[(size_t)i * T + j] = s;
                dot += s * P[(size_t)i * T + j];
            }
            for (int j = 0; j <= i; j++) /* dS */
                dP[(size_t)i * T + j] = P[(size_t)i * T + j] * (dP[(size_t)i * T + j] - dot);
        }
        for (int t = 0; t < T; t++)
            for (int c = 0; c < hd; c++) {
                double gq = 0, gk = 0, gv = 0;
                for (int j = 0; j <= t; j++)
                    gq += dP[(size_t)t * T + j] * X(K, (size_t)j * hd + c);
                for (int i = t; i < T; i++) {
                    gk += dP[(size_t)i * T + t] * X(Q, (size_t)i * hd + c);
                    gv += P[(size_t)i * T + t] * DO(i, c);
                }
                size_t o = ((size_t)bh * T + t) * hd + c;
                rdq[o] = gq * sc, rdk[o] = gk * sc, rdv[o] = gv;
            }
#undef X
#undef DO
    }
    /* compare P row by row (the kernel's rows are ld apart) */
    double pe = 0;
    for (size_t row = 0; row < (size_t)BH * T; row++)
        for (int j = 0; j <= (int)(row % T); j++)
            pe = fmax(pe, fabs(bf16_to_f32(r1.P[row * ld + j]) - rP[row * T + j]));
    snprintf(tag, sizeof tag, "B=%d H=%d T=%d hd=%d", B, H, T, hd);
    char what[160];
#define CHK(cond, name, val, lim)                                                              \
    do {                                                                                       \
        snprintf(what, sizeof what, "%s: %s", tag, name);                                      \
        expect(cond, what, val, lim);                                                          \
    } while (0)
    /* bf16 storage of P: half an ulp at 1 is 2^-9 */
    CHK(pe <= 4e-3, "P error", pe, 4e-3);
    CHK(zero_bad == 0, "P nonzero above the diagonal", zero_bad, 0);
    double e;
    e = relerr(r1.att, 1, rO, nq);
    CHK(e <= 1e-2, "output error", e, 1e-2);
    e = relerr(r1.dq, 0, rdq, nq);
    CHK(e <= 2e-2, "dq error", e, 2e-2);
    e = relerr(r1.dk, 0, rdk, nq);
    CHK(e <= 2e-2, "dk error", e, 2e-2);
    e = relerr(r1.dv, 0, rdv, nq);
    CHK(e <= 2e-2, "dv error", e, 2e-2);
    int same = !memcmp(r1.att, r3.att, nq * 2) && !memcmp(r1.dq, r3.dq, nq * 4) &&
               !memcmp(r1.dk, r3.dk, nq * 4) && !memcmp(r1.dv, r3.dv, nq * 4);
    for (size_t row = 0; same && row < (size_t)BH * T; row++)
        same = !memcmp(r1.P + row * ld, r3.P + row * ld, 2 * (row % T + 1));
    CHK(same, "1 and 3 threads differ", 1, 0);
#undef CHK
    printf("%s: P %.2e, out %.2e, dq %.2e, dk %.2e, dv %.2e\n", tag, pe,
           relerr(r1.att, 1, rO, nq), relerr(r1.dq, 0, rdq, nq), relerr(r1.dk, 0, rdk, nq),
           relerr(r1.dv, 0, rdv, nq));
    free_run(&r1), free_run(&r3);
    free(q), free(k), free(v), free(datt), free(P), free(dP), free(rP), free(rO);
    free(rdq), free(rdk), free(rdv);
}

int main(void)
{
    if (!attn_ok(16)) {
        printf("SKIP: no AVX-512 BF16 on this CPU (or LLMT_NO_BF16): blocked attention not used\n");
        return 77;
    }
    check(1, 2, 64, 16);
    check(2, 3, 100, 32);
    check(1, 2, 130, 64);
    check(1, 1, 1, 16);
    check(2, 1, 63, 48);
    check(1, 1, 256, 64);
    if (fails)
        fprintf(stderr, "%d check(s) failed\n", fails);
    return fails ? 1 : 0;
}

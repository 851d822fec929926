/* ckpt_range.c: pure range math of checkpoints: which logical box of which
 * tensor a local table entry holds, how a flat range (a ZeRO-1 shard or a
 * DP share) cuts into boxes, box intersection, dtype conversion. */
#include "ckpt_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ck_param_box(const llmt_param_info *p, int64_t *rows, int64_t *cols, ck_box *b)
{
	int64_t R, C;

	if (p->ndim < 1 || p->ndim > 2 || p->shape[0] <= 0 || (p->ndim == 2 && p->shape[1] <= 0))
		return -1;
	R = p->shape[0];
	C = p->ndim == 2 ? p->shape[1] : 1;
	*b = (ck_box){ 0, R, 0, C };
	if (p->split_dim == 0) {
		b->r0 = p->split_off;
		b->nr = p->split_len;
	} else if (p->split_dim == 1) {
		if (p->ndim != 2)
			return -1;
		b->c0 = p->split_off;
		b->nc = p->split_len;
	} else if (p->split_dim != -1) {
		return -1;
	}
	if (b->r0 < 0 || b->nr <= 0 || b->r0 + b->nr > R || b->c0 < 0 || b->nc <= 0 || b->c0 + b->nc > C)
		return -1;
	if ((size_t)(b->nr * b->nc) != p->numel)
		return -1;
	*rows = R;
	*cols = C;
	return 0;
}

static int push(ck_cut **v, int *n, int *cap, int param, ck_box box, size_t at)
{
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 64;
		ck_cut *nv = realloc(*v, (size_t)nc * sizeof(**v));
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = (ck_cut){ param, box, at };
	return 0;
}

int ck_cut_range(const llmt_param_info *params, int n, size_t lo, size_t hi,
                 int skip, ck_cut **out, char *err, size_t errlen)
{
	ck_cut *v = NULL;
	int cnt = 0, cap = 0;

	for (int i = 0; i < n; i++) {
		const llmt_param_info *p = &params[i];
		int64_t R, C;
		ck_box b;
		size_t a, e;

		if (ck_param_box(p, &R, &C, &b) != 0) {
			ck_fmt(err, errlen, "parameter table entry %s: inconsistent shape/split", p->name);
			free(v);
			return -1;
		}
		if (((skip & CK_SKIP_TIED) && p->tied_copy) || ((skip & CK_SKIP_TPREP) && p->split_dim == -1))
			continue;
		a = p->offset > lo ? p->offset : lo;
		e = p->offset + p->numel < hi ? p->offset + p->numel : hi;
		if (a >= e)
			continue;
		/* local element range [a, e) of the entry, row-major over b */
		int64_t la = (int64_t)(a - p->offset), le = (int64_t)(e - p->offset);
		int64_t ar = la / b.nc, ac = la % b.nc, er = le / b.nc, ec = le % b.nc;
		int rc = 0;
		if (ar == er) {
			rc = push(&v, &cnt, &cap, i, (ck_box){ b.r0 + ar, 1, b.c0 + ac, ec - ac }, a - lo);
		} else {
			size_t at = a - lo;
			if (ac != 0) {
				rc |= push(&v, &cnt, &cap, i, (ck_box){ b.r0 + ar, 1, b.c0 + ac, b.nc - ac }, at);
				at += (size_t)(b.nc - ac);
				ar++;
			}
			if (er > ar) {
				rc |= push(&v, &cnt, &cap, i, (ck_box){ b.r0 + ar, er - ar, b.c0, b.nc }, at);
				at += (size_t)((er - ar) * b.nc);
			}
			if (ec != 0)
				rc |= push(&v, &cnt, &cap, i, (ck_box){ b.r0 + er, 1, b.c0, ec }, at);
		}
		if (rc) {
			ck_fmt(err, errlen, "out of memory");
			free(v);
			return -1;
		}
	}
	*out = v;
	return cnt;
}

int ck_box_intersect(const ck_box *a, const ck_box *b, ck_box *o)
{
	int64_t r0 = a->r0 > b->r0 ? a->r0 : b->r0;
	int64_t c0 = a->c0 > b->c0 ? a->c0 : b->c0;
	int64_t r1 = a->r0 + a->nr < b->r0 + b->nr ? a->r0 + a->nr : b->r0 + b->nr;
	int64_t c1 = a->c0 + a->nc < b->c0 + b->nc ? a->c0 + a->nc : b->c0 + b->nc;

	if (r0 >= r1 || c0 >= c1)
		return 0;
	*o = (ck_box){ r0, r1 - r0, c0, c1 - c0 };
	return 1;
}

void ck_dp_share(size_t n, int dp, int dp_rank, size_t *lo, size_t *hi)
{
	llmt_ckpt_dp_share(n, dp, dp_rank, lo, hi);
}

size_t ck_dtype_size(llmt_ckpt_dtype t)
{
	return t == LLMT_CKPT_F32 ? 4 : 2;
}

const char *ck_dtype_name(llmt_ckpt_dtype t)
{
	return t == LLMT_CKPT_BF16 ? "bf16" : t == LLMT_CKPT_F16 ? "f16" : "f32";
}

int ck_dtype_parse(const char *s, llmt_ckpt_dtype *t)
{
	if (!strcmp(s, "f32") || !strcmp(s, "F32") || !strcmp(s, "fp32"))
		*t = LLMT_CKPT_F32;
	else if (!strcmp(s, "bf16") || !strcmp(s, "BF16"))
		*t = LLMT_CKPT_BF16;
	else if (!strcmp(s, "f16") || !strcmp(s, "F16"))
		*t = LLMT_CKPT_F16;
	else
		return -1;
	return 0;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN stays NaN */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static float get_f32(const void *src, llmt_ckpt_dtype st, size_t i)
{
	if (st == LLMT_CKPT_F32)
		return ((const float *)src)[i];
	if (st == LLMT_CKPT_F16)
		return (float)((const _Float16 *)src)[i];
	uint32_t u = (uint32_t)((const uint16_t *)src)[i] << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

void ck_convert(void *dst, llmt_ckpt_dtype dt, const void *src, llmt_ckpt_dtype st, size_t n)
{
	if (dt == st) {
		memmove(dst, src, n * ck_dtype_size(dt));
	} else if (dt == LLMT_CKPT_F32) {
		float *d = dst;
		for (size_t i = 0; i < n; i++)
			d[i] = get_f32(src, st, i);
	} else if (dt == LLMT_CKPT_BF16) {
		uint16_t *d = dst;
		for (size_t i = 0; i < n; i++)
			d[i] = f32_to_bf16(get_f32(src, st, i));
	} else {
		_Float16 *d = dst;
		for (size_t i = 0; i < n; i++)
			d[i] = (_Float16)get_f32(src, st, i);
	}
}

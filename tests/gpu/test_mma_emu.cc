/* test_mma_emu.cc: the emulation's ldmatrix and mma.sync (gk_emu_mma.h,
 * through runtime/gpu/dev_mma.cuh) against plain references written here
 * from the PTX ISA's fragment tables (a second writing, not the
 * emulation's code): ldmatrix x4 and x4.trans give each lane the
 * elements of the A and B fragments it owns; mma m16n8k16 from
 * fragments built element by element equals a double product of the
 * same bf16 values (to fp32 rounding); ldmatrix then mma gives Q K^T
 * (K row-major, x4) and P V (V row-major, x4.trans) whole. Each in
 * forward, reverse and shuffled thread orders, two warps a block. A lane
 * that returned before a call, a misaligned row address, an address
 * outside shared memory and lanes at different calls stop the program.
 * Exit 0 when all hold. */
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu/dev_mma.cuh"

#define EMU_CHECK_SEED 0x2545f4914f6cdd1dull
#include "emu_check.h"
/* a value exact in bf16 */
static float bfv(float f) { return __bfloat162float(__float2bfloat16_rn(f)); }

/* The ISA's tables (lane, g = lane/4, t = lane%4), as (row, col) of
 * element j (0, 1: low, high half) of register i */
static void a_at(int lane, int i, int j, int *r, int *c)   /* A 16x16 */
{
	*r = lane / 4 + (i == 1 || i == 3 ? 8 : 0);
	*c = (lane % 4) * 2 + j + (i >= 2 ? 8 : 0);
}
static void b_at(int lane, int i, int j, int *r, int *c)   /* B 16x8 (k, n) */
{
	*r = (lane % 4) * 2 + j + (i == 1 ? 8 : 0);
	*c = lane / 4;
}
static void c_at(int lane, int i, int *r, int *c)          /* C, D 16x8 */
{
	*r = lane / 4 + (i >= 2 ? 8 : 0);
	*c = (lane % 4) * 2 + (i & 1);
}

static float lo(unsigned r) { return __bfloat162float(__ushort_as_bfloat16((unsigned short)r)); }
static float hi(unsigned r) { return lo(r >> 16); }

#define LD 24           /* the shared tile's row stride (bf16): 48 bytes */

/* each warp: x4 (trans: x4.trans) of the 16x16 tile m (row-major, LD)
 * with lane l giving row 8 ((l/8)%2) + l%8, columns 8 (l/16) on: out
 * [thread][4] registers */
__global__ void k_ldsm(const float *m, unsigned *out, int trans)
{
	__shared__ __align__(16) bf_t sm[16 * LD];
	for (int e = threadIdx.x; e < 16 * LD; e += blockDim.x)
		sm[e] = __float2bfloat16_rn(e % LD < 16 ? m[e / LD * 16 + e % LD] : 0.f);
	__syncthreads();
	int l = threadIdx.x & 31;
	const bf_t *p = sm + (((l >> 3) & 1) * 8 + (l & 7)) * LD + (l >> 4) * 8;
	unsigned r[4];
	if (trans)
		mma_ldsm<true>(r, p);
	else
		mma_ldsm<false>(r, p);
	for (int i = 0; i < 4; i++)
		out[threadIdx.x * 4 + i] = r[i];
}

/* each warp: d = a b + c, fragments built from a [16][16], b [16][8],
 * c [16][8] by the ISA's tables; d [16][8] by warp */
__global__ void k_mma(const float *a, const float *b, const float *c, float *d)
{
	int l = threadIdx.x & 31, w = threadIdx.x >> 5, r, col;
	unsigned fa[4], fb[2];
	float acc[4];
	for (int i = 0; i < 4; i++) {
		float e[2];
		for (int j = 0; j < 2; j++) {
			a_at(l, i, j, &r, &col);
			e[j] = a[r * 16 + col];
		}
		fa[i] = mma_pack(e[0], e[1]);
		c_at(l, i, &r, &col);
		acc[i] = c[r * 8 + col];
	}
	for (int i = 0; i < 2; i++) {
		float e[2];
		for (int j = 0; j < 2; j++) {
			b_at(l, i, j, &r, &col);
			e[j] = b[r * 8 + col];
		}
		fb[i] = mma_pack(e[0], e[1]);
	}
	mma_bf16(acc, fa, fb);
	for (int i = 0; i < 4; i++) {
		c_at(l, i, &r, &col);
		d[w * 128 + r * 8 + col] = acc[i];
	}
}

/* one warp: s = q k^T (q [16][16], k [16][16] row-major, by ldmatrix
 * x4: keys 8 (l/16) + l%8, dims 8 ((l/8)%2)) and o = p v (p = q,
 * v [16][16] row-major by x4.trans) : s, o [16][16] */
__global__ void k_chain(const float *q, const float *k, const float *v, float *s, float *o)
{
	__shared__ __align__(16) bf_t sq[16 * LD], sk[16 * LD], sv[16 * LD];
	for (int e = threadIdx.x; e < 16 * LD; e += blockDim.x) {
		int r = e / LD, c = e % LD;
		sq[e] = __float2bfloat16_rn(c < 16 ? q[r * 16 + c] : 0.f);
		sk[e] = __float2bfloat16_rn(c < 16 ? k[r * 16 + c] : 0.f);
		sv[e] = __float2bfloat16_rn(c < 16 ? v[r * 16 + c] : 0.f);
	}
	__syncthreads();
	int l = threadIdx.x & 31, fo = (((l >> 3) & 1) * 8 + (l & 7)) * LD + (l >> 4) * 8;
	unsigned qa[4], bk[4], bv[4];
	mma_ldsm<false>(qa, sq + fo);
	mma_ldsm<false>(bk, sk + ((l >> 4) * 8 + (l & 7)) * LD + ((l >> 3) & 1) * 8);
	mma_ldsm<true>(bv, sv + fo);
	float acc[4][4] = {};
	mma_bf16(acc[0], qa, bk);
	mma_bf16(acc[1], qa, bk + 2);
	mma_bf16(acc[2], qa, bv);
	mma_bf16(acc[3], qa, bv + 2);
	for (int n = 0; n < 4; n++)
		for (int i = 0; i < 4; i++) {
			int r, c;
			c_at(l, i, &r, &c);
			(n < 2 ? s : o)[r * 16 + (n & 1) * 8 + c] = acc[n][i];
		}
}

static float A[256], B[128], C[128], Q[256], K[256], V[256];

static void orders_run(const char *name, bool (*fn)())
{
	int od[4][2] = {{gk_emu::FORWARD, 1}, {gk_emu::REVERSE, 1}, {gk_emu::SHUFFLE, 1},
					{gk_emu::SHUFFLE, 2}};
	const char *on[] = {"forward", "reverse", "shuffled", "shuffled (seed 2)"};
	for (int i = 0; i < 4; i++) {
		gk_emu::set_order(od[i][0], (unsigned long long)od[i][1]);
		char what[200];
		snprintf(what, sizeof what, "%s, %s order", name, on[i]);
		check(what, fn());
	}
	gk_emu::set_order(gk_emu::FORWARD, 1);
}

/* the registers of every lane of both warps against the table */
static bool ldsm_ok(int trans)
{
	unsigned out[64 * 4];
	GK_LAUNCH(k_ldsm, 1, 64, 0, 0)(A, out, trans);
	if (GK_LAST_ERROR())
		return false;
	for (int t = 0; t < 64; t++)
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 2; j++) {
				int r, c, l = t % 32;
				a_at(l, i, j, &r, &c);
				if (trans) {   /* matrix i (at 8 (i%2), 8 (i/2)) transposed */
					r = 8 * (i & 1) + (l % 4) * 2 + j;
					c = 8 * (i >> 1) + l / 4;
				}
				float got = j ? hi(out[t * 4 + i]) : lo(out[t * 4 + i]);
				if (got != A[r * 16 + c])
					return false;
			}
	return true;
}
static bool ldsm_plain() { return ldsm_ok(0); }
static bool ldsm_trans() { return ldsm_ok(1); }

static bool mma_ok()
{
	float d[256];
	GK_LAUNCH(k_mma, 1, 64, 0, 0)(A, B, C, d);
	double worst = 0;
	for (int w = 0; w < 2; w++)
		for (int m = 0; m < 16; m++)
			for (int n = 0; n < 8; n++) {
				double s = C[m * 8 + n];
				for (int k = 0; k < 16; k++)
					s += (double)A[m * 16 + k] * B[k * 8 + n];
				worst = fmax(worst, fabs(d[w * 128 + m * 8 + n] - s));
			}
	return !GK_LAST_ERROR() && worst <= 1e-5;
}

static bool chain_ok()
{
	float s[256], o[256];
	GK_LAUNCH(k_chain, 1, 32, 0, 0)(Q, K, V, s, o);
	double worst = 0;
	for (int m = 0; m < 16; m++)
		for (int n = 0; n < 16; n++) {
			double rs_ = 0, ro = 0;
			for (int k = 0; k < 16; k++) {
				rs_ += (double)Q[m * 16 + k] * K[n * 16 + k];
				ro += (double)Q[m * 16 + k] * V[k * 16 + n];
			}
			worst = fmax(worst, fmax(fabs(s[m * 16 + n] - rs_), fabs(o[m * 16 + n] - ro)));
		}
	return !GK_LAST_ERROR() && worst <= 1e-5;
}

/* the program must stop (abort) in these */
__global__ void k_bad(int how)
{
	__shared__ __align__(16) bf_t sm[16 * LD];
	static __align__(16) bf_t glob[16 * LD];
	int l = threadIdx.x & 31;
	unsigned r[4];
	const bf_t *p = (how == 2 ? glob : sm) + (l & 15) * LD + (how == 1 ? 4 : 0);
	if (how == 0 && l == 5)
		return;
	if (how == 3 && l == 7)
		mma_ldsm<true>(r, p);
	else
		mma_ldsm<false>(r, p);
}
static void in_child(const char *what, int how)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		GK_LAUNCH(k_bad, 1, 32, 0, 0)(how);
		_exit(0);
	}
	int st = 0;
	waitpid(p, &st, 0);
	check(what, WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

int main()
{
	for (auto &e : A)
		e = bfv(frand());
	for (auto &e : B)
		e = bfv(frand());
	for (auto &e : C)
		e = frand();
	for (int i = 0; i < 256; i++) {
		Q[i] = bfv(frand());
		K[i] = bfv(frand());
		V[i] = bfv(frand());
	}
	orders_run("ldmatrix x4: each lane holds its A-fragment elements", ldsm_plain);
	orders_run("ldmatrix x4.trans: each lane holds the transposed matrices' elements", ldsm_trans);
	orders_run("mma m16n8k16: D = A B + C against a double product", mma_ok);
	orders_run("ldmatrix + mma: Q K^T (x4) and Q V (x4.trans) whole", chain_ok);
	in_child("a lane that returned before ldmatrix stops the program", 0);
	in_child("a row address not 16-byte aligned stops the program", 1);
	in_child("a row address outside shared memory stops the program", 2);
	in_child("lanes at ldmatrix and at ldmatrix.trans stop the program", 3);
	printf("%s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

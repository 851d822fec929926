/* test_flash_emu.cc: the fused attention kernels (runtime/gpu/dev_flash.cu;
 * the forward at head dims 64 and 128 dev_flash_mma.cu's, on mma.sync)
 * through the emulation against a double-precision causal attention on
 * the same bf16 inputs: GQA and plain, head dims 64 and 128 (and 8, the
 * small model's, padded to the tensor cores' 16), T not a multiple of
 * the tile, segments; at 64 and 128 the wmma forward too, against the
 * reference and the mma one, and the mma self-check. Each case runs in
 * forward, reverse and shuffled thread orders, whose results must be
 * the same bits. `test_flash_emu dump DIR` writes one case's inputs and
 * outputs for flash_ref.py (PyTorch). Exit 0 when all hold. */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "gpu/dev_common.cuh"

#define EMU_CHECK_SEED 88172645463325252ull
#include "emu_check.h"

static float bf2f(gk_bf16 b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static gk_bf16 f2bf(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);
	return (gk_bf16)(u >> 16);
}

struct fcase {
	int B, T, H, KV, hd, nseg;   /* nseg 0: no segment ids */
};

struct fio {
	std::vector<gk_bf16> q, k, v, o, dO, dq, dk, dv;
	std::vector<float> lse, D;
	std::vector<int> seg;
};

static void fill(const fcase &c, fio &x)
{
	size_t nq = (size_t)c.B * c.T * c.H * c.hd, nk = (size_t)c.B * c.T * c.KV * c.hd;
	x.q.resize(nq);
	x.dO.resize(nq);
	x.k.resize(nk);
	x.v.resize(nk);
	for (auto &e : x.q)
		e = f2bf(2.f * frand());
	for (auto &e : x.k)
		e = f2bf(2.f * frand());
	for (auto &e : x.v)
		e = f2bf(frand());
	for (auto &e : x.dO)
		e = f2bf(frand());
	x.seg.clear();
	if (c.nseg)   /* segment boundaries at fixed, uneven places */
		for (int b = 0; b < c.B; b++)
			for (int t = 0; t < c.T; t++)
				x.seg.push_back(b * 100 + (t * c.nseg * (t + 3)) / (c.T * (c.T + 3)));
}

static void run(const fcase &c, fio &x)
{
	size_t nq = x.q.size(), nk = x.k.size(), nr = (size_t)c.B * c.H * c.T;
	x.o.assign(nq, 0);
	x.lse.assign(nr, NAN);
	x.D.assign(nr, NAN);
	x.dq.assign(nq, 0xffff);   /* NaN */
	x.dk.assign(nk, 0xffff);
	x.dv.assign(nk, 0xffff);
	const int *seg = x.seg.empty() ? nullptr : x.seg.data();
	cudaError_t e1 = gk_flash_fwd(x.q.data(), x.k.data(), x.v.data(), x.o.data(), x.lse.data(),
								  seg, c.B, c.T, c.H, c.KV, c.hd, 0);
	cudaError_t e2 = gk_flash_bwd(x.q.data(), x.k.data(), x.v.data(), x.o.data(), x.dO.data(),
								  x.lse.data(), x.D.data(), seg, x.dq.data(), x.dk.data(),
								  x.dv.data(), c.B, c.T, c.H, c.KV, c.hd, 0);
	if (e1 || e2) {
		printf("FAIL launch: %d %d\n", (int)e1, (int)e2);
		exit(1);
	}
}

/* the reference in double on the same bf16 values; D from the kernel's
 * bf16 output (as the kernel does), so the gradients meet tight limits */
struct fref {
	std::vector<double> o, lse, dq, dk, dv;
};

static void reference(const fcase &c, const fio &x, fref &r)
{
	int T = c.T, H = c.H, KV = c.KV, hd = c.hd, G = H / KV;
	double sc = 1.0 / sqrt((double)hd);
	r.o.assign(x.q.size(), 0);
	r.dq.assign(x.q.size(), 0);
	r.dk.assign(x.k.size(), 0);
	r.dv.assign(x.k.size(), 0);
	r.lse.assign((size_t)c.B * H * T, 0);
	std::vector<double> p(T), dp(T);
	for (int b = 0; b < c.B; b++)
		for (int h = 0; h < H; h++)
			for (int i = 0; i < T; i++) {
				int g = h / G;
				auto Q = [&](int t, int f) { return bf2f(x.q[(((size_t)b * T + t) * H + h) * hd + f]); };
				auto K = [&](int t, int f) { return bf2f(x.k[(((size_t)b * T + t) * KV + g) * hd + f]); };
				auto V = [&](int t, int f) { return bf2f(x.v[(((size_t)b * T + t) * KV + g) * hd + f]); };
				auto sees = [&](int j) {
					return j <= i && (x.seg.empty() || x.seg[(size_t)b * T + j] == x.seg[(size_t)b * T + i]);
				};
				double mx = -INFINITY;
				for (int j = 0; j < T; j++) {
					p[j] = -INFINITY;
					if (sees(j)) {
						double s = 0;
						for (int f = 0; f < hd; f++)
							s += (double)Q(i, f) * K(j, f);
						p[j] = s * sc;
						mx = fmax(mx, p[j]);
					}
				}
				double sum = 0;
				for (int j = 0; j < T; j++)
					sum += p[j] = sees(j) ? exp(p[j] - mx) : 0;
				size_t orow = (((size_t)b * T + i) * H + h) * hd;
				r.lse[((size_t)b * H + h) * T + i] = mx + log(sum);
				double Dr = 0;
				for (int f = 0; f < hd; f++)
					Dr += (double)bf2f(x.dO[orow + f]) * bf2f(x.o[orow + f]);
				for (int j = 0; j < T; j++) {
					p[j] /= sum;
					dp[j] = 0;
					for (int f = 0; f < hd; f++) {
						r.o[orow + f] += p[j] * V(j, f);
						dp[j] += (double)bf2f(x.dO[orow + f]) * V(j, f);
					}
					double ds = p[j] * (dp[j] - Dr);
					size_t kr = (((size_t)b * T + j) * KV + g) * hd;
					for (int f = 0; f < hd; f++) {
						r.dq[orow + f] += ds * sc * K(j, f);
						r.dk[kr + f] += ds * sc * Q(i, f);
						r.dv[kr + f] += p[j] * bf2f(x.dO[orow + f]);
					}
				}
			}
}

template <class A> static double rel(const A &a, const std::vector<double> &b)
{
	double d = 0, m = 0;
	for (size_t i = 0; i < b.size(); i++) {
		double ai;
		if constexpr (sizeof(a[0]) == 2)
			ai = bf2f(a[i]);
		else
			ai = a[i];
		d = fmax(d, fabs(ai - b[i]));
		if (!(ai == ai))
			d = INFINITY;
		m = fmax(m, fabs(b[i]));
	}
	return d / (m > 0 ? m : 1);
}

static bool same_bits(const fio &a, const fio &b)
{
	return a.o == b.o && !memcmp(a.lse.data(), b.lse.data(), a.lse.size() * 4) &&
		   a.dq == b.dq && a.dk == b.dk && a.dv == b.dv;
}

/* head dims 64 and 128: the wmma forward (LLM_TRAIN_GPU_FLASH=wmma) on
 * the same inputs, against the reference and against the mma forward
 * (x's, gk_flash_fwd's default): two roundings of the same sums, bf16
 * apart at most (measured <= 3.9e-3 of the output's largest) */
static void versus_wmma(const fcase &c, const fio &x, const fref &r)
{
	std::vector<gk_bf16> o(x.o.size(), 0);
	std::vector<float> lse(x.lse.size(), NAN);
	const int *seg = x.seg.empty() ? nullptr : x.seg.data();
	cudaError_t e = gk_flash_fwd_wmma(x.q.data(), x.k.data(), x.v.data(), o.data(), lse.data(),
									  seg, c.B, c.T, c.H, c.KV, c.hd, 0);
	std::vector<double> om(o.size()), lm(lse.size());
	for (size_t i = 0; i < o.size(); i++)
		om[i] = bf2f(x.o[i]);
	for (size_t i = 0; i < lse.size(); i++)
		lm[i] = x.lse[i];
	double eo = rel(o, r.o), el = rel(lse, r.lse), dd = rel(o, om), dl = rel(lse, lm);
	char what[200];
	snprintf(what, sizeof what, "  wmma forward: o %.2g lse %.2g; mma - wmma: o %.2g lse %.2g", eo,
			 el, dd, dl);
	check(what, !e && eo <= 4e-3 && el <= 1e-6 && dd <= 6e-3 && dl <= 1e-6);
}

static void one(const fcase &c)
{
	char what[256];
	fio x;
	fill(c, x);
	gk_emu::set_order(gk_emu::FORWARD, 1);
	run(c, x);
	fref r;
	reference(c, x, r);
	/* the output is bf16 (half an ulp: 2^-9); lse an fp32 sum
	 * (measured <= 1.1e-7); the gradients are tensor-core products of
	 * bf16 P and dS (as FlashAttention-2 rounds them), summed in fp32,
	 * stored bf16: measured <= 5.3e-3 */
	double eo = rel(x.o, r.o), el = rel(x.lse, r.lse);
	double eq = rel(x.dq, r.dq), ek = rel(x.dk, r.dk), ev = rel(x.dv, r.dv);
	snprintf(what, sizeof what,
			 "B=%d T=%d H=%d KV=%d hd=%d seg=%d: o %.2g lse %.2g dq %.2g dk %.2g dv %.2g", c.B,
			 c.T, c.H, c.KV, c.hd, c.nseg, eo, el, eq, ek, ev);
	check(what, eo <= 4e-3 && el <= 1e-6 && eq <= 8e-3 && ek <= 8e-3 && ev <= 8e-3);
	if (c.hd == 64 || c.hd == 128)
		versus_wmma(c, x, r);
	int orders[3][2] = {{gk_emu::REVERSE, 1}, {gk_emu::SHUFFLE, 1}, {gk_emu::SHUFFLE, 2}};
	for (auto &od : orders) {
		fio y = x;
		gk_emu::set_order(od[0], (unsigned long long)od[1]);
		run(c, y);
		snprintf(what, sizeof what, "  the same bits in %s order (seed %d)",
				 od[0] == gk_emu::REVERSE ? "reverse" : "shuffled", od[1]);
		check(what, same_bits(x, y));
	}
	gk_emu::set_order(gk_emu::FORWARD, 1);
}

static void put(const std::string &path, const void *p, size_t bytes)
{
	FILE *f = fopen(path.c_str(), "wb");
	if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f)) {
		fprintf(stderr, "cannot write %s\n", path.c_str());
		exit(1);
	}
}

/* one case's tensors as raw files (bf16 as float32) and its shape */
static int dump(const char *dir, const fcase &c)
{
	fio x;
	fill(c, x);
	run(c, x);
	std::string d(dir);
	auto f32 = [](const std::vector<gk_bf16> &v) {
		std::vector<float> o(v.size());
		for (size_t i = 0; i < v.size(); i++)
			o[i] = bf2f(v[i]);
		return o;
	};
	const char *nb[] = {"q", "k", "v", "o", "dO", "dq", "dk", "dv"};
	const std::vector<gk_bf16> *vb[] = {&x.q, &x.k, &x.v, &x.o, &x.dO, &x.dq, &x.dk, &x.dv};
	for (int i = 0; i < 8; i++) {
		auto o = f32(*vb[i]);
		put(d + "/" + nb[i], o.data(), o.size() * 4);
	}
	put(d + "/lse", x.lse.data(), x.lse.size() * 4);
	if (!x.seg.empty())
		put(d + "/seg", x.seg.data(), x.seg.size() * 4);
	FILE *f = fopen((d + "/shape").c_str(), "w");
	if (!f)
		return 1;
	fprintf(f, "%d %d %d %d %d\n", c.B, c.T, c.H, c.KV, c.hd);
	return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv)
{
	fcase cases[] = {
		{2, 70, 4, 2, 64, 0},    /* GQA, three tiles, a partial last one */
		{1, 45, 2, 1, 128, 3},   /* hd 128, GQA 2:1, three segments */
		{1, 64, 2, 2, 64, 4},    /* no GQA, segments, two whole tiles */
		{2, 16, 4, 2, 8, 0},     /* the small model's head dim */
		{2, 100, 4, 2, 128, 0},  /* hd 128 (its warps split the head dim): four key tiles */
	};
	if (argc == 4 && !strcmp(argv[1], "dump")) {
		int i = atoi(argv[3]);
		if (i < 0 || i >= (int)(sizeof cases / sizeof cases[0]))
			return 64;
		return dump(argv[2], cases[i]);
	}
	if (argc != 1) {
		fprintf(stderr, "usage: test_flash_emu [dump DIR CASE]\n");
		return 64;
	}
	for (auto &c : cases)
		one(c);
	std::vector<gk_bf16> z(64);
	std::vector<float> zf(64);
	check("the wmma layout check passes (the emulation keeps one layout)",
		  gk_flash_layout_ok(0) == 1);
	check("the mma self-check passes at head dims 64 and 128",
		  gk_flash_mma_check(64, 0) == 1 && gk_flash_mma_check(128, 0) == 1);
	check("the mma forward refuses head dim 32 (the wmma forward runs it)",
		  gk_flash_fwd_mma(z.data(), z.data(), z.data(), z.data(), zf.data(), nullptr, 1, 1, 1, 1,
						   32, 0) == cudaErrorInvalidValue);
	check("head dim 48 is refused", gk_flash_fwd(z.data(), z.data(), z.data(), z.data(),
												 zf.data(), nullptr, 1, 1, 1, 1, 48, 0) ==
										cudaErrorInvalidValue);
	printf("%s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

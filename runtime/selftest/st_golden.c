/* st_golden.c: the self-test's golden checksums (st_golden.h). A new path
 * (another oneDNN or CPU ISA): run `llm-train selftest --print-golden
 * [--size full]` on a node known to be good and add its line here. */
#include "st_golden.h"
#include <math.h>
#include <string.h>

static const llmt_st_golden goldens[] = {
	/* Zen 4 (AVX-512 BF16), Debian 12's oneDNN 2.6.3; the same bits at 1 and 2 threads */
	{ "avx512-bf16 dnnl-2.6.3 isa-0xe7", "small", 0x31b852a914430b7eULL, 0.0010235679281641397 },
	{ "avx512-bf16 dnnl-2.6.3 isa-0xe7", "full", 0xe346c15cc9f8a997ULL, 0.00099810918040671502 },
	/* the same machine, LLMT_CPU=generic (portable kernels, fp32 products) */
	{ "generic dnnl-2.6.3 isa-0xe7", "small", 0x4637316bcb3e724cULL, 0.0010231180863846934 },
	{ "generic dnnl-2.6.3 isa-0xe7", "full", 0x6a1bbbcc9cafc5e0ULL, 0.00099799973569698712 },
	/* Intel Xeon with AMX and AVX-512 FP16 (oneDNN's avx512_core_amx, isa
	 * 0x3e7), the same oneDNN: its bf16 products run on AMX tiles, other
	 * bits than AVX-512 BF16's (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 gives
	 * the Zen 4 line above, bit for bit); the same bits at 1 and 2 threads.
	 * Its generic path gives the Zen 4 machine's generic bits. */
	{ "avx512-bf16 dnnl-2.6.3 isa-0x3e7", "small", 0x2a90372f32e7544aULL, 0.0010234836853820002 },
	{ "avx512-bf16 dnnl-2.6.3 isa-0x3e7", "full", 0x012067e697027485ULL, 0.00099791346094326382 },
	{ "generic dnnl-2.6.3 isa-0x3e7", "small", 0x4637316bcb3e724cULL, 0.0010231180863846934 },
	{ "generic dnnl-2.6.3 isa-0x3e7", "full", 0x6a1bbbcc9cafc5e0ULL, 0.00099799973569698712 },
	{ NULL, NULL, 0, 0 },
};

const llmt_st_golden *llmt_st_golden_find(const char *path, const char *size)
{
	for (const llmt_st_golden *g = goldens; g->path; g++)
		if (!strcmp(g->path, path) && !strcmp(g->size, size))
			return g;
	return NULL;
}

int llmt_st_norm1d_close(double a, double b)
{
	return fabs(a - b) <= LLMT_ST_NORM1D_RTOL * fmax(fabs(a), fabs(b));
}

int llmt_st_golden_check(const llmt_st_golden *g, uint64_t hash, double norm1d)
{
	if (!g)
		return 0;
	return g->hash == hash && llmt_st_norm1d_close(g->norm1d, norm1d) ? 1 : -1;
}

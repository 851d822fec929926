/* attn_plan.c: pure sizes and offsets of the GPU model's causal attention
 * in query chunks (host_plan.h): the chunk length and where each chunk's
 * probabilities sit; whether the fused kernel runs instead. No CUDA here:
 * unit-tested without a GPU. */
#include <stddef.h>
#include <string.h>
#include "host_plan.h"

int gattn_chunk(int T)
{
	if (T <= 128)
		return T;
	for (int c = 128; c >= 32; c /= 2)
		if (T % c == 0)
			return c;
	return T;
}

size_t gattn_p_offset(size_t BH, int C, int c)
{
	/* chunks 0 .. c-1 hold C x C, C x 2C, ..., C x cC per head */
	return BH * (size_t)C * (size_t)C * ((size_t)c * (size_t)(c + 1) / 2);
}

size_t gattn_p_elems(size_t BH, int T, int C)
{
	return gattn_p_offset(BH, C, T / C);
}

int gattn_fused(int hd, const char *mode)
{
	if (mode && !strcmp(mode, "chunked"))
		return 0;
	if (mode && *mode && strcmp(mode, "fused"))
		return -1;
	return hd == 8 || hd == 16 || hd == 32 || hd == 64 || hd == 128;
}

/* embed_sort.c: the sorted (token, position) plan that makes the GPU embedding
 * backward deterministic without atomics (see host_plan.h): one sort of
 * (token, position) keys. */
#include <stdlib.h>
#include <string.h>
#include "host_plan.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int gembed_plan(const int32_t *tok, int M, int vocab, int32_t *uniq, int32_t *start,
				int32_t *pos)
{
	uint64_t *key = malloc(sizeof *key * (size_t)(M ? M : 1));
	if (!key)
		return -1;
	for (int m = 0; m < M; m++) {
		if (tok[m] < 0 || tok[m] >= vocab) {
			free(key);
			return -1;
		}
		key[m] = (uint64_t)(uint32_t)tok[m] << 32 | (uint32_t)m;
	}
	/* sort by (token, position): a position order inside each token */
	qsort(key, (size_t)M, sizeof *key, cmp_u64);
	int nu = 0;
	for (int i = 0; i < M; i++) {
		int32_t t = (int32_t)(key[i] >> 32);
		if (i == 0 || t != uniq[nu - 1]) {
			uniq[nu] = t;
			start[nu] = i;
			nu++;
		}
		pos[i] = (int32_t)(key[i] & 0xffffffffu);
	}
	start[nu] = M;
	free(key);
	return nu;
}

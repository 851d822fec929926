/* device_pick.c: which CUDA device this rank uses, from the environment
 * contract (LLM_TRAIN_GPU, LOCAL_RANK) and the visible device count. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "host_plan.h"

static int parse_int(const char *s, long *v)
{
	char *end;
	errno = 0;
	*v = strtol(s, &end, 10);
	return errno || end == s || *end;
}

int gpick_device(int ndev, const char *llm_train_gpu, const char *local_rank, char *err,
				 size_t errlen)
{
	long v;
	if (ndev < 1) {
		snprintf(err, errlen, "no CUDA device visible");
		return -1;
	}
	if (llm_train_gpu && *llm_train_gpu) {
		if (parse_int(llm_train_gpu, &v) || v < -1) {
			snprintf(err, errlen, "LLM_TRAIN_GPU='%s' is not a GPU index or -1", llm_train_gpu);
			return -1;
		}
		if (ndev == 1 && v >= 0)
			return 0;
		if (v >= ndev) {
			snprintf(err, errlen, "LLM_TRAIN_GPU=%ld but only %d CUDA devices are visible", v,
					 ndev);
			return -1;
		}
		if (v >= 0)
			return (int)v;
	}
	if (ndev == 1)
		return 0;
	if (local_rank && *local_rank) {
		if (parse_int(local_rank, &v) || v < 0) {
			snprintf(err, errlen, "LOCAL_RANK='%s' is not a non-negative integer", local_rank);
			return -1;
		}
		return (int)(v % ndev);
	}
	return 0;
}

/* backend_choice.c: the pure choice between the CPU and the GPU backend from the
 * environment contract (see bridge.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "bridge.h"

int llmt_dev_wanted(const char *llm_train_gpu, int have_cuda, char *err, size_t errlen)
{
	if (!llm_train_gpu || !*llm_train_gpu)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(llm_train_gpu, &end, 10);
	if (errno || end == llm_train_gpu || *end || v < -1) {
		snprintf(err, errlen, "LLM_TRAIN_GPU='%s' is not a GPU index or -1", llm_train_gpu);
		return -1;
	}
	return v >= 0 && have_cuda;
}

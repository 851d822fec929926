/* gpu_test_flash.h: gpu_test bench's flash-forward line (gpu_test_flash.c)
 * and the helpers of gpu_test.c it shares. */
#ifndef LLMT_GPU_TEST_FLASH_H
#define LLMT_GPU_TEST_FLASH_H
#include <stddef.h>
#include <stdint.h>
#include "model/model.h"

/* the mma forward against the wmma one on the attention of c at B x T
 * (head dim 64 where c's is neither 64 nor 128): one line with both
 * times and their difference; 0, or 1 when they disagree or CUDA fails */
int gpu_test_flash(const llmt_config *c, int B, int T);
/* gpu_test.c: seconds (monotonic); n random bf16 values to device d */
double now_s(void);
int random_bf16(void *d, size_t n, uint64_t seed);

#endif

/* cuda_emu_int.h: what the parts of the emulated CUDA runtime (cuda_emu.c,
 * cuda_emu_nccl.c) share and nothing else links against. */
#ifndef TESTS_GPU_CUDA_EMU_INT_H
#define TESTS_GPU_CUDA_EMU_INT_H
#include <cuda_runtime_api.h>

/* an NCCL call on st: st must follow the work queued just before it
 * (cuda_emu.c dies when it does not), then that work is issued */
void llmt_emu_collective(cudaStream_t st);

#endif

/* cuda_emu_dev.c: the device queries of the emulated CUDA runtime that
 * gpu_test (tests/gpu/check --emulate) makes: one device named "emulated
 * GPU (CPU threads)" of 16 GiB, whose free memory is what cuda_emu.c's
 * cudaMalloc has not handed out, and cudaStreamCreate. */
#include <string.h>
#include <cuda_runtime_api.h>

size_t llmt_emu_dev_bytes(size_t *peak);   /* cuda_emu.c */

#define EMU_DEV_BYTES ((size_t)16 << 30)

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
	if (dev != 0)
		return cudaErrorInvalidDevice;
	memset(p, 0, sizeof *p);
	strcpy(p->name, "emulated GPU (CPU threads)");
	p->totalGlobalMem = EMU_DEV_BYTES;
	p->major = 9;
	p->multiProcessorCount = 1;
	return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	size_t used = llmt_emu_dev_bytes(NULL);
	*total = EMU_DEV_BYTES;
	*free_b = used < EMU_DEV_BYTES ? EMU_DEV_BYTES - used : 0;
	return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }

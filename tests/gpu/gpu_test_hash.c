/* gpu_test_hash.c: `gpu_test hash`: the device XXH3 (dev_xxh3.cu,
 * gk_xxh3_64, the ZeRO-1 replica hash) on the device against libxxhash's
 * XXH3_64bits of the same random bytes: the short formulas' edges, block
 * multiples +-1, and a buffer over several 64 MiB chunks, with its
 * throughput (the hash runs only at dp > 1, which one GPU never reaches:
 * this is its only device run in tests/gpu/check). LLMT_GPU_HASH_MB sets
 * the large buffer (default 320; the emulation's check uses a small one). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xxhash.h>
#include <cuda_runtime.h>
#include "gpu/dev_kernels.h"
#include "gpu_test_hash.h"

static double hash_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* len bytes at the start of dev (a copy of host): the device hash against
 * libxxhash's; the device time in *sec when sec is not NULL */
static int hash_one(const unsigned char *host, const void *dev, size_t len, uint64_t *scratch,
					double *sec)
{
	uint64_t h = 0, want = XXH3_64bits(host, len);
	cudaDeviceSynchronize();
	double t0 = hash_now();
	cudaError_t e = gk_xxh3_64(dev, len, scratch, &h, 0);
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	if (sec)
		*sec = hash_now() - t0;
	if (e != cudaSuccess || h != want) {
		printf("FAIL device XXH3 of %zu bytes: %016llx, libxxhash %016llx%s%s\n", len,
			   (unsigned long long)h, (unsigned long long)want, e ? ": " : "",
			   e ? cudaGetErrorString(e) : "");
		return 1;
	}
	return 0;
}

int gpu_test_hash(void)
{
	const char *e = getenv("LLMT_GPU_HASH_MB");
	size_t mb = e && atoi(e) > 0 ? (size_t)atoi(e) : 320, cap = (mb << 20) + 4093;
	unsigned char *host = malloc(cap), *dev = NULL;
	uint64_t *scratch = NULL;
	if (!host || cudaMalloc((void **)&dev, cap) ||
		cudaMalloc((void **)&scratch, gk_xxh3_scratch_bytes(cap))) {
		fprintf(stderr, "gpu_test hash: no memory for %zu bytes\n", cap);
		free(host);
		cudaFree(dev);
		return 1;
	}
	uint64_t r = 0x243f6a8885a308d3ull;
	for (size_t i = 0; i < cap; i++) {
		r ^= r << 13; r ^= r >> 7; r ^= r << 17;
		host[i] = (unsigned char)(r >> 24);
	}
	int bad = cudaMemcpy(dev, host, cap, cudaMemcpyHostToDevice) != cudaSuccess, n = 0;
	static const size_t lens[] = {0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1023, 1024,
								  1025, 16383, 16384, 16385, 65537};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0] && !bad; i++, n++)
		bad |= hash_one(host, dev, lens[i], scratch, NULL);
	double sec = 0;
	if (!bad) {
		bad = hash_one(host, dev, cap, scratch, NULL);   /* warm: first launches */
		bad = bad || hash_one(host, dev, cap, scratch, &sec);
		n++;
	}
	if (!bad)
		printf("ok   device XXH3 = libxxhash on %d lengths up to %zu bytes; %.1f GB/s "
			   "(%.2f ms for %zu MiB)\n", n, cap, cap / sec / 1e9, sec * 1e3, mb);
	free(host);
	cudaFree(dev);
	cudaFree(scratch);
	return bad;
}

/* test_xxh3_emu.cc: the device XXH3 (dev_xxh3.cu, gk_xxh3_64) through the
 * emulation against libxxhash's XXH3_64bits of the same bytes (random,
 * fixed seed): every short formula's edges (0 to 241 bytes), 1 KiB
 * blocks and their multiples -64..+64 bytes (partial last blocks, the
 * last stripe's overlap, the chain's groups of 16 blocks and the rest), a
 * few MB, and across the chunk of GK_XXH3_CHUNK blocks (one chunk
 * exactly, a second of 1 and of 17 blocks); the same in reverse and
 * shuffled thread and block orders; a misaligned input refused. Exit 0
 * when all hold. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <xxhash.h>
#include "gpu/dev_common.cuh"

static int fails;
static unsigned char *dev;
static std::vector<unsigned char> host;
static uint64_t *scratch;

/* len bytes from the start of the buffer: the device hash against
 * libxxhash's; quiet when right unless verbose */
static bool one(size_t len, bool verbose)
{
	uint64_t h = 0, want = XXH3_64bits(host.data(), len);
	cudaError_t e = gk_xxh3_64(dev, len, scratch, &h, 0);
	bool ok = e == cudaSuccess && h == want;
	if (!ok || verbose)
		printf("%s %zu bytes: %016llx (libxxhash %016llx)%s\n", ok ? "ok" : "FAIL", len,
			   (unsigned long long)h, (unsigned long long)want, e ? " (launch failed)" : "");
	fails += !ok;
	return ok;
}

static void lengths(std::vector<size_t> &v)
{
	size_t shorts[] = {0, 1, 3, 4, 8, 9, 16, 17, 64, 127, 128, 129, 200, 239, 240, 241, 255,
					   256, 1023, 1024, 1025};
	v.assign(shorts, shorts + sizeof shorts / sizeof shorts[0]);
	/* k blocks -64..+64: around the chain's group of 16 and its rest */
	size_t ks[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 48};
	for (size_t k : ks)
		for (int d = -64; d <= 64; d++)
			if (d)
				v.push_back(k * 1024 + (size_t)(long)d);
	v.push_back((size_t)3 << 20);
	v.push_back(((size_t)5 << 20) + 4093);
}

int main()
{
	size_t chunk = GK_XXH3_CHUNK * 1024, cap = chunk + 18 * 1024 + 64;
	host.resize(cap);
	uint64_t r = 0x243f6a8885a308d3ull;
	for (size_t i = 0; i < cap; i++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		host[i] = (unsigned char)(r >> 24);
	}
	size_t sb = gk_xxh3_scratch_bytes(cap);
	if (cudaMalloc((void **)&dev, cap + 16) || cudaMalloc((void **)&scratch, sb) ||
		cudaMemcpy(dev, host.data(), cap, cudaMemcpyHostToDevice)) {
		fprintf(stderr, "test_xxh3_emu: no emulated device memory\n");
		return 1;
	}
	printf("scratch for %zu bytes: %zu bytes\n", cap, sb);
	std::vector<size_t> v;
	lengths(v);
	int orders[4][2] = {{gk_emu::FORWARD, 1}, {gk_emu::REVERSE, 1}, {gk_emu::SHUFFLE, 1},
						{gk_emu::SHUFFLE, 2}};
	const char *names[] = {"forward", "reverse", "shuffled (seed 1)", "shuffled (seed 2)"};
	for (int o = 0; o < 4; o++) {
		gk_emu::set_order(orders[o][0], (unsigned long long)orders[o][1]);
		int f0 = fails;
		for (size_t len : v)
			one(len, false);
		printf("%s %zu lengths, %s order\n", fails == f0 ? "ok" : "FAIL", v.size(), names[o]);
	}
	/* across chunks (forward order: these are large for the emulation) */
	gk_emu::set_order(gk_emu::FORWARD, 1);
	one(chunk + 1, true);            /* one whole chunk, then the tail */
	one(chunk + 1024 + 1, true);     /* a second chunk of 1 block */
	one(chunk + 17 * 1024 + 63, true); /* of 17, a partial block */
	uint64_t h;
	printf("%s a misaligned input is refused\n",
		   gk_xxh3_64(dev + 4, 4096, scratch, &h, 0) == cudaErrorInvalidValue ? "ok" : "FAIL");
	fails += gk_xxh3_64(dev + 4, 4096, scratch, &h, 0) != cudaErrorInvalidValue;
	cudaFree(dev);
	cudaFree(scratch);
	printf("%s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* dev_xxh3.cu: XXH3-64 (default secret, seed 0) of a device buffer on the
 * device, bit for bit libxxhash's XXH3_64bits of the same bytes: the
 * replica hash of a ZeRO-1 checkpoint (the whole fp32 master, gathered on
 * the device) without the master crossing to the host. Hand-written: no
 * library hashes XXH3 on a GPU. XXH3's long loop (xxhash.h
 * XXH3_hashLong_internal_loop): 1 KiB blocks of 16 stripes; a stripe adds
 * to each of the 8 u64 lanes (acc[i ^ 1] += d[i], acc[i] += lo32(d[i] ^
 * key) * hi32(...)), the lanes never mix, and only the scramble after
 * each block is a chain. So: k_xxh_sums writes each block's 8 lane sums
 * (4 threads a block, 16-byte loads: all blocks at once, reading the
 * input once); k_xxh_chain, one thread per lane, adds them into the lanes
 * block after block with the scramble between (loads double-buffered
 * ahead of the chain); k_xxh_tail the partial last block, the last stripe,
 * the merge and the avalanche. Only the 8-byte result comes back. No
 * atomics: the same bits in any order of threads and blocks. Inputs of at
 * most 240 bytes (other short formulas) are hashed by libxxhash on the
 * host, their bytes brought back.
 *
 * Cost at 7B (27.1 GiB of fp32 master, 2.8e10 bytes): 27.3M blocks; the
 * input read once (about 7 ms at the H200's 4.8 TB/s), block sums written
 * and read once (64 bytes a KiB: 1.7 GB, in L2 chunk by chunk); the chain
 * 27.3M sequential steps per lane (add, xorshift, xor, multiply by a
 * 32-bit prime: about 25-30 dependent cycles) ~ 0.35-0.45 s at 1.98 GHz,
 * against ~10 s of host hashing after a 27 GB copy. Scratch: the sums of
 * one chunk of GK_XXH3_CHUNK blocks (64 MiB of input), 4 MiB, reused
 * chunk after chunk (gk_xxh3_scratch_bytes). */
#include <stdint.h>
#include <xxhash.h>
#include "dev_common.cuh"

/* the constant loops fully unrolled by nvcc (the emulation's compiler
 * knows no such pragma) */
#ifdef GK_EMULATE
#define XXH_UNROLL
#else
#define XXH_UNROLL _Pragma("unroll")
#endif

#define XXH_P32_1 0x9E3779B1ull
#define XXH_P64_1 0x9E3779B185EBCA87ull

/* XXH3_kSecret (xxhash.h) as little-endian words: byte offset o of the
 * secret is byte o % 8 of word o / 8 */
static __device__ const unsigned long long xxh_key[24] = {
	0xbe4ba423396cfeb8ull, 0x1cad21f72c81017cull, 0xdb979083e96dd4deull,
	0x1f67b3b7a4a44072ull, 0x78e5c0cc4ee679cbull, 0x2172ffcc7dd05a82ull,
	0x8e2443f7744608b8ull, 0x4c263a81e69035e0ull, 0xcb00c391bb52283cull,
	0xa32e531b8b65d088ull, 0x4ef90da297486471ull, 0xd8acdea946ef1938ull,
	0x3f349ce33f76faa8ull, 0x1d4f0bc7c7bbdcf9ull, 0x3159b4cd4be0518aull,
	0x647378d9c97e9fc8ull, 0xc3ebd33483acc5eaull, 0xeb6313faffa081c5ull,
	0x49daf0b751dd0d17ull, 0x9e68d429265516d3ull, 0xfca1477d58be162bull,
	0xce31d07ad1b8f88full, 0x280416958f3acb45ull, 0x7e404bbbcafbd7afull,
};

/* the 8 bytes of the secret at byte offset o (o + 8 <= 192) */
__device__ __forceinline__ uint64_t key_at(int o)
{
	int w = o >> 3, r = (o & 7) * 8;
	return r ? (xxh_key[w] >> r) | (xxh_key[w + 1] << (64 - r)) : xxh_key[w];
}

/* a stripe word's product (XXH_mult32to64 of d ^ key) */
__device__ __forceinline__ uint64_t mix(uint64_t d, uint64_t k)
{
	uint64_t x = d ^ k;
	return (uint64_t)(uint32_t)x * (x >> 32);
}

/* scramble of one lane after a block (key: secret + 128 + 8 x lane) */
__device__ __forceinline__ uint64_t scramble(uint64_t a, uint64_t k)
{
	return ((a ^ (a >> 47)) ^ k) * XXH_P32_1;
}

/* XXH3_INIT_ACC's lane i (selects, not an array: no local memory) */
__device__ __forceinline__ uint64_t acc0(int i)
{
	return i == 0 ? 0xC2B2AE3Dull : i == 1 ? XXH_P64_1 : i == 2 ? 0xC2B2AE3D27D4EB4Full
		 : i == 3 ? 0x165667B19E3779F9ull : i == 4 ? 0x85EBCA77C2B2AE63ull
		 : i == 5 ? 0x85EBCA77ull : i == 6 ? 0x27D4EB2F165667C5ull : XXH_P32_1;
}

/* sums[b][0..7]: the lane sums of block b < nb of x (1 KiB each, x
 * 16-byte aligned): thread 4b + p reads lanes 2p and 2p + 1 of b's 16
 * stripes (a warp: 8 blocks' stripes, every byte of each 32-byte sector
 * used) */
__global__ void k_xxh_sums(const ulonglong2 *x, size_t nb, ulonglong2 *sums)
{
	__shared__ unsigned long long key[24];
	if (threadIdx.x < 24)
		key[threadIdx.x] = xxh_key[threadIdx.x];
	__syncthreads();
	size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, b = t / 4;
	int p = (int)(t % 4);
	if (b >= nb)
		return;
	const ulonglong2 *s = x + b * 64 + p;
	uint64_t a0 = 0, a1 = 0;
XXH_UNROLL
	for (int j = 0; j < 16; j++) {
		GK_EMU_POINT();     /* the emulation's shuffle order may switch threads here */
		ulonglong2 v = s[4 * j];
		a0 += v.y + mix(v.x, key[j + 2 * p]);
		a1 += v.x + mix(v.y, key[j + 2 * p + 1]);
	}
	ulonglong2 r;
	r.x = a0;
	r.y = a1;
	sums[b * 4 + p] = r;
}

#define XXH_AHEAD 16   /* block sums loaded ahead of the chain */

/* lane i = threadIdx.x < 8: acc[i] (XXH3's initial lanes when init) +
 * the nb blocks' sums, scrambled after each */
__global__ void k_xxh_chain(const uint64_t *sums, size_t nb, uint64_t *acc, int init)
{
	int i = threadIdx.x;
	uint64_t a = init ? acc0(i) : acc[i], k = xxh_key[16 + i];
	size_t ng = nb / XXH_AHEAD, b = 0;
	uint64_t cur[XXH_AHEAD], nxt[XXH_AHEAD];
XXH_UNROLL
	for (int j = 0; j < XXH_AHEAD; j++)
		cur[j] = ng ? sums[j * 8 + i] : 0;
	for (size_t g = 0; g < ng; g++) {
		/* the next group's loads (the last group's again at the end):
		 * in flight while this one's chain runs */
		size_t n = (g + 1 < ng ? g + 1 : g) * XXH_AHEAD;
XXH_UNROLL
		for (int j = 0; j < XXH_AHEAD; j++)
			nxt[j] = sums[(n + j) * 8 + i];
XXH_UNROLL
		for (int j = 0; j < XXH_AHEAD; j++)
			a = scramble(a + cur[j], k);
XXH_UNROLL
		for (int j = 0; j < XXH_AHEAD; j++)
			cur[j] = nxt[j];
	}
	for (b = ng * XXH_AHEAD; b < nb; b++)
		a = scramble(a + sums[b * 8 + i], k);
	acc[i] = a;
}

/* the little-endian u64 at p (any alignment) */
__device__ __forceinline__ uint64_t rd64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int j = 7; j >= 0; j--)
		v = v << 8 | p[j];
	return v;
}

/* the end of x (len > 240 bytes): lane i < 8 adds the stripes of the
 * partial last block and the last stripe (input + len - 64, secret + 121)
 * to acc[i] (the lanes after the whole blocks; XXH3's initial ones when
 * init); thread 0 merges (secret + 11, len x PRIME64_1) and avalanches
 * into *out */
__global__ void k_xxh_tail(const unsigned char *x, size_t len, const uint64_t *acc, int init,
						   uint64_t *out)
{
	__shared__ unsigned long long lane[8];
	int i = threadIdx.x;
	size_t at = (len - 1) / 1024 * 1024;
	int ns = (int)((len - 1 - at) / 64);
	uint64_t a = init ? acc0(i) : acc[i];
	for (int s = 0; s < ns; s++) {
		const unsigned char *p = x + at + 64 * (size_t)s;
		a += rd64(p + 8 * (i ^ 1)) + mix(rd64(p + 8 * i), key_at(8 * (s + i)));
	}
	const unsigned char *p = x + len - 64;
	a += rd64(p + 8 * (i ^ 1)) + mix(rd64(p + 8 * i), key_at(121 + 8 * i));
	GK_EMU_POINT();
	lane[i] = a;
	__syncthreads();
	if (i)
		return;
	uint64_t h = (uint64_t)len * XXH_P64_1;
	for (int j = 0; j < 4; j++) {
		uint64_t l = lane[2 * j] ^ key_at(11 + 16 * j), r = lane[2 * j + 1] ^ key_at(19 + 16 * j);
#ifdef GK_EMULATE
		unsigned __int128 m = (unsigned __int128)l * r;
		h += (uint64_t)m ^ (uint64_t)(m >> 64);
#else
		h += (l * r) ^ __umul64hi(l, r);
#endif
	}
	h ^= h >> 37;
	h *= 0x165667919E3779F9ull;
	*out = h ^ (h >> 32);
}

/* scratch layout (u64): lanes [0, 8), the result at 8, the chunk's block
 * sums from 16 (16-byte aligned) */
extern "C" cudaError_t gk_xxh3_64(const void *x, size_t len, uint64_t *scratch, uint64_t *hash,
								  cudaStream_t st)
{
	cudaError_t e;
	if (len <= 240) {
		unsigned char b[240];
		if ((len && (e = cudaMemcpyAsync(b, x, len, cudaMemcpyDeviceToHost, st))) ||
			(e = cudaStreamSynchronize(st)))
			return e;
		*hash = XXH3_64bits(b, len);
		return cudaSuccess;
	}
	if ((uintptr_t)x % 16 || (uintptr_t)scratch % 16)
		return cudaErrorInvalidValue;
	const unsigned char *c = static_cast<const unsigned char *>(x);
	size_t nb = (len - 1) / 1024;
	for (size_t at = 0; at < nb; at += GK_XXH3_CHUNK) {
		size_t k = nb - at < GK_XXH3_CHUNK ? nb - at : GK_XXH3_CHUNK;
		GK_LAUNCH(k_xxh_sums, (unsigned)((k * 4 + 255) / 256), 256, 0, st)(
			reinterpret_cast<const ulonglong2 *>(c + at * 1024), k,
			reinterpret_cast<ulonglong2 *>(scratch + 16));
		GK_LAUNCH(k_xxh_chain, 1, 8, 0, st)(scratch + 16, k, scratch, at == 0);
	}
	GK_LAUNCH(k_xxh_tail, 1, 8, 0, st)(c, len, scratch, nb == 0, scratch + 8);
	if ((e = GK_LAST_ERROR()) ||
		(e = cudaMemcpyAsync(hash, scratch + 8, sizeof *hash, cudaMemcpyDeviceToHost, st)))
		return e;
	return cudaStreamSynchronize(st);
}

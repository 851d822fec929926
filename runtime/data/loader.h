/* loader.h: the training data stream. The shards of a directory (*.bin,
 * sorted by name) are cut into samples of T+1 tokens at stride T; each
 * epoch visits every sample once in an order fixed by (seed, epoch). The
 * position is one integer (global samples consumed), so resume is exact.
 * A global batch is G consecutive positions; DP rank r takes the r-th
 * G/dp slice, so the same G gives the same data under any layout.
 * Instruction data (tokenize-sft) has a loss mask beside every shard
 * (mask.h): then targets that are not trained on read -1 and each token
 * carries the id of its sample (doc/contracts.md). */
#ifndef LLMT_LOADER_H
#define LLMT_LOADER_H
#include <stddef.h>
#include <stdint.h>
#include "mask.h"
#include "shard.h"

typedef struct {
	llmt_shard *shards;
	int nshards;
	uint64_t *first;            /* first sample id of each shard, [nshards+1] */
	uint64_t nsamples;          /* samples per epoch */
	int T, vocab;
	uint64_t seed;
	uint64_t pos;               /* global samples consumed (all epochs) */
	uint32_t *scratch;          /* T+1 tokens */
	llmt_mask *masks;           /* per shard, when masked */
	int masked;                 /* every shard has a loss mask */
	uint8_t *fscratch;          /* T+1 flags */
} llmt_loader;

/* Returns 0 or an exit code (65 bad shard, 66 missing) with err set. */
int llmt_loader_open(llmt_loader *ld, const char *dir, int T, int vocab, uint64_t seed,
	char *err, size_t errlen);
void llmt_loader_close(llmt_loader *ld);

/* Pure: the sample id visited at global position p. */
uint64_t llmt_loader_sample_at(const llmt_loader *ld, uint64_t p);
/* Bijective permutation of [0, n) keyed by key (Feistel + cycle walking). */
uint64_t llmt_permute(uint64_t x, uint64_t n, uint64_t key);

/* Read micro-batch `micro` (B samples) of DP rank dp_rank for the global
 * batch starting at position base, of G samples split over dp ranks:
 * positions base + dp_rank*G/dp + micro*B + b. inputs and targets are
 * B*T each. Returns 0 or an exit code with err set. */
int llmt_loader_micro(llmt_loader *ld, uint64_t base, int G, int dp, int dp_rank,
	int micro, int B, int *inputs, int *targets, char *err, size_t errlen);
/* The same, and with a loss mask: targets not trained on are -1 and, when
 * seg is not NULL, seg[b*T + t] is the sample of input token t (0, 1, ...
 * within the sequence; all 0 without a mask). */
int llmt_loader_micro_seg(llmt_loader *ld, uint64_t base, int G, int dp, int dp_rank,
	int micro, int B, int *inputs, int *targets, int *seg, char *err, size_t errlen);
/* The trained targets of the n samples at positions base .. base+n-1 into
 * *count (n*T without a mask). 0 or an exit code with err set. */
int llmt_loader_trained(llmt_loader *ld, uint64_t base, uint64_t n, uint64_t *count, char *err,
	size_t errlen);

#endif

/* sdc.h: silent-data-corruption check across DP replicas (replicas must be
 * bit-identical): per-rank parameter checksums, the per-replica verdict,
 * and the report CKPT_DIR/sdc.json (doc/contracts.md). */
#ifndef LLMT_SDC_H
#define LLMT_SDC_H
#include <stddef.h>
#include <stdint.h>
#include "comm/parallel.h"

#define LLMT_HOSTLEN 64

/* Pure: checksum of n floats (bit pattern; one flipped bit always changes it). */
uint64_t llmt_checksum_f32(const float *x, size_t n);
/* The same in pieces: h = llmt_checksum_start(n), h = llmt_checksum_add(h,
 * x, k) over the n floats in order, llmt_checksum_end(h) is
 * llmt_checksum_f32 of them (a buffer that is not whole in host memory). */
uint64_t llmt_checksum_start(size_t n);
uint64_t llmt_checksum_add(uint64_t h, const float *x, size_t k);
uint64_t llmt_checksum_end(uint64_t h);
/* Pure: SDC verdict from per-replica checksums. Returns the number of
 * suspect replicas written into suspects (0 when all agree): every
 * replica when dp == 2 or no strict majority exists, else the ones that
 * differ from the majority. */
int llmt_sdc_suspects(const uint64_t *sums, int dp, int *suspects);
/* Collective over p->all: compare this step's parameters across DP
 * replicas by their checksum mine (llmt_checksum_f32 of this rank's
 * replicated weights). 0 when they agree; LLMT_EXIT_SDC after rank 0 wrote
 * dir/sdc.json (stderr when dir is NULL) naming the suspects and their
 * hosts (hosts: every rank's node name, by RANK); 75 on a comm failure. */
int llmt_sdc_check(llmt_parallel *p, uint64_t mine, long step,
	char (*hosts)[LLMT_HOSTLEN], const char *dir);
/* Collective over p->all, after some rank found its fp32 master share
 * inconsistent with the weights it gave the replicas (bad: its count of
 * such elements): rank 0 writes dir/sdc.json with "cause":"master_share",
 * the replicas whose ranks found any as suspects and the counts as
 * "mismatches". LLMT_EXIT_SDC; 75 on a comm failure. */
int llmt_sdc_share_verdict(llmt_parallel *p, uint64_t bad, long step, char (*hosts)[LLMT_HOSTLEN],
	const char *dir);

#endif

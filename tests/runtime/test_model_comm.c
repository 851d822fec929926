/* test_model_comm.c: the MPI backend of comm.h under mpirun (any size):
 * all-reduce sums equal a rank-ordered sum and are the same bits on every
 * member (odd lengths, so blocks are uneven), reduce-scatter, all-gather,
 * broadcast, send/recv, split groups, max; reductions of more than one
 * round (LLMT_RS_ROUND). Exit 0 pass, 1 fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/comm.h"

static float val(int rank, size_t i)
{
	/* values of mixed magnitude so the summation order matters */
	return (float)(sin((double)(i * 7 + rank * 13)) * pow(10.0, (double)((i + rank) % 7) - 3));
}

/* val's mixed magnitudes without its cost, for the long vectors */
static float cheap(int rank, size_t i)
{
	static const float mag[7] = {1e-3f, 1e-2f, 1e-1f, 1, 10, 100, 1000};
	return (float)((long)((i * 2654435761u + (size_t)rank * 40503u) % 2001) - 1000) * mag[(i + (size_t)rank) % 7];
}

/* The reduce-scatter moves LLMT_RS_ROUND elements of each block a round:
 * a block of two rounds (the second short), and an all-reduce whose
 * uneven blocks leave the last rank without a second round while the
 * others have one element in it; both equal the rank-ordered sum. */
static int rounds(llmt_comm *w, int r, int p)
{
	size_t blk = LLMT_RS_ROUND + 3, n = LLMT_RS_ROUND * (size_t)p + (size_t)p - 1;
	float *send = malloc(blk * (size_t)p * 4), *recv = malloc(blk * 4), *a = malloc(n * 4);
	int bad = !send || !recv || !a;
	for (size_t i = 0; !bad && i < blk * (size_t)p; i++)
		send[i] = cheap(r, i);
	for (size_t i = 0; !bad && i < n; i++)
		a[i] = cheap(r, i);
	if (bad || llmt_comm_reduce_scatter_sum_f32(w, send, recv, blk) || llmt_comm_allreduce_sum_f32(w, a, n))
		bad = 1;
	for (size_t i = 0; !bad && i < blk + n; i++) {
		size_t at = i < blk ? (size_t)r * blk + i : i - blk;
		float s = cheap(0, at), got = i < blk ? recv[i] : a[at];
		for (int q = 1; q < p; q++)
			s += cheap(q, at);
		if (s != got) {
			fprintf(stderr, "rank %d: %s[%zu] %.9g != %.9g\n", r, i < blk ? "reduce_scatter" : "allreduce",
				i < blk ? i : at, got, s);
			bad = 1;
		}
	}
	free(send);
	free(recv);
	free(a);
	return bad;
}

int main(int argc, char **argv)
{
	llmt_comm *w = llmt_comm_world(&argc, &argv);
	if (!w)
		return 1;
	int r = llmt_comm_rank(w), p = llmt_comm_size(w), bad = 0;
	size_t n = 1001;
	float *a = malloc(n * 4), *all = malloc(n * 4 * (size_t)p);
	for (size_t i = 0; i < n; i++)
		a[i] = val(r, i);
	if (llmt_comm_allreduce_sum_f32(w, a, n))
		bad++;
	for (size_t i = 0; i < n; i++) { /* equal to the sum in rank order */
		float s = val(0, i);
		for (int q = 1; q < p; q++)
			s += val(q, i);
		if (s != a[i]) {
			if (!bad)
				fprintf(stderr, "rank %d: allreduce[%zu] %.9g != %.9g\n", r, i, a[i], s);
			bad++;
		}
	}
	/* same bits everywhere */
	if (llmt_comm_allgather_f32(w, a, all, n))
		bad++;
	for (int q = 0; q < p; q++)
		if (memcmp(all + (size_t)q * n, a, n * 4)) {
			fprintf(stderr, "rank %d: allreduce bits differ from rank %d\n", r, q);
			bad++;
		}
	/* reduce-scatter: block r of the sums */
	size_t blk = 37;
	float *send = malloc(blk * (size_t)p * 4), *recv = malloc(blk * 4);
	for (size_t i = 0; i < blk * (size_t)p; i++)
		send[i] = val(r, i);
	if (llmt_comm_reduce_scatter_sum_f32(w, send, recv, blk))
		bad++;
	for (size_t i = 0; i < blk; i++) {
		float s = val(0, r * blk + i);
		for (int q = 1; q < p; q++)
			s += val(q, r * blk + i);
		if (s != recv[i]) {
			fprintf(stderr, "rank %d: reduce_scatter[%zu] %.9g != %.9g\n", r, i, recv[i], s);
			bad++;
			break;
		}
	}
	bad += rounds(w, r, p);
	/* max, broadcast, split, send/recv */
	double mx = r * 1.5, sd = r + 0.25;
	if (llmt_comm_allreduce_max_f64(w, &mx, 1) || mx != (p - 1) * 1.5)
		bad++;
	if (llmt_comm_allreduce_sum_f64(w, &sd, 1) || sd != p * (p - 1) / 2.0 + 0.25 * p)
		bad++;
	char msg[16] = "";
	if (r == p - 1)
		strcpy(msg, "hello");
	if (llmt_comm_bcast_bytes(w, msg, sizeof msg, p - 1) || strcmp(msg, "hello"))
		bad++;
	llmt_comm *half = llmt_comm_split(w, r % 2, -r);   /* reversed order by key */
	if (!half)
		bad++;
	else {
		int hs = llmt_comm_size(half), hr = llmt_comm_rank(half);
		int want = (p - (r % 2) + 1) / 2;
		if (hs != want || hr != hs - 1 - r / 2) {
			fprintf(stderr, "rank %d: split size %d rank %d\n", r, hs, hr);
			bad++;
		}
		llmt_comm_free(half);
	}
	if (p > 1) {
		int x = r * 10, y = -1;
		if (r == 0 && (llmt_comm_send_bytes(w, &x, sizeof x, 1, 5)))
			bad++;
		if (r == 1 && (llmt_comm_recv_bytes(w, &y, sizeof y, 0, 5) || y != 0))
			bad++;
	}
	double tot = bad;
	llmt_comm_allreduce_sum_f64(w, &tot, 1);
	if (r == 0)
		printf("comm over %d ranks: %s\n", p, tot == 0 ? "ok" : "FAILED");
	free(a); free(all); free(send); free(recv);
	llmt_comm_finalize(w);
	return tot != 0;
}

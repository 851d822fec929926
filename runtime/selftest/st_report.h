/* st_report.h: the self-test report (doc/contracts.md "Self-test report"):
 * per node and per link results, the pure verdicts (medians, slow nodes
 * and links, bad nodes) and its JSON form. No MPI, no kernels, no files. */
#ifndef LLMT_ST_REPORT_H
#define LLMT_ST_REPORT_H
#include <stddef.h>
#include <stdio.h>

#define LLMT_ST_NAME 64
#define LLMT_ST_MAXRANKS 64 /* ranks listed per node */

typedef struct {
	char node[LLMT_ST_NAME];
	int ranks[LLMT_ST_MAXRANKS], nranks;
	int wrong;          /* answers: 0 ok, 1 wrong */
	char path[LLMT_ST_NAME]; /* the compute path tested (st_golden.h key) */
	int golden;         /* 1 matched a golden, 0 no golden for the path, -1 mismatch */
	double gflops, membw_gbs, compute_s;
	int slow;           /* compute (or memory bandwidth) slower than allowed */
	int links_slow;     /* at least half the links from this node slow */
	const char *verdict; /* "ok" "wrong" "slow" (set by llmt_st_judge) */
} llmt_st_node;

typedef struct {
	int from, to;       /* node indices */
	int ring;           /* 1: the ring test, 0: a pairwise test */
	double gbps, lat_us;
	int slow;
} llmt_st_link;

typedef struct {
	const char *size;   /* "small" "full" */
	double elapsed_s, median_gflops, median_membw, median_compute_s;
	double slow_factor, expect_gflops, expect_membw; /* expect 0: not given */
	double link_factor; /* a link is slow below its kind's median / link_factor */
	llmt_st_node *nodes;
	int nnodes;
	llmt_st_link *links;
	int nlinks;
	int nbad;           /* nodes whose verdict is not ok */
} llmt_st_report;

/* Median of n values (the mean of the middle two when n is even; 0 when
 * n == 0). v is not changed. */
double llmt_st_median(const double *v, int n);
/* The verdicts: medians; a node is slow when compute_s > F x the median
 * compute time, or gflops < expect_gflops / F, or membw_gbs <
 * expect_membw / F (memory bandwidth is shared by the ranks of a node
 * and noisy: judged against the expected figure only); a link is slow
 * when gbps < its kind's (ring or pairwise) median / link_factor; a
 * node's links are slow when at least half of the links from it (at
 * least one) are slow. Verdict: wrong answers first, then slow. Sets
 * nbad. */
void llmt_st_judge(llmt_st_report *r);
/* The report as one JSON object plus a newline (the contract's form) to
 * f. 0, or -1 when out of memory or the write fails. */
int llmt_st_json(const llmt_st_report *r, FILE *f);
/* One line per node (what stdout shows): "node NAME: ok|wrong|slow ..." */
void llmt_st_line(const llmt_st_report *r, int i, char *buf, size_t len);

#endif

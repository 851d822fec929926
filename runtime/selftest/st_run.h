/* st_run.h: the parts of the self-test that run kernels and talk MPI: the
 * known-answer test (st_kat.c), the compute and memory rates (st_perf.c)
 * and the link tests (st_net.c). The verdicts are st_report.h's. */
#ifndef LLMT_ST_RUN_H
#define LLMT_ST_RUN_H
#include <stddef.h>
#include <stdint.h>
#include "comm/comm.h"
#include "resilience/faults.h"

typedef struct {
	char path[64];      /* the compute path: ISA path, oneDNN version and ISA */
	uint64_t hash;      /* bit-exact part (st_golden.h) */
	double norm1d;      /* the 1-D gradients' sum of squares */
	long ref_bad;       /* product elements that differ from the exact answer */
	int failed;         /* a kernel returned an error */
} llmt_st_kat;

/* The known-answer test at size full (0 small, 1 full): a set of bf16
 * matrix products whose exact answers are known (inputs are multiples of
 * 1/128 whose products and sums fit fp32), then a fixed-seed forward and
 * backward of a small model, through the trainer's kernels. */
void llmt_st_kat_run(int full, llmt_st_kat *out);

/* The achieved bf16 matrix-product rate: best of several repetitions of
 * a fixed amount of work (the slow fault delays each, faults.h); the
 * best repetition's seconds in *compute_s. */
double llmt_st_gflops(int full, const llmt_faults *fs, int rank, double *compute_s);
/* STREAM-like triad a = b + s c over arrays well beyond the caches,
 * best of several repetitions: GB/s (24 bytes per element). */
double llmt_st_membw(int full);

/* One link measurement, taken by its receiver. */
typedef struct {
	int from, to;       /* ranks in the leaders' group (one leader per node) */
	int ring;
	double gbps, lat_us;
} llmt_st_meas;

/* Ring and pairwise point-to-point tests over lead (every member calls
 * it): at most llmt_comm_size(lead) + 1 measurements into out (this
 * member's received links). Returns the count, or -1 on a failure. */
int llmt_st_net(llmt_comm *lead, int full, llmt_st_meas *out);

#endif

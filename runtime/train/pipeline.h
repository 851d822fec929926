/* pipeline.h: one optimizer step's forward and backward passes over A
 * micro-batches with the 1F1B schedule (PipeDream-flush, as Megatron):
 * stage s runs min(P-s-1, A) warmup forwards, then alternates one forward
 * and one backward, then drains the remaining backwards. Activations and
 * their gradients travel between adjacent stages over pp_comm. pp = 1 is
 * plain gradient accumulation. Gradients accumulate in the model. */
#ifndef LLMT_PIPELINE_H
#define LLMT_PIPELINE_H
#include <stddef.h>
#include <stdint.h>
#include "comm/comm.h"
#include "model/model.h"

/* Fills the micro-batch `micro` (B*T tokens each; targets -1 where not
 * trained on) and, when seg is not NULL, its sample ids (model.h's
 * llmt_model_set_seg); 0 or an exit code. */
typedef int (*llmt_fetch_fn)(void *ctx, int micro, int32_t *inputs, int32_t *targets,
	int32_t *seg);

typedef struct {
	llmt_model *m;
	llmt_comm *pp_comm;      /* NULL when pp == 1 */
	int pp, stage, A, nslots;
	size_t act;              /* B*T*d_model */
	size_t ntok;             /* B*T */
	float **act_in;          /* per slot: the input activations */
	float *act_out, *grad_out, *grad_in;
	int32_t *tokens, *targets;
	int32_t *seg;            /* the micro-batch's sample ids */
	int packed;              /* set by the caller: the data holds packed samples,
	                          * so every stage fetches seg for its attention */
	double comm_s;           /* seconds in p2p transfers (last run) */
} llmt_pipeline;

/* Pure: the 1F1B schedule of stage s of P over A micro-batches as a string
 * of 'F' and 'B' (for tests), into buf of at least 2A+1 chars. */
void llmt_1f1b_order(int P, int s, int A, char *buf);
/* Slots the model needs for this schedule: min(P, A). */
int llmt_pipeline_slots(int P, int A);

int llmt_pipeline_init(llmt_pipeline *p, llmt_model *m, llmt_comm *pp_comm, int A, int B, int T);
void llmt_pipeline_free(llmt_pipeline *p);

/* Run forward+backward of A micro-batches. Last stage: *loss_sum = sum of
 * the micro-batch losses (others: 0). grad_scale: dL/dloss of each
 * micro-batch. Returns 0, an exit code from fetch, or -1 (comm). */
int llmt_pipeline_run(llmt_pipeline *p, llmt_fetch_fn fetch, void *ctx,
	float grad_scale, double *loss_sum);

/* Forward only (evaluation): A micro-batches, no gradients; activations
 * flow stage to stage in order. Last stage: *loss_sum as above. */
int llmt_pipeline_forward(llmt_pipeline *p, llmt_fetch_fn fetch, void *ctx, double *loss_sum);

#endif

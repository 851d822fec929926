/* bridge_int.h: the bridge state shared by bridge.c (the model.h
 * operations on the GPU model) and bridge_optim.c (the device optimizer):
 * which backward of a step starts the data-parallel reduction. */
#ifndef LLMT_GBRIDGE_INT_H
#define LLMT_GBRIDGE_INT_H
#include "bridge.h"
#include "gmodel.h"

typedef struct {
	llmt_gmodel *g;
	float *logits;          /* host copy for llmt_model_logits */
	int grads_dirty;        /* device gradients newer than the host's */
	int A;                  /* micro-batches per step (0: never reduce) */
	int nback;              /* backwards since the last zero_grad */
} llmt_bridge;

#endif

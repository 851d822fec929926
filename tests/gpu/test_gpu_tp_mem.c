/* test_gpu_tp_mem.c: test_gpu_tp's memory part at dp > 1: the device
 * and host estimates (runtime/memory/memest.c) against what the
 * emulation allocates (cudaMalloc, pinned and heap bytes). */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>
#include "gpu/bridge.h"
#include "memory/memest.h"
#include "model/bf16.h"
#include "model/model.h"
#include "model/model_impl.h"
#include "train/optim.h"
#include "comm/parallel.h"
#include "small_cfg.h"
#include "test_gpu_tp.h"

size_t llmt_emu_dev_bytes(size_t *peak);
size_t llmt_emu_pinned_bytes(void);

/* dp > 1: the device estimate against the emulation's cudaMalloc bytes,
 * as test_memest_gpu.c does at dp = 1: the model exactly; the device
 * optimizer (ZeRO-1 share of master, m, v; packed norm ranges) within the
 * buckets' rounding: each of the nbk buckets (n/8 elements: bridge_optim.c)
 * leaves blocks of floor(len/dp) and a tail of fewer than dp elements on
 * every rank, 16 bytes an element; on TP ranks but 0 the replicated
 * tensors are not in the norm ranges (the estimate is above) */
void memest_dp(llmt_parallel *p)
{
	const llmt_grid *l = &p->l;
	llmt_config c;
	small_cfg(&c, 1);
	llmt_par par = {l->tp, l->tp_rank, 1, 0, p->tp_comm};
	size_t b0 = llmt_emu_dev_bytes(NULL);
	setenv("LLM_TRAIN_GPU", "0", 1);
	llmt_model *m = llmt_model_create(&c, &par, LLMT_BF16, B, T, 1);
	unsetenv("LLM_TRAIN_GPU");
	if (!m || !llmt_dev_model(m)) {
		check("GPU model through the bridge", "", 1, 0);
		return;
	}
	double model = (double)(llmt_emu_dev_bytes(NULL) - b0);
	llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
	llmt_opt_env oe = {&ac, 1, l->tp_rank, 1, 0, 0, p->dp_comm, NULL, p->all};
	llmt_trainopt *o = NULL;
	if (llmt_dev_optim(m, &oe, &o) != 1 || !o) {
		check("device optimizer", "", 1, 0);
		return;
	}
	double opt = (double)(llmt_emu_dev_bytes(NULL) - b0) - model;
	size_t n = llmt_model_nparams(m);
	llmt_memest_gpu e;
	llmt_memory_estimate_gpu(&c, l, n, B, T, 1, 1, 0, &e);
	double slack = 16.0 * 9 * l->dp;        /* 8 or 9 buckets */
	check("device model bytes - estimate", "", fabs(model - (e.params + e.activations + e.scratch + e.workspace)),
		  0);
	check("device optimizer bytes - estimate", "", l->tp_rank ? opt - e.optimizer
															  : fabs(opt - e.optimizer), slack);
	/* and far below the whole-buffer state of before (m, v, master of n) */
	check("device optimizer bytes / whole-buffer state", "", opt / (12.0 * n), 1.5 / l->dp);
	/* the pinned checkpoint snapshot: this rank's m and v and the part of
	 * the master it writes, exactly the host estimate's (about 3n/dp, the
	 * whole master's n + 2n/dp before) */
	llmt_memest_host h;
	llmt_memory_estimate_gpu_host(&c, l, n, B, T, 1, 1, 0, &h);
	size_t pin0 = llmt_emu_pinned_bytes();
	llmt_opt_state os;
	if (o->ops->snapshot(o) || o->ops->saved(o, &os))
		check("checkpoint snapshot", "", 1, 0);
	double pin = (double)(llmt_emu_pinned_bytes() - pin0);
	check("pinned snapshot bytes - host estimate", "", fabs(pin - h.snapshot), 0);
	check("pinned snapshot bytes / whole master", "", pin / (4.0 * n), 3.5 / l->dp);
	/* the manifest's replica hash: the XXH3 of the whole master, here
	 * (no step yet) the init's, against libxxhash's; gmodel_opt.c hashes
	 * the gathered master on the device (dev_xxh3.cu: block sums, the
	 * lanes' chain, the tail), so a wrong lane, block or tail, or a hash
	 * before the gather landed, changes it) */
	float *ref = malloc(n * 4);
	if (ref)
		llmt_model_init_range(m, 0, n, ref);
	check("replica hash of the whole master == XXH3 of the init", "",
		  !ref || !os.master_part || os.master_hash != XXH3_64bits(ref, n * 4), 0);
	free(ref);
	if (world_rank == 0)
		printf("dp=%d tp=%d: pinned checkpoint snapshot %.0f bytes (estimate %.0f; whole master "
			   "%.0f)\n", l->dp, l->tp, pin, h.snapshot, 4.0 * n);
	/* a resume loads master, m and v of this rank's ZeRO-1 range only
	 * (the host heap, glibc's mallinfo2: three blocks and their headers),
	 * exactly the estimate's (a whole master, m and v: 4 x more at dp=2),
	 * and puts them on the device (collective) */
	llmt_memory_estimate_gpu_host(&c, l, n, B, T, 1, 1, 1, &h);
	struct mallinfo2 mi = mallinfo2();
	double heap0 = (double)(mi.uordblks + mi.hblkhd);
	llmt_opt_state ls = {0};
	if (o->ops->load_into(o, 1, &ls))
		check("resume buffers", "", 1, 0);
	mi = mallinfo2();
	double ld = (double)(mi.uordblks + mi.hblkhd) - heap0;
	check("resume host bytes - host estimate", "", fabs(ld - h.load), 3 * 64);
	check("resume loaded", "", o->ops->loaded(o, 1, 1) != 0, 0);
	if (world_rank == 0)
		printf("dp=%d tp=%d: resume buffers %.0f bytes (estimate %.0f; whole master, m and v "
			   "%.0f)\n", l->dp, l->tp, ld, h.load, 12.0 * n);
	if (world_rank == 0)
		printf("dp=%d tp=%d: device model %.0f bytes (estimate %.0f), optimizer %.0f (estimate %.0f, "
			   "whole-buffer state %.0f)\n", l->dp, l->tp, model,
			   e.params + e.activations + e.scratch + e.workspace, opt, e.optimizer, 12.0 * n);
	o->ops->free(o);
	llmt_model_free(m);
}

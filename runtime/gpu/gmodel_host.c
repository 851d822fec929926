/* gmodel_host.c: the GPU model's host side: its host mirror's fp32
 * master and gradients (allocated only when something reads them) and the
 * copies between them and the device (upload, downloads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "comm_nccl.h"
#include "gmodel_impl.h"

llmt_model *llmt_gmodel_host(llmt_gmodel *g) { return g->h; }

int ghost_master(llmt_gmodel *g)
{
	/* never asked for: the init's values, the weights until the device
	 * optimizer holds them (a download of those kept in grads since
	 * creation, else llmt_model_master makes them again); after: made for
	 * a download */
	llmt_model *h = g->h;
	if (!h->master && h->lazy_master && g->ginit && (h->master = llmt_model_mem(h, h->n * 4)))
		return gcheck(cudaMemcpyAsync(h->master, g->grads, h->n * 4, cudaMemcpyDeviceToHost, g->st),
					  "download the init") || llmt_gmodel_sync(g) ? -1 : 0;
	if (llmt_model_master(h))
		return 0;
	if (!(g->h->master = llmt_model_mem(g->h, g->h->n * 4))) {
		fprintf(stderr, "llm-train: out of host memory for the master weights (%zu bytes)\n",
				g->h->n * 4);
		return -1;
	}
	return 0;
}

int llmt_gmodel_host_grads(llmt_gmodel *g)
{
	llmt_model *h = g->h;
	if (h->grads)
		return 0;
	if (ghost_master(g) || !(h->grads = llmt_model_mem(h, h->n * 4))) {
		fprintf(stderr, "llm-train: out of host memory for the gradients (%zu bytes)\n", h->n * 4);
		return -1;
	}
	/* a host optimizer: page-lock master and gradients, the loop moves
	 * them every step (upload after the update, gradient download); a
	 * failure only makes those copies slower */
	g->pinned = cudaHostRegister(h->master, h->n * 4, cudaHostRegisterDefault) == cudaSuccess;
	if (g->pinned &&
		cudaHostRegister(h->grads, h->n * 4, cudaHostRegisterDefault) != cudaSuccess) {
		cudaHostUnregister(h->master);
		g->pinned = 0;
	}
	cudaGetLastError();     /* clear a registration failure */
	return 0;
}

void llmt_gmodel_drop_host_master(llmt_gmodel *g)
{
	llmt_model *h = g->h;
	if (h->grads)       /* kept with a host gradient buffer (host optimizer) */
		return;
	h->lazy_master = 0; /* the init's values are no longer the weights */
	llmt_model_mem_free(h, h->master);
	h->master = NULL;
}

int llmt_gmodel_sync(llmt_gmodel *g)
{
	/* once the compute stream waits for the whole weight all-gather (the
	 * forward did), the host waits for it under the DP watchdog */
	if (g->ag_pending && !g->ag_w && gag_finish(g))
		return -1;
	/* TP all-reduces may be queued on the compute stream: a lost peer must
	 * become an error under the watchdog, not a hang */
	if (g->tp)
		return llmt_nccl_wait(g->tp, g->st);
	return gcheck(cudaStreamSynchronize(g->st), "synchronize");
}

int gsnap_fence(llmt_gmodel *g)
{
	if (!g->snap_pending)
		return 0;
	if (gcheck(cudaStreamWaitEvent(g->st, g->ev_snap_done, 0), "wait for the snapshot"))
		return -1;
	g->snap_pending = 0;
	return 0;
}

int llmt_gmodel_upload(llmt_gmodel *g)
{
	/* into a whole master on the device and from there; else staged in the
	 * gradient buffer (zeroed after): no whole fp32 master needs to exist */
	size_t n = g->h->n;
	if (!llmt_model_master(g->h)) {     /* made with the init's values if never asked for */
		fprintf(stderr, "llm-train: internal error: the host master was dropped (the device "
						"optimizer holds the weights) or is out of memory\n");
		return -1;
	}
	if (gsnap_fence(g) || gag_finish(g))
		return -1;
	if (g->master && !g->sh_lo) {
		if (gcheck(cudaMemcpyAsync(g->master, g->h->master, n * 4, cudaMemcpyHostToDevice, g->st),
				   "upload master") ||
			gcheck(gk_f32_to_bf16(g->master, g->wc, n, g->st), "bf16 copy") || gwf_refresh(g))
			return -1;
		return llmt_gmodel_sync(g);
	}
	if (ginit_release(g) ||
		gcheck(cudaMemcpyAsync(g->grads, g->h->master, n * 4, cudaMemcpyHostToDevice, g->st),
			   "upload master") ||
		gmaster_spread(g, 0, n))
		return -1;
	return llmt_gmodel_sync(g);
}

int llmt_gmodel_download_grads(llmt_gmodel *g)
{
	if (llmt_gmodel_host_grads(g) || ggrads_settle(g) ||
		gcheck(cudaMemcpyAsync(g->h->grads, g->grads, g->h->n * 4, cudaMemcpyDeviceToHost, g->st),
			   "download gradients"))
		return -1;
	return llmt_gmodel_sync(g);
}

int llmt_gmodel_download_master(llmt_gmodel *g)
{
	size_t n = g->h->n;
	if (!g->master)
		return 0;       /* no update since the last upload of the host master */
	if (ghost_master(g))
		return -1;
	if (!g->sh_lo) {
		if (gcheck(cudaMemcpyAsync(g->h->master, g->master, n * 4, cudaMemcpyDeviceToHost, g->st),
				   "download master"))
			return -1;
		return llmt_gmodel_sync(g);
	}
	/* the shares all-gathered into the gradient buffer (zeroed after) */
	if (gsnap_fence(g) || gag_finish(g) || gsh_gather(g, g->master, g->grads) ||
		gcheck(cudaMemcpyAsync(g->h->master, g->grads, n * 4, cudaMemcpyDeviceToHost, g->st),
			   "download master") ||
		gcheck(cudaMemsetAsync(g->grads, 0, n * 4, g->st), "zero gradients") ||
		llmt_nccl_wait(g->dp, g->st))
		return -1;
	return llmt_gmodel_sync(g);
}

int llmt_gmodel_download_compute(llmt_gmodel *g)
{
	size_t n = g->h->n;
	uint16_t *b = ghost_master(g) || gag_finish(g) ? NULL : malloc(n * 2 + 2);
	if (!b || gcheck(cudaMemcpyAsync(b, g->wc, n * 2, cudaMemcpyDeviceToHost, g->st),
					 "download weights") || llmt_gmodel_sync(g)) {
		free(b);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)b[i] << 16;
		memcpy(&g->h->master[i], &u, 4);
	}
	free(b);
	return 0;
}

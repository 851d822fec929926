/* pipeline.c: the 1F1B schedule. comm.h has blocking send/recv only, so a
 * paired exchange with a neighbour (send forward + receive backward, and
 * its mirror) is ordered by stage parity: even stages send first, odd
 * stages receive first; adjacent stages differ in parity, so a pair never
 * waits on itself, and the per-pair op sequences match one to one. */
#include "pipeline.h"
#include "llmt/exitcodes.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "llmt/clock.h"

enum { TAG_FWD = 101, TAG_BWD = 102 };

static int warmup_count(int P, int s, int A)
{
	int w = P - s - 1;

	return w < A ? w : A;
}

void llmt_1f1b_order(int P, int s, int A, char *buf)
{
	int w = warmup_count(P, s, A), n = 0;

	for (int i = 0; i < w; i++)
		buf[n++] = 'F';
	for (int i = 0; i < A - w; i++) {
		buf[n++] = 'F';
		buf[n++] = 'B';
	}
	for (int i = 0; i < w; i++)
		buf[n++] = 'B';
	buf[n] = 0;
}

int llmt_pipeline_slots(int P, int A)
{
	return P < A ? P : A;
}

int llmt_pipeline_init(llmt_pipeline *p, llmt_model *m, llmt_comm *pp_comm, int A, int B, int T)
{
	const llmt_config *c = llmt_model_config(m);

	memset(p, 0, sizeof(*p));
	p->m = m;
	p->pp_comm = pp_comm;
	p->pp = pp_comm ? llmt_comm_size(pp_comm) : 1;
	p->stage = pp_comm ? llmt_comm_rank(pp_comm) : 0;
	p->A = A;
	p->nslots = llmt_pipeline_slots(p->pp, A);
	p->ntok = (size_t)B * (size_t)T;
	p->act = p->ntok * (size_t)c->d_model;
	p->act_in = calloc((size_t)p->nslots, sizeof(float *));
	p->tokens = malloc(sizeof(int32_t) * p->ntok);
	p->targets = malloc(sizeof(int32_t) * p->ntok);
	p->seg = malloc(sizeof(int32_t) * p->ntok);
	if (!p->act_in || !p->tokens || !p->targets || !p->seg)
		goto oom;
	if (p->pp > 1) {
		for (int i = 0; i < p->nslots; i++)
			if (!(p->act_in[i] = malloc(sizeof(float) * p->act)))
				goto oom;
		p->act_out = malloc(sizeof(float) * p->act);
		p->grad_out = malloc(sizeof(float) * p->act);
		p->grad_in = malloc(sizeof(float) * p->act);
		if (!p->act_out || !p->grad_out || !p->grad_in)
			goto oom;
	}
	return 0;
oom:
	fprintf(stderr, "llm-train: out of memory for pipeline buffers (%zu floats each)\n", p->act);
	llmt_pipeline_free(p);
	return -1;
}

void llmt_pipeline_free(llmt_pipeline *p)
{
	for (int i = 0; p->act_in && i < p->nslots; i++)
		free(p->act_in[i]);
	free(p->act_in);
	free(p->act_out);
	free(p->grad_out);
	free(p->grad_in);
	free(p->tokens);
	free(p->targets);
	free(p->seg);
	memset(p, 0, sizeof(*p));
}

/* Timed p2p helpers; buf of p->act floats. */
static int send_to(llmt_pipeline *p, const float *buf, int peer, int tag)
{
	double t0 = llmt_mono_s();
	int rc = llmt_comm_send_bytes(p->pp_comm, buf, sizeof(float) * p->act, peer, tag);

	p->comm_s += llmt_mono_s() - t0;
	return rc;
}

static int recv_from(llmt_pipeline *p, float *buf, int peer, int tag)
{
	double t0 = llmt_mono_s();
	int rc = llmt_comm_recv_bytes(p->pp_comm, buf, sizeof(float) * p->act, peer, tag);

	p->comm_s += llmt_mono_s() - t0;
	return rc;
}

/* Paired exchange with one neighbour, ordered by parity. */
static int exchange(llmt_pipeline *p, const float *sbuf, int stag, float *rbuf, int rtag, int peer)
{
	if (p->stage % 2 == 0) {
		if (send_to(p, sbuf, peer, stag))
			return -1;
		return recv_from(p, rbuf, peer, rtag);
	}
	if (recv_from(p, rbuf, peer, rtag))
		return -1;
	return send_to(p, sbuf, peer, stag);
}

static int forward(llmt_pipeline *p, llmt_fetch_fn fetch, void *ctx, int micro, double *loss_sum)
{
	int first = p->stage == 0, last = p->stage == p->pp - 1, slot = micro % p->nslots, rc;
	float loss = 0;

	if (first || last || p->packed) {
		rc = fetch(ctx, micro, p->tokens, p->targets, p->packed ? p->seg : NULL);
		if (rc)
			return rc;
	}
	if (llmt_model_set_seg(p->m, slot, p->packed ? p->seg : NULL))
		return LLMT_EXIT_USAGE;
	if (llmt_model_forward(p->m, slot, first ? p->tokens : NULL, first ? NULL : p->act_in[slot],
			last ? p->targets : NULL, last ? NULL : p->act_out, last ? &loss : NULL))
		return -1;
	if (last)
		*loss_sum += (double)loss;
	return 0;
}

static int backward(llmt_pipeline *p, int micro, float grad_scale)
{
	int first = p->stage == 0, last = p->stage == p->pp - 1, slot = micro % p->nslots;

	return llmt_model_backward(p->m, slot, last ? NULL : p->grad_out, first ? NULL : p->grad_in,
		grad_scale) ? -1 : 0;
}

int llmt_pipeline_run(llmt_pipeline *p, llmt_fetch_fn fetch, void *ctx,
	float grad_scale, double *loss_sum)
{
	int P = p->pp, s = p->stage, A = p->A, rc;
	int first = s == 0, last = s == P - 1;
	int W = warmup_count(P, s, A), R = A - W;
	int fi = 0, bi = 0; /* next micro-batch to forward / backward */

	*loss_sum = 0;
	p->comm_s = 0;
	if (P == 1) {
		for (int i = 0; i < A; i++) {
			if ((rc = forward(p, fetch, ctx, i, loss_sum)) || (rc = backward(p, i, grad_scale)))
				return rc;
		}
		return 0;
	}
	/* warmup forwards */
	for (int i = 0; i < W; i++, fi++) {
		if (!first && recv_from(p, p->act_in[fi % p->nslots], s - 1, TAG_FWD))
			return -1;
		if ((rc = forward(p, fetch, ctx, fi, loss_sum)))
			return rc;
		if (!last && send_to(p, p->act_out, s + 1, TAG_FWD))
			return -1;
	}
	if (R > 0 && !first && recv_from(p, p->act_in[fi % p->nslots], s - 1, TAG_FWD))
		return -1;
	/* steady state: one forward, one backward */
	for (int i = 0; i < R; i++, fi++, bi++) {
		if ((rc = forward(p, fetch, ctx, fi, loss_sum)))
			return rc;
		if (!last && exchange(p, p->act_out, TAG_FWD, p->grad_out, TAG_BWD, s + 1))
			return -1;
		if ((rc = backward(p, bi, grad_scale)))
			return rc;
		if (!first) {
			if (i == R - 1) {
				if (send_to(p, p->grad_in, s - 1, TAG_BWD))
					return -1;
			} else if (exchange(p, p->grad_in, TAG_BWD, p->act_in[(fi + 1) % p->nslots], TAG_FWD, s - 1)) {
				return -1;
			}
		}
	}
	/* cooldown backwards */
	for (int i = 0; i < W; i++, bi++) {
		if (!last && recv_from(p, p->grad_out, s + 1, TAG_BWD))
			return -1;
		if ((rc = backward(p, bi, grad_scale)))
			return rc;
		if (!first && send_to(p, p->grad_in, s - 1, TAG_BWD))
			return -1;
	}
	return 0;
}

int llmt_pipeline_forward(llmt_pipeline *p, llmt_fetch_fn fetch, void *ctx, double *loss_sum)
{
	int s = p->stage, first = s == 0, last = s == p->pp - 1, rc;

	*loss_sum = 0;
	for (int i = 0; i < p->A; i++) {
		if (!first && recv_from(p, p->act_in[i % p->nslots], s - 1, TAG_FWD))
			return -1;
		if ((rc = forward(p, fetch, ctx, i, loss_sum)))
			return rc;
		if (!last && send_to(p, p->act_out, s + 1, TAG_FWD))
			return -1;
	}
	return 0;
}

/* model.c: building one stage/shard of the model: layout checks, the
 * parameter table (HF names, logical shapes, shard ranges, flat offsets),
 * deterministic layout-independent init, memory for activations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "attn.h"
#include "bf16.h"
#include "model_impl.h"
#include "gpu/bridge.h"

int llmt_model_check_shape(const llmt_config *c, const llmt_par *p, char *err, size_t errlen)
{
	char why[200];
	if (llmt_config_validate(c, why, sizeof why)) {
		snprintf(err, errlen, "model config: %s", why);
		return -1;
	}
	int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
	if (p->tp < 1 || p->pp < 1 || p->tp_rank < 0 || p->tp_rank >= p->tp || p->pp_rank < 0 ||
		p->pp_rank >= p->pp) {
		snprintf(err, errlen, "bad layout tp=%d (rank %d) pp=%d (rank %d)", p->tp, p->tp_rank,
				 p->pp, p->pp_rank);
		return -1;
	}
	if (c->n_layers % p->pp) {
		snprintf(err, errlen, "pp=%d does not divide n_layers=%d", p->pp, c->n_layers);
		return -1;
	}
	if (c->n_heads % p->tp || kv % p->tp || c->d_ff % p->tp) {
		snprintf(err, errlen, "tp=%d does not divide n_heads=%d, n_kv_heads=%d and d_ff=%d",
				 p->tp, c->n_heads, kv, c->d_ff);
		return -1;
	}
	if (c->d_model / c->n_heads > 1024) {
		snprintf(err, errlen, "head_dim %d is above the supported 1024", c->d_model / c->n_heads);
		return -1;
	}
	return 0;
}

int llmt_model_check_layout(const llmt_config *c, const llmt_par *p, char *err, size_t errlen)
{
	if (llmt_model_check_shape(c, p, err, errlen))
		return -1;
	if (p->tp > 1 && !p->tp_comm) {
		snprintf(err, errlen, "tp=%d needs a TP communicator", p->tp);
		return -1;
	}
	return 0;
}

/* 64-byte aligned, zeroed, freed with the model */
static void *mem(llmt_model *m, size_t bytes)
{
	if (m->nallocs == m->capallocs) {
		int nc = m->capallocs ? 2 * m->capallocs : 64;
		void **p = realloc(m->allocs, sizeof *p * (size_t)nc);
		if (!p)
			return NULL;
		m->allocs = p;
		m->capallocs = nc;
	}
	void *p = NULL;
	if (posix_memalign(&p, 64, bytes ? bytes : 64))
		return NULL;
	memset(p, 0, bytes);
	m->allocs[m->nallocs++] = p;
	return p;
}

void *llmt_model_mem(llmt_model *m, size_t bytes) { return mem(m, bytes); }

void llmt_model_mem_free(llmt_model *m, void *p)
{
	for (int i = 0; p && i < m->nallocs; i++)
		if (m->allocs[i] == p) {
			m->allocs[i] = m->allocs[--m->nallocs];
			free(p);
			return;
		}
}

static int add_param(llmt_model *m, int *cap, size_t *off, const char *name, int ndim,
					 int64_t r, int64_t c, int split, int64_t soff, int64_t slen, int nodecay)
{
	if (m->nparams_t == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		llmt_param_info *p = realloc(m->params, sizeof *p * (size_t)*cap);
		if (!p)
			return -1;
		m->params = p;
	}
	llmt_param_info *p = &m->params[m->nparams_t++];
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "%s", name);
	p->ndim = ndim;
	p->shape[0] = r;
	p->shape[1] = ndim == 2 ? c : 1;
	p->split_dim = split;
	p->split_off = split < 0 ? 0 : soff;
	p->split_len = split < 0 ? 0 : slen;
	int64_t lr = split == 0 ? slen : r, lc = split == 1 ? slen : (ndim == 2 ? c : 1);
	p->numel = (size_t)(lr * lc);
	p->offset = *off;
	p->no_decay = nodecay;
	*off += p->numel;
	return 0;
}

static int build_table(llmt_model *m)
{
	const llmt_config *c = &m->c;
	int cap = 0, tp = m->par.tp, r = m->par.tp_rank;
	size_t off = 0;
	int64_t d = c->d_model, hd = m->hd, V = c->vocab_size;
	int64_t H = c->n_heads, KV = m->c.n_kv_heads, F = c->d_ff;
	char nm[96];
	if (m->first) {
		m->off_embed = off;
		if (add_param(m, &cap, &off, "model.embed_tokens.weight", 2, V, d, -1, 0, 0, 0))
			return -1;
	}
	for (int i = 0; i < m->nl; i++) {
		int l = m->l0 + i;
		struct layer_off *lo = &m->lo[i];
#define P(field, suffix, nd, rr, cc, sp, so, sl, nd2)                                        \
		do {                                                                                  \
			snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix);                         \
			lo->field = off;                                                                  \
			if (add_param(m, &cap, &off, nm, nd, rr, cc, sp, so, sl, nd2))                    \
				return -1;                                                                    \
		} while (0)
		size_t tmp;
		P(ln1, "input_layernorm.weight", 1, d, 1, -1, 0, 0, 1);
		P(qkv, "self_attn.q_proj.weight", 2, H * hd, d, 0, r * (H / tp) * hd, (H / tp) * hd, 0);
		tmp = lo->qkv;
		P(qkv, "self_attn.k_proj.weight", 2, KV * hd, d, 0, r * (KV / tp) * hd, (KV / tp) * hd, 0);
		P(qkv, "self_attn.v_proj.weight", 2, KV * hd, d, 0, r * (KV / tp) * hd, (KV / tp) * hd, 0);
		lo->qkv = tmp;
		if (c->qk_norm) {
			P(qn, "self_attn.q_norm.weight", 1, hd, 1, -1, 0, 0, 1);
			P(kn, "self_attn.k_norm.weight", 1, hd, 1, -1, 0, 0, 1);
		}
		P(o, "self_attn.o_proj.weight", 2, d, H * hd, 1, r * (H / tp) * hd, (H / tp) * hd, 0);
		P(ln2, "post_attention_layernorm.weight", 1, d, 1, -1, 0, 0, 1);
		P(gu, "mlp.gate_proj.weight", 2, F, d, 0, r * (F / tp), F / tp, 0);
		tmp = lo->gu;
		P(gu, "mlp.up_proj.weight", 2, F, d, 0, r * (F / tp), F / tp, 0);
		lo->gu = tmp;
		P(down, "mlp.down_proj.weight", 2, d, F, 1, r * (F / tp), F / tp, 0);
#undef P
	}
	if (m->last) {
		m->off_norm = off;
		if (add_param(m, &cap, &off, "model.norm.weight", 1, d, 1, -1, 0, 0, 1))
			return -1;
		if (!c->tie_embeddings) {
			m->off_head = off;
			if (add_param(m, &cap, &off, "lm_head.weight", 2, V, d, -1, 0, 0, 0))
				return -1;
		} else if (m->first) {
			m->off_head = m->off_embed;
		} else {
			m->off_head = off;
			if (add_param(m, &cap, &off, "model.embed_tokens.weight", 2, V, d, -1, 0, 0, 0))
				return -1;
			m->params[m->nparams_t - 1].tied_copy = 1;
		}
	}
	m->n = off;
	return 0;
}

/* what the parameter table depends on: config, layout, this stage's layers */
static void set_shape(llmt_model *m, const llmt_config *c, const llmt_par *par)
{
	m->c = *c;
	if (!m->c.n_kv_heads)
		m->c.n_kv_heads = c->n_heads;
	m->par = *par;
	m->nl = c->n_layers / par->pp;
	m->l0 = m->nl * par->pp_rank;
	m->first = par->pp_rank == 0;
	m->last = par->pp_rank == par->pp - 1;
	m->hd = c->d_model / c->n_heads;
}

size_t llmt_model_count(const llmt_config *c, const llmt_par *par)
{
	llmt_model m;
	size_t n = 0;
	memset(&m, 0, sizeof m);
	set_shape(&m, c, par);
	m.lo = calloc((size_t)m.nl + 1, sizeof *m.lo);
	if (m.lo && !build_table(&m))
		n = m.n;
	free(m.lo);
	free(m.params);
	return n;
}

int llmt_model_table(const llmt_config *c, const llmt_par *par, llmt_param_info **params, int *count,
					 size_t *nflat)
{
	llmt_model m;
	int rc = -1;
	memset(&m, 0, sizeof m);
	set_shape(&m, c, par);
	m.lo = calloc((size_t)m.nl + 1, sizeof *m.lo);
	if (m.lo && !build_table(&m)) {
		*params = m.params;
		*count = m.nparams_t;
		*nflat = m.n;
		m.params = NULL;
		rc = 0;
	}
	free(m.lo);
	free(m.params);
	return rc;
}

/* counter-based generator: splitmix64 finaliser over (seed, name, index) */
static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static float normal_at(uint64_t key, uint64_t i)
{
	uint64_t r = mix(key ^ mix(i));
	double u1 = ((double)(r >> 40) + 1.0) / 16777217.0; /* (0,1] */
	double u2 = (double)(r & 0xffffffull) / 16777216.0;
	return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void llmt_model_init_key(const llmt_model *m, const llmt_param_info *p, uint64_t *key, double *std)
{
	*std = m->c.init_std;
	if (strstr(p->name, "o_proj") || strstr(p->name, "down_proj"))
		*std /= sqrt(2.0 * m->c.n_layers);
	*key = mix(m->c.seed) ^ fnv1a(p->name);
}

float llmt_model_init_value(const llmt_param_info *p, uint64_t key, double std, size_t k)
{
	if (p->ndim == 1)
		return 1.0f;
	int64_t lc = p->split_dim == 1 ? p->split_len : p->shape[1];
	int64_t i = (int64_t)k / lc, j = (int64_t)k % lc;
	int64_t ro = p->split_dim == 0 ? p->split_off : 0;
	int64_t co = p->split_dim == 1 ? p->split_off : 0;
	return (float)(std * normal_at(key, (uint64_t)((i + ro) * p->shape[1] + (j + co))));
}

void llmt_model_init_range(const llmt_model *m, size_t lo, size_t hi, float *out)
{
	memset(out, 0, (hi - lo) * sizeof(float));
	for (int t = 0; t < m->nparams_t; t++) {
		const llmt_param_info *p = &m->params[t];
		size_t a = p->offset > lo ? p->offset : lo;
		size_t b = p->offset + p->numel < hi ? p->offset + p->numel : hi;
		uint64_t key;
		double std;
		if (a >= b)
			continue;
		llmt_model_init_key(m, p, &key, &std);
#pragma omp parallel for schedule(static)
		for (size_t i = a; i < b; i++)
			out[i - lo] = llmt_model_init_value(p, key, std, i - p->offset);
	}
}

void llmt_model_init(llmt_model *m)
{
	if (m->mshare) {
		llmt_model_init_share(m);
		return;
	}
	for (int t = 0; t < m->nparams_t; t++) {
		const llmt_param_info *p = &m->params[t];
		float *w = m->master + p->offset;
		uint64_t key;
		double std;
		llmt_model_init_key(m, p, &key, &std);
#pragma omp parallel for schedule(static)
		for (size_t k = 0; k < p->numel; k++)
			w[k] = llmt_model_init_value(p, key, std, k);
	}
	llmt_model_sync_compute(m);
	llmt_model_zero_grad(m);
}

void llmt_model_sync_compute(llmt_model *m)
{
	if (m->dev) {
		m->dev->sync_compute(m);
		return;
	}
	if (!m->bf || !m->wc)   /* a GPU mirror has no compute copy */
		return;
	size_t n = m->mhi - m->mlo;
	bf16 *wc = m->wc + m->mlo;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i += 4096)
		f32_to_bf16_n(wc + i, m->master + i, n - i < 4096 ? n - i : 4096);
	/* a share: its part of the fp32 copies too */
	for (int i = 0; i < m->nwf; i++) {
		size_t a = m->wf_flat[i] > m->mlo ? m->wf_flat[i] : m->mlo;
		size_t b = m->wf_flat[i] + m->wf_n[i] < m->mhi ? m->wf_flat[i] + m->wf_n[i] : m->mhi;
		if (a < b)
			memcpy(m->wf + m->wf_at[i] + (a - m->wf_flat[i]), m->master + (a - m->mlo),
				   (b - a) * sizeof(float));
	}
}

void llmt_model_zero_grad(llmt_model *m)
{
	if (m->dev) {       /* the host copy is fetched whole before a read */
		m->dev->zero_grad(m);
		return;
	}
	if (m->grads)       /* a GPU mirror's are made on demand */
		memset(m->grads, 0, m->n * sizeof(float));
	m->gz = 1; /* the next (CPU) backward's products write instead of adding */
}

/* one layer's kept activations; P too unless with_P is 0 (shared) */
static int alloc_layer(llmt_model *m, struct layer_act *a, int with_P)
{
	size_t M = (size_t)m->M, d = (size_t)m->c.d_model, es = m->bf ? 2 : 4;
	size_t Hh = (size_t)m->Hl * m->hd, BH = (size_t)m->B * m->Hl, T = (size_t)m->T;
	size_t Fl = (size_t)m->Fl, Wq = (size_t)m->Wq, hd = (size_t)m->hd;
#define A(p, bytes) do { if (!((p) = mem(m, (bytes)))) return -1; } while (0)
	A(a->x_mid, M * d * 4);
	A(a->h1, M * d * es);
	A(a->h2, M * d * es);
	A(a->rstd1, M * 4);
	A(a->rstd2, M * 4);
	if (m->c.qk_norm) {
		A(a->qkv, M * Wq * 4);
		A(a->qr, M * (size_t)m->Hl * 4);
		A(a->kr, M * (size_t)m->KVl * 4);
	}
	A(a->q, BH * T * hd * es);
	A(a->k, BH * T * hd * es);
	A(a->v, BH * T * hd * es);
	if (with_P)
		A(a->P, BH * T * (m->aw ? (size_t)attn_ld(m->T) : T) * es);
	A(a->att, M * Hh * es);
	A(a->gu, M * 2 * Fl * es);
	A(a->a, M * Fl * es);
#undef A
	return 0;
}

static int alloc_acts(llmt_model *m)
{
	size_t M = (size_t)m->M, d = (size_t)m->c.d_model, es = m->bf ? 2 : 4;
	size_t Hh = (size_t)m->Hl * m->hd, BH = (size_t)m->B * m->Hl, T = (size_t)m->T;
	size_t V = (size_t)m->c.vocab_size, Fl = (size_t)m->Fl, Wq = (size_t)m->Wq;
	size_t hd = (size_t)m->hd;
	llmt_recompute rc = m->rc_layers ? m->recompute : LLMT_RECOMPUTE_NONE;
	struct layer_act shared = { 0 };
#define A(p, bytes) do { if (!((p) = mem(m, (bytes)))) return -1; } while (0)
	/* FULL: one set of layer activations for every recomputed layer and
	 * slot; ATTN: one softmax buffer */
	if (rc == LLMT_RECOMPUTE_FULL && alloc_layer(m, &shared, 1))
		return -1;
	if (rc == LLMT_RECOMPUTE_ATTN)
		A(shared.P, BH * T * (m->aw ? (size_t)attn_ld(m->T) : T) * es);
	A(m->slots, sizeof(struct slot) * (size_t)m->nslots);
	for (int s = 0; s < m->nslots; s++) {
		struct slot *sl = &m->slots[s];
		A(sl->xs, sizeof(float *) * (size_t)(m->nl + 1));
		for (int l = 0; l <= m->nl; l++)
			A(sl->xs[l], M * d * 4);
		A(sl->la, sizeof(struct layer_act) * (size_t)m->nl);
		for (int l = 0; l < m->nl; l++) {
			struct layer_act *a = &sl->la[l];
			llmt_recompute r = RC_AT(m, l);
			if (r == LLMT_RECOMPUTE_FULL) {
				*a = shared;
				continue;
			}
			if (alloc_layer(m, a, r == LLMT_RECOMPUTE_NONE))
				return -1;
			if (r == LLMT_RECOMPUTE_ATTN)
				a->P = shared.P;
		}
		if (m->first)
			A(sl->tokens, M * 4);
		A(sl->pos, M * 4);
		A(sl->lo, M * 4);
		if (m->last) {
			A(sl->xf, M * d * es);
			A(sl->rstdf, M * 4);
			A(sl->dlog, M * V * es);
		}
	}
	size_t big = M * (d > Hh ? d : Hh);
	A(m->qkv_s, M * Wq * 4);
	A(m->qkn_g, 2 * hd * 4);
	if (!m->aw) { /* the oneDNN attention path's buffers */
		A(m->S, BH * T * T * 4);
		A(m->dP, BH * T * T * 4);
		A(m->O, BH * T * hd * es);
		A(m->dO, BH * T * hd * es);
		A(m->dq, BH * T * hd * 4);
		A(m->dk, BH * T * hd * 4);
		A(m->dv, BH * T * hd * 4);
	}
	A(m->y, M * d * 4);
	A(m->dx, M * d * 4);
	A(m->dh, M * d * 4);
	A(m->da, M * Fl * 4);
	A(m->datt, M * Hh * 4);
	A(m->dyact, big * es);
	A(m->dgu, M * 2 * Fl * es);
	A(m->dS, BH * T * (m->aw ? (size_t)attn_ld(m->T) : T) * es);
	A(m->dqkv, M * Wq * es);
	if (m->last)
		A(m->logits, M * V * 4);
#undef A
	return 0;
}

llmt_model *llmt_model_create(const llmt_config *c, const llmt_par *par, llmt_prec prec, int B,
							  int T, int nslots)
{
	return llmt_model_create_rc(c, par, prec, B, T, nslots, LLMT_RECOMPUTE_NONE);
}

llmt_model *llmt_model_create_rc(const llmt_config *c, const llmt_par *par, llmt_prec prec, int B,
								 int T, int nslots, int recompute)
{
	return llmt_model_create_share(c, par, prec, B, T, nslots, recompute, 0, (size_t)-1);
}

static int building_mirror;     /* llmt_model_create_mirror is building */

llmt_model *llmt_model_create_mirror(const llmt_config *c, const llmt_par *par)
{
	building_mirror = 1;
	llmt_model *m = llmt_model_create_share(c, par, LLMT_BF16, 1, 1, 1, LLMT_RECOMPUTE_NONE, 0,
											(size_t)-1);
	building_mirror = 0;
	return m;
}

llmt_model *llmt_model_create_share(const llmt_config *c, const llmt_par *par, llmt_prec prec,
									int B, int T, int nslots, int recompute, size_t lo,
									size_t hi)
{
	char err[256];
	int mirror = building_mirror;
	building_mirror = 0;
	if (llmt_model_check_layout(c, par, err, sizeof err)) {
		fprintf(stderr, "llm-train: %s\n", err);
		return NULL;
	}
	llmt_model *dm;
	if (llmt_dev_create(c, par, prec, B, T, nslots, recompute, &dm))
		return dm;
	if (B < 1 || T < 1 || T > c->max_seq || T > 4096 || nslots < 1) {
		fprintf(stderr, "llm-train: bad micro-batch B=%d T=%d (max_seq %d, at most 4096) slots=%d\n",
				B, T, c->max_seq, nslots);
		return NULL;
	}
	llmt_model *m = calloc(1, sizeof *m);
	if (!m)
		goto oom;
	set_shape(m, c, par);
	m->prec = prec;
	m->bf = prec == LLMT_BF16;
	m->recompute = llmt_rc_mode(recompute);
	m->rc_layers = llmt_rc_layers(recompute, m->nl);
	m->B = B;
	m->T = T;
	m->M = B * T;
	m->nslots = nslots;
	m->Hl = c->n_heads / par->tp;
	m->KVl = m->c.n_kv_heads / par->tp;
	m->Fl = c->d_ff / par->tp;
	m->Wq = (m->Hl + 2 * m->KVl) * m->hd;
	if (!(m->lo = mem(m, sizeof(struct layer_off) * (size_t)m->nl)) || build_table(m))
		goto oom;
	m->mhi = m->n;
	if (prec == LLMT_BF16 && lo <= hi && hi <= m->n && (lo > 0 || hi < m->n)) {
		m->mshare = 1;
		m->mlo = lo;
		m->mhi = hi;
		if (llmt_model_wf_plan(m, mem))
			goto oom;
	}
	/* a GPU mirror: no master (gpu/gmodel.c initialises the device a
	 * piece at a time; made whole when asked for), no gradients (made on
	 * demand) and no compute copy */
	m->lazy_master = mirror;
	if ((!mirror && !(m->master = mem(m, (m->mhi - m->mlo) * 4))) ||
		(!mirror && !(m->grads = mem(m, m->n * 4))))
		goto oom;
	if (m->bf && !mirror && !(m->wc = mem(m, m->n * 2)))
		goto oom;
	int h2 = m->hd / 2;
	if (!(m->cos_t = mem(m, (size_t)T * h2 * 4)) || !(m->sin_t = mem(m, (size_t)T * h2 * 4)))
		goto oom;
	double *inv = malloc((size_t)h2 * sizeof *inv);
	if (!inv)
		goto oom;
	llmt_rope_inv_freq(c, m->hd, inv);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < h2; i++) {
			m->cos_t[t * h2 + i] = (float)cos(t * inv[i]);
			m->sin_t[t * h2 + i] = (float)sin(t * inv[i]);
		}
	free(inv);
	if (m->bf && !mirror && attn_ok(m->hd) &&
		!(m->aw = attn_ws_new(B * m->Hl, T, m->hd, omp_get_max_threads())))
		goto oom;
	if (alloc_acts(m))
		goto oom;
	if (!mirror)
		llmt_model_init(m);
	return m;
oom:
	fprintf(stderr, "llm-train: out of memory building the model (B=%d T=%d slots=%d)\n", B, T,
			nslots);
	llmt_model_free(m);
	return NULL;
}

void llmt_model_free(llmt_model *m)
{
	if (!m)
		return;
	if (m->dev) {
		m->dev->destroy(m);
		return;
	}
	attn_ws_free(m->aw);
	for (int i = 0; i < m->nallocs; i++)
		free(m->allocs[i]);
	free(m->allocs);
	free(m->params);
	free(m);
}

const llmt_param_info *llmt_model_params(const llmt_model *m, int *count)
{
	*count = m->nparams_t;
	return m->params;
}
size_t llmt_model_nparams(const llmt_model *m) { return m->n; }
int llmt_model_blocked_attn(const llmt_model *m) { return m->aw != NULL; }
float *llmt_model_master(llmt_model *m)
{
	if (!m->master && m->lazy_master && (m->master = mem(m, m->n * 4)))
		llmt_model_init_range(m, 0, m->n, m->master);
	return m->master;
}
void llmt_model_master_range(const llmt_model *m, size_t *lo, size_t *hi)
{
	*lo = m->mshare ? m->mlo : 0;
	*hi = m->mshare ? m->mhi : m->n;
}
float *llmt_model_grads(llmt_model *m)
{
	if (m->dev)
		m->dev->fetch_grads(m);
	return m->grads;
}
const llmt_config *llmt_model_config(const llmt_model *m) { return &m->c; }
const float *llmt_model_logits(const llmt_model *m, int s)
{
	(void)s;
	if (m->dev)
		return m->dev->logits((llmt_model *)m, s);
	return m->last ? m->logits : NULL;
}

/* gen_model.c: the generation model: a Llama-family decoder over fp32
 * weights, one token at a time with a KV cache (RMSNorm, rotary in the HF
 * rotate_half convention, GQA, optional QK-norm, SwiGLU, tied head), and
 * the cache-free recompute through the training model. */
#include "gen_model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gen_layer {
	const float *ln1, *q, *k, *v, *qn, *kn, *o, *ln2, *gate, *up, *down;
} gen_layer;

struct llmt_gen {
	llmt_config c;
	int hd, kvd, max_t;
	float *flat;
	const llmt_param_info *tab;
	int ntab;
	const float *embed, *norm, *head;
	gen_layer *L;
	float *kc, *vc;              /* [layer][max_t][kvd] */
	float *cosb, *sinb;          /* [max_t][hd/2] */
	float *x, *h, *q, *k, *v, *ao, *g, *u, *sc, *logits;
	llmt_model *full;            /* the recompute model, built on first use */
	int full_t;
};

static const float *find(llmt_gen *g, const char *name, int need, int *missing)
{
	for (int i = 0; i < g->ntab; i++)
		if (!strcmp(g->tab[i].name, name))
			return g->flat + g->tab[i].offset;
	if (need)
		*missing = 1;
	return NULL;
}

static int bind(llmt_gen *g)
{
	char nm[128];
	int miss = 0;

	g->embed = find(g, "model.embed_tokens.weight", 1, &miss);
	g->norm = find(g, "model.norm.weight", 1, &miss);
	g->head = g->c.tie_embeddings ? g->embed : find(g, "lm_head.weight", 1, &miss);
	for (int l = 0; l < g->c.n_layers; l++) {
		gen_layer *y = &g->L[l];
#define W(field, suffix, need) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix), \
		y->field = find(g, nm, need, &miss))
		W(ln1, "input_layernorm.weight", 1);
		W(q, "self_attn.q_proj.weight", 1);
		W(k, "self_attn.k_proj.weight", 1);
		W(v, "self_attn.v_proj.weight", 1);
		W(qn, "self_attn.q_norm.weight", g->c.qk_norm);
		W(kn, "self_attn.k_norm.weight", g->c.qk_norm);
		W(o, "self_attn.o_proj.weight", 1);
		W(ln2, "post_attention_layernorm.weight", 1);
		W(gate, "mlp.gate_proj.weight", 1);
		W(up, "mlp.up_proj.weight", 1);
		W(down, "mlp.down_proj.weight", 1);
#undef W
	}
	return miss ? -1 : 0;
}

llmt_gen *llmt_gen_new(const llmt_config *c, const llmt_param_info *tab, int ntab, float *flat, int max_t,
                       char *err, size_t errlen)
{
	llmt_gen *g = calloc(1, sizeof *g);
	size_t d, F, V, H, cache;

	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->c = *c;
	if (!g->c.n_kv_heads)
		g->c.n_kv_heads = c->n_heads;
	g->hd = c->d_model / c->n_heads;
	g->kvd = g->c.n_kv_heads * g->hd;
	g->max_t = max_t;
	g->flat = flat;
	g->tab = tab;
	g->ntab = ntab;
	d = (size_t)c->d_model, F = (size_t)c->d_ff, V = (size_t)c->vocab_size, H = (size_t)c->n_heads;
	cache = (size_t)c->n_layers * (size_t)max_t * (size_t)g->kvd;
	g->L = calloc((size_t)c->n_layers, sizeof *g->L);
	g->kc = malloc(cache * sizeof(float));
	g->vc = malloc(cache * sizeof(float));
	g->cosb = malloc((size_t)max_t * (size_t)g->hd / 2 * sizeof(float));
	g->sinb = malloc((size_t)max_t * (size_t)g->hd / 2 * sizeof(float));
	g->x = malloc((5 * d + 2 * (size_t)g->kvd + 2 * F + (size_t)max_t + V + H * (size_t)g->hd) * sizeof(float));
	if (!g->L || !g->kc || !g->vc || !g->cosb || !g->sinb || !g->x) {
		snprintf(err, errlen, "out of memory (KV cache of %d positions: %zu MiB)", max_t,
		         2 * cache * sizeof(float) >> 20);
		llmt_gen_free(g);
		return NULL;
	}
	g->h = g->x + d;
	g->ao = g->h + d;
	g->q = g->ao + d;
	g->k = g->q + H * (size_t)g->hd;
	g->v = g->k + g->kvd;
	g->g = g->v + g->kvd;
	g->u = g->g + F;
	g->sc = g->u + F;
	g->logits = g->sc + max_t;
	if (bind(g)) {
		snprintf(err, errlen, "the weights lack a tensor of the model");
		llmt_gen_free(g);
		return NULL;
	}
	double *inv = malloc((size_t)(g->hd / 2) * sizeof *inv);
	if (!inv) {
		snprintf(err, errlen, "out of memory");
		llmt_gen_free(g);
		return NULL;
	}
	llmt_rope_inv_freq(c, g->hd, inv);
	for (int t = 0; t < max_t; t++)
		for (int i = 0; i < g->hd / 2; i++) {
			double a = (double)t * inv[i];
			g->cosb[(size_t)t * (size_t)(g->hd / 2) + (size_t)i] = (float)cos(a);
			g->sinb[(size_t)t * (size_t)(g->hd / 2) + (size_t)i] = (float)sin(a);
		}
	free(inv);
	return g;
}

void llmt_gen_free(llmt_gen *g)
{
	if (!g)
		return;
	if (g->full)
		llmt_model_free(g->full);
	free(g->L);
	free(g->kc);
	free(g->vc);
	free(g->cosb);
	free(g->sinb);
	free(g->x);
	free(g->flat);
	free(g);
}

const llmt_config *llmt_gen_config(const llmt_gen *g) { return &g->c; }

/* y_j[out_j] = W_j[out_j][in] x for the n (<= 3) products of one input,
 * in one parallel loop over all their rows (one fork/join: on a busy
 * machine each costs more than a small product) */
typedef struct mv { float *y; const float *W; int out; } mv;

static void matvec_n(const mv *m, int n, const float *x, int in)
{
	int rows = 0;

	for (int j = 0; j < n; j++)
		rows += m[j].out;
#pragma omp parallel for schedule(static) if ((long)rows * in >= (1L << 18))
	for (int r = 0; r < rows; r++) {
		int j = 0, o = r;
		while (o >= m[j].out)
			o -= m[j++].out;
		const float *w = m[j].W + (size_t)o * (size_t)in;
		float s = 0;
#pragma omp simd reduction(+ : s)
		for (int i = 0; i < in; i++)
			s += w[i] * x[i];
		m[j].y[o] = s;
	}
}

static void matvec(float *y, const float *W, const float *x, int out, int in)
{
	mv m = { y, W, out };

	matvec_n(&m, 1, x, in);
}

static void rmsnorm(float *y, const float *x, const float *w, int n, double eps)
{
	float ss = 0;

	for (int i = 0; i < n; i++)
		ss += x[i] * x[i];
	float r = 1.0f / sqrtf(ss / (float)n + (float)eps);
	for (int i = 0; i < n; i++)
		y[i] = x[i] * r * w[i];
}

static void rope(float *x, int nheads, int hd, const float *cs, const float *sn)
{
	for (int h = 0; h < nheads; h++) {
		float *v = x + (size_t)h * (size_t)hd;
		for (int i = 0; i < hd / 2; i++) {
			float a = v[i], b = v[i + hd / 2];
			v[i] = a * cs[i] - b * sn[i];
			v[i + hd / 2] = b * cs[i] + a * sn[i];
		}
	}
}

/* attention of the query heads in g->q over cached positions [0, pos] of layer l into g->ao */
static void attend(llmt_gen *g, int l, int pos)
{
	int H = g->c.n_heads, grp = H / g->c.n_kv_heads, hd = g->hd;
	const float *kc = g->kc + (size_t)l * (size_t)g->max_t * (size_t)g->kvd;
	const float *vc = g->vc + (size_t)l * (size_t)g->max_t * (size_t)g->kvd;
	float scale = 1.0f / sqrtf((float)hd);

	for (int h = 0; h < H; h++) {
		const float *q = g->q + (size_t)h * (size_t)hd;
		size_t kvo = (size_t)(h / grp) * (size_t)hd;
		float mx = -INFINITY, sum = 0, *o = g->ao + (size_t)h * (size_t)hd;
		for (int t = 0; t <= pos; t++) {
			const float *k = kc + (size_t)t * (size_t)g->kvd + kvo;
			float s = 0;
			for (int i = 0; i < hd; i++)
				s += q[i] * k[i];
			g->sc[t] = s * scale;
			mx = g->sc[t] > mx ? g->sc[t] : mx;
		}
		for (int t = 0; t <= pos; t++)
			sum += (g->sc[t] = expf(g->sc[t] - mx));
		memset(o, 0, (size_t)hd * sizeof *o);
		for (int t = 0; t <= pos; t++) {
			const float *v = vc + (size_t)t * (size_t)g->kvd + kvo;
			float p = g->sc[t] / sum;
			for (int i = 0; i < hd; i++)
				o[i] += p * v[i];
		}
	}
}

const float *llmt_gen_step(llmt_gen *g, int32_t tok, int pos)
{
	const llmt_config *c = &g->c;
	int d = c->d_model, F = c->d_ff, H = c->n_heads, KV = c->n_kv_heads, hd = g->hd;
	const float *cs = g->cosb + (size_t)pos * (size_t)(hd / 2), *sn = g->sinb + (size_t)pos * (size_t)(hd / 2);

	memcpy(g->x, g->embed + (size_t)tok * (size_t)d, (size_t)d * sizeof(float));
	for (int l = 0; l < c->n_layers; l++) {
		const gen_layer *y = &g->L[l];
		size_t at = ((size_t)l * (size_t)g->max_t + (size_t)pos) * (size_t)g->kvd;
		rmsnorm(g->h, g->x, y->ln1, d, c->norm_eps);
		mv qkv[3] = { { g->q, y->q, H * hd }, { g->k, y->k, KV * hd }, { g->v, y->v, KV * hd } };
		matvec_n(qkv, 3, g->h, d);
		if (c->qk_norm) {
			for (int h = 0; h < H; h++)
				rmsnorm(g->q + h * hd, g->q + h * hd, y->qn, hd, c->norm_eps);
			for (int h = 0; h < KV; h++)
				rmsnorm(g->k + h * hd, g->k + h * hd, y->kn, hd, c->norm_eps);
		}
		rope(g->q, H, hd, cs, sn);
		rope(g->k, KV, hd, cs, sn);
		memcpy(g->kc + at, g->k, (size_t)g->kvd * sizeof(float));
		memcpy(g->vc + at, g->v, (size_t)g->kvd * sizeof(float));
		attend(g, l, pos);
		matvec(g->h, y->o, g->ao, d, H * hd);
		for (int i = 0; i < d; i++)
			g->x[i] += g->h[i];
		rmsnorm(g->h, g->x, y->ln2, d, c->norm_eps);
		mv gu[2] = { { g->g, y->gate, F }, { g->u, y->up, F } };
		matvec_n(gu, 2, g->h, d);
		for (int i = 0; i < F; i++)
			g->g[i] = g->g[i] / (1.0f + expf(-g->g[i])) * g->u[i];
		matvec(g->h, y->down, g->g, d, F);
		for (int i = 0; i < d; i++)
			g->x[i] += g->h[i];
	}
	rmsnorm(g->h, g->x, g->norm, d, c->norm_eps);
	matvec(g->logits, g->head, g->h, c->vocab_size, d);
	return g->logits;
}

const float *llmt_gen_recompute(llmt_gen *g, const int32_t *tokens, int n)
{
	int32_t *tok, *tgt;
	const float *lg;
	float loss;

	if (!g->full) {
		llmt_par par = { 1, 0, 1, 0, NULL };
		g->full_t = g->max_t;
		g->full = llmt_model_create(&g->c, &par, LLMT_FP32, 1, g->full_t, 1);
		if (!g->full)
			return NULL;
		if (llmt_model_nparams(g->full) < (size_t)(g->tab[g->ntab - 1].offset + g->tab[g->ntab - 1].numel)) {
			fprintf(stderr, "llm-train: generate: the training model's table differs\n");
			return NULL;
		}
		memcpy(llmt_model_master(g->full), g->flat,
		       (g->tab[g->ntab - 1].offset + g->tab[g->ntab - 1].numel) * sizeof(float));
		llmt_model_sync_compute(g->full);
	}
	tok = calloc((size_t)g->full_t, sizeof *tok);
	tgt = calloc((size_t)g->full_t, sizeof *tgt);
	if (!tok || !tgt || n > g->full_t) {
		free(tok);
		free(tgt);
		return NULL;
	}
	memcpy(tok, tokens, (size_t)n * sizeof *tok);   /* causal: the padding after n is never seen */
	lg = llmt_model_forward(g->full, 0, tok, NULL, tgt, NULL, &loss) ? NULL : llmt_model_logits(g->full, 0);
	free(tok);
	free(tgt);
	return lg ? lg + (size_t)(n - 1) * (size_t)g->c.vocab_size : NULL;
}

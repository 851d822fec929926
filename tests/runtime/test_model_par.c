/* test_model_par.c: layout checks of the model. "pp": two pipeline stages
 * chained by hand in one process give the loss and gradients of the one
 * stage model. "tp" (under mpirun -np 2): each rank's tensor-parallel
 * shard gives the loss of the tp=1 model and gradients equal to its slice
 * of the tp=1 gradients. "grad": the first backward after zero_grad
 * writes the product gradients, later ones add: a second backward gives
 * 2x, zero_grad then backward gives the first gradients bit for bit,
 * zero_grad then a read gives zeros. fp32; metric max|a-b| / max|ref|
 * per tensor.
 * usage: test_model_par pp|tp|grad CONFIG TEXTFILE */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/model.h"

#define B 2
#define T 16
static int fails;

static void expect(int cond, const char *what, double v, double lim)
{
	if (!cond) {
		fprintf(stderr, "FAIL: %s: %.3g > %.3g\n", what, v, lim);
		fails++;
	}
}

static const llmt_param_info *find(const llmt_model *m, const char *name, int copy)
{
	int n;
	const llmt_param_info *p = llmt_model_params(m, &n);
	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].name, name) && p[i].tied_copy == copy)
			return &p[i];
	return NULL;
}

/* relative max-norm difference between local shard g (of p) and the
 * matching slice of the full tensor G (of P, unsplit) */
static double shard_rel(const llmt_param_info *p, const float *g, const llmt_param_info *P,
						const float *G)
{
	int64_t lr = p->split_dim == 0 ? p->split_len : p->shape[0];
	int64_t lc = p->split_dim == 1 ? p->split_len : p->shape[1];
	int64_t ro = p->split_dim == 0 ? p->split_off : 0, co = p->split_dim == 1 ? p->split_off : 0;
	double md = 0, mx = 1e-30;
	for (int64_t i = 0; i < lr; i++)
		for (int64_t j = 0; j < lc; j++) {
			double ref = G[P->offset + (i + ro) * P->shape[1] + j + co];
			double d = fabs(g[p->offset + i * lc + j] - ref);
			md = d > md ? d : md;
			mx = fabs(ref) > mx ? fabs(ref) : mx;
		}
	return md / mx;
}

static int text_tokens(const char *path, int32_t *tok, int32_t *tgt)
{
	FILE *f = fopen(path, "rb");
	unsigned char buf[B * T + 1];
	if (!f || fread(buf, 1, sizeof buf, f) != sizeof buf) {
		fprintf(stderr, "cannot read %s\n", path);
		return -1;
	}
	fclose(f);
	for (int i = 0; i < B * T; i++) {
		tok[i] = buf[i];
		tgt[i] = buf[i + 1];
	}
	return 0;
}

static llmt_model *full_model(const llmt_config *c, const int32_t *tok, const int32_t *tgt,
							  float *loss)
{
	llmt_par par = { 1, 0, 1, 0, NULL };
	llmt_model *m = llmt_model_create(c, &par, LLMT_FP32, B, T, 1);
	if (!m || llmt_model_forward(m, 0, tok, NULL, tgt, NULL, loss) ||
		llmt_model_backward(m, 0, NULL, NULL, 0.5f))
		exit(1);
	return m;
}

static void compare(const llmt_model *part, const llmt_model *full, const char *tag,
					double lim)
{
	int n;
	const llmt_param_info *p = llmt_model_params(part, &n);
	for (int i = 0; i < n; i++) {
		if (p[i].tied_copy)
			continue;
		const llmt_param_info *P = find(full, p[i].name, 0);
		if (!P) {
			fprintf(stderr, "FAIL: %s: %s missing in the full model\n", tag, p[i].name);
			fails++;
			continue;
		}
		double r = shard_rel(&p[i], llmt_model_grads((llmt_model *)part), P,
							 llmt_model_grads((llmt_model *)full));
		char what[160];
		snprintf(what, sizeof what, "%s grad %s", tag, p[i].name);
		expect(r <= lim, what, r, lim);
		/* weights must be the same slice too (layout-independent init) */
		r = shard_rel(&p[i], llmt_model_master((llmt_model *)part), P,
					  llmt_model_master((llmt_model *)full));
		snprintf(what, sizeof what, "%s init %s", tag, p[i].name);
		expect(r == 0, what, r, 0);
	}
}

static int test_pp(const llmt_config *c, const int32_t *tok, const int32_t *tgt)
{
	float lf, l2;
	llmt_model *full = full_model(c, tok, tgt, &lf);
	llmt_par p0 = { 1, 0, 2, 0, NULL }, p1 = { 1, 0, 2, 1, NULL };
	llmt_model *s0 = llmt_model_create(c, &p0, LLMT_FP32, B, T, 2);
	llmt_model *s1 = llmt_model_create(c, &p1, LLMT_FP32, B, T, 2);
	size_t na = (size_t)B * T * c->d_model;
	float *act = malloc(na * 4), *gin = malloc(na * 4);
	if (!s0 || !s1 || !act || !gin)
		return 1;
	/* two micro-batches in flight through slots 0 and 1, the same data:
	 * gradients are then 2 x 0.25 = the full model's 0.5 */
	for (int s = 0; s < 2; s++)
		if (llmt_model_forward(s0, s, tok, NULL, NULL, act, NULL) ||
			llmt_model_forward(s1, s, NULL, act, tgt, NULL, &l2))
			return 1;
	for (int s = 1; s >= 0; s--)
		if (llmt_model_backward(s1, s, NULL, gin, 0.25f) ||
			llmt_model_backward(s0, s, gin, NULL, 0.0f))
			return 1;
	expect(fabsf(l2 - lf) <= 1e-6f * lf, "pp loss", fabsf(l2 - lf), 1e-6 * lf);
	{ /* determinism: a second identical run gives the same bits */
		float lf2;
		llmt_model *again = full_model(c, tok, tgt, &lf2);
		int same = lf2 == lf && !memcmp(llmt_model_grads(again), llmt_model_grads(full),
										llmt_model_nparams(full) * sizeof(float));
		expect(same, "same bits on a second run", 1, 0);
		llmt_model_free(again);
	}
	if (c->tie_embeddings) { /* what the loop does: sum the two copies' grads */
		const llmt_param_info *a = find(s0, "model.embed_tokens.weight", 0);
		const llmt_param_info *b = find(s1, "model.embed_tokens.weight", 1);
		expect(a && b, "tied copy present", 0, 0);
		for (size_t i = 0; a && b && i < a->numel; i++)
			llmt_model_grads(s0)[a->offset + i] += llmt_model_grads(s1)[b->offset + i];
	}
	compare(s0, full, "pp stage 0", 1e-6);
	compare(s1, full, "pp stage 1", 1e-6);
	printf("pp=2 vs pp=1: loss %.7f vs %.7f\n", l2, lf);
	llmt_model_free(s0);
	llmt_model_free(s1);
	llmt_model_free(full);
	free(act);
	free(gin);
	return 0;
}

static int test_tp(const llmt_config *c, const int32_t *tok, const int32_t *tgt, int *argc,
				   char ***argv)
{
	llmt_comm *w = llmt_comm_world(argc, argv);
	if (!w)
		return 1;
	int r = llmt_comm_rank(w), n = llmt_comm_size(w);
	float lf, lt;
	llmt_model *full = full_model(c, tok, tgt, &lf);
	llmt_par par = { n, r, 1, 0, n > 1 ? w : NULL };
	llmt_model *sh = llmt_model_create(c, &par, LLMT_FP32, B, T, 1);
	if (!sh || llmt_model_forward(sh, 0, tok, NULL, tgt, NULL, &lt) ||
		llmt_model_backward(sh, 0, NULL, NULL, 0.5f))
		return 1;
	expect(fabsf(lt - lf) <= 1e-6f * lf, "tp loss", fabsf(lt - lf), 1e-6 * lf);
	char tag[32];
	snprintf(tag, sizeof tag, "tp rank %d/%d", r, n);
	compare(sh, full, tag, 1e-5);
	printf("tp=%d rank %d: loss %.7f vs tp=1 %.7f\n", n, r, lt, lf);
	llmt_model_free(sh);
	llmt_model_free(full);
	int bad = fails;
	double f = bad;
	llmt_comm_allreduce_sum_f64(w, &f, 1);
	llmt_comm_finalize(w);
	return f > 0;
}

static int test_grad(const llmt_config *c, const int32_t *tok, const int32_t *tgt)
{
	float loss;
	llmt_model *m = full_model(c, tok, tgt, &loss);
	size_t n = llmt_model_nparams(m);
	float *g1 = malloc(n * 4);
	if (!g1)
		return 1;
	memcpy(g1, llmt_model_grads(m), n * 4);
	/* a second backward of the same batch adds the same gradients */
	if (llmt_model_backward(m, 0, NULL, NULL, 0.5f))
		return 1;
	const float *g = llmt_model_grads(m);
	double md = 0, mx = 1e-30, nz = 0;
	for (size_t i = 0; i < n; i++) {
		md = fmax(md, fabs(g[i] - 2.0 * g1[i]));
		mx = fmax(mx, fabs(2.0 * g1[i]));
		nz += g1[i] != 0;
	}
	expect(nz > n / 2, "grad: first gradients mostly zero", nz, n / 2.0);
	double acc = md / mx;
	expect(acc <= 1e-6, "grad: second backward does not add", acc, 1e-6);
	/* zero_grad, then forward + backward reproduce the first result */
	llmt_model_zero_grad(m);
	if (llmt_model_forward(m, 0, tok, NULL, tgt, NULL, &loss) ||
		llmt_model_backward(m, 0, NULL, NULL, 0.5f))
		return 1;
	expect(!memcmp(g1, llmt_model_grads(m), n * 4), "grad: zero_grad + backward differs", 1, 0);
	llmt_model_zero_grad(m);
	g = llmt_model_grads(m);
	md = 0;
	for (size_t i = 0; i < n; i++)
		md = fmax(md, fabs(g[i]));
	expect(md == 0, "grad: zero_grad then read not zero", md, 0);
	printf("grad: accumulate rel %.2e, %.0f of %zu gradients nonzero\n", acc, nz, n);
	free(g1);
	llmt_model_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: test_model_par pp|tp|grad CONFIG TEXTFILE\n");
		return 2;
	}
	llmt_config c;
	char err[512];
	int32_t tok[B * T], tgt[B * T];
	if (llmt_config_load(argv[2], &c, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (text_tokens(argv[3], tok, tgt))
		return 1;
	int rc = !strcmp(argv[1], "pp")     ? test_pp(&c, tok, tgt)
			 : !strcmp(argv[1], "grad") ? test_grad(&c, tok, tgt)
										: test_tp(&c, tok, tgt, &argc, &argv);
	return rc || fails ? 1 : 0;
}

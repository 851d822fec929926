/* train.c: the training loop of one rank (see train.h). Every decision
 * that must be the same on all ranks (skip, stop, checkpoint, SDC) is made
 * from values all ranks share through one collective, so ranks never
 * disagree and no rank waits in a collective the others left. */
#include "train.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "ckpt.h"
#include "faults.h"
#include "heartbeat.h"
#include "loader.h"
#include "memest.h"
#include "metrics.h"
#include "pipeline.h"
#include "schedule.h"

#define HOSTLEN 64
#define STATE_MAGIC 0x4c4d5453u /* "LMTS" */

static volatile sig_atomic_t g_signal;

static void on_signal(int sig)
{
	g_signal = sig;
}

/* Training state saved as the blob "train" (same on every rank). */
typedef struct {
	uint32_t magic, version;
	int64_t step;          /* optimizer steps completed */
	int64_t pos;           /* global samples consumed */
	int64_t opt_t;         /* AdamW updates applied */
	int64_t bad_run;       /* bad steps in a row */
	int64_t good_steps;
	double loss_ema;
	uint64_t seed;
	int64_t global_batch;
} train_state;

typedef struct {
	const llmt_train_opts *o;
	llmt_parallel *p;
	llmt_config cfg;
	llmt_model *m;
	llmt_optim opt;
	llmt_pipeline pl;
	llmt_loader ld;
	llmt_faults faults;
	llmt_ckpt_writer *w;
	train_state st;
	FILE *metrics;
	char (*hosts)[HOSTLEN];
	uint64_t base;        /* first position of the global batch in progress */
	int G;
	char err[1024];
	char ckpt_dir[4096];
	double last_save_time, save_cost;
	const char *resume_from;
} trainer;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void llmt_train_defaults(llmt_train_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->steps = 100;
	o->B = 4;
	o->T = 64;
	o->A = 1;
	o->lr = 3e-4;
	o->min_lr = -1; /* set to lr/10 by the caller when negative */
	o->warmup = 0;
	o->adamw.beta1 = 0.9;
	o->adamw.beta2 = 0.95;
	o->adamw.eps = 1e-8;
	o->adamw.weight_decay = 0.1;
	o->adamw.grad_clip = 1.0;
	o->seed = 1337;
	o->mtbf_s = 4 * 3600;
	o->ckpt_keep = 3;
	o->prec = LLMT_BF16;
	o->sdc_interval = 100;
	o->max_bad_steps = 3;
	o->spike_factor = 3.0;
}

int llmt_parse_interval(const char *s, llmt_train_opts *o)
{
	char *end;
	double v;

	o->ckpt_steps = 0;
	o->ckpt_seconds = 0;
	o->ckpt_auto = 0;
	if (!strcmp(s, "auto")) {
		o->ckpt_auto = 1;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v >= 0) || v > 1e9)
		return -1;
	if (!*end) {
		if (v != floor(v))
			return -1;
		o->ckpt_steps = (long)v;
		return 0;
	}
	if (end[1])
		return -1;
	switch (*end) {
	case 's': o->ckpt_seconds = v; break;
	case 'm': o->ckpt_seconds = v * 60; break;
	case 'h': o->ckpt_seconds = v * 3600; break;
	default: return -1;
	}
	return o->ckpt_seconds > 0 ? 0 : -1;
}

int llmt_guard_bad(double loss, double norm, double loss_ema, long good_steps, double factor)
{
	if (!isfinite(loss) || !isfinite(norm))
		return 1;
	return good_steps > 0 && factor > 0 && loss > factor * loss_ema;
}

uint64_t llmt_checksum_f32(const float *x, size_t n)
{
	uint64_t h = 0x243f6a8885a308d3ULL ^ (uint64_t)n;
	uint32_t w;

	/* each round is a bijection of h for a fixed word and of the word for
	 * a fixed h, so any single changed word changes the result */
	for (size_t i = 0; i < n; i++) {
		memcpy(&w, &x[i], 4);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h = (h << 29) | (h >> 35);
	}
	return h ^ (h >> 31);
}

int llmt_sdc_suspects(const uint64_t *sums, int dp, int *suspects)
{
	int agree = 1, best = -1, bestn = 0, ns = 0;

	for (int r = 1; r < dp; r++)
		if (sums[r] != sums[0])
			agree = 0;
	if (agree)
		return 0;
	for (int r = 0; r < dp; r++) {
		int c = 0;
		for (int q = 0; q < dp; q++)
			c += sums[q] == sums[r];
		if (c > bestn) {
			bestn = c;
			best = r;
		}
	}
	for (int r = 0; r < dp; r++)
		if (dp == 2 || 2 * bestn <= dp || sums[r] != sums[best])
			suspects[ns++] = r;
	return ns;
}

/* The largest code over all ranks: every rank leaves on the same code. */
static int agree(llmt_parallel *p, int rc)
{
	double v = rc;

	if (llmt_comm_allreduce_max_f64(p->all, &v, 1))
		return LLMT_EXIT_TRANSIENT;
	return (int)v;
}

static int mkdir_p(const char *path, char *err, size_t errlen)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			goto bad;
		*s = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "%.900s: %s", buf, strerror(errno));
	return LLMT_EXIT_IO;
}

static int fetch(void *vt, int micro, int32_t *in, int32_t *tg)
{
	trainer *t = vt;
	llmt_layout *l = &t->p->l;
	int rc = llmt_loader_micro(&t->ld, t->base, t->G, l->dp, l->dp_rank, micro, t->o->B,
		in, tg, t->err, sizeof(t->err));

	if (rc)
		fprintf(stderr, "llm-train: rank %d: %s\n", l->rank, t->err);
	return rc;
}

/* ---- checkpoint state ---------------------------------------------------- */
static void ckpt_state(trainer *t, llmt_ckpt_state *cs, char *json, size_t jlen)
{
	llmt_layout *l = &t->p->l;
	int np;

	memset(cs, 0, sizeof(*cs));
	cs->rank = l->rank;
	cs->world = l->world;
	cs->tp = l->tp;
	cs->pp = l->pp;
	cs->dp = l->dp;
	cs->tp_rank = l->tp_rank;
	cs->pp_rank = l->pp_rank;
	cs->dp_rank = l->dp_rank;
	cs->config = &t->cfg;
	cs->params = llmt_model_params(t->m, &np);
	cs->nparams = np;
	cs->nflat = llmt_model_nparams(t->m);
	cs->bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, llmt_model_master(t->m), 0, cs->nflat, 1, 0 };
	cs->bufs[1] = (llmt_ckpt_buf){ "adam_m", LLMT_CKPT_F32, t->opt.m, t->opt.lo, t->opt.hi, 0, 0 };
	cs->bufs[2] = (llmt_ckpt_buf){ "adam_v", LLMT_CKPT_F32, t->opt.v, t->opt.lo, t->opt.hi, 0, 0 };
	cs->nbufs = 3;
	cs->blobs[0] = (llmt_ckpt_blob){ "train", &t->st, sizeof(t->st) };
	cs->nblobs = 1;
	if (json) {
		snprintf(json, jlen,
			"{\"step\":%lld,\"data_position\":%lld,\"global_batch\":%d,\"seq\":%d,"
			"\"adam_steps\":%lld,\"bad_steps_in_a_row\":%lld,\"loss_ema\":%.17g,\"data_seed\":%llu,"
			"\"lr\":%.17g,\"total_steps\":%ld}",
			(long long)t->st.step, (long long)t->st.pos, t->G, t->o->T, (long long)t->st.opt_t,
			(long long)t->st.bad_run, t->st.loss_ema, (unsigned long long)t->st.seed,
			t->o->lr, t->o->steps);
		cs->train_json = json;
	}
	cs->world_comm = t->p->all;
	cs->dp_comm = l->dp > 1 ? t->p->dp_comm : NULL;
}

static int save(trainer *t, int sync, double *stall)
{
	llmt_ckpt_state cs;
	char json[1024];
	double t0 = now_s();
	int rc;

	llmt_hb_set(t->st.step, LLMT_HB_SAVE, 0);
	ckpt_state(t, &cs, json, sizeof(json));
	rc = llmt_ckpt_save(t->w, t->st.step, &cs, t->err, sizeof(t->err));
	*stall = now_s() - t0;
	if (!rc && sync)
		rc = llmt_ckpt_wait(t->w, t->err, sizeof(t->err));
	if (rc)
		fprintf(stderr, "llm-train: rank %d: checkpoint of step %lld: %s\n", t->p->l.rank,
			(long long)t->st.step, t->err);
	if (sync && !rc)
		t->save_cost = now_s() - t0;
	t->last_save_time = now_s();
	llmt_hb_set(t->st.step, LLMT_HB_TRAIN, 0);
	return agree(t->p, rc);
}

static int resume(trainer *t, const char *from)
{
	char path[4096];
	llmt_ckpt *c;
	llmt_ckpt_state cs;
	void *blob = NULL;
	size_t len = 0;
	int rc, code = 0;

	rc = llmt_ckpt_resolve(from, path, sizeof(path), t->err, sizeof(t->err));
	if (rc) {
		fprintf(stderr, "llm-train: resume from %s: %s\n", from, t->err);
		return rc;
	}
	c = llmt_ckpt_open(path, &code, t->err, sizeof(t->err));
	if (!c) {
		fprintf(stderr, "llm-train: resume from %s: %s\n", path, t->err);
		return code ? code : LLMT_EXIT_DATA;
	}
	rc = llmt_ckpt_check_config(c, &t->cfg, t->err, sizeof(t->err));
	if (!rc)
		rc = llmt_ckpt_blob_get(c, "train", 0, &blob, &len, t->err, sizeof(t->err));
	if (!rc) {
		train_state s;
		if (len != sizeof(s) || (memcpy(&s, blob, sizeof(s)), s.magic != STATE_MAGIC) || s.version != 1) {
			snprintf(t->err, sizeof(t->err), "training state blob has the wrong size or version");
			rc = LLMT_EXIT_DATA;
		} else {
			t->st = s;
		}
	}
	free(blob);
	rc = agree(t->p, rc);
	if (!rc) {
		ckpt_state(t, &cs, NULL, 0);
		llmt_hb_set(0, LLMT_HB_LOAD, 0);
		rc = llmt_ckpt_load(c, &cs, t->err, sizeof(t->err));
		rc = agree(t->p, rc);
	}
	if (rc) {
		if (t->err[0])
			fprintf(stderr, "llm-train: rank %d: resume from %s: %s\n", t->p->l.rank, path, t->err);
	} else {
		t->opt.t = (long)t->st.opt_t;
		llmt_model_sync_compute(t->m);
		if (t->p->l.rank == 0)
			printf("llm-train: resumed from %s at step %lld (data position %lld)\n", path,
				(long long)t->st.step, (long long)t->st.pos);
	}
	llmt_ckpt_close(c);
	return rc;
}

/* ---- silent data corruption ----------------------------------------------- */
static int write_sdc(trainer *t, const uint64_t *sums, const int *sus, int ns)
{
	llmt_layout *l = &t->p->l;
	const char *dir = t->o->ckpt_dir ? t->o->ckpt_dir : t->o->run_dir;
	char path[4096], tmp[4200];
	json_t *o = json_object(), *cs = json_array(), *sa = json_array();
	int rc = 0;

	for (int r = 0; r < l->dp; r++) {
		char hex[24];
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)sums[r]);
		json_array_append_new(cs, json_string(hex));
	}
	for (int i = 0; i < ns; i++) {
		json_t *s = json_object(), *hosts = json_array();
		for (int pr = 0; pr < l->pp; pr++)
			for (int tr = 0; tr < l->tp; tr++) {
				const char *h = t->hosts[llmt_layout_rank(l, tr, pr, sus[i])];
				int dup = 0;
				for (size_t k = 0; k < json_array_size(hosts); k++)
					dup |= !strcmp(json_string_value(json_array_get(hosts, k)), h);
				if (!dup)
					json_array_append_new(hosts, json_string(h));
			}
		json_object_set_new(s, "dp_rank", json_integer(sus[i]));
		json_object_set_new(s, "hosts", hosts);
		json_array_append_new(sa, s);
	}
	json_object_set_new(o, "step", json_integer(t->st.step));
	json_object_set_new(o, "dp", json_integer(l->dp));
	json_object_set_new(o, "checksums", cs);
	json_object_set_new(o, "suspects", sa);
	if (!dir) {
		char *s = json_dumps(o, JSON_COMPACT);
		fprintf(stderr, "llm-train: SDC report (no checkpoint dir): %s\n", s ? s : "");
		free(s);
	} else {
		snprintf(path, sizeof(path), "%s/sdc.json", dir);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		if (json_dump_file(o, tmp, JSON_COMPACT) || rename(tmp, path)) {
			fprintf(stderr, "llm-train: cannot write %s: %s\n", path, strerror(errno));
			rc = LLMT_EXIT_IO;
		}
	}
	json_decref(o);
	return rc;
}

static int sdc_check(trainer *t)
{
	llmt_layout *l = &t->p->l;
	uint64_t mine = llmt_checksum_f32(llmt_model_master(t->m), llmt_model_nparams(t->m));
	uint64_t *all = malloc(sizeof(uint64_t) * (size_t)l->world);
	uint64_t *rep = malloc(sizeof(uint64_t) * (size_t)l->dp);
	int *sus = malloc(sizeof(int) * (size_t)l->dp), ns, rc = 0;

	if (!all || !rep || !sus) {
		free(all);
		free(rep);
		free(sus);
		return LLMT_EXIT_SOFTWARE;
	}
	if (llmt_comm_allgather_bytes(t->p->all, &mine, all, sizeof(mine))) {
		rc = LLMT_EXIT_TRANSIENT;
		goto out;
	}
	for (int r = 0; r < l->dp; r++) {
		uint64_t h = 0;
		for (int pr = 0; pr < l->pp; pr++)
			for (int tr = 0; tr < l->tp; tr++)
				h = (h ^ all[llmt_layout_rank(l, tr, pr, r)]) * 0x100000001b3ULL + 0x9e37;
		rep[r] = h;
	}
	ns = llmt_sdc_suspects(rep, l->dp, sus);
	if (ns) {
		if (l->rank == 0) {
			fprintf(stderr, "llm-train: step %lld: DP replicas disagree (%d suspect replica(s)): silent data corruption suspected\n",
				(long long)t->st.step, ns);
			write_sdc(t, rep, sus, ns);
		}
		rc = LLMT_EXIT_SDC;
	}
out:
	free(all);
	free(rep);
	free(sus);
	return rc;
}

/* ---- setup ----------------------------------------------------------------- */
static int tied_exchange(trainer *t)
{
	llmt_layout *l = &t->p->l;
	const llmt_param_info *pi;
	int np, last = l->pp_rank == l->pp - 1, first = l->pp_rank == 0;
	float *g = llmt_model_grads(t->m), *tmp;

	if (l->pp == 1 || !t->cfg.tie_embeddings || !(first || last))
		return 0;
	pi = llmt_model_params(t->m, &np);
	for (int i = 0; i < np; i++) {
		int rc;
		if (strcmp(pi[i].name, "model.embed_tokens.weight") || pi[i].tied_copy != last)
			continue;
		tmp = malloc(sizeof(float) * pi[i].numel);
		if (!tmp)
			return LLMT_EXIT_SOFTWARE;
		if (first)
			rc = llmt_comm_send_bytes(t->p->pp_comm, g + pi[i].offset, sizeof(float) * pi[i].numel, l->pp - 1, 201) ||
			     llmt_comm_recv_bytes(t->p->pp_comm, tmp, sizeof(float) * pi[i].numel, l->pp - 1, 202);
		else
			rc = llmt_comm_recv_bytes(t->p->pp_comm, tmp, sizeof(float) * pi[i].numel, 0, 201) ||
			     llmt_comm_send_bytes(t->p->pp_comm, g + pi[i].offset, sizeof(float) * pi[i].numel, 0, 202);
		if (!rc)
			for (size_t k = 0; k < pi[i].numel; k++)
				g[pi[i].offset + k] += tmp[k];
		free(tmp);
		return rc ? LLMT_EXIT_TRANSIENT : 0;
	}
	fprintf(stderr, "llm-train: tied embedding not found in the parameter table\n");
	return LLMT_EXIT_SOFTWARE;
}

static int setup_optim(trainer *t)
{
	int np;
	const llmt_param_info *pi = llmt_model_params(t->m, &np);
	llmt_optim_seg *segs = calloc((size_t)np + 1, sizeof(*segs));
	int rc;

	if (!segs)
		return LLMT_EXIT_SOFTWARE;
	for (int i = 0; i < np; i++) {
		segs[i].offset = pi[i].offset;
		segs[i].numel = pi[i].numel;
		segs[i].decay = !pi[i].no_decay;
		segs[i].in_norm = !pi[i].tied_copy && (pi[i].split_dim >= 0 || t->p->l.tp_rank == 0);
	}
	rc = llmt_optim_init(&t->opt, &t->o->adamw, llmt_model_nparams(t->m), segs, np,
		t->p->l.dp > 1 ? t->p->dp_comm : NULL, t->p->l.world > 1 ? t->p->all : NULL);
	free(segs);
	return rc ? LLMT_EXIT_SOFTWARE : 0;
}

static int gather_hosts(trainer *t)
{
	char me[HOSTLEN] = { 0 };
	const char *n = getenv("SLURMD_NODENAME");

	if (n && *n)
		snprintf(me, sizeof(me), "%s", n);
	else if (gethostname(me, sizeof(me) - 1))
		snprintf(me, sizeof(me), "unknown");
	t->hosts = calloc((size_t)t->p->l.world, HOSTLEN);
	if (!t->hosts)
		return LLMT_EXIT_SOFTWARE;
	return llmt_comm_allgather_bytes(t->p->all, me, t->hosts, HOSTLEN) ? LLMT_EXIT_TRANSIENT : 0;
}

/* Checks, data, checkpoint dir, model, optimizer, starting state. */
static int setup(trainer *t)
{
	const llmt_train_opts *o = t->o;
	llmt_layout *l = &t->p->l;
	llmt_par mp = { l->tp, l->tp_rank, l->pp, l->pp_rank, l->tp > 1 ? t->p->tp_comm : NULL };
	int rc = 0, rank = l->rank;
	char *err = t->err;
	size_t el = sizeof(t->err);

	if (llmt_config_load(o->model_path, &t->cfg, err, el) || llmt_config_validate(&t->cfg, err, el))
		rc = LLMT_EXIT_USAGE;
	else if (llmt_model_check_layout(&t->cfg, &mp, err, el))
		rc = LLMT_EXIT_USAGE;
	else if (o->T > t->cfg.max_seq) {
		snprintf(err, el, "--seq %d exceeds max_seq %d of %s", o->T, t->cfg.max_seq, o->model_path);
		rc = LLMT_EXIT_USAGE;
	}
	if (rc && rank == 0)
		fprintf(stderr, "llm-train: %s\n", err);
	if ((rc = agree(t->p, rc)))
		return rc;
	t->G = o->B * o->A * l->dp;
	rc = llmt_loader_open(&t->ld, o->data_dir, o->T, t->cfg.vocab_size, o->seed, err, el);
	if (rc)
		fprintf(stderr, "llm-train: rank %d: %s\n", rank, err);
	if ((rc = agree(t->p, rc)))
		return rc;
	/* LLM_TRAIN_RESUME unset: continue from CKPT_DIR when it holds a valid
	 * checkpoint; set but empty (a fresh start): never write over one */
	if (o->ckpt_dir && !o->resume) {
		char path[4096], e2[256];
		if (!llmt_ckpt_resolve(o->ckpt_dir, path, sizeof(path), e2, sizeof(e2)))
			t->resume_from = o->ckpt_dir;
	} else if (o->ckpt_dir && !*o->resume && !o->init_from) {
		char path[4096], e2[256];
		if (!llmt_ckpt_resolve(o->ckpt_dir, path, sizeof(path), e2, sizeof(e2))) {
			if (rank == 0)
				fprintf(stderr, "llm-train: %s already holds checkpoint %s; resume from it (LLM_TRAIN_RESUME) or choose another --ckpt-dir\n",
					o->ckpt_dir, path);
			rc = LLMT_EXIT_USAGE;
		}
	}
	if ((rc = agree(t->p, rc)))
		return rc;
	if (o->ckpt_dir) {
		rc = mkdir_p(o->ckpt_dir, err, el);
		if (!rc && !(t->w = llmt_ckpt_writer_new(o->ckpt_dir, o->ckpt_keep, err, el)))
			rc = LLMT_EXIT_IO;
		if (rc)
			fprintf(stderr, "llm-train: rank %d: %s\n", rank, err);
	}
	if (!rc && (o->hb_dir || o->ckpt_dir)) {
		char hb[4096];
		snprintf(hb, sizeof(hb), "%s", o->hb_dir ? o->hb_dir : o->ckpt_dir);
		if (!o->hb_dir)
			strncat(hb, "/heartbeat", sizeof(hb) - strlen(hb) - 1);
		rc = mkdir_p(hb, err, el);
		if (!rc && llmt_hb_start(hb, rank, 2.0))
			rc = LLMT_EXIT_IO;
		else if (rc)
			fprintf(stderr, "llm-train: %s\n", err);
	}
	if ((rc = agree(t->p, rc)))
		return rc;
	t->m = llmt_model_create(&t->cfg, &mp, o->prec, o->B, o->T, llmt_pipeline_slots(l->pp, o->A));
	rc = t->m ? 0 : LLMT_EXIT_SOFTWARE;
	if (!rc)
		rc = setup_optim(t);
	if (!rc && llmt_pipeline_init(&t->pl, t->m, l->pp > 1 ? t->p->pp_comm : NULL, o->A, o->B, o->T))
		rc = LLMT_EXIT_SOFTWARE;
	if (!rc)
		rc = gather_hosts(t);
	if ((rc = agree(t->p, rc)))
		return rc;
	t->st.magic = STATE_MAGIC;
	t->st.version = 1;
	t->st.seed = o->seed;
	t->st.global_batch = t->G;
	if (o->resume && *o->resume)
		t->resume_from = o->resume;
	if (t->resume_from) {
		rc = resume(t, t->resume_from);
	} else if (o->init_from) {
		llmt_ckpt_state cs;
		ckpt_state(t, &cs, NULL, 0);
		cs.nbufs = 1;
		llmt_hb_set(0, LLMT_HB_LOAD, 0);
		rc = llmt_ckpt_init_from(o->init_from, &cs, err, el);
		if (rc)
			fprintf(stderr, "llm-train: rank %d: --init-from %s: %s\n", rank, o->init_from, err);
		llmt_model_sync_compute(t->m);
		rc = agree(t->p, rc);
	}
	if (rc)
		return rc;
	if (o->skip_batches > 0) {
		t->st.pos += (int64_t)o->skip_batches * t->G;
		if (rank == 0)
			printf("llm-train: skipping %ld global batches of data (position %lld)\n",
				o->skip_batches, (long long)t->st.pos);
	}
	if (rank == 0 && (o->run_dir || o->ckpt_dir)) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/metrics.jsonl", o->run_dir ? o->run_dir : o->ckpt_dir);
		if (o->run_dir && mkdir_p(o->run_dir, err, el))
			fprintf(stderr, "llm-train: %s\n", err);
		if (!(t->metrics = llmt_metrics_open(path)))
			rc = LLMT_EXIT_IO;
	}
	return agree(t->p, rc);
}

/* ---- the loop -------------------------------------------------------------- */
static int inject_grad_faults(trainer *t, long stepno, double *my_loss)
{
	llmt_layout *l = &t->p->l;
	float *g = llmt_model_grads(t->m);
	size_t n = llmt_model_nparams(t->m);

	if (llmt_fault_at(&t->faults, LLMT_FAULT_NAN, stepno, l->rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault nan@%ld\n", l->rank, stepno);
		*my_loss = NAN;
		g[0] = NAN;
	}
	if (llmt_fault_at(&t->faults, LLMT_FAULT_SPIKE, stepno, l->rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault spike@%ld\n", l->rank, stepno);
		*my_loss *= 1000;
		for (size_t i = 0; i < n; i++)
			g[i] *= 1000;
	}
	return 0;
}

static void inject_bitflip(trainer *t, long stepno)
{
	llmt_layout *l = &t->p->l;
	int np;
	const llmt_param_info *pi = llmt_model_params(t->m, &np);
	float *w = llmt_model_master(t->m);
	uint32_t bits;
	size_t at = np ? pi[0].offset : 0;

	if (!llmt_fault_at(&t->faults, LLMT_FAULT_BITFLIP, stepno, l->rank))
		return;
	memcpy(&bits, &w[at], 4);
	bits ^= 1u << 22;
	memcpy(&w[at], &bits, 4);
	llmt_model_sync_compute(t->m);
	fprintf(stderr, "llm-train: rank %d: injected fault bitflip@%ld (element %zu)\n", l->rank, stepno, at);
}

static int ckpt_due_time(trainer *t, double now)
{
	const llmt_train_opts *o = t->o;
	double iv;

	if (!t->w)
		return 0;
	if (o->ckpt_seconds > 0)
		iv = o->ckpt_seconds;
	else if (o->ckpt_auto)
		/* Young/Daly: sqrt(2 x cost x MTBF); 10 min until a cost is measured */
		iv = t->save_cost > 0 ? sqrt(2 * t->save_cost * o->mtbf_s) : 600;
	else
		return 0;
	return now - t->last_save_time >= iv;
}

static int loop(trainer *t)
{
	const llmt_train_opts *o = t->o;
	llmt_layout *l = &t->p->l;
	llmt_schedule sch = { o->lr, o->min_lr, o->warmup, o->steps };
	int first_stage_loss = l->pp_rank == l->pp - 1 && l->tp_rank == 0;
	double fpt = llmt_config_flops_per_token(&t->cfg, o->T), last_step_s = 0, stall;
	int rc = 0;

	t->last_save_time = now_s();
	while (t->st.step < o->steps) {
		long stepno = (long)t->st.step + 1;
		double t0 = now_s(), loss_sum = 0, norm = 0, my_loss, v[3], lr, comm_s, ckpt_s = 0;
		int bad, sync_ckpt, due;

		llmt_hb_set(t->st.step, LLMT_HB_TRAIN, last_step_s);
		llmt_faults_fire_process(&t->faults, stepno, l->rank);
		llmt_model_zero_grad(t->m);
		t->base = (uint64_t)t->st.pos;
		rc = llmt_pipeline_run(&t->pl, fetch, t, 1.0f / (float)(o->A * l->dp), &loss_sum);
		if (rc) {
			fprintf(stderr, "llm-train: rank %d: step %ld failed (%s)\n", l->rank, stepno,
				rc < 0 ? "communication" : "data");
			llmt_comm_abort(t->p->world, rc < 0 ? LLMT_EXIT_TRANSIENT : rc);
			return rc < 0 ? LLMT_EXIT_TRANSIENT : rc;
		}
		my_loss = first_stage_loss ? loss_sum / o->A / l->dp : 0;
		inject_grad_faults(t, stepno, &my_loss);
		if ((rc = tied_exchange(t)) || llmt_optim_reduce(&t->opt, llmt_model_grads(t->m), &norm)) {
			llmt_comm_abort(t->p->world, rc ? rc : LLMT_EXIT_TRANSIENT);
			return rc ? rc : LLMT_EXIT_TRANSIENT;
		}
		comm_s = t->pl.comm_s + t->opt.comm_s;
		v[0] = my_loss;
		v[1] = g_signal ? 1 : 0;
		v[2] = l->rank == 0 && ckpt_due_time(t, now_s());
		if (l->world > 1 && llmt_comm_allreduce_sum_f64(t->p->all, v, 3))
			return LLMT_EXIT_TRANSIENT;
		lr = llmt_schedule_lr(&sch, stepno - 1);
		bad = llmt_guard_bad(v[0], norm, t->st.loss_ema, (long)t->st.good_steps, o->spike_factor);
		if (!bad) {
			if (llmt_optim_step(&t->opt, llmt_model_master(t->m), lr, norm))
				return LLMT_EXIT_TRANSIENT;
			comm_s += t->opt.comm_s;
			llmt_model_sync_compute(t->m);
			t->st.opt_t = t->opt.t;
			t->st.bad_run = 0;
			t->st.loss_ema = t->st.good_steps ? 0.9 * t->st.loss_ema + 0.1 * v[0] : v[0];
			t->st.good_steps++;
		} else {
			t->st.bad_run++;
			if (l->rank == 0)
				fprintf(stderr, "llm-train: step %ld: %s (loss %g, grad norm %g): update skipped (%lld in a row, limit %d)\n",
					stepno, isfinite(v[0]) && isfinite(norm) ? "loss spike" : "non-finite loss or gradient",
					v[0], norm, (long long)t->st.bad_run, o->max_bad_steps);
		}
		inject_bitflip(t, stepno);
		t->st.step = stepno;
		t->st.pos += t->G;
		if (o->sdc_interval > 0 && l->dp > 1 && stepno % o->sdc_interval == 0 && (rc = sdc_check(t)))
			break;
		if (t->st.bad_run >= o->max_bad_steps) {
			if (l->rank == 0)
				fprintf(stderr, "llm-train: %lld bad steps in a row: numerical fault persists, roll back further\n",
					(long long)t->st.bad_run);
			rc = LLMT_EXIT_ROLLBACK;
		}
		sync_ckpt = v[1] > 0 || stepno == o->steps;
		due = !rc && t->w && (sync_ckpt || v[2] > 0 || (o->ckpt_steps > 0 && stepno % o->ckpt_steps == 0));
		if (due) {
			if (l->dp > 1 && (rc = sdc_check(t)))
				break; /* never save replicas that disagree */
			rc = save(t, sync_ckpt, &stall);
			ckpt_s = stall;
		}
		last_step_s = now_s() - t0;
		if (l->rank == 0) {
			double tps = (double)t->G * o->T / last_step_s;
			llmt_metrics mt = { stepno, v[0], norm, lr, tps,
				o->peak_gflops > 0 ? fpt * tps / (o->peak_gflops * 1e9 * l->world) : NAN,
				last_step_s, comm_s, ckpt_s, bad };
			if (t->metrics && llmt_metrics_write(t->metrics, &mt)) {
				fclose(t->metrics); /* reported once; training goes on */
				t->metrics = NULL;
			}
			if (!o->quiet)
				printf("step %ld/%ld loss %.6f norm %.4f lr %.3e %.0f tok/s%s%s\n", stepno, o->steps,
					v[0], norm, lr, tps, bad ? " SKIPPED" : "", due ? " ckpt" : "");
			fflush(stdout);
		}
		llmt_hb_set(t->st.step, LLMT_HB_TRAIN, last_step_s);
		if (rc)
			break;
		if (v[1] > 0 && stepno < o->steps) {
			if (l->rank == 0)
				printf("llm-train: preempted: checkpoint of step %ld written, exiting for requeue\n", stepno);
			return LLMT_EXIT_REQUEUE;
		}
	}
	return rc;
}

/* Peak resident memory of every rank against the analytic estimate, on
 * rank 0's stdout (collective). */
static void report_memory(trainer *t)
{
	llmt_layout *l = &t->p->l;
	llmt_memest e;
	double mine[2], *all = malloc(sizeof(double) * 2 * (size_t)l->world);

	if (!all)
		return;
	llmt_memory_estimate(&t->cfg, l, llmt_model_nparams(t->m), t->o->B, t->o->T, t->o->A,
		t->o->prec == LLMT_BF16, t->w != NULL, &e);
	mine[0] = llmt_memory_peak();
	mine[1] = e.total;
	if (!llmt_comm_allgather_bytes(t->p->all, mine, all, sizeof(mine)) && l->rank == 0) {
		int top = 0;
		for (int r = 1; r < l->world; r++)
			if (all[2 * r] > all[2 * top])
				top = r;
		for (int r = 0; r < l->world; r++)
			if (l->world <= 8 || r == top)
				printf("llm-train: memory rank %d: peak %.1f MiB (VmHWM), estimate %.1f MiB without runtime overhead\n",
					r, all[2 * r] / 1048576, all[2 * r + 1] / 1048576);
		printf("llm-train: memory estimate of rank 0: params %.1f, optimizer %.1f, activations %.1f, scratch %.1f, pipeline %.1f, comm %.1f, snapshot %.1f MiB\n",
			e.params / 1048576, e.optimizer / 1048576, e.activations / 1048576, e.scratch / 1048576,
			e.pipeline / 1048576, e.comm / 1048576, e.snapshot / 1048576);
	}
	free(all);
}

int llmt_train(const llmt_train_opts *o, llmt_parallel *p)
{
	trainer *t = calloc(1, sizeof(*t));
	struct sigaction sa;
	int rc;

	if (!t)
		return LLMT_EXIT_SOFTWARE;
	t->o = o;
	t->p = p;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (llmt_faults_from_env(&t->faults, t->err, sizeof(t->err))) {
		if (p->l.rank == 0)
			fprintf(stderr, "llm-train: %s\n", t->err);
		rc = LLMT_EXIT_USAGE;
	} else {
		rc = setup(t);
	}
	if (!rc)
		rc = loop(t);
	if (t->w) {
		int r2 = llmt_ckpt_wait(t->w, t->err, sizeof(t->err));
		if (r2 && !rc) {
			fprintf(stderr, "llm-train: rank %d: %s\n", p->l.rank, t->err);
			rc = r2;
		}
		llmt_ckpt_writer_free(t->w);
	}
	if (rc == 0 && t->m && !o->quiet)
		report_memory(t);
	llmt_hb_stop(rc == 0 ? LLMT_HB_DONE : LLMT_HB_TRAIN);
	if (t->metrics)
		fclose(t->metrics);
	if (t->m) {
		llmt_pipeline_free(&t->pl);
		llmt_optim_free(&t->opt);
		llmt_model_free(t->m);
	}
	if (t->ld.shards)
		llmt_loader_close(&t->ld);
	free(t->hosts);
	free(t);
	return rc;
}

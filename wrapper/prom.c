/* prom: the text exposition format (version 0.0.4) of the job's series;
 * every family has its HELP and TYPE once, before its samples. */
#include "prom.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

size_t wr_utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;   /* also the end of the string */
	/* overlong 3- and 4-byte forms, UTF-16 surrogates, past U+10FFFF */
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

void wr_prom_label(FILE *f, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;
	while (p && *p) {
		size_t n = wr_utf8_len(p);
		if (n == 0) {
			fputc('?', f);   /* Prometheus refuses the whole text for one bad byte */
			p++;
		} else if (*p == '\\' || *p == '"') {
			fputc('\\', f), fputc(*p++, f);
		} else if (*p == '\n') {
			fputs("\\n", f), p++;
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
}

static void num(FILE *f, double v)
{
	if (isnan(v))
		fputs(" NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
	else
		fprintf(f, " %.9g\n", v);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{job="J"[,k="v"]} value */
static void job_sample(FILE *f, const char *name, const char *job, const char *k, const char *v, double x)
{
	fprintf(f, "%s{job=\"", name);
	wr_prom_label(f, job);
	if (k) {
		fprintf(f, "\",%s=\"", k);
		wr_prom_label(f, v);
	}
	fputs("\"}", f);
	num(f, x);
}

static void rank_sample(FILE *f, const char *name, const struct wr_live_view *v, int r, const char *k,
                        const char *kv, double x)
{
	fprintf(f, "%s{job=\"", name);
	wr_prom_label(f, v->job);
	fprintf(f, "\",rank=\"%d\",node=\"", r);
	wr_prom_label(f, v->hb[r].host);
	if (k) {
		fprintf(f, "\",%s=\"", k);
		wr_prom_label(f, kv);
	}
	fputs("\"}", f);
	num(f, x);
}

static double field(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

int wr_metric_parse(const char *line, struct wr_metric_rec *r)
{
	json_t *o = json_loads(line, 0, NULL);
	json_t *s = json_object_get(o, "step");
	if (!json_is_integer(s)) {
		json_decref(o);
		return -1;
	}
	r->valid = true;
	r->step = (long)json_integer_value(s);
	r->loss = field(o, "loss");
	r->grad_norm = field(o, "grad_norm");
	r->lr = field(o, "lr");
	r->tokens_per_s = field(o, "tokens_per_s");
	r->mfu = field(o, "mfu");
	r->step_time_s = field(o, "step_time_s");
	r->comm_time_s = field(o, "comm_time_s");
	r->ckpt_time_s = field(o, "ckpt_time_s");
	json_decref(o);
	return 0;
}

static void metrics(FILE *f, const char *job, const struct wr_metric_rec *m)
{
	const struct { const char *name, *help; double v; } g[] = {
		{ "llm_train_step", "Optimizer steps completed (rank 0's metrics).", (double)m->step },
		{ "llm_train_loss", "Training loss of the last step.", m->loss },
		{ "llm_train_grad_norm", "Gradient norm of the last step.", m->grad_norm },
		{ "llm_train_learning_rate", "Learning rate of the last step.", m->lr },
		{ "llm_train_tokens_per_second", "Training throughput of the last step.", m->tokens_per_s },
		{ "llm_train_mfu", "Model FLOPs utilisation of the last step (NaN: no peak known).", m->mfu },
		{ "llm_train_step_seconds", "Wall time of rank 0's last step.", m->step_time_s },
	};
	for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
		head(f, g[i].name, "gauge", g[i].help);
		job_sample(f, g[i].name, job, NULL, NULL, g[i].v);
	}
	if (m->have_val) {
		head(f, "llm_train_val_loss", "gauge", "Validation loss of the last evaluation.");
		job_sample(f, "llm_train_val_loss", job, NULL, NULL, m->val_loss);
	}
}

static void ranks(FILE *f, const struct wr_live_view *v)
{
	static const char *const groups[] = { "tp", "pp", "dp", "all" };
	head(f, "llm_train_rank_step", "gauge", "The step a rank's heartbeat reports.");
	for (int r = 0; r < v->nranks; r++)
		if (v->hb[r].valid)
			rank_sample(f, "llm_train_rank_step", v, r, NULL, NULL, (double)v->hb[r].step);
	head(f, "llm_train_rank_step_seconds", "gauge", "Wall time of a rank's last step.");
	for (int r = 0; r < v->nranks; r++)
		if (v->hb[r].valid)
			rank_sample(f, "llm_train_rank_step_seconds", v, r, NULL, NULL,
			            v->hb[r].t.valid ? v->hb[r].t.last[WR_T_STEP] : v->hb[r].last_step_s);
	head(f, "llm_train_rank_compute_seconds", "gauge", "A rank's last step minus its waits.");
	for (int r = 0; r < v->nranks; r++)
		if (v->hb[r].t.valid)
			rank_sample(f, "llm_train_rank_compute_seconds", v, r, NULL, NULL, v->hb[r].t.last[WR_T_COMPUTE]);
	head(f, "llm_train_rank_comm_wait_seconds", "gauge", "Time a rank's last step waited in communication, by group.");
	for (int r = 0; r < v->nranks; r++)
		for (int k = 0; k < 4 && v->hb[r].t.valid; k++)
			rank_sample(f, "llm_train_rank_comm_wait_seconds", v, r, "group", groups[k], v->hb[r].t.last[WR_T_TP + k]);
	head(f, "llm_train_rank_data_seconds", "gauge", "Time a rank's last step spent loading data.");
	for (int r = 0; r < v->nranks; r++)
		if (v->hb[r].t.valid)
			rank_sample(f, "llm_train_rank_data_seconds", v, r, NULL, NULL, v->hb[r].t.last[WR_T_DATA]);
	head(f, "llm_train_rank_ckpt_stall_seconds", "gauge", "Time a rank's last step stalled in checkpointing.");
	for (int r = 0; r < v->nranks; r++)
		if (v->hb[r].t.valid)
			rank_sample(f, "llm_train_rank_ckpt_stall_seconds", v, r, NULL, NULL, v->hb[r].t.last[WR_T_CKPT]);
	head(f, "llm_train_rank_seconds_total", "counter", "A rank's time in this attempt's steps, by part.");
	for (int r = 0; r < v->nranks; r++)
		for (int k = 0; k < WR_T_N && v->hb[r].t.valid; k++)
			rank_sample(f, "llm_train_rank_seconds_total", v, r, "part", wr_part_name(k), v->hb[r].t.total[k]);
}

void wr_prom_live(FILE *f, const struct wr_live_view *v)
{
	head(f, "llm_train_attempt", "gauge", "The step attempt running (0 first).");
	job_sample(f, "llm_train_attempt", v->job, NULL, NULL, v->attempt);
	if (v->m && v->m->valid)
		metrics(f, v->job, v->m);
	if (v->hb && v->nranks > 0)
		ranks(f, v);
}

void wr_prom_goodput(FILE *f, const char *j, const struct wr_history *h, const struct wr_goodput *g)
{
	head(f, "llm_train_goodput_ratio", "gauge", "Useful training time over allocated time.");
	job_sample(f, "llm_train_goodput_ratio", j, NULL, NULL, g->ratio);
	head(f, "llm_train_allocated_seconds", "gauge", "Wall time the job held its allocation.");
	job_sample(f, "llm_train_allocated_seconds", j, NULL, NULL, g->allocated_s);
	head(f, "llm_train_useful_seconds", "gauge", "Training time whose work survived.");
	job_sample(f, "llm_train_useful_seconds", j, NULL, NULL, g->useful_s);
	head(f, "llm_train_lost_seconds", "gauge", "Allocated time lost, by cause.");
	for (int k = 0; k < WR_NCAUSES; k++)
		if (k != WR_DONE)
			job_sample(f, "llm_train_lost_seconds", j, "cause", wr_cause_name(k), g->lost_s[k]);
	head(f, "llm_train_restarts_total", "counter", "Failures that led to a restart or requeue, by cause.");
	for (int k = WR_USER_ERROR; k < WR_NCLASSES; k++) {
		int cnt = 0;
		for (int i = 0; i < h->npast; i++)   /* the job's final stop is no restart */
			cnt += h->past[i].cls == (enum wr_class)k && h->past[i].restarted;
		job_sample(f, "llm_train_restarts_total", j, "cause", wr_class_name((enum wr_class)k), cnt);
	}
	head(f, "llm_train_runs_total", "counter", "Runs of the batch script (1 + requeues).");
	job_sample(f, "llm_train_runs_total", j, NULL, NULL, h->runs);
	head(f, "llm_train_excluded_nodes", "gauge", "Nodes kept out of the job.");
	job_sample(f, "llm_train_excluded_nodes", j, NULL, NULL, h->excluded.n);
	head(f, "llm_train_useful_steps", "gauge", "Training steps whose work survived.");
	job_sample(f, "llm_train_useful_steps", j, NULL, NULL, (double)g->useful_steps);
}

/* report: summary, loss plot and Prometheus textfile. gnuplot draws the
 * plot (a well-kept tool; no plotting code here); the textfile is written
 * to a temporary name and renamed so a scraper never reads half of it. */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

int wr_loss_points(const char *metrics_path, const char *dat_path)
{
	FILE *f = fopen(metrics_path, "r");
	if (!f)
		return -1;
	size_t cap = 1024;
	long maxstep = -1;
	double *loss = malloc(cap * sizeof *loss);
	char *have = calloc(cap, 1);
	char line[8192];
	while (loss && have && fgets(line, sizeof line, f)) {
		json_t *o = json_loads(line, 0, NULL);
		json_t *js = json_object_get(o, "step"), *jl = json_object_get(o, "loss");
		if (json_is_integer(js) && json_is_number(jl) && json_integer_value(js) >= 0 &&
		    json_integer_value(js) < 100000000) {
			size_t s = (size_t)json_integer_value(js);
			if (s >= cap) {
				size_t nc = cap;
				while (nc <= s)
					nc *= 2;
				double *nl = realloc(loss, nc * sizeof *loss);
				char *nh = nl ? realloc(have, nc) : NULL;
				if (!nl || !nh) {
					free(nl ? nl : loss);
					free(have);
					loss = NULL;
					have = NULL;
					json_decref(o);
					break;
				}
				memset(nh + cap, 0, nc - cap);
				loss = nl;
				have = nh;
				cap = nc;
			}
			loss[s] = json_number_value(jl);
			have[s] = 1;
			if ((long)s > maxstep)
				maxstep = (long)s;
		}
		json_decref(o);
	}
	fclose(f);
	if (!loss || !have) {
		free(loss);
		free(have);
		return -1;
	}
	FILE *d = fopen(dat_path, "w");
	int n = 0;
	if (d) {
		for (long s = 0; s <= maxstep; s++)
			if (have[s] && isfinite(loss[s])) {
				fprintf(d, "%ld %.9g\n", s, loss[s]);
				n++;
			}
		if (fclose(d) != 0)
			n = -1;
	} else {
		n = -1;
	}
	free(loss);
	free(have);
	return n;
}

static void plot(const struct wr_report_cfg *c)
{
	char dat[4200], gp[4200], png[4200];
	const char *metrics = c->metrics;
	snprintf(dat, sizeof dat, "%s/loss.dat", c->run_dir);
	snprintf(gp, sizeof gp, "%s/loss.gp", c->run_dir);
	snprintf(png, sizeof png, "%s/loss.png", c->run_dir);
	int n = wr_loss_points(metrics, dat);
	if (n <= 0) {
		printf("  loss curve: none (%s: %s)\n", metrics, n < 0 ? strerror(errno) : "no finite loss");
		return;
	}
	if (access(c->gnuplot, X_OK) != 0 && strchr(c->gnuplot, '/')) {
		printf("  loss curve: skipped, gnuplot not found at %s (data in %s)\n", c->gnuplot, dat);
		return;
	}
	FILE *g = fopen(gp, "w");
	if (!g) {
		printf("  loss curve: cannot write %s: %s\n", gp, strerror(errno));
		return;
	}
	fprintf(g, "set terminal png size 900,500\nset output '%s'\n"
	           "set title 'training loss (job %s)'\nset xlabel 'step'\nset ylabel 'loss'\n"
	           "set grid\nplot '%s' using 1:2 with lines title 'loss'\n", png, c->job, dat);
	fclose(g);
	char out[4096], err[4096];
	char *argv[] = { (char *)c->gnuplot, gp, NULL };
	int rc = wr_run_capture(argv, out, sizeof out, err, sizeof err);
	if (rc == 127)
		printf("  loss curve: skipped, gnuplot not found (%s); data in %s\n", c->gnuplot, dat);
	else if (rc != 0)
		printf("  loss curve: gnuplot failed (exit %d): %s\n", rc, err);
	else
		printf("  loss curve: %s (%d steps)\n", png, n);
}

static int prom(const struct wr_history *h, const struct wr_goodput *g, const struct wr_report_cfg *c)
{
	char path[4200], tmp[4300];
	snprintf(path, sizeof path, "%s/llm_train.prom", c->run_dir);
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "llm-train-wrap: cannot write %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	const char *j = c->job;
	fprintf(f, "# HELP llm_train_goodput_ratio Useful training time over allocated time.\n"
	           "# TYPE llm_train_goodput_ratio gauge\nllm_train_goodput_ratio{job=\"%s\"} %.6f\n", j, g->ratio);
	fprintf(f, "# HELP llm_train_allocated_seconds Wall time the job held its allocation.\n"
	           "# TYPE llm_train_allocated_seconds gauge\nllm_train_allocated_seconds{job=\"%s\"} %.3f\n", j, g->allocated_s);
	fprintf(f, "# HELP llm_train_useful_seconds Training time whose work survived.\n"
	           "# TYPE llm_train_useful_seconds gauge\nllm_train_useful_seconds{job=\"%s\"} %.3f\n", j, g->useful_s);
	fprintf(f, "# HELP llm_train_lost_seconds Allocated time lost, by cause.\n# TYPE llm_train_lost_seconds gauge\n");
	for (int k = 0; k < WR_NCAUSES; k++)
		if (k != WR_DONE)
			fprintf(f, "llm_train_lost_seconds{job=\"%s\",cause=\"%s\"} %.3f\n", j, wr_cause_name(k), g->lost_s[k]);
	fprintf(f, "# HELP llm_train_restarts_total Failures that led to a restart or requeue, by cause.\n"
	           "# TYPE llm_train_restarts_total counter\n");
	for (int k = WR_USER_ERROR; k < WR_NCLASSES; k++) {
		int cnt = 0;
		for (int i = 0; i < h->npast; i++)
			cnt += h->past[i].cls == (enum wr_class)k;
		fprintf(f, "llm_train_restarts_total{job=\"%s\",cause=\"%s\"} %d\n", j, wr_class_name((enum wr_class)k), cnt);
	}
	fprintf(f, "# HELP llm_train_runs_total Runs of the batch script (1 + requeues).\n"
	           "# TYPE llm_train_runs_total counter\nllm_train_runs_total{job=\"%s\"} %d\n", j, h->runs);
	fprintf(f, "# HELP llm_train_excluded_nodes Nodes kept out of the job.\n"
	           "# TYPE llm_train_excluded_nodes gauge\nllm_train_excluded_nodes{job=\"%s\"} %d\n", j, h->excluded.n);
	fprintf(f, "# HELP llm_train_useful_steps Training steps whose work survived.\n"
	           "# TYPE llm_train_useful_steps gauge\nllm_train_useful_steps{job=\"%s\"} %ld\n", j, g->useful_steps);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, "llm-train-wrap: cannot write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	printf("  prometheus: %s\n", path);
	return 0;
}

int wr_report(const struct wr_history *h, const struct wr_report_cfg *c, struct wr_goodput *g)
{
	double alloc = h->allocated_s + (c->now > h->last_run_end ? c->now - h->last_run_end : 0);
	double steps[WR_HIST_MAX];
	int ns = 0;
	for (int i = 0; i < h->nattempts; i++)
		if (h->attempts[i].step_s > 0)
			steps[ns++] = h->attempts[i].step_s;
	double dflt = 0;
	if (ns) {
		for (int i = 0; i < ns; i++)
			dflt += steps[i];
		dflt /= ns;
	}
	wr_goodput(h->attempts, h->nattempts, alloc, dflt, g);
	printf("llm-train-wrap: summary%s%s: %d run(s), %d attempt(s)\n", *c->job ? " of job " : "", c->job,
	       h->runs, h->nattempts);
	printf("  goodput %.1f%% (useful %.1f s of %.1f s allocated, %ld steps)\n", 100 * g->ratio, g->useful_s,
	       g->allocated_s, g->useful_steps);
	printf("  time lost:");
	int any = 0;
	for (int k = 0; k < WR_NCAUSES; k++)
		if (k != WR_DONE && g->lost_s[k] > 0.05) {
			printf("%s %s %.1f s", any ? "," : "", wr_cause_name(k), g->lost_s[k]);
			any = 1;
		}
	printf("%s\n", any ? "" : " none");
	printf("  restarts: %d (", g->restarts);
	any = 0;
	for (int k = WR_USER_ERROR; k < WR_NCLASSES; k++) {
		int cnt = 0;
		for (int i = 0; i < h->npast; i++)
			cnt += h->past[i].cls == (enum wr_class)k;
		if (cnt) {
			printf("%s%s %d", any ? ", " : "", wr_class_name((enum wr_class)k), cnt);
			any = 1;
		}
	}
	printf("%s), runs %d\n", any ? "" : "no failures", h->runs);
	printf("  excluded nodes:");
	for (int i = 0; i < h->excluded.n; i++)
		printf(" %s", h->excluded.name[i]);
	printf("%s\n", h->excluded.n ? "" : " none");
	plot(c);
	prom(h, g, c);
	fflush(stdout);
	return 0;
}

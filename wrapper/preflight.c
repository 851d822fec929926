/* preflight: the self-test's srun over the allocation, its report read
 * (selftest.c judges it) and the bad nodes placed out (decide.c's
 * wr_place) with their evidence in the ledger (preflight.h). */
#define _GNU_SOURCE
#include "config.h"
#include "rdfile.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/llmt/exitcodes.h"
#include "job_io.h"
#include "preflight.h"
#include "selftest.h"

#define PROG "llm-train-wrap"

void wr_job_log_action(struct wr_job *j, const struct wr_action *a, const char *source)
{
	static const char *const acts[] = { "stop", "restart", "requeue" };
	json_t *ev = json_pack("{s:i,s:s,s:o,s:f,s:o,s:b,s:i,s:i,s:I,s:I,s:b,s:i}", "attempt",
	                j->attempt, "act", acts[a->act], "why", wr_json_text(a->why), "delay_s", a->delay_s, "exclude",
	                wr_nodes_json(&a->exclude), "counts", a->counts, "nodes", a->nodes, "ntasks", a->ntasks,
	                "max_resume_step", (json_int_t)a->max_resume_step, "skip_until_step",
	                (json_int_t)a->skip_until_step, "need_agree", a->need_agree, "exit_code", a->exit_code);
	if (ev && a->dp > 0) {   /* an elastic shrink */
		json_object_set_new(ev, "dp", json_integer(a->dp));
		json_object_set_new(ev, "grad_accum", json_integer(a->accum));
	}
	if (ev && source)
		json_object_set_new(ev, "source", json_string(source));
	wr_ledger_event(j->led, "action", ev);
	fprintf(stderr, PROG ": action: %s: %s\n", acts[a->act], a->why);
}

/* srun of the self-test: one task per node not excluded; -1 when none */
static int selftest_run(const struct wr_job *j, const char *file, double *elapsed)
{
	static char out[1 << 16], err[1 << 16];
	char nn[32], nt[32], tm[32], exc[WR_MAX_NODES * (WR_NODE_LEN + 1) + 16];
	int k = 0;
	for (int i = 0; i < j->site->nalloc; i++)
		k += !wr_nodes_has(&j->excluded, j->site->alloc[i]);
	if (k == 0)
		return -1;
	snprintf(nn, sizeof nn, "--nodes=%d", k);
	snprintf(nt, sizeof nt, "--ntasks=%d", k);
	/* a step's time limit is in minutes: a hung self-test ends */
	snprintf(tm, sizeof tm, "--time=%d", (int)((j->o->preflight_timeout + 59) / 60));
	char *argv[16] = { (char *)j->o->srun, "--overlap", "--job-name=llm-train-selftest", nn, nt,
	                   "--ntasks-per-node=1", tm };
	int a = 7;
	if (j->excluded.n > 0) {
		size_t o = (size_t)snprintf(exc, sizeof exc, "--exclude=");
		for (int i = 0; i < j->excluded.n && o < sizeof exc; i++)
			o += (size_t)snprintf(exc + o, sizeof exc - o, "%s%s", i ? "," : "", j->excluded.name[i]);
		argv[a++] = exc;
	}
	argv[a++] = (char *)j->selftest_cmd;
	argv[a++] = "selftest";
	argv[a++] = "--json";
	argv[a++] = (char *)file;
	argv[a] = NULL;
	fprintf(stderr, PROG ": preflight:");
	for (int i = 0; argv[i]; i++)
		fprintf(stderr, " %s", argv[i]);
	fprintf(stderr, "\n");
	double t0 = wr_now();
	int rc = wr_run_capture(argv, out, sizeof out, err, sizeof err);
	*elapsed = wr_now() - t0;
	fputs(out, stderr);   /* one line per node */
	fputs(err, stderr);
	return rc;
}

static char *slurp(const char *path)
{
	FILE *f = wr_fopen_read(path);
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	while (b) {
		if (n + 1 >= cap) {
			char *nb = cap < (1u << 24) ? realloc(b, cap * 2) : NULL;
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
		size_t r = fread(b + n, 1, cap - 1 - n, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	if (b)
		b[n] = '\0';
	return b;
}

/* The bad nodes' figures: the evidence */
static json_t *evidence(const struct wr_selftest *r)
{
	json_t *a = json_array();
	for (int i = 0; i < r->bad.n; i++) {
		const struct wr_selftest_node *n = wr_selftest_find(r, r->bad.name[i]);
		json_array_append_new(a, n ? json_pack("{s:s,s:s,s:b,s:b,s:f,s:f,s:f,s:f}", "node", n->node,
		                      "verdict", n->verdict, "wrong", n->wrong, "slow", n->slow, "gflops", n->gflops,
		                      "median_gflops", r->median_gflops, "membw_gbs", n->membw_gbs, "compute_s",
		                      n->compute_s)
		                      : json_pack("{s:s,s:s}", "node", r->bad.name[i], "verdict", "bad"));
	}
	return a;
}

static enum wr_next place_out(struct wr_job *j, const struct wr_selftest *r)
{
	struct wr_verdict v = { .cls = WR_NODE_FAULT };
	char names[200] = "";
	size_t o = 0;
	for (int i = 0; i < r->bad.n; i++) {
		const struct wr_selftest_node *n = wr_selftest_find(r, r->bad.name[i]);
		if (wr_nodes_has(&j->excluded, r->bad.name[i]))
			continue;
		wr_nodes_add(&v.nodes, r->bad.name[i]);
		if (o < sizeof names)
			o += (size_t)snprintf(names + o, sizeof names - o, "%s%s (%s)", o ? ", " : "",
			                      r->bad.name[i], n ? n->verdict : "bad");
	}
	if (v.nodes.n == 0)
		return WR_NEXT_RESTART;
	snprintf(v.node, sizeof v.node, "%s", v.nodes.name[0]);
	snprintf(v.why, sizeof v.why, "self-test: %s", names);
	struct wr_watch_out wo;
	memset(&wo, 0, sizeof wo);
	struct wr_state s;
	struct wr_action a;
	wr_job_state(j, &v, &wo, 0, -1, wr_now(), &s);
	wr_place(&v, &j->pol, &s, &a);
	wr_job_log_action(j, &a, "preflight");
	wr_job_layout(j, &a);
	if (a.act == ACT_STOP) {
		j->exit_code = a.exit_code;
		return WR_NEXT_STOP;
	}
	return a.act == ACT_REQUEUE ? WR_NEXT_REQUEUE : WR_NEXT_RESTART;
}

enum wr_next wr_job_preflight(struct wr_job *j, const char *when)
{
	if (!j->preflight || !j->site->in_slurm)
		return WR_NEXT_RESTART;
	char file[4200], err[200];
	snprintf(file, sizeof file, "%s/selftest-%d.json", j->run_dir, j->attempt);
	unlink(file);
	double elapsed = 0;
	int rc = selftest_run(j, file, &elapsed);
	char *text = rc == 0 || rc == LLMT_EXIT_BADNODE ? slurp(file) : NULL;
	static struct wr_selftest r;
	if (!text || wr_selftest_parse(text, &r, err, sizeof err) != 0) {
		if (!text)
			snprintf(err, sizeof err, rc < 0 ? "no node to test" : "exit %d, no report", rc);
		fprintf(stderr, PROG ": preflight self-test failed (%s): %s: going on without it\n", file, err);
		wr_ledger_event(j->led, "preflight", json_pack("{s:i,s:s,s:s,s:i,s:s,s:f}", "attempt", j->attempt,
		                "when", when, "file", file, "rc", rc, "error", err, "elapsed_s", elapsed));
		free(text);
		return WR_NEXT_RESTART;
	}
	free(text);
	wr_ledger_event(j->led, "preflight", json_pack("{s:i,s:s,s:s,s:i,s:f,s:i,s:o,s:o,s:f}", "attempt",
	                j->attempt, "when", when, "file", file, "rc", rc, "elapsed_s", elapsed, "nodes_tested",
	                r.n, "bad_nodes", wr_nodes_json(&r.bad), "evidence", evidence(&r), "median_gflops",
	                r.median_gflops));
	fprintf(stderr, PROG ": preflight self-test: %d node(s), %d bad (%.1f s)\n", r.n, r.bad.n, elapsed);
	return place_out(j, &r);
}

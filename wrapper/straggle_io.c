/* straggle_io.c: the watcher's straggler action (straggle.h's
 * wr_strag_act): the ranks' compute totals fed in, the newest checkpoint
 * read, the replacement's arithmetic logged and put in the ledger. */
#include <jansson.h>
#include <stdio.h>

#include "straggle.h"
#include "rdfile.h"
#include "watch.h"

/* The newest checkpoint's step (CKPT_DIR/latest: "step_NNNNNNNN"), else dflt */
static long latest_ckpt(const char *dir, long dflt)
{
	char p[4200];
	long step = dflt;
	snprintf(p, sizeof p, "%s/latest", dir ? dir : ".");
	FILE *f = wr_fopen_read(p);
	if (f) {
		if (fscanf(f, "step_%ld", &step) != 1 || step < dflt)
			step = dflt;
		fclose(f);
	}
	return step;
}

bool wr_strag_act(struct wr_strag *sg, bool *told, const struct wr_hb *hb, const struct wr_watch_cfg *c,
                  struct wr_watch_out *o, double step_s)
{
	for (int r = 0; r < c->nranks; r++)
		if (hb[r].t.valid)
			wr_strag_feed(sg, r, hb[r].t.steps, hb[r].t.total[WR_T_COMPUTE]);
	double med, ratio;
	int r = wr_strag_judge(sg, &med, &ratio);
	if (r < 0 || told[r])
		return false;
	told[r] = true;
	const char *node = hb[r].host;
	struct wr_strag_cost k = {
		.slow_s = sg->r[r].per_step, .median_s = med, .step = o->last_step,
		.total_steps = c->total_steps, .ckpt_step = latest_ckpt(c->ckpt_dir, c->resume_step),
		.step_s = step_s, .restart_s = o->t_first_step > o->t_launch ? o->t_first_step - o->t_launch : 0,
		.spare = c->straggler_spare && *node,
	};
	wr_strag_cost(&k);
	fprintf(stderr, "llm-train-wrap: straggler: rank %d on %s computes %.3f s per step, %.1fx the median, "
	        "for %ld steps: %s\n", r, *node ? node : "?", k.slow_s, ratio, sg->r[r].over, k.why);
	wr_ledger_event(c->ledger, "straggler_action", json_pack(
	        "{s:i,s:i,s:s,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:b,s:s}", "attempt", c->attempt,
	        "rank", r, "node", node, "compute_s", k.slow_s, "median_s", med, "ratio", ratio,
	        "steps_over", (json_int_t)sg->r[r].over, "step", (json_int_t)k.step, "total_steps",
	        (json_int_t)k.total_steps, "ckpt_step", (json_int_t)k.ckpt_step, "step_s", k.step_s,
	        "restart_s", k.restart_s, "slowdown_s", k.slowdown_s, "lost_s", k.lost_s,
	        "restart_cost_s", k.restart_cost_s, "replace", k.replace, "why", k.why));
	if (!k.replace)
		return false;
	snprintf(o->e.straggler_node, sizeof o->e.straggler_node, "%s", node);
	return true;
}

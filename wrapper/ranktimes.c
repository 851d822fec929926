/* ranktimes: the timing line's parser and the attempt's figures from all
 * ranks' totals (see ranktimes.h). */
#include "ranktimes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const parts[WR_T_N] = { "step", "compute", "tp", "pp", "dp", "all", "data", "ckpt" };

const char *wr_part_name(int part)
{
	return part >= 0 && part < WR_T_N ? parts[part] : "?";
}

int wr_rank_times_parse(const char *line, struct wr_rank_times *t)
{
	long long ns;
	int used = 0;
	memset(t, 0, sizeof *t);
	if (sscanf(line, "timing %ld %lld%n", &t->steps, &ns, &used) != 2 || t->steps < 0 || ns < 0)
		return -1;
	const char *p = line + used;
	for (int i = 0; i < 2 * WR_T_N; i++) {
		double v;
		int k = 0;
		if (sscanf(p, " %lf%n", &v, &k) != 1 || !isfinite(v) || v < 0)
			return -1;
		(i < WR_T_N ? t->total : t->last)[i % WR_T_N] = v;
		p += k;
	}
	t->first = (double)ns / 1e9;
	t->valid = true;
	return 0;
}

void wr_attempt_times(const struct wr_rank_times *t, int n, int stride, struct wr_attempt_times *a)
{
	memset(a, 0, sizeof *a);
	double per_step = 0;
	for (int i = 0; i < n; i++) {
		const struct wr_rank_times *r = (const void *)((const char *)t + (long)i * stride);
		if (!r->valid || r->steps <= 0)
			continue;
		double train = r->total[WR_T_STEP] - r->total[WR_T_CKPT];
		per_step += (train > 0 ? train : 0) / (double)r->steps;
		for (int k = 0; k < WR_T_N; k++)
			a->mean[k] += r->total[k];
		if (a->ranks == 0 || r->first < a->first_step)
			a->first_step = r->first;
		a->ranks++;
	}
	if (!a->ranks)
		return;
	for (int k = 0; k < WR_T_N; k++)
		a->mean[k] /= a->ranks;
	a->step_s = per_step / a->ranks;
	a->ckpt_s = a->mean[WR_T_CKPT];
}

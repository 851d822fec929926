/* Cost model: bytes per step crossing node, leaf and spine for each
 * parallel dimension, from the model size and a rank map: TP ring
 * allreduce of activations, PP send/recv of activations and their
 * gradients, DP ring reduce-scatter + allgather of gradients. */
#include <string.h>

#include "cost.h"

void llmt_cost_model_default(struct llmt_cost_model *cm)
{
	cm->params = 1.3e9;
	cm->hidden = 2048;
	cm->layers = 24;
	cm->seq = 2048;
	cm->micro_batch = 1;
	cm->micro_batches = 8;
	cm->bytes_per_elem = 2;
}

static const char *dim_names[LLMT_NDIMS] = { "tp", "pp", "dp" };
static const char *lvl_names[LLMT_NLVLS] = { "total", "node", "leaf", "spine" };

const char *llmt_dim_name(int d) { return d >= 0 && d < LLMT_NDIMS ? dim_names[d] : "?"; }
const char *llmt_lvl_name(int l) { return l >= 0 && l < LLMT_NLVLS ? lvl_names[l] : "?"; }

static void add_edge(double *lv, const struct llmt_rm_node *a, const struct llmt_rm_node *b,
		     double bytes)
{
	lv[LLMT_LVL_TOTAL] += bytes;
	if (a == b)
		return;
	lv[LLMT_LVL_NODE] += bytes;
	if (a->leaf >= 0 && a->leaf == b->leaf)
		return;
	lv[LLMT_LVL_LEAF] += bytes;
	if (a->spine >= 0 && a->spine == b->spine)
		return;
	lv[LLMT_LVL_SPINE] += bytes;
}

void llmt_cost_eval(const struct llmt_cost_model *cm, const struct llmt_rankmap *m,
		    const struct llmt_rm_node *nodes, struct llmt_cost *out)
{
	const unsigned TP = m->layout.tp, PP = m->layout.pp, DP = m->layout.dp;
	const double act = (double)cm->micro_batch * cm->seq * cm->hidden * cm->bytes_per_elem;
	const double mbs = cm->micro_batches ? cm->micro_batches : 1;
	const double layers_per_stage = (double)cm->layers / PP;
	/* Per directed ring edge of a TP group: 4 allreduces per layer (2
	 * forward, 2 backward), each sending 2(TP-1)/TP of the activation. */
	const double tp_edge = TP > 1 ? 4.0 * layers_per_stage * mbs * 2.0 * (TP - 1) / TP * act : 0;
	/* Per stage boundary and TP rank: activation forward + gradient back,
	 * split across the TP ranks (Megatron scatter/gather). */
	const double pp_edge = PP > 1 ? 2.0 * mbs * act / TP : 0;
	/* Per DP ring edge: reduce-scatter + allgather of the shard's grads. */
	const double dp_edge = DP > 1 ? 2.0 * (DP - 1) / DP * (cm->params / ((double)TP * PP)) *
					cm->bytes_per_elem : 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t r = 0; r < m->ntasks; r++) {
		const struct llmt_rm_task *x = &m->task[m->task_of_rank[r]];
		const struct llmt_rm_node *a = &nodes[x->node];
		if (TP > 1) {
			uint32_t nr = x->tp_rank + 1 < TP ? r + 1 : r - (TP - 1);
			add_edge(out->bytes[LLMT_DIM_TP], a, &nodes[m->task[m->task_of_rank[nr]].node], tp_edge);
		}
		if (DP > 1) {
			uint32_t nr = x->dp_rank + 1 < DP ? r + TP : r - (DP - 1) * TP;
			add_edge(out->bytes[LLMT_DIM_DP], a, &nodes[m->task[m->task_of_rank[nr]].node], dp_edge);
		}
		if (PP > 1 && x->pp_rank + 1 < PP) {
			uint32_t nr = r + TP * DP;
			add_edge(out->bytes[LLMT_DIM_PP], a, &nodes[m->task[m->task_of_rank[nr]].node], pp_edge);
		}
	}
}

double llmt_cost_level(const struct llmt_cost *c, int lvl)
{
	double s = 0;
	for (int d = 0; d < LLMT_NDIMS; d++)
		s += c->bytes[d][lvl];
	return s;
}

double llmt_cost_score(const struct llmt_cost *c)
{
	return llmt_cost_level(c, LLMT_LVL_NODE) + 4 * llmt_cost_level(c, LLMT_LVL_LEAF) +
	       16 * llmt_cost_level(c, LLMT_LVL_SPINE);
}

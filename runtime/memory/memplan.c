/* memplan.c: `llm-train memory --model CFG [--tp N] [--pp N] [--dp N]
 * [--micro-batch B] [--seq T] [--grad-accum A] [--threads N] [--no-ckpt]`.
 * The numbers are the ones llm-train prints at the end of a run (the same
 * estimates, for rank 0 of each stage); nothing is allocated. */
#include "memplan.h"
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "model/attn.h"
#include "model/model_config.h"
#include "llmt/exitcodes.h"
#include "memest.h"
#include "model/model.h"
#include "comm/parallel.h"

#define MIB(x) ((x) / 1048576.0)

static const char usage[] =
	"usage: llm-train memory --model CFG.yaml [--tp N] [--pp N] [--dp N] [--micro-batch B] [--seq T]\n"
	"         [--grad-accum A] [--threads N] [--no-ckpt] [--recompute none|attn|full] [--recompute-layers K]\n";

/* one stage: its rank 0 (tp_rank = dp_rank = 0) */
static int stage(const llmt_config *c, int tp, int pp, int dp, int s, int B, int T, int A,
	int threads, int ckpt, int rc)
{
	char err[256], v[3][16];
	llmt_grid l;
	snprintf(v[0], sizeof(v[0]), "%d", tp);
	snprintf(v[1], sizeof(v[1]), "%d", pp);
	snprintf(v[2], sizeof(v[2]), "%d", dp);
	if (llmt_grid_from_values(&l, tp * pp * dp, s * tp * dp, v[0], v[1], v[2], NULL, NULL, err,
				    sizeof(err))) {
		fprintf(stderr, "llm-train memory: %s\n", err);
		return LLMT_EXIT_USAGE;
	}
	llmt_par par = { tp, 0, pp, s, NULL };
	size_t n = llmt_model_count(c, &par);
	int nl = c->n_layers / pp, hd = c->d_model / c->n_heads;
	llmt_memest e;
	llmt_memest_gpu g;
	llmt_memest_host h;
	llmt_memory_estimate(c, &l, n, B, T, A, 1, ckpt, attn_ok(hd) ? threads : 0, rc, &e);
	llmt_memory_estimate_gpu(c, &l, n, B, T, A, 1, rc, &g);
	llmt_memory_estimate_gpu_host(c, &l, n, B, T, 1, ckpt, 1, &h);
	printf("stage %d of %d (layers %d-%d): %zu parameters per rank\n", s, pp, s * nl,
	       s * nl + nl - 1, n);
	printf("  CPU rank (%d threads): %.1f MiB: params %.1f, optimizer %.1f, activations %.1f, "
	       "scratch %.1f, pipeline %.1f, comm %.1f, snapshot %.1f MiB\n", threads, MIB(e.total),
	       MIB(e.params), MIB(e.optimizer), MIB(e.activations), MIB(e.scratch), MIB(e.pipeline),
	       MIB(e.comm), MIB(e.snapshot));
	printf("  GPU rank: device %.1f MiB: params %.1f, optimizer %.1f, activations %.1f, scratch "
	       "%.1f, workspace %.1f MiB\n", MIB(g.total), MIB(g.params), MIB(g.optimizer),
	       MIB(g.activations), MIB(g.scratch), MIB(g.workspace));
	printf("  GPU rank: host %.1f MiB: mirror %.1f, snapshot %.1f (pinned), resume %.1f, "
	       "staging %.1f, init %.1f MiB\n", MIB(h.total), MIB(h.mirror), MIB(h.snapshot),
	       MIB(h.load), MIB(h.staging), MIB(h.init));
	return 0;
}

int llmt_memplan_main(int argc, char **argv)
{
	enum { O_MODEL = 1, O_TP, O_PP, O_DP, O_MB, O_SEQ, O_GA, O_THR, O_NOCK, O_RC, O_RCL, O_HELP };
	static const struct option opts[] = {
		{ "model", required_argument, NULL, O_MODEL }, { "tp", required_argument, NULL, O_TP },
		{ "pp", required_argument, NULL, O_PP }, { "dp", required_argument, NULL, O_DP },
		{ "micro-batch", required_argument, NULL, O_MB }, { "seq", required_argument, NULL, O_SEQ },
		{ "grad-accum", required_argument, NULL, O_GA },
		{ "threads", required_argument, NULL, O_THR }, { "no-ckpt", no_argument, NULL, O_NOCK },
		{ "recompute", required_argument, NULL, O_RC },
		{ "recompute-layers", required_argument, NULL, O_RCL },
		{ "help", no_argument, NULL, O_HELP }, { NULL, 0, NULL, 0 },
	};
	const char *model = NULL;
	long tp = 1, pp = 1, dp = 1, B = 1, T = 0, A = 1, thr = omp_get_max_threads(), K = -1;
	int ckpt = 1, o, rc = 0;
	llmt_recompute recompute = LLMT_RECOMPUTE_NONE;
	char err[512];
	llmt_config c;

	optind = 1;
	opterr = 0;
	while (!rc && (o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case O_MODEL: model = optarg; break;
		case O_TP: rc = llmt_cli_int("--tp", optarg, 1, 4096, &tp); break;
		case O_PP: rc = llmt_cli_int("--pp", optarg, 1, 4096, &pp); break;
		case O_DP: rc = llmt_cli_int("--dp", optarg, 1, 1 << 20, &dp); break;
		case O_MB: rc = llmt_cli_int("--micro-batch", optarg, 1, 1 << 16, &B); break;
		case O_SEQ: rc = llmt_cli_int("--seq", optarg, 1, 1 << 20, &T); break;
		case O_GA: rc = llmt_cli_int("--grad-accum", optarg, 1, 1 << 16, &A); break;
		case O_THR: rc = llmt_cli_int("--threads", optarg, 1, 4096, &thr); break;
		case O_NOCK: ckpt = 0; break;
		case O_RCL: rc = llmt_cli_int("--recompute-layers", optarg, 0, 1 << 20, &K); break;
		case O_RC:
			if (llmt_recompute_from(optarg, &recompute)) {
				fprintf(stderr, "llm-train memory: --recompute %s: want none, attn or full\n", optarg);
				return LLMT_EXIT_USAGE;
			}
			break;
		case O_HELP: fputs(usage, stdout); return 0;
		default:
			fprintf(stderr, "llm-train memory: unknown option or missing value: %s\n%s",
				argv[optind - 1], usage);
			return LLMT_EXIT_USAGE;
		}
	}
	if (rc)
		return rc;
	if (!model || optind < argc) {
		fprintf(stderr, "llm-train memory: %s\n%s", model ? "unexpected argument" : "--model is required",
			usage);
		return LLMT_EXIT_USAGE;
	}
	if ((rc = llmt_config_load(model, &c, err, sizeof(err))) || llmt_config_validate(&c, err, sizeof(err))) {
		fprintf(stderr, "llm-train memory: %s\n", err);
		return rc == -2 ? LLMT_EXIT_NOINPUT : LLMT_EXIT_USAGE;
	}
	if (!T)
		T = c.max_seq;
	if (T > c.max_seq) {
		fprintf(stderr, "llm-train memory: --seq %ld exceeds max_seq %d of %s\n", T, c.max_seq, model);
		return LLMT_EXIT_USAGE;
	}
	llmt_par par = { (int)tp, 0, (int)pp, 0, NULL };
	if (llmt_model_check_shape(&c, &par, err, sizeof(err))) {
		fprintf(stderr, "llm-train memory: %s\n", err);
		return LLMT_EXIT_USAGE;
	}
	if (K >= 0 && recompute == LLMT_RECOMPUTE_NONE) {
		fprintf(stderr, "llm-train memory: --recompute-layers %ld: needs --recompute attn or full\n", K);
		return LLMT_EXIT_USAGE;
	}
	if (K > c.n_layers / pp) {
		fprintf(stderr, "llm-train memory: --recompute-layers %ld: a stage has %ld layers (pp=%ld)\n",
			K, c.n_layers / pp, pp);
		return LLMT_EXIT_USAGE;
	}
	char kl[48] = "";
	if (K >= 0)
		snprintf(kl, sizeof kl, " in the first %ld layers of each stage", K);
	printf("llm-train memory: %s: tp=%ld pp=%ld dp=%ld, micro-batch %ld x seq %ld, grad-accum %ld, "
	       "bf16, checkpoints %s, recompute %s%s; per rank, without runtime overhead (MPI, oneDNN, CUDA)\n",
	       model, tp, pp, dp, B, T, A, ckpt ? "on" : "off", llmt_recompute_name(recompute), kl);
	/* stages 1 .. pp-2 hold the same tensors: the first of them stands for all */
	for (long s = 0; s < pp && !rc; s++)
		if (s < 2 || s == pp - 1)
			rc = stage(&c, (int)tp, (int)pp, (int)dp, (int)s, (int)B, (int)T, (int)A, (int)thr, ckpt,
				LLMT_RC_PLAN(recompute, (int)K));
		else if (s == 2)
			printf("stages 2-%ld: as stage 1\n", pp - 2);
	return rc;
}

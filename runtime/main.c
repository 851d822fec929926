/* main.c: the llm-train command: `llm-train [train] OPTIONS` trains;
 * subcommands tokenize, ckpt-verify, ckpt-list, export, import and memory
 * are dispatched to their modules. Usage errors exit 64 with one line. */
#include "model/model_config.h"
#include <errno.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "ckpt/ckpt.h"
#include "memory/memplan.h"
#include "cli.h"
#include "model/cpu.h"
#include "comm/comm.h"
#include "comm/parallel.h"
#include "data/tokenize.h"
#include "gen/generate.h"
#include "data/tok_cmd.h"
#include "data/sft.h"
#include "train/train.h"
#include "resilience/watchdog.h"
#include "selftest/selftest.h"
#include "llmt/env.h"

static const char usage[] =
	"usage: llm-train [train] --model CFG.yaml --data DIR [--steps N] [--micro-batch B] [--seq T]\n"
	"         [--grad-accum A] [--lr X] [--min-lr X] [--warmup N] [--weight-decay X] [--beta1 X]\n"
	"         [--beta2 X] [--eps X] [--grad-clip X] [--seed S] [--ckpt-dir DIR]\n"
	"         [--ckpt-interval N|Ns|Nm|Nh|auto] [--ckpt-keep K] [--precision bf16|fp32]\n"
	"         [--recompute none|attn|full] [--recompute-layers K (default all of the stage's)]\n"
	"         [--sdc-interval N] [--max-bad-steps K] [--spike-factor X] [--resume CKPT]\n"
	"         [--init-from HFDIR] [--run-dir DIR] [--peak-gflops X] [--mtbf SECONDS] [--quiet]\n"
	"         [--eval-interval N] [--eval-batches K] [--val-data DIR (default DATA/val)]\n"
	"       llm-train tokenize IN.txt OUTDIR [--val-fraction F] [--shard-tokens N]\n"
	"         [--tokenizer FILE [--bos] [--eos] [--block-bytes N]]\n"
	"       llm-train tokenizer-train IN.txt OUT.model --vocab N [--type bpe|unigram]\n"
	"       llm-train tokenize-sft IN.jsonl OUTDIR --tokenizer FILE --template plain|llama2|chatml [--seq N]\n"
	"         [--shard-tokens N] (--help)\n"
	"       llm-train ckpt-verify DIR | ckpt-list [--quick] CKPT_DIR\n"
	"       llm-train export [--dtype bf16|fp32] CKPT OUTDIR | import HFDIR CKPT_DIR [--tokenizer FILE]\n"
	"       llm-train generate (--ckpt DIR | --hf DIR) [--tokenizer FILE] --prompt TEXT [--max-new N]\n"
	"         [--temperature T] [--top-p P] [--seed S] (llm-train generate --help)\n"
	"       llm-train selftest [--size small|full] [--json FILE] [--slow-factor F] (--help)\n"
	"       llm-train memory --model CFG.yaml [--tp N] [--pp N] [--dp N] [--micro-batch B] [--seq T]\n"
	"         [--grad-accum A] [--threads N] [--no-ckpt] [--recompute none|attn|full] [--recompute-layers K]\n"
	"Environment: LLM_TRAIN_TP/PP/DP, RANK, WORLD_SIZE, LLM_TRAIN_CKPT_DIR, LLM_TRAIN_CKPT_INTERVAL,\n"
	"  LLM_TRAIN_RESUME, LLM_TRAIN_SKIP_BATCHES, LLM_TRAIN_RUN_DIR, LLM_TRAIN_HEARTBEAT_DIR,\n"
	"  LLM_TRAIN_COMM_TIMEOUT, LLM_TRAIN_FAULT, LLM_TRAIN_ATTEMPT (see doc/contracts.md);\n"
	"  LLMT_CPU=generic|auto: portable CPU kernels, or AVX-512 BF16 ones where the CPU has them.\n";

static int bad(const char *opt, const char *val, const char *want)
{
	return llmt_cli_bad(opt, val, want);
}

/* An integer in [1, hi] from the environment into *out when set; 0 or 64. */
static int env_int(const char *name, long hi, int *out)
{
	const char *e = getenv(name);
	long v;
	if (!e || !*e)
		return 0;
	if (llmt_cli_int(name, e, 1, hi, &v))
		return LLMT_EXIT_USAGE;
	*out = (int)v;
	return 0;
}

/* the train options: their codes and names */
enum { O_MODEL = 1000, O_DATA, O_STEPS, O_MB, O_SEQ, O_GA, O_LR, O_MINLR, O_WARM, O_WD, O_B1,
	O_B2, O_EPS, O_CLIP, O_SEED, O_CKDIR, O_CKINT, O_KEEP, O_PREC, O_RECOMP, O_SDC, O_BAD, O_SPIKE,
	O_RESUME, O_INIT, O_RUN, O_PEAK, O_MTBF, O_QUIET, O_VAL, O_EVAL, O_EVALB, O_RCL, O_HELP };

static const struct option train_opts[] = {
	{ "model", required_argument, NULL, O_MODEL }, { "data", required_argument, NULL, O_DATA },
	{ "steps", required_argument, NULL, O_STEPS }, { "micro-batch", required_argument, NULL, O_MB },
	{ "seq", required_argument, NULL, O_SEQ }, { "grad-accum", required_argument, NULL, O_GA },
	{ "lr", required_argument, NULL, O_LR }, { "min-lr", required_argument, NULL, O_MINLR },
	{ "warmup", required_argument, NULL, O_WARM }, { "weight-decay", required_argument, NULL, O_WD },
	{ "beta1", required_argument, NULL, O_B1 }, { "beta2", required_argument, NULL, O_B2 },
	{ "eps", required_argument, NULL, O_EPS }, { "grad-clip", required_argument, NULL, O_CLIP },
	{ "seed", required_argument, NULL, O_SEED }, { "ckpt-dir", required_argument, NULL, O_CKDIR },
	{ "ckpt-interval", required_argument, NULL, O_CKINT }, { "ckpt-keep", required_argument, NULL, O_KEEP },
	{ "precision", required_argument, NULL, O_PREC },
	{ "recompute", required_argument, NULL, O_RECOMP }, { "sdc-interval", required_argument, NULL, O_SDC },
	{ "max-bad-steps", required_argument, NULL, O_BAD }, { "spike-factor", required_argument, NULL, O_SPIKE },
	{ "resume", required_argument, NULL, O_RESUME }, { "init-from", required_argument, NULL, O_INIT },
	{ "run-dir", required_argument, NULL, O_RUN }, { "peak-gflops", required_argument, NULL, O_PEAK },
	{ "mtbf", required_argument, NULL, O_MTBF }, { "quiet", no_argument, NULL, O_QUIET },
	{ "val-data", required_argument, NULL, O_VAL }, { "eval-interval", required_argument, NULL, O_EVAL },
	{ "eval-batches", required_argument, NULL, O_EVALB },
	{ "recompute-layers", required_argument, NULL, O_RCL },
	{ "help", no_argument, NULL, O_HELP }, { NULL, 0, NULL, 0 },
};

/* What the plugin and the wrapper hand down: the directories, the resume
 * point and skip count, the automatic layout (under the command line). */
static int train_env(llmt_train_opts *o)
{
	const char *e;

	o->ckpt_dir = (e = getenv(LLMT_ENV_CKPT_DIR)) && *e ? e : NULL;
	o->run_dir = (e = getenv(LLMT_ENV_RUN_DIR)) && *e ? e : NULL;
	o->hb_dir = (e = getenv(LLMT_ENV_HEARTBEAT_DIR)) && *e ? e : NULL;
	o->resume = getenv(LLMT_ENV_RESUME);
	if ((e = getenv(LLMT_ENV_SKIP_BATCHES)) && *e &&
	    llmt_cli_int(LLMT_ENV_SKIP_BATCHES, e, 0, 1L << 40, &o->skip_batches))
		return LLMT_EXIT_USAGE;
	/* the plugin's automatic layout: defaults under the command line */
	if (env_int(LLMT_ENV_MICRO_BATCH, 1 << 16, &o->B) || env_int(LLMT_ENV_GRAD_ACCUM, 1 << 16, &o->A) ||
	    env_int(LLMT_ENV_SEQ, 1 << 20, &o->T))
		return LLMT_EXIT_USAGE;
	if ((e = getenv(LLMT_ENV_RECOMPUTE)) && *e && llmt_recompute_from(e, &o->recompute))
		return bad(LLMT_ENV_RECOMPUTE, e, "want none, attn or full");
	if (env_int(LLMT_ENV_RECOMPUTE_LAYERS, 1 << 20, &o->recompute_layers))
		return LLMT_EXIT_USAGE;
	return 0;
}

/* --recompute and --recompute-layers on the command line: the planner's
 * K (LLM_TRAIN_RECOMPUTE_LAYERS) goes with its mode, not with another */
static int rc_cli, rcl_cli;

/* One option (getopt_long's code c, its value in optarg): 0 or 64; the
 * checkpoint interval's text in *interval. */
static int train_opt(llmt_train_opts *o, int c, const char **interval)
{
	long v;
	double d;
	int rc = 0;

	switch (c) {
	case O_MODEL: o->model_path = optarg; break;
	case O_DATA: o->data_dir = optarg; break;
	case O_STEPS: rc = llmt_cli_int("--steps", optarg, 1, 1L << 40, &o->steps); break;
	case O_MB: rc = llmt_cli_int("--micro-batch", optarg, 1, 1 << 16, &v); o->B = (int)v; break;
	case O_SEQ: rc = llmt_cli_int("--seq", optarg, 1, 1 << 20, &v); o->T = (int)v; break;
	case O_GA: rc = llmt_cli_int("--grad-accum", optarg, 1, 1 << 16, &v); o->A = (int)v; break;
	case O_LR: rc = llmt_cli_num("--lr", optarg, 0, 10, &o->lr); break;
	case O_MINLR: rc = llmt_cli_num("--min-lr", optarg, 0, 10, &o->min_lr); break;
	case O_WARM: rc = llmt_cli_int("--warmup", optarg, 0, 1L << 40, &o->warmup); break;
	case O_WD: rc = llmt_cli_num("--weight-decay", optarg, 0, 10, &o->adamw.weight_decay); break;
	case O_B1: rc = llmt_cli_num("--beta1", optarg, 0, 0.999999, &o->adamw.beta1); break;
	case O_B2: rc = llmt_cli_num("--beta2", optarg, 0, 0.999999999, &o->adamw.beta2); break;
	case O_EPS: rc = llmt_cli_num("--eps", optarg, 1e-30, 1, &o->adamw.eps); break;
	case O_CLIP: rc = llmt_cli_num("--grad-clip", optarg, 0, 1e30, &o->adamw.grad_clip); break;
	case O_SEED: rc = llmt_cli_num("--seed", optarg, 0, 18446744073709549568.0, &d); o->seed = (uint64_t)d; break;
	case O_CKDIR: o->ckpt_dir = optarg; break;
	case O_CKINT: *interval = optarg; break;
	case O_KEEP: rc = llmt_cli_int("--ckpt-keep", optarg, 0, 1 << 20, &v); o->ckpt_keep = (int)v; break;
	case O_PREC:
		if (!strcmp(optarg, "bf16"))
			o->prec = LLMT_BF16;
		else if (!strcmp(optarg, "fp32"))
			o->prec = LLMT_FP32;
		else
			rc = bad("--precision", optarg, "want bf16 or fp32");
		break;
	case O_RECOMP:
		rc_cli = 1;
		if (llmt_recompute_from(optarg, &o->recompute))
			rc = bad("--recompute", optarg, "want none, attn or full");
		break;
	case O_RCL:
		rcl_cli = 1;
		rc = llmt_cli_int("--recompute-layers", optarg, 0, 1 << 20, &v);
		o->recompute_layers = (int)v;
		break;
	case O_SDC: rc = llmt_cli_int("--sdc-interval", optarg, 0, 1L << 40, &o->sdc_interval); break;
	case O_BAD: rc = llmt_cli_int("--max-bad-steps", optarg, 1, 1 << 20, &v); o->max_bad_steps = (int)v; break;
	case O_SPIKE: rc = llmt_cli_num("--spike-factor", optarg, 0, 1e30, &o->spike_factor); break;
	case O_RESUME: o->resume = optarg; break;
	case O_INIT: o->init_from = optarg; break;
	case O_RUN: o->run_dir = optarg; break;
	case O_PEAK: rc = llmt_cli_num("--peak-gflops", optarg, 0, 1e12, &o->peak_gflops); break;
	case O_MTBF: rc = llmt_cli_num("--mtbf", optarg, 1, 1e12, &o->mtbf_s); break;
	case O_QUIET: o->quiet = 1; break;
	case O_VAL: o->val_dir = optarg; break;
	case O_EVAL: rc = llmt_cli_int("--eval-interval", optarg, 0, 1L << 40, &o->eval_interval); break;
	case O_EVALB: rc = llmt_cli_int("--eval-batches", optarg, 1, 1 << 20, &v); o->eval_batches = (int)v; break;
	}
	return rc;
}

/* The checks and derived values after the options. */
static int train_finish(int argc, char **argv, llmt_train_opts *o, const char *interval)
{
	const char *e;

	if (optind < argc) {
		fprintf(stderr, "llm-train: unexpected argument '%s' (llm-train --help)\n", argv[optind]);
		return LLMT_EXIT_USAGE;
	}
	if (!o->model_path || !o->data_dir) {
		fprintf(stderr, "llm-train: --model and --data are required (llm-train --help)\n");
		return LLMT_EXIT_USAGE;
	}
	if (interval && *interval && llmt_parse_interval(interval, o))
		return bad("--ckpt-interval", interval, "want N (steps), Ns, Nm, Nh or auto");
	if (rc_cli && !rcl_cli)
		o->recompute_layers = -1;
	if (o->recompute_layers >= 0 && o->recompute == LLMT_RECOMPUTE_NONE) {
		char k[16];
		snprintf(k, sizeof k, "%d", o->recompute_layers);
		return bad("--recompute-layers", k, "needs --recompute attn or full");
	}
	if (o->min_lr < 0)
		o->min_lr = o->lr / 10;
	if (o->min_lr > o->lr)
		return bad("--min-lr", "", "must not exceed --lr");
	if (o->peak_gflops == 0 && (e = getenv(LLMT_ENV_PEAK_GFLOPS)) && *e &&
	    llmt_cli_num(LLMT_ENV_PEAK_GFLOPS, e, 0, 1e12, &o->peak_gflops))
		return LLMT_EXIT_USAGE;
	if (o->peak_gflops == 0) {
		/* per-core peak measured on the reference machine (AVX-512 BF16
		 * dot products 233 GFLOP/s, fp32 FMA 116): an estimate; give
		 * --peak-gflops for another CPU */
		o->peak_gflops = (o->prec == LLMT_BF16 ? 233.5 : 116.5) * omp_get_max_threads();
		o->peak_cpu_estimate = 1;
	}
	return 0;
}

/* Parse the train options into o. 0, 64, or -1 for --help. */
static int parse_train(int argc, char **argv, llmt_train_opts *o)
{
	const char *interval = getenv(LLMT_ENV_CKPT_INTERVAL);
	int c, rc;

	if ((rc = train_env(o)))
		return rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", train_opts, NULL)) != -1) {
		if (c == O_HELP)
			return -1;
		if (c < O_MODEL || c > O_HELP) {
			fprintf(stderr, "llm-train: unknown or incomplete option '%s' (llm-train --help)\n",
				argv[optind - 1]);
			return LLMT_EXIT_USAGE;
		}
		if ((rc = train_opt(o, c, &interval)))
			return rc;
	}
	return train_finish(argc, argv, o, interval);
}

static int train_main(int argc, char **argv)
{
	llmt_train_opts o;
	llmt_parallel p;
	llmt_comm *world;
	char err[256];
	double comm_timeout;
	int rc, A;

	llmt_train_defaults(&o);
	rc = parse_train(argc, argv, &o);
	if (rc < 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (rc)
		return rc;
	if (llmt_cpu_check())
		return LLMT_EXIT_USAGE;
	comm_timeout = llmt_wd_timeout_from(getenv(LLMT_ENV_COMM_TIMEOUT), LLMT_WD_DEFAULT_S, err, sizeof(err));
	if (comm_timeout < 0) {
		fprintf(stderr, "llm-train: %s\n", err);
		return LLMT_EXIT_USAGE;
	}
	if (llmt_comm_launch_check())
		return LLMT_EXIT_USAGE;
	world = llmt_comm_world(&argc, &argv);
	if (!world)
		return LLMT_EXIT_TRANSIENT;
	if (llmt_parallel_init(&p, world)) {
		llmt_comm_finalize(world);
		return LLMT_EXIT_USAGE;
	}
	/* after the wrapper shrank dp, more accumulation keeps the global batch */
	if (llmt_grid_batch_accum(o.A, getenv(LLMT_ENV_BATCH_DP), p.l.dp, &A, err, sizeof(err))) {
		if (p.l.rank == 0)
			fprintf(stderr, "llm-train: %s\n", err);
		llmt_parallel_free(&p);
		llmt_comm_finalize(world);
		return LLMT_EXIT_USAGE;
	}
	if (A != o.A && p.l.rank == 0)
		printf("llm-train: dp=%d for batch options of dp=%s: grad-accum %d -> %d (global batch kept)\n",
			p.l.dp, getenv(LLMT_ENV_BATCH_DP), o.A, A);
	o.A = A;
	/* without the watchdog a lost peer still ends in the wrapper's hang
	 * detection: a failure to start it is reported, not fatal */
	llmt_wd_start(comm_timeout, p.l.rank);
	rc = llmt_train(&o, &p);
	llmt_wd_stop();
	llmt_parallel_free(&p);
	llmt_comm_finalize(world);
	return rc;
}

/* LLMT_START_MARKER=FILE: one line appended as main begins, before any
 * other code of llm-train runs, so a test tells a launch that failed before
 * llm-train started (no line: may be retried) from a crash of llm-train
 * (tests/runtime/loop_lib.sh) */
static void start_marker(void)
{
	const char *f = getenv("LLMT_START_MARKER");
	FILE *fp;

	if (!f || !*f || !(fp = fopen(f, "a")))
		return;
	fprintf(fp, "llm-train started: pid %ld\n", (long)getpid());
	fclose(fp);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
		{ "tokenize", llmt_tokenize_main },
		{ "tokenizer-train", llmt_tokenizer_train_main },
		{ "tokenize-sft", llmt_tokenize_sft_main },
		{ "ckpt-verify", llmt_ckpt_cmd_verify },
		{ "ckpt-list", llmt_ckpt_cmd_list },
		{ "export", llmt_ckpt_cmd_export },
		{ "import", llmt_ckpt_cmd_import },
		{ "memory", llmt_memplan_main },
		{ "generate", llmt_generate_main },
		{ "selftest", llmt_selftest_main },
		{ "train", train_main },
	};

	start_marker();

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc > 1 && argv[1][0] != '-') {
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(argv[1], cmds[i].name))
				return cmds[i].fn(argc - 1, argv + 1);
		fprintf(stderr, "llm-train: unknown command '%s' (llm-train --help)\n", argv[1]);
		return LLMT_EXIT_USAGE;
	}
	return train_main(argc, argv);
}

/* st_cmd.c: `llm-train selftest`: options, the run on every rank (known
 * answers, rates, links), the gathering on rank 0, one line per node, the
 * JSON report (tmp + rename) and the exit code (doc/contracts.md). */
#include "selftest.h"
#include "cli.h"
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "model/cpu.h"
#include "resilience/heartbeat.h"
#include "st_golden.h"
#include "st_report.h"
#include "st_run.h"

static const char usage[] =
	"usage: llm-train selftest [--size small|full] [--json FILE] [--slow-factor F (LLM_TRAIN_SELFTEST_SLOW_FACTOR)]\n"
	"         [--expect-gflops G] [--expect-membw GBS] [--link-factor L (LLM_TRAIN_SELFTEST_LINK_FACTOR)]\n"
	"         [--print-golden]\n"
	"Run under MPI (srun or mpirun), one rank per node or every rank of the step.\n"
	"Each rank: a known-answer test of the CPU kernels the trainer uses (bf16 matrix\n"
	"products with exact answers, a fixed-seed forward and backward of a small model,\n"
	"against the golden checksums of its compute path and the other ranks), its bf16\n"
	"GFLOP/s and its memory bandwidth; one rank per node: ring and pairwise links.\n"
	"A node is slow when its compute time exceeds F (default 1.5) x the median, or its\n"
	"rates fall below 1/F of the expected ones; a link when its bandwidth is below\n"
	"1/L (default 30) of the median; a node's links when half the links from it are.\n"
	"One line per node; --json FILE: the report (doc/contracts.md).\n"
	"Exit 0 all ok, 88 a bad node (named), 64 bad option, 66 --json's folder missing.\n"
	"A CUDA build tests the CPU kernels and the MPI links, not the GPU.\n";

typedef struct {
	int full, print_golden;
	const char *json;
	double F, L, expect_gflops, expect_membw;
} st_opts;

/* what each rank sends to rank 0 */
typedef struct {
	char node[LLMT_ST_NAME], path[LLMT_ST_NAME];
	uint64_t hash;
	double norm1d, compute_s, gflops, membw;
	long ref_bad;
	int failed, golden;
} rank_rec;

static int bad_opt(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "llm-train selftest: %s %s: %s (llm-train selftest --help)\n", opt, val, want);
	return LLMT_EXIT_USAGE;
}

/* 0, -1 for --help, or an exit code */
static int parse(int argc, char **argv, st_opts *o)
{
	enum { O_SIZE = 1000, O_JSON, O_F, O_L, O_EG, O_EM, O_PG, O_HELP };
	static const struct option opts[] = {
		{ "size", required_argument, NULL, O_SIZE }, { "json", required_argument, NULL, O_JSON },
		{ "slow-factor", required_argument, NULL, O_F }, { "expect-gflops", required_argument, NULL, O_EG },
		{ "expect-membw", required_argument, NULL, O_EM }, { "print-golden", no_argument, NULL, O_PG },
		{ "link-factor", required_argument, NULL, O_L },
		{ "help", no_argument, NULL, O_HELP }, { NULL, 0, NULL, 0 },
	};
	int c, rc = 0;

	memset(o, 0, sizeof(*o));
	o->F = 1.5;
	o->L = 30;
	/* the site's (or a test's) slow factor when the wrapper runs it; the
	 * command line wins */
	const char *e = getenv("LLM_TRAIN_SELFTEST_SLOW_FACTOR");
	if (e && *e && llmt_cli_num("LLM_TRAIN_SELFTEST_SLOW_FACTOR", e, 1.01, 100, &o->F))
		return LLMT_EXIT_USAGE;
	e = getenv("LLM_TRAIN_SELFTEST_LINK_FACTOR");
	if (e && *e && llmt_cli_num("LLM_TRAIN_SELFTEST_LINK_FACTOR", e, 1.01, 1000, &o->L))
		return LLMT_EXIT_USAGE;
	optind = 1;
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_SIZE:
			if (strcmp(optarg, "small") && strcmp(optarg, "full"))
				return bad_opt("--size", optarg, "want small or full");
			o->full = !strcmp(optarg, "full");
			break;
		case O_JSON: o->json = optarg; break;
		case O_F: rc = llmt_cli_num("--slow-factor", optarg, 1.01, 100, &o->F); break;
		case O_L: rc = llmt_cli_num("--link-factor", optarg, 1.01, 1000, &o->L); break;
		case O_EG: rc = llmt_cli_num("--expect-gflops", optarg, 1e-3, 1e9, &o->expect_gflops); break;
		case O_EM: rc = llmt_cli_num("--expect-membw", optarg, 1e-3, 1e9, &o->expect_membw); break;
		case O_PG: o->print_golden = 1; break;
		case O_HELP: return -1;
		default:
			fprintf(stderr, "llm-train selftest: unknown or incomplete option '%s' (llm-train selftest --help)\n",
				argv[optind - 1]);
			return LLMT_EXIT_USAGE;
		}
	}
	if (rc)
		return rc;
	if (optind < argc) {
		fprintf(stderr, "llm-train selftest: unexpected argument '%s'\n", argv[optind]);
		return LLMT_EXIT_USAGE;
	}
	if (o->json) {
		char *d = strdup(o->json);
		struct stat st;
		int missing = !d || stat(dirname(d), &st) || !S_ISDIR(st.st_mode);
		free(d);
		if (missing) {
			fprintf(stderr, "llm-train selftest: --json %s: its folder does not exist\n", o->json);
			return LLMT_EXIT_NOINPUT;
		}
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the per-rank part: known answers and rates */
static void run_rank(const st_opts *o, const llmt_faults *fs, int rank, rank_rec *me)
{
	llmt_st_kat k;
	char hn[256] = "";

	memset(me, 0, sizeof(*me));
	if (gethostname(hn, sizeof(hn) - 1))
		hn[0] = 0;
	llmt_hb_host(me->node, sizeof(me->node), getenv("SLURMD_NODENAME"), hn);
	llmt_faults_fire_node(fs, -1, rank);
	llmt_st_kat_run(o->full, &k);
	snprintf(me->path, sizeof(me->path), "%s", k.path);
	me->hash = k.hash;
	me->norm1d = k.norm1d;
	me->ref_bad = k.ref_bad;
	me->failed = k.failed;
	me->golden = llmt_st_golden_check(llmt_st_golden_find(k.path, o->full ? "full" : "small"), k.hash, k.norm1d);
	me->gflops = llmt_st_gflops(o->full, fs, rank, &me->compute_s);
	me->membw = llmt_st_membw(o->full);
}

/* ranks whose path and answers equal rank j's */
static int agreeing(const rank_rec *r, int n, int j)
{
	int c = 0;

	for (int k = 0; k < n; k++)
		c += !strcmp(r[k].path, r[j].path) && r[k].hash == r[j].hash &&
			llmt_st_norm1d_close(r[k].norm1d, r[j].norm1d);
	return c;
}

/* answers of rank i wrong: failed, inexact products, a golden mismatch,
 * or (no golden for its path) not the one answer most ranks of its path
 * gave (a tie: no answer can be vouched for) */
static int rank_wrong(const rank_rec *r, int n, int i)
{
	int mine, best = 0, groups_at_best = 0;

	if (r[i].failed || r[i].ref_bad || r[i].golden < 0)
		return 1;
	if (r[i].golden > 0)
		return 0;
	mine = agreeing(r, n, i);
	for (int j = 0; j < n; j++) {
		int c, first = 1;
		if (strcmp(r[j].path, r[i].path))
			continue;
		for (int k = 0; k < j && first; k++) /* count each answer once */
			first = strcmp(r[k].path, r[j].path) || r[k].hash != r[j].hash ||
				!llmt_st_norm1d_close(r[k].norm1d, r[j].norm1d);
		if (!first)
			continue;
		c = agreeing(r, n, j);
		if (c > best) {
			best = c;
			groups_at_best = 1;
		} else if (c == best)
			groups_at_best++;
	}
	return mine < best || groups_at_best > 1;
}

/* rank 0: the nodes in order of their first rank; *node_of: each rank's */
static int build_nodes(const rank_rec *r, int n, llmt_st_report *rep, int *node_of)
{
	rep->nodes = calloc((size_t)n, sizeof(llmt_st_node));
	if (!rep->nodes)
		return -1;
	for (int i = 0; i < n; i++) {
		int k;
		for (k = 0; k < rep->nnodes && strcmp(rep->nodes[k].node, r[i].node); k++)
			;
		llmt_st_node *d = &rep->nodes[k];
		if (k == rep->nnodes) {
			rep->nnodes++;
			snprintf(d->node, sizeof(d->node), "%s", r[i].node);
			snprintf(d->path, sizeof(d->path), "%s", r[i].path);
			d->golden = 1;
		}
		node_of[i] = k;
		if (d->nranks < LLMT_ST_MAXRANKS)
			d->ranks[d->nranks] = i;
		d->nranks++;
		d->wrong |= rank_wrong(r, n, i);
		d->golden = d->golden < 0 || r[i].golden < 0 ? -1 : d->golden && r[i].golden;
		if (r[i].compute_s > d->compute_s)
			d->compute_s = r[i].compute_s;
		d->gflops += r[i].gflops;
		d->membw_gbs += r[i].membw;
	}
	for (int k = 0; k < rep->nnodes; k++)
		if (rep->nodes[k].nranks > LLMT_ST_MAXRANKS)
			rep->nodes[k].nranks = LLMT_ST_MAXRANKS;
	return 0;
}

/* write the report to path (tmp + rename); 0 or -1 */
static int write_json(const llmt_st_report *rep, const char *path)
{
	char tmp[4096];
	FILE *f;
	int rc;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (!(f = fopen(tmp, "w"))) {
		fprintf(stderr, "llm-train selftest: %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	rc = llmt_st_json(rep, f);
	if (fflush(f) || fsync(fileno(f)))
		rc = -1;
	if (fclose(f))
		rc = -1;
	if (!rc && rename(tmp, path))
		rc = -1;
	if (rc) {
		fprintf(stderr, "llm-train selftest: writing %s failed: %s\n", path, strerror(errno));
		unlink(tmp);
	}
	return rc;
}

/* the link tests among one rank per node (the lowest), their results
 * gathered on rank 0 into rep->links; every rank calls it */
static int run_links(llmt_comm *world, const st_opts *o, const int *node_of, llmt_st_report *rep)
{
	int rank = llmt_comm_rank(world), leader = 1, L, me, cnt, rc = 0;
	llmt_comm *lead;
	llmt_st_meas *mine, *all;

	/* node_of is rank 0's; every rank learns its own from the gather */
	for (int i = 0; i < rank; i++)
		leader &= node_of[i] != node_of[rank];
	lead = llmt_comm_split(world, leader ? 0 : 1, rank);
	if (!lead)
		return -1;
	if (!leader) {
		llmt_comm_free(lead);
		return 0;
	}
	L = llmt_comm_size(lead);
	me = llmt_comm_rank(lead);
	mine = calloc((size_t)L + 2, sizeof(*mine));
	all = calloc(((size_t)L + 2) * (size_t)L, sizeof(*all));
	if (!mine || !all || (cnt = llmt_st_net(lead, o->full, mine + 1)) < 0)
		rc = -1;
	else
		mine[0].from = cnt; /* the count rides in the first slot */
	if (!rc && llmt_comm_allgather_bytes(lead, mine, all, sizeof(*mine) * ((size_t)L + 2)))
		rc = -1;
	if (!rc && me == 0) {
		double ring_lat = 0;
		rep->links = calloc(((size_t)L + 1) * (size_t)L, sizeof(llmt_st_link));
		for (int p = 0; p < L && rep->links; p++) {
			llmt_st_meas *m = all + (size_t)p * ((size_t)L + 2);
			for (int k = 1; k <= m[0].from; k++) {
				llmt_st_link *l = &rep->links[rep->nlinks++];
				l->from = m[k].from;
				l->to = m[k].to;
				l->ring = m[k].ring;
				l->gbps = m[k].gbps;
				l->lat_us = m[k].lat_us;
				if (p == 0 && m[k].ring)
					ring_lat = m[k].lat_us;
			}
		}
		for (int k = 0; rep->links && k < rep->nlinks; k++)
			if (rep->links[k].ring)
				rep->links[k].lat_us = ring_lat;
	}
	free(mine);
	free(all);
	llmt_comm_free(lead);
	return rc;
}

/* rank 0: judge, print one line per node, write the report; the exit code */
static int report(const st_opts *o, llmt_st_report *rep, double t0)
{
	char line[512];

	rep->size = o->full ? "full" : "small";
	rep->slow_factor = o->F;
	rep->link_factor = o->L;
	rep->expect_gflops = o->expect_gflops;
	rep->expect_membw = o->expect_membw;
	llmt_st_judge(rep);
	rep->elapsed_s = now_s() - t0;
	for (int i = 0; i < rep->nnodes; i++) {
		llmt_st_line(rep, i, line, sizeof(line));
		puts(line);
	}
	for (int i = 0; i < rep->nlinks; i++)
		if (rep->links[i].slow)
			printf("link %s -> %s (%s): slow, %.2f Gbit/s, %.1f us\n", rep->nodes[rep->links[i].from].node,
				rep->nodes[rep->links[i].to].node, rep->links[i].ring ? "ring" : "pair",
				rep->links[i].gbps, rep->links[i].lat_us);
	printf("selftest: %d node%s, %d bad, %.1f s\n", rep->nnodes, rep->nnodes == 1 ? "" : "s", rep->nbad,
		rep->elapsed_s);
	fflush(stdout);
	if (o->json && write_json(rep, o->json))
		return LLMT_EXIT_IO;
	return rep->nbad ? LLMT_EXIT_BADNODE : LLMT_EXIT_OK;
}

static int print_golden(const rank_rec *me, const st_opts *o)
{
	printf("\t{ \"%s\", \"%s\", 0x%016llxULL, %.17g },\n", me->path, o->full ? "full" : "small",
		(unsigned long long)me->hash, me->norm1d);
	if (me->ref_bad || me->failed) {
		fprintf(stderr, "llm-train selftest: %ld product elements wrong%s: not a golden\n", me->ref_bad,
			me->failed ? ", a kernel failed" : "");
		return LLMT_EXIT_BADNODE;
	}
	return 0;
}

static int selftest(llmt_comm *world, const st_opts *o, const llmt_faults *fs, double t0)
{
	int rank = llmt_comm_rank(world), n = llmt_comm_size(world), rc = 0;
	rank_rec me, *all = calloc((size_t)n, sizeof(rank_rec));
	int *node_of = calloc((size_t)n, sizeof(int));
	llmt_st_report rep;
	double code;

	memset(&rep, 0, sizeof(rep));
	run_rank(o, fs, rank, &me);
	if (o->print_golden) {
		rc = rank == 0 ? print_golden(&me, o) : 0;
		free(all);
		free(node_of);
		return rc;
	}
	if (!all || !node_of || llmt_comm_allgather_bytes(world, &me, all, sizeof(me)) ||
	    build_nodes(all, n, &rep, node_of) || run_links(world, o, node_of, &rep))
		rc = LLMT_EXIT_TRANSIENT;
	if (!rc && rank == 0)
		rc = report(o, &rep, t0);
	code = rc;
	if (llmt_comm_bcast_bytes(world, &code, sizeof(code), 0) == 0)
		rc = (int)code;
	free(rep.nodes);
	free(rep.links);
	free(all);
	free(node_of);
	return rc;
}

int llmt_selftest_main(int argc, char **argv)
{
	st_opts o;
	llmt_faults fs;
	llmt_comm *world;
	char err[256];
	double t0 = now_s();
	int rc = parse(argc, argv, &o);

	if (rc < 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (rc)
		return rc;
	if (llmt_cpu_check())
		return LLMT_EXIT_USAGE;
	if (llmt_faults_from_env(&fs, err, sizeof(err))) {
		fprintf(stderr, "llm-train selftest: %s\n", err);
		return LLMT_EXIT_USAGE;
	}
	if (llmt_comm_launch_check())
		return LLMT_EXIT_USAGE;
	world = llmt_comm_world(&argc, &argv);
	if (!world)
		return LLMT_EXIT_TRANSIENT;
	rc = selftest(world, &o, &fs, t0);
	llmt_comm_finalize(world);
	return rc;
}

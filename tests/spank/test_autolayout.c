/* Unit tests of spank/autolayout.c and model_read.c: tp/pp=auto chosen
 * from the policy's node types (the planner's fastest candidate, every
 * fixed size kept), a model that fits nothing refused with the smallest
 * allocation that does, a node type without memory refused, and the
 * model file read as root refusing hostile files (a FIFO, a link to
 * /etc/shadow, a huge or sparse file, a device, garbage YAML) without
 * hanging and without quoting the file; where full recomputation fits
 * but none does not, full in the fewest layers that fit (failed before
 * --recompute-layers: only full in all of them). Fails on the code before
 * tp=auto (no llmt_auto_decide). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autolayout.h"
#include "envgen.h"

static const char pol_text[] =
	"node_types:\n"
	"  - {name: cpu, nodes: 'cpu[1-8]', gpus_per_node: 0, memory_gib: 2, gflops: 100}\n"
	"  - {name: h100, nodes: 'gpu[1-4]', gpus_per_node: 8, gpu_memory_gib: 80, gflops: 3200000}\n"
	"  - {name: nomem, nodes: 'bare[1-2]', gpus_per_node: 8}\n";

static const char model_768[] = "vocab_size: 256\nd_model: 768\nn_layers: 12\nn_heads: 12\n"
	"d_ff: 2048\nmax_seq: 1024\n";
static const char model_tiny[] = "vocab_size: 256\nd_model: 128\nn_layers: 4\nn_heads: 4\n"
	"d_ff: 384\nmax_seq: 256\n";

static char dir[] = "/tmp/test_autolayout.XXXXXX";

static struct llmt_policy *pol(void)
{
	struct llmt_policy *p;
	char err[512];
	if (llmt_policy_parse(pol_text, strlen(pol_text), "t.yaml", &p, err, sizeof(err)) != LLMT_POLICY_OK)
		fail_msg("policy: %s", err);
	return p;
}

static void cfg(const char *text, llmt_config *c)
{
	char err[256];
	if (llmt_config_parse(text, strlen(text), "m.yaml", c, err, sizeof(err)))
		fail_msg("config: %s", err);
}

static void auto_opts(struct llmt_opts *o, const char *spec)
{
	char err[256];
	llmt_opts_init(o);
	if (llmt_opts_parse_spec(o, spec, err, sizeof(err)))
		fail_msg("%s: %s", spec, err);
	llmt_opts_apply_defaults(o, NULL);
}

static void test_choice_is_planners_fastest(void **s)
{
	struct llmt_policy *p = pol();
	struct llmt_opts o;
	struct llmt_auto_out *out = calloc(1, sizeof(*out));
	llmt_config c;
	char err[512];
	unsigned tpn[2] = { 2, 2 };
	cfg(model_tiny, &c);
	auto_opts(&o, "tp=auto,pp=auto,model=/m.yaml");
	if (llmt_auto_decide(&o, p, &c, "cpu[1-2]", tpn, 2, out, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(o.choice.done);
	assert_int_equal(o.tp * o.pp * o.dp, 4);
	/* the planner's input from the node type: 2 GiB / 2 tasks, 100 GFLOP/s / 2 */
	assert_true(out->in.mem_limit == 1073741824.0);
	assert_true(out->in.flops == 50e9);
	assert_int_equal(out->in.tp_domain, 2);
	/* the same as the planner on its own */
	llmt_autoplan_cand best;
	int n;
	llmt_autoplan(&c, &out->in, &best, 1, &n, NULL);
	assert_int_equal(n, out->n);
	assert_int_equal(o.tp, best.tp);
	assert_int_equal(o.pp, best.pp);
	assert_int_equal(o.choice.micro_batch, best.B);
	assert_true(o.choice.step_s == best.step_s);
	/* envgen hands the shape to the ranks */
	struct llmt_rm_task t = { 0 };
	t.gpu = -1;
	struct llmt_env *e = calloc(1, sizeof(*e));
	struct llmt_env_input in = { .task = &t, .layout = { o.tp, o.pp, o.dp }, .world_size = 4,
		.local_world_size = 2, .nic = "lo", .master_addr = "cpu1", .job_id = 1, .opts = &o, .policy = p };
	assert_int_equal(llmt_envgen(&in, e, err, sizeof(err)), 0);
	char want[32];
	snprintf(want, sizeof(want), "%u", o.choice.micro_batch);
	assert_string_equal(llmt_env_get(e, "LLM_TRAIN_MICRO_BATCH"), want);
	assert_non_null(strstr(llmt_env_get(e, "LLM_TRAIN_AUTO"), "candidates="));
	/* a fixed tp stays: pp and dp chosen around it */
	auto_opts(&o, "tp=2,pp=auto,model=/m.yaml");
	assert_int_equal(llmt_auto_decide(&o, p, &c, "cpu[1-2]", tpn, 2, out, err, sizeof(err)), 0);
	assert_int_equal(o.tp, 2);
	/* GPU nodes: 80 GiB per GPU, the node's rate per GPU, TP in the node */
	unsigned g[1] = { 8 };
	auto_opts(&o, "tp=auto,pp=auto,model=/m.yaml");
	assert_int_equal(llmt_auto_decide(&o, p, &c, "gpu1", g, 1, out, err, sizeof(err)), 0);
	assert_true(out->in.gpu && out->in.mem_limit == 80 * 1073741824.0 && out->in.flops == 400e12);
	assert_int_equal(out->in.recompute, -1);     /* none, attn and full tried */
	free(e);
	free(out);
	llmt_policy_free(p);
}

static void test_no_fit_names_smallest(void **s)
{
	struct llmt_policy *p = pol();
	struct llmt_opts o;
	struct llmt_auto_out *out = calloc(1, sizeof(*out));
	llmt_config c;
	char err[512], want[128];
	unsigned tpn[8] = { 2, 2, 2, 2, 2, 2, 2, 2 };
	cfg(model_768, &c);
	auto_opts(&o, "tp=auto,pp=auto,model=/m.yaml");
	assert_int_equal(llmt_auto_decide(&o, p, &c, "cpu1", tpn, 1, out, err, sizeof(err)), -1);
	assert_false(o.choice.done);
	int k = out->min_nodes;
	assert_true(k > 1 && k <= 8);
	snprintf(want, sizeof(want), "the smallest allocation that fits is %d nodes x 2 tasks", k);
	if (!strstr(err, want))
		fail_msg("'%s' lacks '%s'", err, want);
	/* and it does fit there, and not on one node fewer */
	char nl[32];
	snprintf(nl, sizeof(nl), "cpu[1-%d]", k);
	if (llmt_auto_decide(&o, p, &c, nl, tpn, (unsigned)k, out, err, sizeof(err)))
		fail_msg("%d nodes: %s", k, err);
	auto_opts(&o, "tp=auto,pp=auto,model=/m.yaml");
	snprintf(nl, sizeof(nl), "cpu[1-%d]", k - 1);
	assert_int_equal(llmt_auto_decide(&o, p, &c, k - 1 > 1 ? nl : "cpu1", tpn, (unsigned)k - 1, out, err,
					  sizeof(err)), -1);
	free(out);
	llmt_policy_free(p);
}

static void test_missing_memory(void **s)
{
	struct llmt_policy *p = pol();
	struct llmt_opts o;
	struct llmt_auto_out *out = calloc(1, sizeof(*out));
	llmt_config c;
	char err[512];
	unsigned tpn[2] = { 8, 8 }, uneven[2] = { 2, 1 };
	cfg(model_tiny, &c);
	auto_opts(&o, "tp=auto,model=/m.yaml");
	assert_int_equal(llmt_auto_decide(&o, p, &c, "bare[1-2]", tpn, 2, out, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "node type nomem (GPUs) declares no gpu_memory_gib"));
	assert_int_equal(llmt_auto_decide(&o, p, &c, "other1", tpn, 1, out, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "node other1 has no node type"));
	assert_int_equal(llmt_auto_decide(&o, p, &c, "cpu[1-2]", uneven, 2, out, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "same task count on every node"));
	/* the policy refuses absurd figures with file:line:col */
	static const char *const badpol[] = {
		"node_types:\n  - {name: a, nodes: 'x[1-2]', memory_gib: 0}\n",
		"node_types:\n  - {name: a, nodes: 'x[1-2]', gpu_memory_gib: -80}\n",
		"node_types:\n  - {name: a, nodes: 'x[1-2]', gflops: fast}\n",
	};
	for (unsigned i = 0; i < 3; i++) {
		struct llmt_policy *q = NULL;
		assert_int_equal(llmt_policy_parse(badpol[i], strlen(badpol[i]), "b.yaml", &q, err, sizeof(err)),
				 LLMT_POLICY_ERROR);
		assert_non_null(strstr(err, "b.yaml:"));
		assert_non_null(strstr(err, "node_types."));
	}
	free(out);
	llmt_policy_free(p);
}

static void put(const char *name, const char *text, mode_t mode)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static int rd(const char *name, uid_t uid, char *err, size_t n)
{
	char path[128];
	llmt_config c;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return llmt_model_read(name[0] == '/' ? name : path, uid, &c, err, n);
}

static void test_hostile_model_files(void **s)
{
	char err[512], path[128];
	assert_non_null(mkdtemp(dir));
	put("ok.yaml", model_tiny, 0644);
	assert_int_equal(rd("ok.yaml", (uid_t)-1, err, sizeof(err)), 0);
	/* a FIFO with no writer: refused at once, not waited on */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(rd("fifo", (uid_t)-1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	/* a link to /etc/shadow (or any file): never followed */
	snprintf(path, sizeof(path), "%s/shadow", dir);
	assert_int_equal(symlink("/etc/shadow", path), 0);
	assert_int_equal(rd("shadow", (uid_t)-1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "symbolic link"));
	/* a huge (sparse) file: refused by its size, not read */
	snprintf(path, sizeof(path), "%s/huge", dir);
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0 && ftruncate(fd, (off_t)1 << 40) == 0);
	close(fd);
	assert_int_equal(rd("huge", (uid_t)-1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "larger than 64 KiB"));
	/* a device, a directory */
	assert_int_equal(rd("/dev/zero", (uid_t)-1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(rd("/tmp", (uid_t)-1, err, sizeof(err)), -1);
	/* garbage and a secret-looking key: refused, the text never quoted */
	put("garbage.yaml", "root:$6$secretsalt$hash:19000:0:99999:7:::\n\x01\xff: [\n", 0644);
	assert_int_equal(rd("garbage.yaml", (uid_t)-1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a model config"));
	assert_null(strstr(err, "secret"));
	put("key.yaml", "vocab_size: 256\nsecret_password_here: 1\n", 0644);
	assert_int_equal(rd("key.yaml", (uid_t)-1, err, sizeof(err)), -1);
	assert_null(strstr(err, "secret"));
	put("val.yaml", "vocab_size: topsecretvalue\n", 0644);
	assert_int_equal(rd("val.yaml", (uid_t)-1, err, sizeof(err)), -1);
	assert_null(strstr(err, "topsecret"));
	/* root reads for a user: a file that user could not read is refused */
	put("private.yaml", model_tiny, 0600);
	if (geteuid() == 0) {
		assert_int_equal(rd("private.yaml", 12345, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "not readable by the job's user"));
	}
	assert_int_equal(rd("ok.yaml", 12345, err, sizeof(err)), 0);   /* readable by all */
	/* nested 30000 deep (libyaml's scanner: seconds of slurmstepd's time
	 * at 64 KiB): refused by its depth, before the load */
	char *deep = malloc(60001);
	assert_non_null(deep);
	memset(deep, '[', 30000);
	memset(deep + 30000, ']', 30000);
	deep[60000] = '\0';
	put("deep.yaml", deep, 0644);
	free(deep);
	assert_int_equal(rd("deep.yaml", (uid_t)-1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nested deeper than"));
	/* a file name that does not exist */
	assert_int_equal(rd("none.yaml", (uid_t)-1, err, sizeof(err)), -1);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* A model config shared through a project group (0640, group of the
 * user's) is readable by the job's user: the plugin reads it with the
 * user's privileges and groups (slurmstepd's user_init, sbatch), so it
 * must not refuse it (it did: only the owner's and others' bits counted).
 * Root reading for a user never lends the user its own groups. */
static void test_group_readable_model(void **s)
{
	(void)s;
	if (geteuid() != 0)
		skip();
	char err[512], path[128];
	strcpy(dir, "/tmp/test_autolayout.XXXXXX");
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755);
	put("grp.yaml", model_tiny, 0640);
	snprintf(path, sizeof(path), "%s/grp.yaml", dir);
	assert_int_equal(chown(path, 0, 4242), 0);
	int st = 0;
	pid_t pid = fork();
	if (pid == 0) {
		gid_t g = 4242;
		if (setgroups(1, &g) || setegid(4243) || seteuid(12345))
			_exit(2);
		if (rd("grp.yaml", 12345, err, sizeof(err)) != 0) {
			fprintf(stderr, "group member refused: %s\n", err);
			_exit(1);
		}
		/* root (in that group itself) reading for the user: its groups
		 * are not the user's, so the group's bit does not count */
		if (seteuid(0) || setegid(4242))
			_exit(2);
		_exit(rd("grp.yaml", 12345, err, sizeof(err)) == -1 &&
		      strstr(err, "not readable by the job's user") ? 0 : 3);
	}
	assert_true(pid > 0 && waitpid(pid, &st, 0) == pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* a limit between full's and none's memory: the fastest candidate is full
 * in the first K of the 12 layers, the smallest K that fits; it beats
 * full in all, and the ranks get K */
static void test_fewest_layers(void **s)
{
	(void)s;
	llmt_config c;
	cfg(model_768, &c);
	llmt_autoplan_in in = { .nodes = 1, .tasks_per_node = 1, .tp_domain = 1, .global_batch = 2,
		.T = 256, .B = 1, .recompute = LLMT_RECOMPUTE_NONE, .margin = 1, .mem_limit = 1e15,
		.flops = 1e11, .bw_intra = 1e10, .bw_inter = 1e9, .lat = 1e-4 };
	llmt_autoplan_cand none = { 1, 1, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, full = none, y;
	full.recompute = LLMT_RECOMPUTE_FULL;
	llmt_autoplan_price(&c, &in, &none);
	llmt_autoplan_price(&c, &in, &full);
	in.mem_limit = (none.mem + full.mem) / 2;
	in.recompute = -1;
	llmt_autoplan_cand out[8];
	int n;
	llmt_autoplan(&c, &in, out, 8, &n, NULL);
	char rt[24];
	printf("none %.0f, full %.0f bytes, limit %.0f: chosen %s, %.4f s (%d feasible)\n", none.mem,
		full.mem, in.mem_limit, llmt_autoplan_rc_text(&out[0], rt, sizeof rt), out[0].step_s, n);
	assert_int_equal(n, 2);                   /* full in all 12, full in K */
	assert_int_equal(out[0].recompute, LLMT_RECOMPUTE_FULL);
	int k = out[0].rc_layers;
	assert_true(k > 1 && k < 12);
	assert_true(out[0].step_s < out[1].step_s && out[1].rc_layers == 0);
	y = out[0];
	assert_int_equal(llmt_autoplan_price(&c, &in, &y), 0);
	y.rc_layers = k - 1;
	assert_int_equal(llmt_autoplan_price(&c, &in, &y), 1);    /* K - 1 does not fit */
	char want[32];
	snprintf(want, sizeof want, "full:%d", k);
	assert_string_equal(llmt_autoplan_rc_text(&out[0], rt, sizeof rt), want);
	/* the job: LLM_TRAIN_RECOMPUTE_LAYERS and recompute_layers= in LLM_TRAIN_AUTO */
	struct llmt_policy *p = pol();
	struct llmt_opts o;
	char err[512];
	auto_opts(&o, "tp=auto,pp=auto,model=/m.yaml");
	o.tp = o.pp = o.dp = 1;
	o.choice.done = 1;
	o.choice.recompute = LLMT_RECOMPUTE_FULL;
	o.choice.recompute_layers = (unsigned)k;
	struct llmt_rm_task t = { 0 };
	t.gpu = -1;
	struct llmt_env *e = calloc(1, sizeof(*e));
	struct llmt_env_input ei = { .task = &t, .layout = { 1, 1, 1 }, .world_size = 1, .local_world_size = 1,
		.nic = "lo", .master_addr = "cpu1", .job_id = 1, .opts = &o, .policy = p };
	assert_int_equal(llmt_envgen(&ei, e, err, sizeof(err)), 0);
	snprintf(want, sizeof want, "%d", k);
	assert_string_equal(llmt_env_get(e, "LLM_TRAIN_RECOMPUTE_LAYERS"), want);
	snprintf(want, sizeof want, "recompute_layers=%d", k);
	assert_non_null(strstr(llmt_env_get(e, "LLM_TRAIN_AUTO"), want));
	free(e);
	llmt_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_choice_is_planners_fastest),
		cmocka_unit_test(test_no_fit_names_smallest),
		cmocka_unit_test(test_missing_memory),
		cmocka_unit_test(test_hostile_model_files),
		cmocka_unit_test(test_group_readable_model),
		cmocka_unit_test(test_fewest_layers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

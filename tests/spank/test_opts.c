/* Unit tests of spank/opts.c: --llm-train SPEC and --llm-* parsing, every
 * bad case refused with the bad value named, and validation against the
 * task count, NVLink domains and the policy's limits. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "opts.h"
#include "policy.h"

static const char pol_text[] =
	"defaults: {tp: 1, pp: 1, dp: auto, restarts: 2, nccl_profile: ib}\n"
	"limits:\n"
	"  max_restarts: 5\n"
	"  ckpt_roots: [/lustre, /scratch/]\n"
	"  partitions: {gpu: {max_nodes: 4, max_gpus: 16}}\n"
	"  accounts: {small: {max_nodes: 2}}\n"
	"node_types:\n"
	"  - {name: h100, nodes: 'gpu[1-8]', gpus_per_node: 8, nvlink: node}\n"
	"  - {name: cpu, nodes: 'cpu[1-8]', gpus_per_node: 0}\n"
	"nccl_profiles: {ib: {NCCL_IB_HCA: '${nic}'}, tcp: {NCCL_IB_DISABLE: '1'}}\n";

static struct llmt_policy *pol(void)
{
	struct llmt_policy *p;
	char err[512];
	int rc = llmt_policy_parse(pol_text, strlen(pol_text), "test.yaml", &p, err, sizeof(err));
	if (rc != LLMT_POLICY_OK)
		fail_msg("policy: %s", err);
	return p;
}

static void test_full_spec(void **s)
{
	struct llmt_opts o;
	char err[256], buf[512];
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_parse_spec(&o,
		"tp=2,pp=4,dp=auto,ckpt-dir=/lustre/me/run7,ckpt-interval=30m,restarts=5,nccl=ib,explain",
		err, sizeof(err)), 0);
	assert_true(o.enabled);
	assert_int_equal(o.tp, 2);
	assert_int_equal(o.pp, 4);
	assert_true(o.dp_auto);
	assert_string_equal(o.ckpt_dir, "/lustre/me/run7");
	assert_int_equal(o.ckpt_interval.kind, LLMT_IVAL_SECONDS);
	assert_int_equal(llmt_interval_seconds(&o.ckpt_interval), 1800);
	assert_int_equal(o.restarts, 5);
	assert_string_equal(o.nccl_profile, "ib");
	assert_true(o.explain);
	/* format, then parse again: same options */
	assert_int_equal(llmt_opts_format(&o, buf, sizeof(buf)), 0);
	struct llmt_opts o2;
	llmt_opts_init(&o2);
	assert_int_equal(llmt_opts_parse_spec(&o2, buf, err, sizeof(err)), 0);
	assert_memory_equal(&o, &o2, sizeof(o));
}

static void test_intervals(void **s)
{
	struct llmt_interval iv;
	char err[256], buf[32];
	const struct { const char *in; enum llmt_ival_kind k; uint64_t sec; } c[] = {
		{ "100", LLMT_IVAL_STEPS, 0 }, { "45s", LLMT_IVAL_SECONDS, 45 },
		{ "30m", LLMT_IVAL_SECONDS, 1800 }, { "2h", LLMT_IVAL_SECONDS, 7200 },
		{ "auto", LLMT_IVAL_AUTO, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		assert_int_equal(llmt_interval_parse(c[i].in, &iv, err, sizeof(err)), 0);
		assert_int_equal(iv.kind, c[i].k);
		assert_int_equal(llmt_interval_seconds(&iv), c[i].sec);
		llmt_interval_format(&iv, buf, sizeof(buf));
		assert_string_equal(buf, c[i].in);
	}
}

static void test_separate_options(void **s)
{
	struct llmt_opts o;
	char err[256];
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_set(&o, "llm-tp", "8", err, sizeof(err)), 0);
	assert_int_equal(llmt_opts_set(&o, "llm-pp", "2", err, sizeof(err)), 0);
	assert_int_equal(llmt_opts_set(&o, "llm-dp", "auto", err, sizeof(err)), 0);
	assert_int_equal(llmt_opts_set(&o, "llm-ckpt-dir", "/scratch/a,b", err, sizeof(err)), 0);
	assert_int_equal(llmt_opts_set(&o, "llm-ckpt-interval", "500", err, sizeof(err)), 0);
	assert_int_equal(llmt_opts_set(&o, "llm-restarts", "0", err, sizeof(err)), 0);
	assert_int_equal(llmt_opts_set(&o, "llm-nccl-profile", "tcp", err, sizeof(err)), 0);
	assert_int_equal(llmt_opts_set(&o, "llm-explain", NULL, err, sizeof(err)), 0);
	assert_int_equal(o.tp, 8);
	assert_string_equal(o.ckpt_dir, "/scratch/a,b");
	assert_int_equal(o.restarts, 0);
	assert_int_equal(o.set & LLMT_SET_RESTARTS, LLMT_SET_RESTARTS);
	assert_true(o.explain);
	/* --llm-train=SPEC through set() overrides what was set before it */
	assert_int_equal(llmt_opts_set(&o, "llm-train", "tp=2", err, sizeof(err)), 0);
	assert_int_equal(o.tp, 2);
	/* bare --llm-train */
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_set(&o, "llm-train", NULL, err, sizeof(err)), 0);
	assert_true(o.enabled);
	assert_int_equal(o.set, 0);
}

/* spec is refused with a one-line message (no control character) that
 * holds must. */
static void expect_refused(const char *spec, const char *must)
{
	struct llmt_opts o;
	char err[256] = "";
	llmt_opts_init(&o);
	if (llmt_opts_parse_spec(&o, spec, err, sizeof(err)) != -1)
		fail_msg("'%s' accepted", spec);
	if (!strstr(err, must))
		fail_msg("'%s': message '%s' does not name '%s'", spec, err, must);
	for (const char *p = err; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
}

static void test_bad_specs(void **s)
{
	const struct { const char *spec; const char *must; } c[] = {
		{ "foo=1", "foo" },
		{ "tp=abc", "abc" },
		{ "tp=0", "tp=0" },
		{ "tp=-2", "-2" },
		{ "tp=2x", "2x" },
		{ "pp=99999999999999999999999", "99999999999999999999999" },
		{ "dp=4096000", "4096000" },
		{ "tp=", "tp=" },
		{ "tp", "tp" },
		{ "tp=2,,pp=2", "empty item" },
		{ "tp=2,", "empty item" },
		{ ",tp=2", "empty item" },
		{ "ckpt-dir=relative/dir", "relative/dir" },
		{ "ckpt-interval=0", "0" },
		{ "ckpt-interval=10x", "10x" },
		{ "ckpt-interval=m", "m" },
		{ "ckpt-interval=-5m", "-5m" },
		{ "ckpt-interval=9999999999h", "ckpt-interval=9999999999h is too large" },   /* was "=9999999999" */
		{ "restarts=1e3", "1e3" },
		{ "restarts=100001", "100001" },
		{ "nccl=bad/name", "bad/name" },
		{ "explain=maybe", "maybe" },
		{ "train=1", "train" },
		{ " tp=2", " tp" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		expect_refused(c[i].spec, c[i].must);
}

/* Issue 14 items 5 and 6 (fail on the old code, which accepted
 * "tp=1,tp=2" and put a value's newline into the message, i.e. into
 * slurmd's log): a key twice in one SPEC is refused naming the key; a
 * control character anywhere is refused before any message quotes it. */
static void test_duplicate_and_control(void **s)
{
	(void)s;
	const struct { const char *spec; const char *must; } c[] = {
		{ "tp=1,tp=2", "key 'tp' given twice" },
		{ "nccl=ib,nccl-profile=tcp", "key 'nccl-profile' given twice" },
		{ "explain,dp=2,explain=0", "key 'explain' given twice" },
		{ "tp=1,llm-tp=2", "key 'llm-tp' given twice" },
		{ "tp=1\nerror: llm_train: prolog on node1: draining", "tp holds a control character (byte 0x0a)" },
		{ "tp=1,,pp=\r2", "pp holds a control character (byte 0x0d)" },
		{ "bogus\n=1", "SPEC holds a control character" },
		{ "nccl=a\x1b[31m", "nccl holds a control character (byte 0x1b)" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		expect_refused(c[i].spec, c[i].must);
	/* the separate options the same */
	struct llmt_opts o;
	char err[256] = "";
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_set(&o, "llm-nccl-profile", "ib\nerror: forged", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nccl-profile holds a control character"));
	assert_null(strchr(err, '\n'));
	assert_int_equal(llmt_opts_set(&o, "llm-ckpt-interval", "5m\tx", err, sizeof(err)), -1);
	assert_null(strchr(err, '\t'));
	/* given once each: fine */
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_parse_spec(&o, "tp=2,pp=1,nccl=ib,explain", err, sizeof(err)), 0);
}

static void test_too_long(void **s)
{
	static char spec[LLMT_SPEC_MAX + 100];
	struct llmt_opts o;
	char err[256];
	memset(spec, 'a', sizeof(spec) - 1);
	spec[sizeof(spec) - 1] = 0;
	memcpy(spec, "ckpt-dir=/", 10);
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_parse_spec(&o, spec, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "longer"));
	assert_int_equal(llmt_opts_set(&o, "ckpt-dir", spec + 9, err, sizeof(err)), -1);
	/* a path just over LLMT_PATH_MAX */
	spec[LLMT_PATH_MAX + 9] = 0;
	assert_int_equal(llmt_opts_set(&o, "ckpt-dir", spec + 9, err, sizeof(err)), -1);
}

static int validate(const char *spec, unsigned ntasks, unsigned nnodes, const char *part,
		    const char *acct, const char *nodelist, char *err, size_t errlen,
		    struct llmt_opts *out)
{
	struct llmt_policy *p = pol();
	struct llmt_opts o;
	struct llmt_job_info j = { ntasks, nnodes, part, acct, nodelist };
	llmt_opts_init(&o);
	if (llmt_opts_parse_spec(&o, spec, err, errlen))
		fail_msg("parse '%s': %s", spec, err);
	llmt_opts_apply_defaults(&o, p);
	int rc = llmt_opts_validate(&o, p, &j, err, errlen);
	if (out)
		*out = o;
	llmt_policy_free(p);
	return rc;
}

static void test_validate_good(void **s)
{
	struct llmt_opts o;
	char err[256];
	if (validate("tp=8,pp=2", 32, 4, NULL, "big", "gpu[1-4]", err, sizeof(err), &o))
		fail_msg("%s", err);
	assert_int_equal(o.dp, 2);
	assert_int_equal(validate("tp=8", 16, 2, "gpu", NULL, "gpu[1-2]", err, sizeof(err), &o), 0);
	assert_int_equal(o.restarts, 2);              /* policy default */
	assert_string_equal(o.nccl_profile, "ib");    /* policy default */
	assert_int_equal(validate("tp=2,pp=2,dp=4,ckpt-dir=/scratch/u/r1", 16, 4, NULL, NULL, "cpu[1-4]",
				  err, sizeof(err), &o), 0);
	assert_int_equal(validate("ckpt-dir=/lustre", 4, 1, NULL, NULL, NULL, err, sizeof(err), &o), 0);
	assert_int_equal(o.dp, 4);
}

static void test_validate_bad(void **s)
{
	const struct { const char *spec; unsigned nt, nn; const char *part, *acct, *nl, *must; } c[] = {
		{ "tp=2,pp=2,dp=3", 16, 2, NULL, NULL, NULL, "dp=3" },
		{ "tp=3", 16, 2, NULL, NULL, NULL, "tp=3" },
		{ "tp=16", 32, 2, NULL, NULL, "gpu[1-2]", "tp=16" },
		{ "tp=8", 16, 4, NULL, NULL, "cpu[1-4]", "tp=8" },
		{ "restarts=6", 8, 1, NULL, NULL, NULL, "restarts=6" },
		{ "ckpt-dir=/home/me", 8, 1, NULL, NULL, NULL, "/home/me" },
		{ "ckpt-dir=/lustre/../etc", 8, 1, NULL, NULL, NULL, "'..'" },
		{ "ckpt-dir=/lustreX/me", 8, 1, NULL, NULL, NULL, "/lustreX/me" },
		{ "nccl=nope", 8, 1, NULL, NULL, NULL, "nope" },
		{ "tp=1", 40, 5, "gpu", NULL, "gpu[1-5]", "5 nodes" },
		{ "tp=1", 24, 3, "gpu", NULL, "gpu[1-3]", "24 GPUs" },
		{ "tp=1", 24, 3, NULL, "small", NULL, "account 'small'" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char err[256] = "";
		if (validate(c[i].spec, c[i].nt, c[i].nn, c[i].part, c[i].acct, c[i].nl, err,
			     sizeof(err), NULL) != -1)
			fail_msg("'%s' (%u tasks) accepted", c[i].spec, c[i].nt);
		if (!strstr(err, c[i].must))
			fail_msg("'%s': message '%s' does not name '%s'", c[i].spec, err, c[i].must);
	}
}

static void test_ckpt_roots(void **s)
{
	struct llmt_policy *p = pol();
	char err[256];
	assert_int_equal(llmt_ckpt_dir_allowed("/lustre", p, err, sizeof(err)), 0);
	assert_int_equal(llmt_ckpt_dir_allowed("/scratch/x/y", p, err, sizeof(err)), 0);
	assert_int_equal(llmt_ckpt_dir_allowed("/scratch2", p, err, sizeof(err)), -1);
	assert_int_equal(llmt_ckpt_dir_allowed("/lustre/./x", p, err, sizeof(err)), -1);
	assert_int_equal(llmt_ckpt_dir_allowed("/lustre/x\n", p, err, sizeof(err)), -1);
	assert_int_equal(llmt_ckpt_dir_allowed("lustre/x", p, err, sizeof(err)), -1);
	/* no roots: any clean absolute path */
	assert_int_equal(llmt_ckpt_dir_allowed("/anything/x", NULL, err, sizeof(err)), 0);
	assert_int_equal(llmt_ckpt_dir_allowed("/anything/../x", NULL, err, sizeof(err)), -1);
	llmt_policy_free(p);
}

/* tp/pp/micro-batch=auto and the planner's keys (opts_auto.c): parsed,
 * refused without a model, formatted back; fails on the code before
 * tp=auto existed ("tp=auto is not a number"). */
static void test_auto_keys(void **s)
{
	struct llmt_opts o, o2;
	char err[256], buf[512];
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_parse_spec(&o, "tp=auto,pp=auto,micro-batch=auto,model=/m/a.yaml,"
					      "global-batch=64,seq=128", err, sizeof(err)), 0);
	assert_true(o.tp_auto && o.pp_auto && o.mb_auto);
	assert_int_equal(o.tp, 0);
	assert_true(llmt_opts_is_auto(&o));
	assert_string_equal(o.model, "/m/a.yaml");
	assert_int_equal(o.global_batch, 64);
	assert_int_equal(o.seq, 128);
	assert_int_equal(llmt_opts_format(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "tp=auto,pp=auto,model=/m/a.yaml,micro-batch=auto,global-batch=64,seq=128");
	llmt_opts_init(&o2);
	assert_int_equal(llmt_opts_parse_spec(&o2, buf, err, sizeof(err)), 0);
	assert_true(o2.tp_auto && o2.pp_auto && o2.mb_auto);
	/* a fixed micro-batch, tp fixed and pp automatic */
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_parse_spec(&o, "tp=2,pp=auto,micro-batch=4,model=/m/a.yaml", err,
					      sizeof(err)), 0);
	assert_int_equal(o.tp, 2);
	assert_false(o.tp_auto);
	assert_int_equal(o.micro_batch, 4);
	/* bad values named */
	static const char *const bad[][2] = {
		{ "model=rel/a.yaml", "absolute" }, { "model=/m/../etc/shadow", "absolute" },
		{ "micro-batch=0", "at least 1" }, { "micro-batch=x", "not a number" },
		{ "global-batch=99999999999", "too large" }, { "seq=-1", "not a number" },
		{ "tp=autox", "not a number" }, { "model=/a,model=/b", "twice" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		llmt_opts_init(&o);
		if (llmt_opts_parse_spec(&o, bad[i][0], err, sizeof(err)) != -1)
			fail_msg("'%s' accepted", bad[i][0]);
		if (!strstr(err, bad[i][1]))
			fail_msg("'%s': '%s' does not say '%s'", bad[i][0], err, bad[i][1]);
	}
}

/* auto without a model: one line, at validation (submit) */
static void test_auto_needs_model(void **s)
{
	struct llmt_opts o;
	char err[256];
	assert_int_equal(validate("tp=auto,pp=auto", 8, 2, NULL, NULL, "cpu[1-2]", err, sizeof(err), &o), -1);
	assert_non_null(strstr(err, "tp=auto needs model=FILE"));
	assert_int_equal(validate("micro-batch=auto", 0, 0, NULL, NULL, NULL, err, sizeof(err), &o), -1);
	assert_non_null(strstr(err, "micro-batch=auto needs model=FILE"));
	/* with a model: valid before the choice, whatever the task count */
	if (validate("tp=auto,pp=auto,model=/m/a.yaml", 7, 1, NULL, NULL, "cpu1", err, sizeof(err), &o))
		fail_msg("%s", err);
	assert_int_equal(o.dp, 0);   /* not written: the planner's */
	/* a fixed tp is still held to the NVLink domain */
	assert_int_equal(validate("tp=16,pp=auto,model=/m/a.yaml", 16, 2, NULL, NULL, "gpu[1-2]", err,
				  sizeof(err), &o), -1);
	assert_non_null(strstr(err, "NVLink domain"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_spec),
		cmocka_unit_test(test_intervals),
		cmocka_unit_test(test_separate_options),
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_duplicate_and_control),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_validate_good),
		cmocka_unit_test(test_validate_bad),
		cmocka_unit_test(test_ckpt_roots),
		cmocka_unit_test(test_auto_keys),
		cmocka_unit_test(test_auto_needs_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

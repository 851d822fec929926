/* test_ckpt_faults.c: checkpoint fault tests without MPI, on the ranks
 * simulated by ckpt_sim.h: corruption, failed saves, a blocked
 * directory, retention, a config mismatch. */
#define _GNU_SOURCE
#include "ckpt_sim.h"
#include "llmt/ckptid.h"
#include "llmt/env.h"
#include "ckpt/safetensors.h"
#include <dlfcn.h>
#include <errno.h>

/* strerror as a libc may make it: errno changed (clobber set). The
 * checkpoint code must classify by the errno of the failed call, saved
 * before the message is formatted. */
static int clobber;
char *strerror(int e)
{
	static char *(*real)(int);
	char *r;

	if (!real)
		real = (char *(*)(int))dlsym(RTLD_NEXT, "strerror");
	r = real(e);
	if (clobber)
		errno = EIO;
	return r;
}

/* rename as world rank 0 may race it (take_dir set): the moment a rank's
 * done record has its name, the step directory holding it is renamed to
 * take_dir, before the writer's fsync of that directory (ck_write_record) */
static const char *take_dir;
int rename(const char *from, const char *to)
{
	static int (*real)(const char *, const char *);
	char dir[4096];
	const char *s;
	int r;

	if (!real)
		real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	r = real(from, to);
	s = strrchr(to, '/');
	if (r == 0 && take_dir && s && strstr(s, ".done.json")) {
		snprintf(dir, sizeof dir, "%.*s", (int)(s - to), to);
		assert_int_equal(real(dir, take_dir), 0);
	}
	return r;
}

/* ---- tests ------------------------------------------------------------ */
static void corrupt_case(const char *name, void (*damage)(const char *step), const char *want)
{
	char dir[300], step[320], err[1024];

	path_of(dir, sizeof dir, name);
	assert_int_equal(save_layout(dir, 3, 2, 1, 2, 0, name), 0);
	snprintf(step, sizeof step, "%s/step_00000003", dir);
	damage(step);
	assert_int_equal(ck_validate_dir(step, 0, NULL, err, sizeof err), LLMT_EXIT_DATA);
	print_message("  %s -> %s\n", name, err);
	assert_non_null(strstr(err, want));
	/* loading refuses it too, and the files are still there */
	assert_int_equal(load_layout(step, 2, 1, 2, 0), LLMT_EXIT_DATA);
	assert_int_equal(access(step, F_OK), 0);
	/* the directory resolves to nothing complete (a bad checksum is only
	 * seen by reading everything: resolve checks sizes, load checksums) */
	if (strcmp(want, "wrong checksum"))
		assert_int_equal(llmt_ckpt_resolve(dir, err, sizeof err, err, sizeof err), LLMT_EXIT_NOINPUT);
}

static void flip_byte(const char *step)
{
	char p[400];
	FILE *f;
	int c;

	snprintf(p, sizeof p, "%s/rank_00003.bin", step);
	f = fopen(p, "r+b");
	assert_non_null(f);
	fseek(f, 5, SEEK_SET);
	c = fgetc(f);
	fseek(f, 5, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
}

static void truncate_shard(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/rank_00001.bin", step);
	assert_int_equal(truncate(p, 16), 0);
}

static void remove_shard(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/rank_00002.bin", step);
	assert_int_equal(unlink(p), 0);
}

static void truncate_manifest(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/manifest.json", step);
	assert_int_equal(truncate(p, 100), 0);
}

static void remove_manifest(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/manifest.json", step);
	assert_int_equal(unlink(p), 0);
}

static void replicas_disagreed(const char *step)
{
	char p[400];
	json_error_t je;
	json_t *m;

	snprintf(p, sizeof p, "%s/manifest.json", step);
	m = json_load_file(p, 0, &je);
	assert_non_null(m);
	json_object_set_new(m, "replicas_agree", json_false());
	assert_int_equal(json_dump_file(m, p, 0), 0);
	json_decref(m);
}

static void test_corrupt(void **state)
{
	(void)state;
	corrupt_case("c_sdc", replicas_disagreed, "replicas disagreed");
	corrupt_case("c_sum", flip_byte, "wrong checksum");
	corrupt_case("c_size", truncate_shard, "wrong size");
	corrupt_case("c_missing", remove_shard, "missing shard");
	corrupt_case("c_manifest", truncate_manifest, "bad manifest");
	corrupt_case("c_nomanifest", remove_manifest, "missing manifest");
}

static void test_failed_save(void **state)
{
	(void)state;
	char dir[300], p[400], err[1024], *lat;

	path_of(dir, sizeof dir, "fail");
	assert_int_equal(save_layout(dir, 100, 1, 1, 2, 1, "f1"), 0);
	setenv("LLMT_TEST_CKPT_FAIL", "1", 1);
	assert_int_equal(save_layout(dir, 200, 1, 1, 2, 1, "f2"), LLMT_EXIT_IO);
	unsetenv("LLMT_TEST_CKPT_FAIL");
	snprintf(p, sizeof p, "%s/step_00000200", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/step_00000100", dir);
	assert_int_equal(ck_validate_dir(p, 0, NULL, err, sizeof err), 0);   /* keep=1 deleted nothing */
	snprintf(p, sizeof p, "%s/latest", dir);
	lat = slurp(p);
	assert_string_equal(lat, "step_00000100\n");
	free(lat);
}

static void test_blocked_dir(void **state)
{
	(void)state;
	char dir[300], p[400], err[1024];
	FILE *f;

	/* the temporary directory name is taken by a file: the save fails at
	 * once on every rank (nobody waits for a record that never comes) */
	path_of(dir, sizeof dir, "blocked");
	assert_int_equal(save_layout(dir, 1, 1, 1, 2, 0, "b0"), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	setenv("LLM_TRAIN_CKPT_TIMEOUT", "60", 1);
	assert_int_equal(save_layout(dir, 2, 1, 1, 2, 0, "b1"), LLMT_EXIT_IO);
	unsetenv("LLM_TRAIN_CKPT_TIMEOUT");
	snprintf(p, sizeof p, "%s/step_00000002", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/step_00000001", dir);
	assert_int_equal(ck_validate_dir(p, 0, NULL, err, sizeof err), 0);
	/* the next complete save clears the leftovers of failed ones up to its
	 * step, and only those */
	snprintf(p, sizeof p, "%s/.tmp.step_00000009.zz", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1", dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1/rank_00000.bin", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(save_layout(dir, 3, 1, 1, 2, 0, "b2"), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1.rank_00000.failed", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000009.zz", dir);
	assert_int_equal(access(p, F_OK), 0);
}

static void test_retention(void **state)
{
	(void)state;
	char dir[300], p[400], tok[16];
	char **paths;
	long *steps;
	int n;

	path_of(dir, sizeof dir, "keep");
	mkdir(dir, 0755);
	snprintf(p, sizeof p, "%s/step_00000000", dir);   /* incomplete: never deleted */
	mkdir(p, 0755);
	for (long s = 1; s <= 4; s++) {
		snprintf(tok, sizeof tok, "k%ld", s);
		assert_int_equal(save_layout(dir, s * 10, 1, 1, 1, 2, tok), 0);
	}
	n = ck_list(dir, 0, &paths, &steps, NULL, NULL);
	assert_int_equal(n, 2);
	assert_int_equal(steps[0], 40);
	assert_int_equal(steps[1], 30);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(steps);
	snprintf(p, sizeof p, "%s/step_00000010", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	/* resolve takes the newest complete one even when `latest` lags */
	snprintf(p, sizeof p, "%s/latest", dir);
	assert_int_equal(ck_write_file_atomic(p, "step_00000030\n", 14, p, sizeof p), 0);
	char out[4096];
	assert_int_equal(llmt_ckpt_resolve(dir, out, sizeof out, p, sizeof p), 0);
	snprintf(p, sizeof p, "%s/step_00000040", dir);
	assert_string_equal(out, p);
	snprintf(p, sizeof p, "%s/step_00000000", dir);
	assert_int_equal(access(p, F_OK), 0);
	/* saving the same step again keeps the older one aside */
	assert_int_equal(save_layout(dir, 40, 1, 1, 1, 0, "k5"), 0);
	glob_t g;
	snprintf(p, sizeof p, "%s/step_00000040.superseded.*", dir);
	assert_int_equal(glob(p, 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 1);
	globfree(&g);
	snprintf(p, sizeof p, "%s/step_00000040", dir);
	assert_int_equal(ck_validate_dir(p, 0, NULL, p, sizeof p), 0);
}

/* Which of steps (0-terminated) of dir exist: a string of 1s and 0s */
static const char *present(const char *dir, const long *steps)
{
	static char out[16];
	char p[400];
	int i;

	for (i = 0; steps[i] && i < 15; i++) {
		snprintf(p, sizeof p, "%s/step_%08ld/manifest.json", dir, steps[i]);
		out[i] = access(p, F_OK) == 0 ? '1' : '0';
	}
	out[i] = 0;
	return out;
}

/* A checkpoint the wrapper marked bad (LLM_TRAIN_CKPT_BAD) takes no slot
 * of the retention count and stays; the one this run loaded stays too. */
static void test_retention_marked(void **state)
{
	(void)state;
	char dir[300], p[400], id[64];
	const long st[] = { 10, 20, 30, 40, 50, 60, 0 };

	path_of(dir, sizeof dir, "keepbad");
	assert_int_equal(save_layout(dir, 10, 1, 1, 1, 2, "b1"), 0);
	assert_int_equal(save_layout(dir, 20, 1, 1, 1, 2, "b2"), 0);
	snprintf(p, sizeof p, "%s/step_00000020", dir);
	llmt_ckpt_id(p, id, sizeof id);
	assert_true(llmt_ckpt_id_ok(id));
	setenv(LLMT_ENV_CKPT_BAD, id, 1);
	assert_int_equal(save_layout(dir, 30, 1, 1, 1, 2, "b3"), 0);
	assert_string_equal(present(dir, st), "111000");   /* 10 is the good fallback */
	assert_int_equal(save_layout(dir, 40, 1, 1, 1, 2, "b4"), 0);
	assert_string_equal(present(dir, st), "011100");   /* keep 2 good: 40 and 30 */
	unsetenv(LLMT_ENV_CKPT_BAD);
	snprintf(p, sizeof p, "%s/step_00000030", dir);
	sim_verified = p;
	assert_int_equal(save_layout(dir, 50, 1, 1, 1, 1, "b5"), 0);
	assert_int_equal(save_layout(dir, 60, 1, 1, 1, 1, "b6"), 0);
	sim_verified = NULL;
	assert_string_equal(present(dir, st), "001001");   /* keep 1, and the loaded 30 */
}

static void unlink_shard0(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/rank_00000.bin", step);
	unlink(p);
}

/* A shard gone after the manifest was checked (between open and load, or
 * before a blob is read) is the checkpoint's (65), not the file system's
 * (74): by the errno of the open, not the one formatting left. */
static void test_missing_after_open(void **state)
{
	(void)state;
	char dir[300], step[400], err[1024];
	int code;
	void *b = NULL;
	size_t len;

	path_of(dir, sizeof dir, "gone");
	assert_int_equal(save_layout(dir, 5, 1, 1, 1, 0, "g1"), 0);
	snprintf(step, sizeof step, "%s/step_00000005", dir);
	llmt_ckpt *c = llmt_ckpt_open(step, &code, err, sizeof err);
	assert_non_null(c);
	clobber = 1;
	sim_after_open = unlink_shard0;
	assert_int_equal(load_layout(step, 1, 1, 1, 0), LLMT_EXIT_DATA);
	sim_after_open = NULL;
	assert_int_equal(llmt_ckpt_blob_get(c, "data", 0, &b, &len, err, sizeof err), LLMT_EXIT_DATA);
	clobber = 0;
	assert_non_null(strstr(err, "No such file"));
	assert_null(b);
	/* a blob the manifest does not list: the checkpoint lacks a piece */
	assert_int_equal(llmt_ckpt_blob_get(c, "nosuch", 0, &b, &len, err, sizeof err), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "incomplete checkpoint: no blob nosuch of rank 0"));
	llmt_ckpt_close(c);
	/* the shard a Hugging Face index names is missing: 66, as a missing
	 * --init-from input (st_open's errno, not formatting's) */
	ck_source hs;
	FILE *f;
	path_of(dir, sizeof dir, "hfgone");
	mkdir(dir, 0755);
	snprintf(step, sizeof step, "%s/model.safetensors.index.json", dir);
	assert_non_null(f = fopen(step, "w"));
	fputs("{\"weight_map\": {\"a\": \"model-1.safetensors\"}}", f);
	fclose(f);
	clobber = 1;
	assert_int_equal(st_open_dir(dir, &hs, err, sizeof err), LLMT_EXIT_NOINPUT);
	clobber = 0;
	assert_non_null(strstr(err, "model-1.safetensors: No such file"));
}

static void test_config_mismatch(void **state)
{
	(void)state;
	char dir[300], step[320], err[1024];
	int code;
	llmt_ckpt *c;
	sim_rank s;
	llmt_config other;

	path_of(dir, sizeof dir, "cfg");
	assert_int_equal(save_layout(dir, 1, 1, 1, 1, 0, "c1"), 0);
	snprintf(step, sizeof step, "%s/step_00000001", dir);
	c = llmt_ckpt_open(step, &code, err, sizeof err);
	assert_non_null(c);
	other = cfg;
	other.n_kv_heads = 1;
	build_rank(&s, 1, 1, 1, 0);
	s.st.config = &other;
	assert_int_equal(llmt_ckpt_load(c, &s.st, err, sizeof err), LLMT_EXIT_USAGE);
	assert_non_null(strstr(err, "n_kv_heads"));
	/* a kind the checkpoint lacks: error unless optional */
	s.st.config = &cfg;
	s.st.bufs[1].kind = "lion_m";
	assert_int_equal(llmt_ckpt_load(c, &s.st, err, sizeof err), LLMT_EXIT_DATA);
	s.st.bufs[1].optional = 1;
	assert_int_equal(llmt_ckpt_load(c, &s.st, err, sizeof err), 0);
	free_rank(&s);
	llmt_ckpt_close(c);
}

/* a done record taken (its directory renamed) between its rename and the
 * directory's fsync is published, not an I/O failure (seen in CI: rank 1
 * exited 74 at its next save for a step that had committed) */
static void test_record_taken(void **state)
{
	(void)state;
	char tdir[300], taken[320], err[1024], path[400];
	json_t *done = json_object();

	path_of(tdir, sizeof tdir, "race.tmp");
	snprintf(taken, sizeof taken, "%s.taken", tdir);
	assert_int_equal(ck_mkdir_p(tdir), 0);
	take_dir = taken;
	assert_int_equal(ck_publish_done(done, 1, tdir, NULL, err, sizeof err), 0);
	take_dir = NULL;
	json_decref(done);
	snprintf(path, sizeof path, "%s/rank_00001.done.json", taken);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_not_equal(access(tdir, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_failed_save),
		cmocka_unit_test(test_blocked_dir),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_retention_marked),
		cmocka_unit_test(test_missing_after_open),
		cmocka_unit_test(test_config_mismatch),
		cmocka_unit_test(test_record_taken),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* ledger: writing events and folding them back into a history. The file
 * is opened in append mode and every line is flushed whole, so a requeue
 * or a kill never leaves a half event behind more than the last line. */
#include "ledger.h"
#include "rdfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include "include/llmt/clock.h"
#include "include/llmt/ckptid.h"
#include "include/llmt/owndir.h"

static int mkdir_p(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof p, "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return (mkdir(p, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

int wr_ledger_open(struct wr_ledger *l, const char *run_dir)
{
	if (mkdir_p(run_dir) != 0) {
		fprintf(stderr, "llm-train-wrap: cannot create run dir %s: %s\n", run_dir, strerror(errno));
		return -1;
	}
	/* another user may have made it between main's check and mkdir */
	char derr[8400];
	if (llmt_dir_owned("run dir", run_dir, derr, sizeof derr)) {
		fprintf(stderr, "llm-train-wrap: %s\n", derr);
		errno = EPERM;
		return -2;
	}
	snprintf(l->path, sizeof l->path, "%s/ledger.jsonl", run_dir);
	l->f = wr_fopen_write(l->path, "a");   /* a FIFO there: refused, not waited on */
	if (!l->f) {
		fprintf(stderr, "llm-train-wrap: cannot open %s: %s\n", l->path, strerror(errno));
		return -1;
	}
	return 0;
}

void wr_ledger_close(struct wr_ledger *l)
{
	if (l->f && fclose(l->f) != 0)
		fprintf(stderr, "llm-train-wrap: closing %s: %s\n", l->path, strerror(errno));
	l->f = NULL;
}

static bool verbose;

void wr_ledger_verbose(bool on)
{
	verbose = on;
}

void wr_ledger_event(struct wr_ledger *l, const char *event, json_t *fields)
{
	json_t *o = json_object();
	json_object_set_new(o, "time", json_real(llmt_wall_s()));
	json_object_set_new(o, "event", json_string(event));
	if (fields)
		json_object_update(o, fields);
	json_decref(fields);
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return;
	if (verbose)
		fprintf(stderr, "llm-train-wrap: ledger: %s\n", s);
	if (l->f && (fprintf(l->f, "%s\n", s) < 0 || fflush(l->f) != 0))
		fprintf(stderr, "llm-train-wrap: writing %s: %s\n", l->path, strerror(errno));
	free(s);
}

json_t *wr_nodes_json(const struct wr_nodes *s)
{
	json_t *a = json_array();
	for (int i = 0; i < s->n; i++)
		json_array_append_new(a, wr_json_text(s->name[i]));
	return a;
}

json_t *wr_json_text(const char *s)
{
	json_t *j = json_string(s ? s : "");
	if (j)
		return j;
	char *c = strdup(s);
	if (!c)
		return json_string("");
	for (unsigned char *p = (unsigned char *)c; *p; p++)
		if (*p >= 0x80)
			*p = '?';
	j = json_string(c);
	free(c);
	return j;
}

static enum wr_class class_of(const char *name)
{
	for (int c = 0; c < WR_NCLASSES; c++)
		if (name && strcmp(name, wr_class_name((enum wr_class)c)) == 0)
			return (enum wr_class)c;
	return WR_SOFTWARE;
}

static double num(json_t *o, const char *k, double dflt)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : dflt;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

void wr_history_unmark(struct wr_history *h, const char *path)
{
	int n = 0;
	for (int i = 0; i < h->nbad; i++)
		if (path && (!*path || strcmp(h->bad[i].path, path) != 0))
			h->bad[n++] = h->bad[i];
	h->nbad = n;
}

bool wr_history_is_bad(const struct wr_history *h, const char *path)
{
	char now[64] = "";
	bool have = false;
	for (int i = 0; i < h->nbad; i++) {
		if (strcmp(h->bad[i].path, path) != 0)
			continue;
		if (!h->bad[i].id[0])
			return true;
		if (!have)
			llmt_ckpt_id(path, now, sizeof now), have = true;
		/* no identity now (unreadable): still skipped */
		if (!now[0] || strcmp(now, h->bad[i].id) == 0)
			return true;
	}
	return false;
}

void wr_history_bad_id(struct wr_history *h, const char *path, bool trusted, const char *id)
{
	if (!*path)
		return;
	for (int i = 0; i < h->nbad; i++)
		if (strcmp(h->bad[i].path, path) == 0 && strcmp(h->bad[i].id, id) == 0)
			return;
	if (h->nbad == WR_BAD_MAX)
		memmove(&h->bad[0], &h->bad[1], (WR_BAD_MAX - 1) * sizeof h->bad[0]);
	else
		h->nbad++;
	snprintf(h->bad[h->nbad - 1].path, sizeof h->bad[0].path, "%s", path);
	h->bad[h->nbad - 1].trusted = trusted;
	snprintf(h->bad[h->nbad - 1].id, sizeof h->bad[0].id, "%s", id);
}

/* A ckpt_bad or ckpt_unmark event o into h (ours: of the job read for) */
static void load_mark(struct wr_history *h, const char *ev, json_t *o, bool ours)
{
	if (strcmp(ev, "ckpt_unmark") == 0) {
		/* llm-train-wrap ckpt-unmark: the marks before it are lifted */
		wr_history_unmark(h, json_is_true(json_object_get(o, "all")) ? NULL : str(o, "path"));
		return;
	}
	/* llm-train's exit 89 (the checkpoint's bytes failed) holds for every
	 * job; the load-phase rule's guess from a foreign trainer's failures
	 * (a bug in the script's own loading, fixed before a new submission,
	 * explains them as well) holds for its own job, requeues included */
	bool trusted = strcmp(str(o, "rule"), "exit_code") == 0;
	if (trusted || ours)
		wr_history_bad_id(h, str(o, "path"), trusted, str(o, "id"));
}

/* An attempt event o (written at t) */
static void load_attempt(struct wr_attempt *a, json_t *o, double t)
{
	a->t_launch = num(o, "t_launch", t);
	a->t_first_step = num(o, "t_first_step", -1);
	a->t_end = num(o, "t_end", t);
	a->resume_step = (long)num(o, "resume_step", 0);
	a->last_step = (long)num(o, "last_step", 0);
	a->step_s = num(o, "step_s", 0);
	a->ckpt_s = num(o, "ckpt_s", 0);
	a->cls = class_of(str(o, "class"));
	a->run = (int)num(o, "run", 0);
}

int wr_ledger_load(const char *path, const char *job, struct wr_history *h)
{
	memset(h, 0, sizeof *h);
	h->max_resume_step = -1;
	h->skip_until_step = -1;
	h->save_longest_s = -1;
	FILE *f = wr_fopen_read(path);
	if (!f)
		return errno == ENOENT ? 0 : -1;
	char line[65536];
	double run_start = -1, run_last = 0;
	bool closed = true, ours = true;   /* ours: the current run is job's */
	int acted = -1;                    /* the failure the next action answers (-1: none) */
	int lineno = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		json_error_t err;
		json_t *o = json_loads(line, 0, &err);
		if (!json_is_object(o)) {
			fprintf(stderr, "llm-train-wrap: %s:%d: skipped: %s\n", path, lineno, err.text);
			json_decref(o);
			continue;
		}
		const char *ev = str(o, "event");
		double t = num(o, "time", run_last);
		if (strcmp(ev, "start") == 0) {
			if (run_start >= 0)
				h->allocated_s += run_last - run_start;
			run_start = t;
			closed = false;
			h->runs++;
			if (job && strcmp(str(o, "job"), job) != 0) {
				h->restarts = 0;     /* another job: its budget is not ours */
				h->nrestart_times = 0;
				h->pending = false;
				h->max_resume_step = h->skip_until_step = -1;
				h->need_agree = false;
			}
			ours = !job || strcmp(str(o, "job"), job) == 0;
			if (acted >= 0)   /* unanswered (a run cut short: wr_job_begin): this run follows it */
				h->past[acted].restarted = true;
			acted = -1;
		} else if (strcmp(ev, "launch") == 0) {
			h->attempts_total++;
		} else if (strcmp(ev, "attempt") == 0 && h->nattempts < WR_HIST_MAX) {
			load_attempt(&h->attempts[h->nattempts++], o, t);
		} else if (strcmp(ev, "failure") == 0 && h->npast < WR_HIST_MAX) {
			h->past[h->npast].cls = class_of(str(o, "class"));
			snprintf(h->past[h->npast].node, WR_NODE_LEN, "%s", str(o, "node"));
			h->fail_steps[h->npast] = (long)num(o, "step", -1);
			h->past[h->npast].restarted = false;
			acted = h->npast;
			if (h->past[h->npast].cls != WR_PREEMPTED)
				h->failures++;
			h->npast++;
		} else if (strcmp(ev, "action") == 0) {
			json_t *ex = json_object_get(o, "exclude");
			if (json_is_array(ex)) {
				memset(&h->excluded, 0, sizeof h->excluded);
				size_t i;
				json_t *v;
				json_array_foreach(ex, i, v) wr_nodes_add(&h->excluded, json_string_value(v));
			}
			if (json_is_true(json_object_get(o, "counts"))) {
				h->restarts++;
				if (h->nrestart_times < WR_HIST_MAX)
					h->restart_times[h->nrestart_times++] = t;
			}
			h->pending = strcmp(str(o, "act"), "requeue") == 0;
			if (acted >= 0 && strcmp(str(o, "act"), "stop") != 0)
				h->past[acted].restarted = true;
			acted = -1;
			h->max_resume_step = (long)num(o, "max_resume_step", -1);
			h->skip_until_step = (long)num(o, "skip_until_step", -1);
			h->need_agree = json_is_true(json_object_get(o, "need_agree"));
		} else if (strcmp(ev, "save") == 0 && num(o, "save_s", -1) > h->save_longest_s) {
			h->save_longest_s = num(o, "save_s", -1);   /* any job's: the same model and storage */
		} else if (strcmp(ev, "ckpt_bad") == 0 || strcmp(ev, "ckpt_unmark") == 0) {
			load_mark(h, ev, o, ours);
		} else if (strcmp(ev, "end") == 0 || strcmp(ev, "requeue") == 0) {
			closed = true;
		}
		run_last = t;
		json_decref(o);
	}
	if (ferror(f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	if (run_start >= 0)
		h->allocated_s += run_last - run_start;
	h->failure_time_s = h->allocated_s;
	h->last_run_cut = h->runs > 0 && !closed;
	h->last_run_end = run_last;
	return 0;
}

/* ckpt_retain.c: what a completed save removes: checkpoints beyond the
 * retention count (manifest first, so a half-removed one is never chosen)
 * and the temporary directories of saves that never completed. Never
 * removed: the save just completed, the checkpoint this run loaded (its
 * checksums verified) and the ones the wrapper marked bad (which take no
 * slot of the count either). */
#include "ckpt_int.h"
#include "llmt/ckptid.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void remove_step_dir(const char *path)
{
	char f[4600], parent[4200], *slash;
	DIR *d;
	struct dirent *de;

	/* manifest first: a half-removed checkpoint is invalid, never chosen */
	ck_fmt(f, sizeof f, "%s/manifest.json", path);
	if (unlink(f) != 0)
		return;
	ck_fmt(parent, sizeof parent, "%s", path);
	if ((slash = strrchr(parent, '/'))) {
		*slash = 0;
		ck_fsync_dir(parent);
	}
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "rank_", 5) == 0) {
			ck_fmt(f, sizeof f, "%s/%s", path, de->d_name);
			unlink(f);
		}
	closedir(d);
	rmdir(path);
}

/* Leftovers of saves that never completed (a crash, a failed write): the
 * temporary directories (and failure notes) of steps up to the one just
 * completed, other than our own. Saves of one run are sequential, so none
 * of them can still be in progress; they never held a manifest. */
void ck_remove_stale_tmp(const char *dir, long cur_step, const char *token)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char own[128], path[4400];

	if (!d)
		return;
	ck_fmt(own, sizeof own, ".tmp.step_%08ld.%s", cur_step, token);
	while ((de = readdir(d))) {
		char num[32];
		long step;
		size_t n;
		if (strncmp(de->d_name, ".tmp.step_", 10) != 0)
			continue;
		n = strspn(de->d_name + 10, "0123456789");
		if (n < 8 || n > 20 || de->d_name[10 + n] != '.' || !strncmp(de->d_name, own, strlen(own)))
			continue;
		memcpy(num, de->d_name + 10, n);
		num[n] = 0;
		step = atol(num);
		if (step > cur_step)
			continue;
		ck_fmt(path, sizeof path, "%s/%s", dir, de->d_name);
		if (strstr(de->d_name, ".failed")) {
			unlink(path);
			continue;
		}
		DIR *t = opendir(path);
		struct dirent *te;
		char f[4700];
		if (!t)
			continue;
		while ((te = readdir(t)))
			if (strncmp(te->d_name, "rank_", 5) == 0 || strncmp(te->d_name, "manifest.json", 13) == 0) {
				ck_fmt(f, sizeof f, "%s/%s", path, te->d_name);
				unlink(f);
			}
		closedir(t);
		rmdir(path);
	}
	closedir(d);
}

long long ck_retention(const char *dir, int keep, const ck_keep *k)
{
	char **paths, id[64];
	long *steps;
	long long gen;
	int n, kept = 0;

	if (keep <= 0)
		return -1;
	/* newest first by generation: ck_list's order */
	n = ck_scan(dir, 1, &paths, &steps, NULL, NULL, NULL, &gen);
	for (int i = 0; i < n; i++) {
		llmt_ckpt_id(paths[i], id, sizeof id);
		if (llmt_ckpt_id_in(k->bad_ids, id))
			continue;   /* marked bad: no slot, and left as evidence */
		if (!strcmp(paths[i], k->saved) || (k->verified && *id && !strcmp(id, k->verified)) || kept < keep) {
			kept++;
			continue;
		}
		remove_step_dir(paths[i]);
	}
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(steps);
	return n < 0 ? -1 : gen;
}

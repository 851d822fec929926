/* sdc.c: the silent-data-corruption check: a checksum of each rank's
 * parameters, compared across DP replicas (every rank gets all checksums,
 * so all reach the same verdict), the verdict on a ZeRO-1 master share
 * found inconsistent by its owner, and CKPT_DIR/sdc.json for either. */
#include "sdc.h"
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llmt/exitcodes.h"

uint64_t llmt_checksum_start(size_t n)
{
	return 0x243f6a8885a308d3ULL ^ (uint64_t)n;
}

uint64_t llmt_checksum_add(uint64_t h, const float *x, size_t k)
{
	uint32_t w;

	/* each round is a bijection of h for a fixed word and of the word for
	 * a fixed h, so any single changed word changes the result */
	for (size_t i = 0; i < k; i++) {
		memcpy(&w, &x[i], 4);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h = (h << 29) | (h >> 35);
	}
	return h;
}

uint64_t llmt_checksum_end(uint64_t h)
{
	return h ^ (h >> 31);
}

uint64_t llmt_checksum_f32(const float *x, size_t n)
{
	return llmt_checksum_end(llmt_checksum_add(llmt_checksum_start(n), x, n));
}

int llmt_sdc_suspects(const uint64_t *sums, int dp, int *suspects)
{
	int agree = 1, best = -1, bestn = 0, ns = 0;

	for (int r = 1; r < dp; r++)
		if (sums[r] != sums[0])
			agree = 0;
	if (agree)
		return 0;
	for (int r = 0; r < dp; r++) {
		int c = 0;
		for (int q = 0; q < dp; q++)
			c += sums[q] == sums[r];
		if (c > bestn) {
			bestn = c;
			best = r;
		}
	}
	for (int r = 0; r < dp; r++)
		if (dp == 2 || 2 * bestn <= dp || sums[r] != sums[best])
			suspects[ns++] = r;
	return ns;
}

/* sums: per replica, the checksums (cause "replicas") or the master
 * share's mismatches (cause "master_share") */
static int write_sdc(const llmt_grid *l, long step, char (*hosts)[LLMT_HOSTLEN], const char *dir,
	const char *cause, const uint64_t *sums, const int *sus, int ns)
{
	int share = !strcmp(cause, "master_share");
	char path[4096], tmp[4200];
	json_t *o = json_object(), *cs = json_array(), *sa = json_array();
	int rc = 0;

	for (int r = 0; r < l->dp; r++) {
		char hex[24];
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)sums[r]);
		json_array_append_new(cs, share ? json_integer((json_int_t)sums[r]) : json_string(hex));
	}
	for (int i = 0; i < ns; i++) {
		json_t *s = json_object(), *hl = json_array();
		for (int pr = 0; pr < l->pp; pr++)
			for (int tr = 0; tr < l->tp; tr++) {
				const char *h = hosts[llmt_grid_rank(l, tr, pr, sus[i])];
				int dup = 0;
				for (size_t k = 0; k < json_array_size(hl); k++)
					dup |= !strcmp(json_string_value(json_array_get(hl, k)), h);
				if (!dup)
					json_array_append_new(hl, json_string(h));
			}
		json_object_set_new(s, "dp_rank", json_integer(sus[i]));
		json_object_set_new(s, "hosts", hl);
		json_array_append_new(sa, s);
	}
	json_object_set_new(o, "step", json_integer(step));
	json_object_set_new(o, "dp", json_integer(l->dp));
	json_object_set_new(o, "cause", json_string(cause));
	json_object_set_new(o, share ? "mismatches" : "checksums", cs);
	json_object_set_new(o, "suspects", sa);
	if (!dir) {
		char *s = json_dumps(o, JSON_COMPACT);
		fprintf(stderr, "llm-train: SDC report (no checkpoint dir): %s\n", s ? s : "");
		free(s);
	} else {
		snprintf(path, sizeof(path), "%s/sdc.json", dir);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		if (json_dump_file(o, tmp, JSON_COMPACT) || rename(tmp, path)) {
			fprintf(stderr, "llm-train: cannot write %s: %s\n", path, strerror(errno));
			rc = LLMT_EXIT_IO;
		}
	}
	json_decref(o);
	return rc;
}

int llmt_sdc_check(llmt_parallel *p, uint64_t mine, long step, char (*hosts)[LLMT_HOSTLEN],
	const char *dir)
{
	const llmt_grid *l = &p->l;
	uint64_t *all = malloc(sizeof(uint64_t) * (size_t)l->world);
	uint64_t *rep = malloc(sizeof(uint64_t) * (size_t)l->dp);
	int *sus = malloc(sizeof(int) * (size_t)l->dp), ns, rc = 0;

	if (!all || !rep || !sus) {
		free(all);
		free(rep);
		free(sus);
		return LLMT_EXIT_SOFTWARE;
	}
	if (llmt_comm_allgather_bytes(p->all, &mine, all, sizeof(mine))) {
		rc = LLMT_EXIT_TRANSIENT;
		goto out;
	}
	for (int r = 0; r < l->dp; r++) {
		uint64_t h = 0;
		for (int pr = 0; pr < l->pp; pr++)
			for (int tr = 0; tr < l->tp; tr++)
				h = (h ^ all[llmt_grid_rank(l, tr, pr, r)]) * 0x100000001b3ULL + 0x9e37;
		rep[r] = h;
	}
	ns = llmt_sdc_suspects(rep, l->dp, sus);
	if (ns) {
		if (l->rank == 0) {
			fprintf(stderr, "llm-train: step %lld: DP replicas disagree (%d suspect replica(s)): silent data corruption suspected\n",
				(long long)step, ns);
			write_sdc(l, step, hosts, dir, "replicas", rep, sus, ns);
		}
		rc = LLMT_EXIT_SDC;
	}
out:
	free(all);
	free(rep);
	free(sus);
	return rc;
}


int llmt_sdc_share_verdict(llmt_parallel *p, uint64_t bad, long step, char (*hosts)[LLMT_HOSTLEN],
	const char *dir)
{
	const llmt_grid *l = &p->l;
	uint64_t *all = malloc(sizeof(uint64_t) * (size_t)l->world);
	uint64_t *rep = calloc((size_t)l->dp, sizeof(uint64_t));
	int *sus = malloc(sizeof(int) * (size_t)l->dp), ns = 0, rc = LLMT_EXIT_SDC;

	if (!all || !rep || !sus) {
		rc = LLMT_EXIT_SOFTWARE;
		goto out;
	}
	if (llmt_comm_allgather_bytes(p->all, &bad, all, sizeof(bad))) {
		rc = LLMT_EXIT_TRANSIENT;
		goto out;
	}
	for (int r = 0; r < l->dp; r++) {
		for (int pr = 0; pr < l->pp; pr++)
			for (int tr = 0; tr < l->tp; tr++)
				rep[r] += all[llmt_grid_rank(l, tr, pr, r)];
		if (rep[r])
			sus[ns++] = r;
	}
	if (l->rank == 0) {
		fprintf(stderr, "llm-train: step %lld: the fp32 master share of %d replica(s) no longer matches the "
			"weights it gave the replicas (%s%d, %llu element(s)): memory corruption at rest suspected\n",
			(long long)step, ns, ns ? "dp rank " : "", ns ? sus[0] : -1,
			(unsigned long long)(ns ? rep[sus[0]] : 0));
		write_sdc(l, step, hosts, dir, "master_share", rep, sus, ns);
	}
out:
	free(all);
	free(rep);
	free(sus);
	return rc;
}

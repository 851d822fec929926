/* loader.c: shard directory scan, the seeded sample order and the reads of
 * one micro-batch. The order is a keyed Feistel permutation (no table, so
 * any data size costs O(1) memory and any position is reachable at once). */
#include "loader.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llmt/exitcodes.h"

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t llmt_permute(uint64_t x, uint64_t n, uint64_t key)
{
	int bits = 1, half;
	uint64_t mask;

	if (n <= 1)
		return 0;
	while (bits < 64 && (1ULL << bits) < n)
		bits++;
	half = (bits + 1) / 2;
	mask = (1ULL << half) - 1;
	do { /* cycle walking: the domain is at most 4n, so a few rounds */
		uint64_t l = x >> half, r = x & mask;
		for (int round = 0; round < 4; round++) {
			uint64_t nl = r;
			r = (l ^ mix64(r ^ mix64(key + (uint64_t)round))) & mask;
			l = nl;
		}
		x = (l << half) | r;
	} while (x >= n);
	return x;
}

uint64_t llmt_loader_sample_at(const llmt_loader *ld, uint64_t p)
{
	uint64_t epoch = p / ld->nsamples;

	return llmt_permute(p % ld->nsamples, ld->nsamples, mix64(ld->seed) ^ mix64(epoch + 0x51ed));
}

/* shard i's loss mask: all shards have one or none; a masked shard's
 * vocabulary is the model's */
static int open_mask(llmt_loader *ld, int i, const char *bin, char *err, size_t errlen)
{
	char path[4200];
	int rc;

	llmt_mask_path(bin, path, sizeof(path));
	rc = llmt_mask_open(&ld->masks[i], path, ld->shards[i].ntok, err, errlen);
	if (rc && rc != LLMT_EXIT_NOINPUT)
		return rc;
	if (i > 0 && ld->masked != !rc) {
		snprintf(err, errlen, "%s %s (%s) but the shards before it %s: mix of instruction and plain data",
			bin, rc ? "has no loss mask" : "has a loss mask", path, rc ? "have one" : "have none");
		return LLMT_EXIT_DATA;
	}
	ld->masked = !rc;
	if (ld->masked && ld->masks[i].seq != ld->T) {
		snprintf(err, errlen, "%s: packed for sequences of %d tokens (tokenize-sft --seq); this run's --seq is %d",
			path, ld->masks[i].seq, ld->T);
		return LLMT_EXIT_DATA;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int llmt_loader_open(llmt_loader *ld, const char *dir, int T, int vocab, uint64_t seed,
	char *err, size_t errlen)
{
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	int n = 0, cap = 0, rc = 0;

	memset(ld, 0, sizeof(*ld));
	ld->T = T;
	ld->vocab = vocab;
	ld->seed = seed;
	d = opendir(dir);
	if (!d) {
		snprintf(err, errlen, "data dir %s: %s", dir, strerror(errno));
		return errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_DATA;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 4, ".bin"))
			continue;
		if (n == cap) {
			char **nn = realloc(names, sizeof(char *) * (size_t)(cap = cap ? 2 * cap : 16));
			if (!nn) {
				closedir(d);
				goto oom;
			}
			names = nn;
		}
		if (!(names[n] = malloc(strlen(dir) + len + 2))) {
			closedir(d);
			goto oom;
		}
		sprintf(names[n++], "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (!n) {
		snprintf(err, errlen, "data dir %s: no token shards (*.bin)", dir);
		free(names);
		return LLMT_EXIT_NOINPUT;
	}
	qsort(names, (size_t)n, sizeof(char *), cmp_str);
	ld->shards = calloc((size_t)n, sizeof(llmt_shard));
	ld->first = calloc((size_t)n + 1, sizeof(uint64_t));
	ld->scratch = malloc(sizeof(uint32_t) * ((size_t)T + 1));
	ld->fscratch = malloc((size_t)T + 1);
	ld->masks = calloc((size_t)n, sizeof(llmt_mask));
	if (!ld->shards || !ld->first || !ld->scratch || !ld->fscratch || !ld->masks)
		goto oom;
	for (int i = 0; i < n; i++)
		ld->masks[i].fd = -1;
	for (int i = 0; i < n; i++) {
		rc = llmt_shard_open(&ld->shards[i], names[i], err, errlen);
		if (rc)
			goto out;
		ld->nshards = i + 1;
		if (ld->shards[i].vocab > (uint32_t)vocab) {
			snprintf(err, errlen, "%s: tokenized with a vocabulary of %u ids, larger than the model's vocab_size %d",
				names[i], ld->shards[i].vocab, vocab);
			rc = LLMT_EXIT_DATA;
			goto out;
		}
		if ((rc = open_mask(ld, i, names[i], err, errlen)))
			goto out;
		ld->first[i + 1] = ld->first[i] +
			(ld->shards[i].ntok > (uint64_t)T ? (ld->shards[i].ntok - 1) / (uint64_t)T : 0);
	}
	ld->nsamples = ld->first[n];
	if (!ld->nsamples) {
		snprintf(err, errlen, "data dir %s: no shard holds a sample of %d tokens", dir, T + 1);
		rc = LLMT_EXIT_DATA;
	}
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (rc)
		llmt_loader_close(ld);
	return rc;
oom:
	snprintf(err, errlen, "data dir %s: out of memory", dir);
	rc = LLMT_EXIT_SOFTWARE;
	goto out;
}

void llmt_loader_close(llmt_loader *ld)
{
	for (int i = 0; i < ld->nshards; i++)
		llmt_shard_close(&ld->shards[i]);
	for (int i = 0; ld->masks && i < ld->nshards; i++)
		llmt_mask_close(&ld->masks[i]);
	free(ld->masks);
	free(ld->fscratch);
	free(ld->shards);
	free(ld->first);
	free(ld->scratch);
	memset(ld, 0, sizeof(*ld));
}

/* the shard holding sample id */
static int shard_of(const llmt_loader *ld, uint64_t id)
{
	int lo = 0, hi = ld->nshards - 1;

	while (lo < hi) { /* last shard with first <= id */
		int mid = (lo + hi + 1) / 2;
		if (ld->first[mid] <= id)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* tokens (and with a mask, flags) of sample id into the scratch */
static int read_sample(llmt_loader *ld, uint64_t id, int tokens, char *err, size_t errlen)
{
	int i = shard_of(ld, id), rc = 0;
	uint64_t off = (id - ld->first[i]) * (uint64_t)ld->T;

	if (tokens)
		rc = llmt_shard_read(&ld->shards[i], off, (size_t)ld->T + 1, ld->scratch, ld->vocab, err,
			errlen);
	if (!rc && ld->masked)
		rc = llmt_mask_read(&ld->masks[i], off, (size_t)ld->T + 1, ld->fscratch, err, errlen);
	return rc;
}

/* target t of the sample in the scratch is trained on: a response token of
 * the same sample as input t */
static int trained(const llmt_loader *ld, int t)
{
	uint8_t f = ld->fscratch[t + 1];

	return !ld->masked || ((f & LLMT_MASK_TRAIN) && !(f & LLMT_MASK_START));
}

int llmt_loader_trained(llmt_loader *ld, uint64_t base, uint64_t n, uint64_t *count, char *err,
	size_t errlen)
{
	*count = 0;
	if (!ld->masked) {
		*count = n * (uint64_t)ld->T;
		return 0;
	}
	for (uint64_t p = base; p < base + n; p++) {
		int rc = read_sample(ld, llmt_loader_sample_at(ld, p), 0, err, errlen);
		if (rc)
			return rc;
		for (int t = 0; t < ld->T; t++)
			*count += (uint64_t)trained(ld, t);
	}
	return 0;
}

int llmt_loader_micro(llmt_loader *ld, uint64_t base, int G, int dp, int dp_rank,
	int micro, int B, int *inputs, int *targets, char *err, size_t errlen)
{
	return llmt_loader_micro_seg(ld, base, G, dp, dp_rank, micro, B, inputs, targets, NULL, err,
		errlen);
}

int llmt_loader_micro_seg(llmt_loader *ld, uint64_t base, int G, int dp, int dp_rank,
	int micro, int B, int *inputs, int *targets, int *seg, char *err, size_t errlen)
{
	int T = ld->T;

	for (int b = 0; b < B; b++) {
		uint64_t p = base + (uint64_t)dp_rank * (uint64_t)(G / dp) + (uint64_t)micro * (uint64_t)B + (uint64_t)b;
		int rc = read_sample(ld, llmt_loader_sample_at(ld, p), 1, err, errlen), id = 0;
		if (rc)
			return rc;
		for (int t = 0; t < T; t++) {
			inputs[b * T + t] = (int)ld->scratch[t];
			targets[b * T + t] = trained(ld, t) ? (int)ld->scratch[t + 1] : -1;
			id += t > 0 && ld->masked && (ld->fscratch[t] & LLMT_MASK_START);
			if (seg)
				seg[b * T + t] = id;
		}
	}
	return 0;
}

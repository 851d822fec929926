/* sample.c: greedy, temperature and top-p choice of the next token, with a
 * splitmix64 generator (seeded, so runs repeat). */
#define _GNU_SOURCE
#include "sample.h"
#include <math.h>
#include <stdlib.h>

int llmt_sampler_init(llmt_sampler *s, int vocab, double temperature, double top_p, uint64_t seed)
{
	s->temperature = temperature;
	s->top_p = top_p;
	s->state = seed;
	s->order = malloc((size_t)vocab * sizeof *s->order);
	s->prob = malloc((size_t)vocab * sizeof *s->prob);
	return s->order && s->prob ? 0 : -1;
}

void llmt_sampler_free(llmt_sampler *s)
{
	free(s->order);
	free(s->prob);
	s->order = NULL;
	s->prob = NULL;
}

int llmt_argmax(const float *logits, int n)
{
	int best = 0;

	for (int i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	return best;
}

static double uniform(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53;
}

static int by_prob(const void *a, const void *b, void *arg)
{
	const float *prob = arg;
	float x = prob[*(const int *)a], y = prob[*(const int *)b];

	return x > y ? -1 : x < y ? 1 : (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int llmt_sample(llmt_sampler *s, const float *logits, int n)
{
	int mx = llmt_argmax(logits, n), keep = 0;
	double sum = 0, mass = 0, u;

	if (s->temperature <= 0)
		return mx;
	for (int i = 0; i < n; i++) {
		s->prob[i] = (float)exp((logits[i] - logits[mx]) / s->temperature);
		sum += s->prob[i];
		s->order[i] = i;
	}
	for (int i = 0; i < n; i++)
		s->prob[i] = (float)(s->prob[i] / sum);
	qsort_r(s->order, (size_t)n, sizeof *s->order, by_prob, s->prob);
	while (keep < n && (keep == 0 || mass < s->top_p))
		mass += s->prob[s->order[keep++]];
	u = uniform(&s->state) * mass;
	for (int i = 0; i < keep; i++) {
		u -= s->prob[s->order[i]];
		if (u < 0)
			return s->order[i];
	}
	return s->order[keep - 1];
}

/* sample.h: choosing the next token from logits (pure): greedy argmax, or
 * temperature and top-p (nucleus) sampling from a seeded generator, so a
 * seed gives the same text every time. */
#ifndef LLMT_GEN_SAMPLE_H
#define LLMT_GEN_SAMPLE_H
#include <stdint.h>

typedef struct llmt_sampler {
	double temperature;   /* 0: greedy */
	double top_p;         /* (0, 1]: keep the most likely tokens up to this mass */
	uint64_t state;       /* generator state, from the seed */
	int *order;           /* scratch: vocab ints */
	float *prob;          /* scratch: vocab floats */
} llmt_sampler;

/* 0, or -1 when out of memory. */
int llmt_sampler_init(llmt_sampler *s, int vocab, double temperature, double top_p, uint64_t seed);
void llmt_sampler_free(llmt_sampler *s);
/* The index of the largest of n logits (the first of equal ones). */
int llmt_argmax(const float *logits, int n);
/* The next token from n logits. */
int llmt_sample(llmt_sampler *s, const float *logits, int n);

#endif

/* dp_buckets.c: the bucket plan of the data-parallel gradient reduction that
 * overlaps backward, each rank's ZeRO-1 share of a bucket, and the ranges
 * a rank adds to the global gradient norm (host_plan.h). */
#include "host_plan.h"

int gbucket_plan(const size_t *offset, const size_t *numel, int ntensors, size_t nflat,
				 size_t target, gbucket *out, int cap)
{
	for (int t = 0; t < ntensors; t++) {
		size_t end = t + 1 < ntensors ? offset[t + 1] : nflat;
		if ((t == 0 && offset[0] != 0) || offset[t] + numel[t] > end)
			return -1;
	}
	int nb = 0;
	size_t hi = nflat;
	int t = ntensors - 1;
	while (t >= 0) {
		/* grow down from hi until the bucket holds target elements */
		while (t > 0 && hi - offset[t] < target)
			t--;
		if (nb == cap)
			return -1;
		out[nb].lo = t == 0 ? 0 : offset[t];
		out[nb].hi = hi;
		out[nb].first_tensor = t;
		nb++;
		hi = out[nb - 1].lo;
		t--;
	}
	return nb;
}

int gbucket_ready(const gbucket *b, int nb, int first_done)
{
	int n = 0;
	while (n < nb && b[n].first_tensor >= first_done)
		n++;
	return n;
}

size_t gbucket_target(size_t n)
{
	size_t b = n / 8, max = GBUCKET_MAX_BYTES / sizeof(float);
	return b > max ? max : (b ? b : 1);
}

int gbucket_wait_point(const gbucket *b, const size_t *w, int nw)
{
	int i = 0;
	while (i < nw && b->lo >= w[i])
		i++;
	return i;
}

void gbucket_shard(const gbucket *b, int dp, int r, gshard *s)
{
	size_t len = b->hi - b->lo;
	s->blk = len / (size_t)dp;
	s->own_lo = b->lo + (size_t)r * s->blk;
	s->own_hi = s->own_lo + s->blk;
	s->tail_lo = b->lo + (size_t)dp * s->blk;
	s->hi = b->hi;
}

int gbucket_norm_ranges(const gbucket *b, int nb, int dp, int r, const size_t *offset,
						const int *in_norm, int ntensors, size_t nflat, size_t (*out)[2],
						int cap)
{
	int n = 0;
	for (int k = nb - 1; k >= 0; k--) {     /* bucket 0 is the highest range */
		gshard s;
		gbucket_shard(&b[k], dp, r, &s);
		const size_t part[2][2] = {{s.own_lo, s.own_hi}, {s.tail_lo, r == 0 ? s.hi : s.tail_lo}};
		for (int j = 0; j < 2; j++)
			for (int t = 0; t < ntensors; t++) {
				size_t lo = offset[t], hi = t + 1 < ntensors ? offset[t + 1] : nflat;
				lo = lo > part[j][0] ? lo : part[j][0];
				hi = hi < part[j][1] ? hi : part[j][1];
				if (!in_norm[t] || lo >= hi)
					continue;
				if (n && out[n - 1][1] == lo) {
					out[n - 1][1] = hi;
					continue;
				}
				if (n == cap)
					return -1;
				out[n][0] = lo;
				out[n][1] = hi;
				n++;
			}
	}
	return n;
}

/* gbucket.c: the bucket plan of the data-parallel gradient reduction that
 * overlaps backward, and each rank's ZeRO-1 share of a bucket (gplan.h). */
#include "gplan.h"

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

void gbucket_shard(const gbucket *b, int dp, int r, gshard *s)
{
    size_t len = b->hi - b->lo;
    s->blk = len / (size_t)dp;
    s->own_lo = b->lo + (size_t)r * s->blk;
    s->own_hi = s->own_lo + s->blk;
    s->tail_lo = b->lo + (size_t)dp * s->blk;
    s->hi = b->hi;
}

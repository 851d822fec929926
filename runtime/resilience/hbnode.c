/* hbnode.c: the node channel's shared record: slot seqlock, flush claim,
 * node file text (see hbnode.h). Pure logic on memory. */
#include "hbnode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void llmt_hbn_slot_write(struct llmt_hbn_seg *g, int s, int rank, long long t_ns, const char *text)
{
	struct llmt_hbn_slot *sl = &g->slot[s];
	uint32_t q = atomic_load_explicit(&sl->seq, memory_order_relaxed);

	q += (q & 1) ? 1 : 2;   /* odd: even if a writer of an earlier step died mid-write */
	atomic_store_explicit(&sl->seq, q - 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	sl->rank = rank;
	snprintf(sl->text, sizeof(sl->text), "%s", text);
	atomic_store_explicit(&sl->time_ns, t_ns, memory_order_relaxed);
	atomic_store_explicit(&sl->seq, q, memory_order_release);
	atomic_fetch_add_explicit(&g->gen, 1, memory_order_release);
}

int llmt_hbn_slot_read(struct llmt_hbn_seg *g, int s, char *out, int *rank)
{
	struct llmt_hbn_slot *sl = &g->slot[s];

	for (int tries = 0; tries < 4; tries++) {
		uint32_t a = atomic_load_explicit(&sl->seq, memory_order_acquire);
		if (a == 0)
			return -1;
		if (a & 1)
			continue;
		int r = sl->rank;
		memcpy(out, sl->text, LLMT_HBN_TEXT);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&sl->seq, memory_order_relaxed) != a)
			continue;
		out[LLMT_HBN_TEXT - 1] = 0;
		if (r < 0)
			return -1;
		*rank = r;
		return 0;
	}
	return -1;
}

int llmt_hbn_claim(struct llmt_hbn_seg *g, long long now_ns, double min_s, double force_s, int force,
	uint64_t *gen)
{
	int64_t last = atomic_load_explicit(&g->flush_ns, memory_order_acquire);
	uint64_t cur = atomic_load_explicit(&g->gen, memory_order_acquire);
	double since = (double)(now_ns - last) / 1e9;
	int changed = cur != atomic_load_explicit(&g->flushed, memory_order_acquire);

	if (!force && !(changed && since >= min_s) && since < force_s)
		return 0;
	if (!atomic_compare_exchange_strong(&g->flush_ns, &last, now_ns))
		return force;   /* another rank claimed it just now; a forced flush goes ahead */
	*gen = cur;
	return 1;
}

void llmt_hbn_flushed(struct llmt_hbn_seg *g, uint64_t gen)
{
	uint64_t old = atomic_load_explicit(&g->flushed, memory_order_relaxed);

	while (old < gen && !atomic_compare_exchange_weak(&g->flushed, &old, gen))
		;
}

long llmt_hbn_compose(struct llmt_hbn_seg *g, const char *host, long long now_ns, char *buf, size_t len)
{
	char text[LLMT_HBN_TEXT];
	int n = snprintf(buf, len, "node %s %lld\n", host, now_ns);
	size_t used = (size_t)n;

	if (n < 0 || used >= len)
		return -1;
	for (int s = 0; s < LLMT_HBN_SLOTS; s++) {
		int rank;
		if (llmt_hbn_slot_read(g, s, text, &rank))
			continue;
		int k = snprintf(buf + used, len - used, "r%d %s", rank, text);
		if (k < 0 || used + (size_t)k >= len)
			return -1;
		used += (size_t)k;
		if (used && buf[used - 1] != '\n') {
			if (used + 1 >= len)
				return -1;
			buf[used++] = '\n';
			buf[used] = 0;
		}
	}
	return (long)used;
}

int llmt_hbn_local_slot(const char *localid)
{
	char *end;
	long v;

	if (!localid || !*localid)
		return -1;
	v = strtol(localid, &end, 10);
	return *end || v < 0 || v >= LLMT_HBN_SLOTS ? -1 : (int)v;
}

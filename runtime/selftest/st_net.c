/* st_net.c: the self-test's link tests over the job's transport (comm.h),
 * one member per node: a ring (every link busy at once, as in a ring
 * all-reduce) and pairwise tests in round-robin rounds (each pair alone on
 * its link): bandwidth timed by the receiver (the median gap between two
 * arrivals, the best repetition: only the sender's pace counts) and
 * latency as half the best round trip. */
#include "st_run.h"
#include <stdlib.h>
#include "st_report.h"
#include <string.h>
#include <time.h>

typedef struct {
	size_t bytes;       /* one message */
	int msgs, pings, reps;
} net_size;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* half the best of z round trips started by this member (me initiates). */
static int pings(llmt_comm *c, int peer, int me_first, int z, double *best)
{
	char b[8] = { 0 };

	for (int i = 0; i < z; i++) {
		double t0 = now_s();
		if (me_first) {
			if (llmt_comm_send_bytes(c, b, 8, peer, 711) || llmt_comm_recv_bytes(c, b, 8, peer, 712))
				return -1;
			double h = (now_s() - t0) / 2;
			if (*best == 0 || h < *best)
				*best = h;
		} else if (llmt_comm_recv_bytes(c, b, 8, peer, 711) || llmt_comm_send_bytes(c, b, 8, peer, 712))
			return -1;
	}
	return 0;
}

/* the median gap between arrivals of one stream (n gaps) as Gbit/s,
 * kept when better: a busy moment of the machine stretches some gaps
 * (a late sender) or shrinks some (a late receiver finds messages
 * queued), a slow link stretches every one */
static void keep(double *gbps, size_t bytes, const double *gaps, int n)
{
	double dt = llmt_st_median(gaps, n), g = dt > 0 ? 8.0 * (double)bytes / dt / 1e9 : 0;

	if (g > *gbps)
		*gbps = g;
}

/* peer sends msgs messages; this member receives them (recv = 1) and
 * times the gaps between arrivals */
static int stream(llmt_comm *c, int peer, int recv, const net_size *z, char *buf, double *gaps, double *gbps)
{
	double last = 0;

	for (int i = 0; i < z->msgs; i++) {
		if (!recv) {
			if (llmt_comm_send_bytes(c, buf, z->bytes, peer, 713))
				return -1;
			continue;
		}
		if (llmt_comm_recv_bytes(c, buf, z->bytes, peer, 713))
			return -1;
		double t = now_s();
		if (i > 0)
			gaps[i - 1] = t - last;
		last = t;
	}
	if (recv)
		keep(gbps, z->bytes, gaps, z->msgs - 1);
	return 0;
}

static int pair_test(llmt_comm *c, int me, int peer, const net_size *z, char *buf, double *gaps, llmt_st_meas *m)
{
	int first = me < peer;

	memset(m, 0, sizeof(*m));
	m->from = peer;
	m->to = me;
	for (int r = 0; r < z->reps; r++) {
		double lat = m->lat_us / 1e6;
		if (pings(c, peer, first, z->pings, &lat) || pings(c, peer, !first, z->pings, &lat) ||
		    stream(c, peer, !first, z, buf, gaps, &m->gbps) || stream(c, peer, first, z, buf, gaps, &m->gbps))
			return -1;
		m->lat_us = lat * 1e6;
	}
	return 0;
}

/* the ring: W shifts to the next member at once; the token's round trip
 * (member 0 only) over L hops gives the ring's per-hop latency */
static int ring_test(llmt_comm *c, int me, int L, const net_size *z, char *buf, char *rbuf, double *gaps,
	llmt_st_meas *m)
{
	int next = (me + 1) % L, prev = (me + L - 1) % L;
	char tok[8] = { 0 };

	memset(m, 0, sizeof(*m));
	m->from = prev;
	m->to = me;
	m->ring = 1;
	for (int r = 0; r < z->reps; r++) {
		double last = 0, best = m->lat_us / 1e6;
		for (int i = 0; i < z->msgs; i++) {
			if (llmt_comm_sendrecv_bytes(c, buf, z->bytes, next, rbuf, z->bytes, prev, 714))
				return -1;
			double t = now_s();
			if (i > 0)
				gaps[i - 1] = t - last;
			last = t;
		}
		keep(&m->gbps, z->bytes, gaps, z->msgs - 1);
		for (int i = 0; i < z->pings; i++) {
			double s = now_s();
			if (me == 0 ? llmt_comm_send_bytes(c, tok, 8, next, 715) || llmt_comm_recv_bytes(c, tok, 8, prev, 715)
				    : llmt_comm_recv_bytes(c, tok, 8, prev, 715) || llmt_comm_send_bytes(c, tok, 8, next, 715))
				return -1;
			if (me == 0 && (best == 0 || (now_s() - s) / L < best))
				best = (now_s() - s) / L;
		}
		m->lat_us = best * 1e6;
	}
	return 0;
}

/* the partner of me in round r of the circle method over Lp (even)
 * places; Lp - 1 is the fixed one */
static int partner(int me, int r, int Lp)
{
	int n = Lp - 1;

	if (me == n)
		return r;
	if (me == r)
		return n;
	return ((2 * r - me) % n + n) % n;
}

int llmt_st_net(llmt_comm *lead, int full, llmt_st_meas *out)
{
	/* messages below Open MPI's eager limit (64 KiB over TCP): a sender
	 * queues them without waiting for its receiver to be scheduled */
	net_size z = full ? (net_size){ (size_t)32 << 10, 64, 40, 5 } : (net_size){ (size_t)32 << 10, 16, 8, 3 };
	int L = llmt_comm_size(lead), me = llmt_comm_rank(lead), Lp = L + L % 2, n = 0;
	int rounds = full || Lp - 1 < 7 ? Lp - 1 : 7;
	char *buf, *rbuf;
	double *gaps;

	if (L < 2)
		return 0;
	buf = calloc(1, z.bytes);
	rbuf = calloc(1, z.bytes);
	gaps = calloc((size_t)z.msgs, sizeof(double));
	if (!buf || !rbuf || !gaps)
		n = -1;
	for (int r = 0; r < rounds && n >= 0; r++) {
		int p = partner(me, r, Lp);
		if (p < L && pair_test(lead, me, p, &z, buf, gaps, &out[n]) == 0)
			n++;
		else if (p < L)
			n = -1;
	}
	if (n >= 0 && ring_test(lead, me, L, &z, buf, rbuf, gaps, &out[n]) == 0)
		n++;
	else
		n = -1;
	free(buf);
	free(rbuf);
	free(gaps);
	return n;
}

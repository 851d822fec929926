/* ports.c: MASTER_PORT from Slurm's reserved ports or a hash of the ids
 * (ports.h). SLURM_STEP_RESV_PORTS comes from the job's environment: any
 * byte of it may be hostile, so the parser accepts Slurm's own format
 * only and never reads past the bounds it checked. */
#include <stdio.h>
#include <string.h>

#include "ports.h"

#include "llmt/err.h"

/* s for a message: at most max bytes, anything not printable (and the
 * quote) as '?', "..." when cut. */
static void shown(const char *s, size_t max, char *buf, size_t len)
{
	size_t i = 0;
	for (; s[i] && i < max && i + 1 < len; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\'') ? s[i] : '?';
	if (s[i] && i + 4 < len) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
}

/* One port at *p: decimal, no sign, no leading zero, in range. Advances *p. */
static int port_at(const char **p, unsigned *out)
{
	const char *s = *p;
	unsigned v = 0;
	int n = 0;
	if (*s < '1' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		if (++n > 5)
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
		s++;
	}
	if (v < LLMT_PORT_MIN || v > LLMT_PORT_MAX)
		return -1;
	*out = v;
	*p = s;
	return 0;
}

int llmt_ports_parse(const char *s, struct llmt_ports *out, char *err, size_t errlen)
{
	char show[64], tok[16];
	size_t len = strnlen(s, LLMT_RESV_PORTS_MAX + 1);
	if (len > LLMT_RESV_PORTS_MAX) {
		SET_ERR("longer than %d bytes", LLMT_RESV_PORTS_MAX);
		return -1;
	}
	shown(s, 40, show, sizeof(show));
	if (!len) {
		SET_ERR("'' is empty");
		return -1;
	}
	struct llmt_ports r = { 0, 0, 0, 0 };
	const char *p = s;
	for (;;) {
		unsigned a, b;
		const char *at = p;
		if (port_at(&p, &a) != 0) {
			shown(at, 8, tok, sizeof(tok));
			SET_ERR("'%s': '%s' at byte %u is not a port (%u-%u)", show, tok, (unsigned)(at - s),
				LLMT_PORT_MIN, LLMT_PORT_MAX);
			return -1;
		}
		b = a;
		if (*p == '-') {
			p++;
			at = p;
			if (port_at(&p, &b) != 0) {
				SET_ERR("'%s': no port (%u-%u) after '-' at byte %u", show, LLMT_PORT_MIN,
					LLMT_PORT_MAX, (unsigned)(at - s));
				return -1;
			}
			if (b < a) {
				SET_ERR("'%s': range %u-%u runs backwards", show, a, b);
				return -1;
			}
		}
		if (r.items && a <= r.last) {
			SET_ERR("'%s': %u does not follow %u (Slurm's lists ascend)", show, a, r.last);
			return -1;
		}
		if (!r.items)
			r.first = a;
		r.last = b;
		r.count += b - a + 1;
		r.items++;
		if (*p == '\0')
			break;
		if (*p != ',' || p[1] == '\0') {
			SET_ERR("'%s': unexpected '%c' at byte %u", show,
				(*p >= 0x20 && *p < 0x7f && *p != '\'') ? *p : '?', (unsigned)(p - s));
			return -1;
		}
		p++;
	}
	*out = r;
	return 0;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

unsigned llmt_port_hash(uint32_t job_id, uint32_t step_id, unsigned lo, unsigned hi)
{
	if (hi < lo)
		hi = lo;
	uint64_t n = (uint64_t)(hi - lo) + 1;
	return lo + (unsigned)(mix64(((uint64_t)job_id << 32) | step_id) % n);
}

unsigned llmt_master_port(const char *resv, uint32_t job_id, uint32_t step_id, unsigned lo,
			  unsigned hi, char *note, size_t notelen)
{
	struct llmt_ports r;
	char why[160];
	if (note && notelen)
		note[0] = '\0';
	if (resv && llmt_ports_parse(resv, &r, why, sizeof(why)) == 0)
		return r.last;
	unsigned port = llmt_port_hash(job_id, step_id, lo, hi);
	if (resv && note && notelen)
		snprintf(note, notelen, "SLURM_STEP_RESV_PORTS %s: not Slurm's reserved ports; "
			 "MASTER_PORT %u from the job and step ids instead", why, port);
	return port;
}

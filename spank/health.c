/* health.c: node health, pure part: kernel log record parsing, hardware
 * error classification and reason formatting. Written by hand because no
 * library parses kmsg/dmesg lines; the patterns follow the kernel's own
 * message formats (drivers/acpi/apei/ghes.c, pci/pcie/aer.c, NVRM). */
#include "health.h"

#include <stdio.h>
#include <string.h>

static const char *memfind(const char *hay, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	if (m == 0 || m > n)
		return NULL;
	for (size_t i = 0; i + m <= n; i++)
		if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0)
			return hay + i;
	return NULL;
}

/* Parses decimal digits at p (at most end); returns the number of digits,
 * 0 on none or overflow past 18 digits. */
static size_t parse_u64(const char *p, const char *end, uint64_t *v)
{
	size_t k = 0;
	uint64_t x = 0;
	while (p + k < end && p[k] >= '0' && p[k] <= '9') {
		if (k >= 18)
			return 0;
		x = x * 10 + (uint64_t)(p[k] - '0');
		k++;
	}
	*v = x;
	return k;
}

int llmt_kline_split(const char *line, size_t len, struct llmt_kline *out)
{
	const char *end = line + len;
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		end = line + --len;
	if (len == 0 || line[0] == ' ')
		return -1;
	out->ts_us = -1;
	out->msg = line;
	out->msg_len = len;

	if (line[0] == '[') {          /* dmesg: "[  123.456789] msg" */
		const char *p = line + 1;
		while (p < end && *p == ' ')
			p++;
		uint64_t sec = 0, frac = 0;
		size_t k = parse_u64(p, end, &sec);
		if (k == 0)
			return 0;
		p += k;
		size_t fk = 0;
		if (p < end && *p == '.') {
			p++;
			fk = parse_u64(p, end, &frac);
			p += fk;
		}
		if (p >= end || *p != ']')
			return 0;
		while (fk < 6) { frac *= 10; fk++; }
		while (fk > 6) { frac /= 10; fk--; }
		out->ts_us = (int64_t)(sec * 1000000u + frac);
		p++;
		while (p < end && *p == ' ')
			p++;
		out->msg = p;
		out->msg_len = (size_t)(end - p);
		return 0;
	}

	/* kmsg: "prio,seq,usec,flags[,more];msg" */
	const char *semi = memchr(line, ';', len);
	if (semi) {
		uint64_t prio, seq, usec;
		const char *p = line;
		size_t k = parse_u64(p, semi, &prio);
		if (k && p + k < semi && p[k] == ',') {
			p += k + 1;
			k = parse_u64(p, semi, &seq);
			if (k && p + k < semi && p[k] == ',') {
				p += k + 1;
				k = parse_u64(p, semi, &usec);
				if (k && p + k <= semi) {
					out->ts_us = (int64_t)usec;
					out->msg = semi + 1;
					out->msg_len = (size_t)(end - semi - 1);
				}
			}
		}
	}
	return 0;
}

static int parse_xid(const char *msg, size_t len)
{
	/* "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus." */
	const char *x = memfind(msg, len, "Xid");
	if (!x)
		return -1;
	const char *end = msg + len;
	const char *p = x + 3;
	const char *colon = NULL;
	/* skip the "(PCI:...)" group, then expect ": <code>" */
	if (p < end && *p == ' ')
		p++;
	if (p < end && *p == '(') {
		const char *close = memchr(p, ')', (size_t)(end - p));
		if (!close)
			return -1;
		p = close + 1;
	}
	colon = p;
	if (colon >= end || *colon != ':')
		return -1;
	p = colon + 1;
	while (p < end && *p == ' ')
		p++;
	uint64_t v;
	size_t k = parse_u64(p, end, &v);
	if (k == 0 || k > 4)
		return -1;
	return (int)v;
}

enum llmt_hw_kind llmt_hw_classify(const char *msg, size_t len, int *xid)
{
	if (xid)
		*xid = -1;
	if (memfind(msg, len, "NVRM: Xid")) {
		int code = parse_xid(msg, len);
		if (xid)
			*xid = code;
		return LLMT_HW_XID;
	}
	if (memfind(msg, len, "PCIe Bus Error") &&
	    (memfind(msg, len, "severity=Uncorrected") || memfind(msg, len, "severity=Uncorrectable")))
		return LLMT_HW_PCIE;
	if (memfind(msg, len, "Machine Check Exception") ||
	    memfind(msg, len, "Uncorrected hardware memory error") ||
	    memfind(msg, len, "mce: [Hardware Error]: CPU") ||
	    memfind(msg, len, "Kernel panic - not syncing: Fatal machine check"))
		return LLMT_HW_MCE;
	if (memfind(msg, len, "[Hardware Error]") &&
	    (memfind(msg, len, "event severity: fatal") || memfind(msg, len, "event severity: recoverable")))
		return LLMT_HW_GHES;
	if (memfind(msg, len, "EDAC") &&
	    (memfind(msg, len, " UE ") || memfind(msg, len, "Uncorrected") || memfind(msg, len, "UE err")))
		return LLMT_HW_EDAC;
	return LLMT_HW_NONE;
}

const char *llmt_hw_kind_name(enum llmt_hw_kind kind)
{
	switch (kind) {
	case LLMT_HW_XID: return "NVIDIA Xid";
	case LLMT_HW_MCE: return "machine check";
	case LLMT_HW_GHES: return "APEI hardware error";
	case LLMT_HW_PCIE: return "PCIe uncorrected error";
	case LLMT_HW_EDAC: return "EDAC uncorrected memory error";
	case LLMT_HW_NONE: break;
	}
	return "none";
}

int llmt_xid_is_application(int xid)
{
	return xid == 13 || xid == 31 || xid == 43 || xid == 45;
}

void llmt_health_scan_init(struct llmt_health_scan *s, int64_t since_us)
{
	memset(s, 0, sizeof(*s));
	s->since_us = since_us;
	s->first_xid = -1;
}

int llmt_health_scan_line(struct llmt_health_scan *s, const char *line, size_t len)
{
	struct llmt_kline kl;
	if (llmt_kline_split(line, len, &kl) != 0)
		return 0;
	s->lines++;
	/* A line without a time cannot be placed after the job start: only a
	 * line known to be recent counts. */
	if (kl.ts_us < 0 || kl.ts_us < s->since_us)
		return 0;
	int xid;
	enum llmt_hw_kind kind = llmt_hw_classify(kl.msg, kl.msg_len, &xid);
	if (kind == LLMT_HW_NONE)
		return 0;
	if (kind == LLMT_HW_XID && llmt_xid_is_application(xid))
		return 0;
	if (s->errors++ == 0) {
		s->first_kind = kind;
		s->first_xid = xid;
		llmt_sanitize(s->first, sizeof(s->first), kl.msg, kl.msg_len);
	}
	return 1;
}

void llmt_sanitize(char *dst, size_t n, const char *src, size_t len)
{
	size_t j = 0;
	if (n == 0)
		return;
	for (size_t i = 0; i < len && src[i] && j + 1 < n; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[j++] = (c < 0x20 || c > 0x7e || c == '"' || c == '\'' || c == '\\' || c == '`') ? '_' : (char)c;
	}
	dst[j] = '\0';
}

void llmt_health_reason(char *dst, size_t n, const char *check, const char *detail)
{
	char raw[512];
	snprintf(raw, sizeof(raw), "llm_train: %s: %s", check ? check : "health", detail ? detail : "");
	llmt_sanitize(dst, n, raw, strlen(raw));
}

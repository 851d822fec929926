/* health.c: node health, pure part: kernel log record parsing, hardware
 * error classification and reason formatting. Written by hand because no
 * library parses kmsg/dmesg lines; the patterns follow the kernel's own
 * message formats (drivers/acpi/apei/ghes.c, pci/pcie/aer.c, mce, EDAC,
 * NVRM), each anchored at the start of the message. */
#include "health.h"

#include <stdio.h>
#include <string.h>

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

/* "[  sec.usec] msg" at line..end: fills out, 0; -1 when not that form. */
static int split_dmesg(const char *line, const char *end, struct llmt_kline *out)
{
	const char *p = line + 1;
	while (p < end && *p == ' ')
		p++;
	uint64_t sec = 0, frac = 0;
	size_t k = parse_u64(p, end, &sec);
	if (k == 0)
		return -1;
	p += k;
	size_t fk = 0;
	if (p < end && *p == '.') {
		p++;
		fk = parse_u64(p, end, &frac);
		p += fk;
	}
	if (p >= end || *p != ']')
		return -1;
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

int llmt_kline_split(const char *line, size_t len, struct llmt_kline *out)
{
	const char *end = line + len;
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		end = line + --len;
	if (len == 0 || line[0] == ' ')
		return -1;
	out->ts_us = -1;
	out->facility = -1;
	out->kmsg = 0;
	out->msg = line;
	out->msg_len = len;
	uint64_t prio;

	if (line[0] == '[') {          /* dmesg: "[  123.456789] msg" */
		split_dmesg(line, end, out);
		return 0;
	}
	if (line[0] == '<') {          /* dmesg -r: "<prio>[  123.456789] msg" */
		size_t k = parse_u64(line + 1, end, &prio);
		const char *p = line + 1 + k;
		if (k && k <= 10 && p + 1 < end && p[0] == '>' && p[1] == '[' &&
		    split_dmesg(p + 1, end, out) == 0)
			out->facility = (int)(prio >> 3);
		return 0;
	}

	/* kmsg: "prio,seq,usec,flags[,more];msg" */
	const char *semi = memchr(line, ';', len);
	if (semi) {
		uint64_t seq, usec;
		const char *p = line;
		size_t k = parse_u64(p, semi, &prio);
		if (k && k <= 10 && p + k < semi && p[k] == ',') {
			p += k + 1;
			k = parse_u64(p, semi, &seq);
			if (k && p + k < semi && p[k] == ',') {
				p += k + 1;
				k = parse_u64(p, semi, &usec);
				if (k && p + k <= semi) {
					out->ts_us = (int64_t)usec;
					out->facility = (int)(prio >> 3);
					out->kmsg = 1;
					out->msg = semi + 1;
					out->msg_len = (size_t)(end - semi - 1);
				}
			}
		}
	}
	return 0;
}

/* Cursor over one message: each match step advances it or fails. */
struct cur {
	const char *p, *end;
};

static int lit(struct cur *c, const char *s)
{
	size_t m = strlen(s);
	if ((size_t)(c->end - c->p) < m || memcmp(c->p, s, m) != 0)
		return 0;
	c->p += m;
	return 1;
}

static int is_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* n..m characters of the class: hex digits (cls 'x'), decimal ('d'),
 * driver-name characters ('w': [A-Za-z0-9_-]), bus id ('b': hex : .). */
static int span(struct cur *c, char cls, size_t n, size_t m)
{
	size_t k = 0;
	while (c->p + k < c->end && k < m) {
		char ch = c->p[k];
		int ok = cls == 'x' ? is_hex(ch) :
			 cls == 'd' ? (ch >= '0' && ch <= '9') :
			 cls == 'b' ? (is_hex(ch) || ch == ':' || ch == '.') :
			 ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-');
		if (!ok)
			break;
		k++;
	}
	if (k < n)
		return 0;
	c->p += k;
	return 1;
}

/* "NVRM: Xid (PCI:<bus id>): <code>," -> code, or -1 when not that form. */
static int parse_xid(const char *msg, size_t len)
{
	struct cur c = { msg, msg + len };
	const char *d;
	if (!lit(&c, "NVRM: Xid (PCI:") || !span(&c, 'b', 4, 32) || !lit(&c, "): "))
		return -1;
	d = c.p;
	if (!span(&c, 'd', 1, 4) || !lit(&c, ","))
		return -1;
	uint64_t v = 0;
	parse_u64(d, c.p, &v);
	return (int)v;
}

/* "<driver> <domain:bus:dev.fn>: " (dev_printk's prefix for a PCI device). */
static int pci_dev_prefix(struct cur *c)
{
	struct cur t = *c;
	if (!span(&t, 'w', 1, 32) || !lit(&t, " "))
		return 0;
	struct cur with_domain = t;
	if (span(&with_domain, 'x', 4, 4) && lit(&with_domain, ":"))
		t = with_domain;
	if (!span(&t, 'x', 2, 2) || !lit(&t, ":") || !span(&t, 'x', 2, 2) || !lit(&t, ".") ||
	    !span(&t, 'd', 1, 1) || !lit(&t, ": "))
		return 0;
	*c = t;
	return 1;
}

static int is_pcie(const char *msg, size_t len)
{
	struct cur c = { msg, msg + len };
	if (!pci_dev_prefix(&c))
		return 0;
	struct cur a = c;
	if (lit(&a, "AER: ") && (lit(&a, "Uncorrected (") || lit(&a, "Uncorrectable (")) &&
	    (lit(&a, "Fatal)") || lit(&a, "Non-Fatal)")))
		return 1;
	lit(&c, "AER: ");
	return lit(&c, "PCIe Bus Error: severity=Uncorrect");
}

static int is_mce(const char *msg, size_t len)
{
	struct cur c = { msg, msg + len }, d = c, e = c;
	if (lit(&c, "mce: [Hardware Error]: CPU ") && span(&c, 'd', 1, 6) && lit(&c, ": Machine Check"))
		return 1;
	if (lit(&d, "mce: Uncorrected hardware memory error"))
		return 1;
	return lit(&e, "Kernel panic - not syncing: Fatal machine check");
}

static int is_ghes(const char *msg, size_t len)
{
	struct cur c = { msg, msg + len };
	if (lit(&c, "{") && (!span(&c, 'd', 1, 6) || !lit(&c, "}")))
		return 0;
	return lit(&c, "[Hardware Error]: event severity: ") &&
	       (lit(&c, "fatal") || lit(&c, "recoverable"));
}

/* "EDAC MC<n>: <count> UE <msg> on <label> (" (edac_mc.c), msg a word or
 * empty (amd64_edac). "EDAC MC0: 1 UE " is 15 bytes, a whole task name:
 * what the kernel prints after a name ('[', ' (', ': ', ' invoked') must
 * not complete the form, so the byte after " UE " is a letter or " on ". */
static int is_edac(const char *msg, size_t len)
{
	struct cur c = { msg, msg + len };
	if (!lit(&c, "EDAC MC") || !span(&c, 'd', 1, 6) || !lit(&c, ": ") || !span(&c, 'd', 1, 10) ||
	    !lit(&c, " UE "))
		return 0;
	if (lit(&c, " on "))
		return 1;
	return c.p < c.end && ((*c.p >= 'a' && *c.p <= 'z') || (*c.p >= 'A' && *c.p <= 'Z'));
}

enum llmt_hw_kind llmt_hw_classify(const char *msg, size_t len, int *xid)
{
	if (xid)
		*xid = -1;
	int code = parse_xid(msg, len);
	if (code >= 0) {
		if (xid)
			*xid = code;
		return LLMT_HW_XID;
	}
	if (is_pcie(msg, len))
		return LLMT_HW_PCIE;
	if (is_mce(msg, len))
		return LLMT_HW_MCE;
	if (is_ghes(msg, len))
		return LLMT_HW_GHES;
	if (is_edac(msg, len))
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
	/* One line not in the /dev/kmsg form (a copy of the device has none):
	 * the rest may be a record's text after a newline (health.h) */
	if (!kl.kmsg)
		s->seen_text = 1;
	/* A line without a time cannot be placed after the job start: only a
	 * line known to be recent counts. */
	if (kl.ts_us < 0 || kl.ts_us < s->since_us)
		return 0;
	/* Only the kernel's own records: user-space writes to /dev/kmsg carry
	 * facility 1, and plain dmesg text does not say whose a line is. */
	if (kl.facility != 0)
		return 0;
	if (s->seen_text) {
		s->text++;
		return 0;
	}
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

int llmt_selftest_verdict(int rc, const char *out, char *detail, size_t n)
{
	/* exit 88 is wrong answers or slowness: only the first drains (a slow
	 * node in the prolog has no allocation's median to be judged by) */
	const char *w = rc == 88 && out ? strstr(out, "(answers wrong") : NULL;
	if (!w) {
		if (n)
			detail[0] = '\0';
		return 0;
	}
	const char *b = w;
	while (b > out && b[-1] != '\n')
		b--;
	size_t len = strcspn(b, "\n");
	llmt_sanitize(detail, n, b, len);
	return 1;
}

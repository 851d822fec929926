/* health.h: node health, pure part. Classifies kernel log lines (NVIDIA
 * Xid, machine checks, APEI/PCIe/EDAC uncorrected errors), filters them by
 * time and formats a drain reason. No I/O here (see health_io.h). */
#ifndef LLMT_HEALTH_H
#define LLMT_HEALTH_H

#include <stddef.h>
#include <stdint.h>

enum llmt_hw_kind {
	LLMT_HW_NONE = 0,
	LLMT_HW_XID,     /* "NVRM: Xid (PCI:...): 79, ..." */
	LLMT_HW_MCE,     /* machine check: uncorrected CPU/memory error */
	LLMT_HW_GHES,    /* APEI "[Hardware Error]" of fatal/recoverable severity */
	LLMT_HW_PCIE,    /* "PCIe Bus Error: severity=Uncorrected" */
	LLMT_HW_EDAC,    /* EDAC uncorrected memory error */
};

/* One kernel log record split into its timestamp and message. Accepts
 * /dev/kmsg records "prio,seq,usec,flags;message", raw dmesg text
 * "<prio>[  sec.usec] message" (dmesg -r) and plain dmesg text
 * "[  sec.usec] message". ts_us is monotonic microseconds since boot, or
 * -1 when the line carries no time. facility is prio >> 3 (0 = the kernel,
 * 1 = a user-space write to /dev/kmsg), -1 when the line does not say
 * (plain dmesg text). kmsg is 1 for the /dev/kmsg form only: there the
 * kernel writes every control byte of a message as \xNN, so a line is one
 * record; in dmesg text a newline in a task or file name starts a line. */
struct llmt_kline {
	int64_t ts_us;
	int facility;
	int kmsg;
	const char *msg;
	size_t msg_len;
};

/* 0 when the line is a record, -1 for an empty line or a kmsg continuation
 * line (those start with a space and carry key=value dictionary data). */
int llmt_kline_split(const char *line, size_t len, struct llmt_kline *out);

/* The kind of hardware error the message reports; *xid gets the Xid code
 * for LLMT_HW_XID (else -1). Every form is anchored at the start of the
 * message, as the kernel and the driver print it (a task name, which any
 * user sets, can start a kernel message but is at most 15 bytes and is
 * followed by "[pid]" or " (pid)"):
 *   NVRM: Xid (PCI:<bus id>): <code>,            (an unparsed code: NONE)
 *   <driver> <pci dev>: [AER: ]PCIe Bus Error: severity=Uncorrect...
 *   <driver> <pci dev>: AER: Uncorrect(ed|able) (Fatal|Non-Fatal) error
 *   mce: [Hardware Error]: CPU <n>: Machine Check...
 *   mce: Uncorrected hardware memory error ...
 *   Kernel panic - not syncing: Fatal machine check
 *   [{n}][Hardware Error]: event severity: fatal|recoverable
 *   EDAC MC<n>: <count> UE ... */
enum llmt_hw_kind llmt_hw_classify(const char *msg, size_t len, int *xid);
const char *llmt_hw_kind_name(enum llmt_hw_kind kind);

/* Xid codes that NVIDIA documents as caused by the application (13 graphics
 * engine exception, 31 MMU fault, 43 GPU stopped processing, 45 preemptive
 * cleanup): they do not condemn the node. */
int llmt_xid_is_application(int xid);

/* Running scan state: fed line by line, remembers the first error. Only
 * kernel records in the /dev/kmsg form count (facility 0 from the prefix):
 * user-space records (facility 1), plain dmesg text, and dmesg -r text
 * (util-linux prints a record's newline raw, the kernel's syslog(2) text
 * repeats the prefix after it: an executable named "a\n<6>[ 5.0] NVRM: Xid
 * (PCI:...): 79," makes a line no reader can tell from a record) are
 * looked at but never counted, nor is any line after the first one not in
 * the /dev/kmsg form (a copy of the device has none: a line such as
 * "6,1,5000,-;NVRM: Xid ..." in dmesg text is a record's rest); text
 * counts the kernel's records left unjudged so. */
struct llmt_health_scan {
	int64_t since_us;        /* lines older than this are ignored */
	unsigned lines;          /* records looked at */
	unsigned errors;         /* hardware errors found */
	unsigned text;           /* kernel records in dmesg -r text, never judged */
	int seen_text;           /* a line not in the /dev/kmsg form was seen: none counts after it */
	enum llmt_hw_kind first_kind;
	int first_xid;
	char first[160];         /* first error message, sanitised */
};

void llmt_health_scan_init(struct llmt_health_scan *s, int64_t since_us);
/* Returns 1 when this line was a counted hardware error. */
int llmt_health_scan_line(struct llmt_health_scan *s, const char *line, size_t len);

/* Copies src into dst (size n >= 1) keeping printable ASCII only; quotes,
 * backslashes and control characters become '_' so the result is safe as a
 * single scontrol argument and a single log line. */
void llmt_sanitize(char *dst, size_t n, const char *src, size_t len);

/* The prolog's self-test (`llm-train selftest --size small`): 1 when it
 * exited rc 88 and its output out names wrong answers ("(answers wrong"),
 * with that line sanitised in detail; 0 for anything else (ok, slow, a
 * failure to run: never a drain). */
int llmt_selftest_verdict(int rc, const char *out, char *detail, size_t n);

/* "llm_train: <check>: <detail>" sanitised, at most n-1 chars. */
void llmt_health_reason(char *dst, size_t n, const char *check, const char *detail);

#endif

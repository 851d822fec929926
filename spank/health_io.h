/* health_io.h: node health, I/O part. Reads the kernel log (bounded in
 * bytes and time), counts GPU device nodes, checks free space and runs an
 * admin command (scontrol) with a timeout. Root-safe: no symlinks followed. */
#ifndef LLMT_HEALTH_IO_H
#define LLMT_HEALTH_IO_H

#include <stddef.h>
#include <stdint.h>

#include "health.h"

#define LLMT_KLOG_MAX_BYTES (8u << 20)  /* never read more than this */
#define LLMT_KLOG_MAX_LINE 1024         /* longer lines are cut here */

/* Current CLOCK_MONOTONIC in microseconds (the kernel log's clock). */
int64_t llmt_monotonic_us(void);

/* Scans the kernel log at path (NULL or "" means /dev/kmsg) for hardware
 * errors with a timestamp >= since_us, reading at most max_bytes and for at
 * most timeout_ms. A regular file must be owned by root (or by the calling
 * user) and not writable by group or others; symlinks are refused.
 * Returns 0 (scan filled), -1 with err set. */
int llmt_klog_scan(const char *path, int64_t since_us, size_t max_bytes, int timeout_ms,
                   struct llmt_health_scan *scan, char *err, size_t errlen);

/* Number of /dev/nvidiaN device nodes in dev_dir (NULL means /dev);
 * -1 with err set when the directory cannot be read. */
int llmt_gpu_count(const char *dev_dir, char *err, size_t errlen);

/* Free bytes for unprivileged users on the file system holding the
 * absolute path root (statvfs). 0 or -1 with err set. */
int llmt_free_bytes(const char *root, uint64_t *avail, char *err, size_t errlen);

/* Runs fn(arg, out) in a child process and copies its out (outlen bytes,
 * plain data) back, waiting at most timeout_ms: a call that hangs (a
 * file system that does not answer) is killed and abandoned, never waited
 * for. Returns fn's return value (0 or -1 with its message in err), or -1
 * with err "... timed out after N ms" / a fork or pipe error. */
typedef int (*llmt_bounded_fn)(const void *arg, void *out, char *err, size_t errlen);
int llmt_call_bounded(llmt_bounded_fn fn, const void *arg, void *out, size_t outlen,
		      int timeout_ms, const char *what, char *err, size_t errlen);

/* The checks above, each in a child bounded by timeout_ms. */
int llmt_klog_scan_bounded(const char *path, int64_t since_us, int timeout_ms,
			   struct llmt_health_scan *scan, char *err, size_t errlen);
int llmt_gpu_count_bounded(const char *dev_dir, int timeout_ms, char *err, size_t errlen);
int llmt_free_bytes_bounded(const char *root, uint64_t *avail, int timeout_ms,
			    char *err, size_t errlen);

/* The fixed environment every child of a root context gets (nothing of
 * the job's or the daemon's own): PATH=/usr/sbin:/usr/bin:/sbin:/bin, LANG=C. */
extern char *const llmt_child_env[];

/* Runs argv[0] (an absolute path) with argv and llmt_child_env (plus the
 * daemon's own SLURM_CONF when it has one, for scontrol),
 * stdin/stdout/stderr on /dev/null, killing it after timeout_ms. Returns its exit status, or -1
 * (err set) when it could not run, died by a signal or timed out. */
int llmt_run_bounded(char *const argv[], int timeout_ms, char *err, size_t errlen);

/* The prolog's self-test: `cmd selftest --size small` (cmd an absolute
 * path, the admin's llm-train) in its own process group with the fixed
 * environment (plus what Open MPI needs to start as root, and TMPDIR=tmpdir,
 * a root-only directory: Open MPI's session directory), its stdout
 * copied to out (at most outlen - 1 bytes, NUL-terminated), the group
 * killed after timeout_ms. Returns its exit status, or -1 with err set
 * (not run, killed by a signal, timed out). health_selftest.c. */
int llmt_selftest_run(const char *cmd, const char *tmpdir, int timeout_ms, char *out, size_t outlen,
		      char *err, size_t errlen);

#endif

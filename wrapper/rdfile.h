/* rdfile: opens a file the training job wrote (heartbeats, metrics,
 * manifests, sdc.json, latest) for reading without ever blocking: a FIFO,
 * a device or a directory planted at such a path is refused at once. */
#ifndef LLMT_WRAP_RDFILE_H
#define LLMT_WRAP_RDFILE_H

#include <jansson.h>
#include <stdio.h>

/* fopen(path, "r") for a regular file only (after links); NULL with errno
 * (EINVAL for a file that is not regular) otherwise. */
FILE *wr_fopen_read(const char *path);

/* fopen(path, mode) for appending ("a") or writing ("w") a file the job
 * can also write (RUN_DIR's ledger, ranks.jsonl, metrics_http.port):
 * created 0666 less the umask, a regular file only; a FIFO there (whose
 * open(2) waits for a reader forever) is refused: NULL, errno EINVAL. */
FILE *wr_fopen_write(const char *path, const char *mode);

/* json_load_file through wr_fopen_read (err->text says why it failed). */
json_t *wr_json_load_file(const char *path, json_error_t *err);

#endif

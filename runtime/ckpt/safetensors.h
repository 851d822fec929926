/* safetensors.h: the safetensors format (Hugging Face): an 8-byte
 * little-endian header length, a JSON header {name: {dtype, shape,
 * data_offsets}} padded to 8 bytes, then the raw tensors. Written by
 * streaming; read into a ck_source so any box of a tensor can be loaded. */
#ifndef LLMT_SAFETENSORS_H
#define LLMT_SAFETENSORS_H
#include "ckpt_int.h"

/* Tensor data comes from a callback, so a file of any size is written
 * without holding it: fill(i, dst, arg) writes tensor i (dtype, shape
 * given) into dst and returns 0 or an exit code (err set). */
typedef struct st_tensor {
	char name[CK_NAME_MAX];
	int ndim;
	int64_t shape[2];
	llmt_ckpt_dtype dtype;
} st_tensor;
typedef int (*st_fill_fn)(int i, void *dst, void *arg, char *err, size_t errlen);

/* Write path atomically (tmp + fsync + rename). 0 or an exit code. */
int st_write(const char *path, const st_tensor *t, int n, st_fill_fn fill, void *arg,
             char *err, size_t errlen);

/* Add the tensors of safetensors file `path` (relative name `name` under
 * s->dir) to s as kind "weights" (kind added when absent). F32, BF16
 * and F16. 0 or an exit code (65 malformed, 66 missing). Call
 * ck_source_finish after the last file. */
int st_read_header(ck_source *s, const char *name, char *err, size_t errlen);

/* All tensors of HFDIR (model.safetensors, or the files named by
 * model.safetensors.index.json) into s (finished). 0 or an exit code. */
int st_open_dir(const char *hfdir, ck_source *s, char *err, size_t errlen);

#endif

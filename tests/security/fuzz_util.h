/* fuzz_util.h: helpers shared by the fuzz targets of tests/security: a
 * private scratch directory per process, writing an input to a file in it,
 * and splitting one input into parts at a separator line. */
#ifndef LLMT_FUZZ_UTIL_H
#define LLMT_FUZZ_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* The process's scratch directory (created 0700 on first use under
 * $TMPDIR or /tmp, removed at exit with what fuzz_write put in it). */
const char *fuzz_dir(void);
/* Write data to fuzz_dir()/name (replaced); returns the full path in a
 * static buffer of its own (one per name slot 0..3), or aborts. */
const char *fuzz_write(int slot, const char *name, const uint8_t *data, size_t len);
/* Remove fuzz_dir()/name if present. */
void fuzz_unlink(const char *name);
/* Split data at the first line "%%\n" (the separator is dropped): part 1
 * in *a,*alen, the rest in *b,*blen (NULL, 0 when there is no separator). */
void fuzz_split(const uint8_t *data, size_t len, const uint8_t **a, size_t *alen,
		const uint8_t **b, size_t *blen);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif

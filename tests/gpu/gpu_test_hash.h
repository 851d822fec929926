/* gpu_test_hash.h: `gpu_test hash` (gpu_test_hash.c), the device XXH3
 * against libxxhash on the device. */
#ifndef LLMT_GPU_TEST_HASH_H
#define LLMT_GPU_TEST_HASH_H

/* 0 when every length hashes as libxxhash does, else 1 (printed) */
int gpu_test_hash(void);

#endif

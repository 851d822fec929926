/* blas_emu.c: runtime/gpu/blas.c (the cuBLASLt wrapper and its choice of
 * algorithm) built into the emulation programs over cublaslt_emu.c. */
#include "gpu/blas.c"

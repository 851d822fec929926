/* gk_emu_norm.cc: runtime/gpu/dev_norm.cu built for CPU emulation (gk_emu.h). */
#include "gpu/dev_norm.cu"

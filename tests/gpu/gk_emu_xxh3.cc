/* gk_emu_xxh3.cc: runtime/gpu/dev_xxh3.cu built for CPU emulation (gk_emu.h). */
#include "gpu/dev_xxh3.cu"

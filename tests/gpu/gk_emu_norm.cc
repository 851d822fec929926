/* gk_emu_norm.cc: runtime/gpu/gk_norm.cu built for CPU emulation (gk_emu.h). */
#include "gk_norm.cu"

/* gk_emu_attn.cc: runtime/gpu/dev_attn.cu built for CPU emulation (gk_emu.h). */
#include "gpu/dev_attn.cu"

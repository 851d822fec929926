/* gk_emu_attn.cc: runtime/gpu/gk_attn.cu built for CPU emulation (gk_emu.h). */
#include "gk_attn.cu"

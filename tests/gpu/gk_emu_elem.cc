/* gk_emu_elem.cc: runtime/gpu/gk_elem.cu built for CPU emulation (gk_emu.h). */
#include "gk_elem.cu"

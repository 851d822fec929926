/* gk_emu_flash.cc: runtime/gpu/dev_flash.cu built for CPU emulation (gk_emu.h). */
#include "gpu/dev_flash.cu"

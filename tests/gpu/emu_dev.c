/* emu_dev.c: the GPU backend's bridge and training optimizer
 * (runtime/gpu/gbridge*.c, gmodel_opt.c) built into llm-train-emu against
 * cuda_emu.c; gmodel_emu.c brings the GPU model itself. */
#include "gpu/gmodel_opt.c"
#include "gpu/bridge.c"
#include "gpu/bridge_optim.c"

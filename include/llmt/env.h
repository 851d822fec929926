/* env.h: the environment variables the three parts hand each other (see
 * doc/contracts.md): the plugin sets the layout, ranks, device and NCCL
 * settings per task; the wrapper sets the checkpoint, heartbeat, resume
 * and retry settings; the runtime reads them. One name, one macro. */
#ifndef LLMT_ENV_H
#define LLMT_ENV_H

/* layout and ranks (plugin -> runtime, wrapper) */
#define LLMT_ENV_TP "LLM_TRAIN_TP"
#define LLMT_ENV_PP "LLM_TRAIN_PP"
#define LLMT_ENV_DP "LLM_TRAIN_DP"
#define LLMT_ENV_TP_RANK "LLM_TRAIN_TP_RANK"
#define LLMT_ENV_PP_RANK "LLM_TRAIN_PP_RANK"
#define LLMT_ENV_DP_RANK "LLM_TRAIN_DP_RANK"
/* the automatic layout's training shape (plugin -> runtime, wrapper):
 * defaults under llm-train's own --micro-batch --grad-accum --recompute
 * (--recompute-layers) --seq; LLM_TRAIN_AUTO: the choice in one line for the wrapper's ledger */
#define LLMT_ENV_MICRO_BATCH "LLM_TRAIN_MICRO_BATCH"
#define LLMT_ENV_GRAD_ACCUM "LLM_TRAIN_GRAD_ACCUM"
#define LLMT_ENV_RECOMPUTE "LLM_TRAIN_RECOMPUTE"
#define LLMT_ENV_RECOMPUTE_LAYERS "LLM_TRAIN_RECOMPUTE_LAYERS"
#define LLMT_ENV_SEQ "LLM_TRAIN_SEQ"
#define LLMT_ENV_AUTO "LLM_TRAIN_AUTO"
/* devices and network (plugin -> runtime) */
#define LLMT_ENV_GPU "LLM_TRAIN_GPU"
#define LLMT_ENV_NIC "LLM_TRAIN_NIC"
#define LLMT_ENV_NCCL_PROFILE "LLM_TRAIN_NCCL_PROFILE"
#define LLMT_ENV_NCCL_TIMEOUT "LLM_TRAIN_NCCL_TIMEOUT"
/* the admin policy's settings for the wrapper (plugin -> wrapper) */
#define LLMT_ENV_RESTARTS "LLM_TRAIN_RESTARTS"
#define LLMT_ENV_RESTART_WINDOW "LLM_TRAIN_RESTART_WINDOW"
#define LLMT_ENV_HEARTBEAT_TIMEOUT "LLM_TRAIN_HEARTBEAT_TIMEOUT"
#define LLMT_ENV_HEARTBEAT_STARTUP "LLM_TRAIN_HEARTBEAT_STARTUP"
#define LLMT_ENV_CKPT_TIMEOUT "LLM_TRAIN_CKPT_TIMEOUT"
#define LLMT_ENV_PREFLIGHT "LLM_TRAIN_PREFLIGHT"
#define LLMT_ENV_SAVE_FACTOR "LLM_TRAIN_SAVE_FACTOR"
/* a group (name or gid) of the caller whose members' directories the job
 * may use (owndir.h: a project directory another member made) */
#define LLMT_ENV_TRUST_GROUP "LLM_TRAIN_TRUST_GROUP"
#define LLMT_ENV_SAVE_TIMEOUT_MIN "LLM_TRAIN_SAVE_TIMEOUT_MIN"
#define LLMT_ENV_SLURM_TIMEOUT "LLM_TRAIN_SLURM_TIMEOUT"
/* checkpoints, heartbeats, resume (wrapper -> runtime) */
#define LLMT_ENV_CKPT_DIR "LLM_TRAIN_CKPT_DIR"
#define LLMT_ENV_CKPT_INTERVAL "LLM_TRAIN_CKPT_INTERVAL"
#define LLMT_ENV_RUN_DIR "LLM_TRAIN_RUN_DIR"
#define LLMT_ENV_HEARTBEAT_DIR "LLM_TRAIN_HEARTBEAT_DIR"
#define LLMT_ENV_HEARTBEAT_CHANNEL "LLM_TRAIN_HEARTBEAT_CHANNEL"
#define LLMT_ENV_RESUME "LLM_TRAIN_RESUME"
/* the checkpoints marked bad (ckpt_bad), as comma-separated llmt_ckpt_id
 * identities: the runtime's retention gives them no slot */
#define LLMT_ENV_CKPT_BAD "LLM_TRAIN_CKPT_BAD"
#define LLMT_ENV_SKIP_BATCHES "LLM_TRAIN_SKIP_BATCHES"
#define LLMT_ENV_ATTEMPT "LLM_TRAIN_ATTEMPT"
#define LLMT_ENV_COMM_TIMEOUT "LLM_TRAIN_COMM_TIMEOUT"
/* after an elastic shrink: the dp the job's batch options were given for */
#define LLMT_ENV_BATCH_DP "LLM_TRAIN_BATCH_DP"
/* the runtime's own */
#define LLMT_ENV_PEAK_GFLOPS "LLM_TRAIN_PEAK_GFLOPS"
#define LLMT_ENV_FAULT "LLM_TRAIN_FAULT"
/* the GPU model's attention: fused (default) or chunked (the reference) */
#define LLMT_ENV_GPU_ATTN "LLM_TRAIN_GPU_ATTN"
/* its forward at head dims 64 and 128: mma (mma.sync, default) or wmma */
#define LLMT_ENV_GPU_FLASH "LLM_TRAIN_GPU_FLASH"

#endif

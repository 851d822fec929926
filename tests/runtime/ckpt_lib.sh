# tests/runtime/ckpt_lib.sh: sourced by the trainer's checkpoint tests
# after setting ckpt_name: fail, $LT, the skip without /usr/bin/python3,
# a scratch $W (/tmp/llmt-$ckpt_name.*, kept when the test fails), one
# OpenMP thread, and none of the wrapper's or Slurm's variables.
fail() { echo "FAIL: $*"; exit 1; }
LT=${top_builddir:?}/runtime/llm-train
[ -x "$LT" ] || fail "$LT is not built"
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
W=$(mktemp -d "/tmp/llmt-${ckpt_name:?}.XXXXXX") || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$W" || echo "files kept in $W"; exit $rc' EXIT
export OMP_NUM_THREADS=1
unset LLM_TRAIN_RESUME LLM_TRAIN_CKPT_DIR LLM_TRAIN_RUN_DIR LLM_TRAIN_HEARTBEAT_DIR LLM_TRAIN_FAULT \
	LLM_TRAIN_ATTEMPT LLM_TRAIN_CKPT_BAD LLM_TRAIN_CKPT_INTERVAL SLURM_JOB_ID

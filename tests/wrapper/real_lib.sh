# tests/wrapper/real_lib.sh: sourced by the wrapper's tests of the real
# trainer without Slurm (wrap_badckpt.sh, wrap_unmark.sh) after setting
# TAG: fail, $LT and $WRAP (built, else FAIL), a skip without
# /usr/bin/python3, a temporary $W (kept when the test fails), an
# environment with none of the job's variables, and tiny_data.
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
WRAP=$top_builddir/wrapper/llm-train-wrap
[ -x "$LT" ] && [ -x "$WRAP" ] || fail "llm-train or llm-train-wrap is not built"
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
W=$(mktemp -d "/tmp/llmt-$TAG.XXXXXX") || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$W" || echo "files kept in $W"; exit $rc' EXIT
export OMP_NUM_THREADS=1
unset LLM_TRAIN_RESUME LLM_TRAIN_CKPT_DIR LLM_TRAIN_RUN_DIR LLM_TRAIN_HEARTBEAT_DIR LLM_TRAIN_FAULT \
	SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL LLM_TRAIN_CKPT_BAD
# tiny_data: $MODEL (configs/tiny.yaml) and a token shard in $W/data
tiny_data() {
	MODEL=$top_srcdir/configs/tiny.yaml
	mkdir "$W/data" && /usr/bin/python3 "$top_srcdir/tests/runtime/tiny_shard.py" "$W/data/s.bin" ||
		fail "no token shard"
}

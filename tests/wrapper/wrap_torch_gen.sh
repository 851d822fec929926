#!/bin/sh
# tests/wrapper/wrap_torch_gen.sh: llm-train-ckpt-torch orders the llm_train
# module's checkpoints by their marker's generation (1 + the largest in
# CKPT_DIR at each save), as llm-train's lister orders its manifests, and
# the wrapper resumes from the newest generation. One process, no torch:
# - saves 10 and 20 (generations 1, 2; CKPT_DIR listed once for both);
#   a rollback to 10 saves 15 (3): listed first, above the abandoned 20
#   (before: by step, 20 first), and the wrapper resumes from 15;
# - a marker without a generation (older) is 0: below any new save;
# - a marker's generation that is not an integer in 0..2^53-1 (a string,
#   negative, 2^63, a float, true): the checkpoint is refused in one line
#   naming the value and counts for no save's generation; one at 2^53-1
#   gives the next save 2^53-1 (never past it).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-tgen.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL \
	LLM_TRAIN_RESUME LLM_TRAIN_RUN_DIR LLM_TRAIN_HEARTBEAT_DIR RANK WORLD_SIZE
CK=$top_builddir/wrapper/llm-train-ckpt-torch
export LLM_TRAIN_PYTHONPATH=$top_srcdir/wrapper/python PYTHONPATH=$top_srcdir/wrapper/python
D=$T/ck
# save.py STEP...: one Job saving each step; prints how often it listed CKPT_DIR
cat >"$T/save.py" <<'PY'
import os, sys, llm_train
real, n = os.listdir, [0]
def listdir(p="."):
    n[0] += os.path.realpath(p) == os.path.realpath(os.environ["LLM_TRAIN_CKPT_DIR"])
    return real(p)
llm_train.os.listdir = listdir
job = llm_train.Job(signals=False)
for s in map(int, sys.argv[1:]):
    with open(job.ckpt_dir_for(s) + "/model.pt", "w") as f:
        f.write("weights of step %d\n" % s)
    job.ckpt_complete(s)
job.done()
print(n[0])
PY
save() {  # RESUME STEP...: RESUME "-" none
	_r=$1; shift
	if [ "$_r" = - ]; then _e="env -u LLM_TRAIN_RESUME"; else _e="env LLM_TRAIN_RESUME=$_r"; fi
	$_e LLM_TRAIN_CKPT_DIR="$D" /usr/bin/python3 "$T/save.py" "$@" 2>"$T/save.err" || fail "save $*: $(cat "$T/save.err")"
}
gen() {  # STEP: its marker's generation
	/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("generation"))' \
		"$D/step_$(printf %08d "$1")/llm_train.complete"
}
listed() {  # the steps ckpt-list prints, in its order
	"$CK" ckpt-list "$D" 2>"$T/list.err" | cut -d' ' -f1 | tr '\n' ' '
}
n=$(save - 10 20) || exit 1
[ "$n" = 1 ] || fail "two saves listed CKPT_DIR $n times, want 1 (the first save's)"
[ "$(gen 10) $(gen 20)" = "1 2" ] || fail "generations $(gen 10) $(gen 20), want 1 2"
save "$D/step_00000010" 15 >/dev/null || exit 1
[ "$(gen 15)" = 3 ] || fail "the rollback's step 15: generation $(gen 15), want 3"
[ "$(listed)" = "15 20 10 " ] || fail "ckpt-list after the rollback: $(listed), want 15 20 10"
"$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$CK" --tick 0.1 -- \
	/bin/sh -c 'echo "$LLM_TRAIN_RESUME" >"$LLM_TRAIN_CKPT_DIR/resumed"' >"$T/out" 2>&1 || { cat "$T/out"; fail "the run failed"; }
[ "$(cat "$D/resumed")" = "$D/step_00000015" ] || fail "the wrapper resumed from '$(cat "$D/resumed")', not step 15"
echo "ok: a rollback's step 15 is listed and resumed first, above the abandoned step 20"

mkdir "$D/step_00000040" && echo '{"step": 40, "files": {}}' >"$D/step_00000040/llm_train.complete"
[ "$(listed)" = "15 20 10 40 " ] || fail "an old marker (no generation) is not last: $(listed)"
mkdir "$D/step_00000050"
for v in '"7"' -1 9223372036854775808 2.0 true; do
	echo "{\"step\": 50, \"generation\": $v, \"files\": {}}" >"$D/step_00000050/llm_train.complete"
	[ "$(listed)" = "15 20 10 40 " ] || fail "generation $v: listed $(listed)"
	[ "$(cat "$T/list.err")" = "$D/step_00000050: bad marker: generation $v: not an integer in 0..9007199254740991" ] ||
		fail "generation $v: stderr: $(cat "$T/list.err")"
done
save - 16 >/dev/null || exit 1
[ "$(gen 16)" = 4 ] || fail "next to a bad generation: step 16's is $(gen 16), want 4"
echo '{"step": 50, "generation": 9007199254740991, "files": {}}' >"$D/step_00000050/llm_train.complete"
save - 17 >/dev/null || exit 1
[ "$(gen 17)" = 9007199254740991 ] || fail "after 2^53-1: step 17's generation is $(gen 17)"
[ "$(listed)" = "50 17 16 15 20 10 40 " ] || fail "at 2^53-1 (ties by step): listed $(listed)"
echo "ok: no generation is 0; a bad one is refused in one line; 2^53-1 is never passed"
echo PASS

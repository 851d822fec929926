#!/bin/sh
# tests/wrapper/wrap_badckpt_resave.sh: a ckpt_bad mark covers the broken
# checkpoint, not a later good save of the same step at the same path.
# Step 4 is broken (a flipped byte), marked bad, the job resumes from 2
# and saves step 4 again: the bad one is moved aside, the new good one
# takes its path. A second job must resume from the new step 4. Fails on
# the old code: marks were by path alone, the second job skipped the good
# step 4 ("marked bad") and resumed from step 2 (a checkpoint interval lost
# on every later restart, in every job of the run dir).
set -u
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
WRAP=$top_builddir/wrapper/llm-train-wrap
[ -x "$LT" ] && [ -x "$WRAP" ] || fail "llm-train or llm-train-wrap is not built"
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
W=$(mktemp -d /tmp/llmt-resave.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$W" || echo "files kept in $W"; exit $rc' EXIT
export OMP_NUM_THREADS=1
unset LLM_TRAIN_RESUME LLM_TRAIN_CKPT_DIR LLM_TRAIN_RUN_DIR LLM_TRAIN_HEARTBEAT_DIR LLM_TRAIN_FAULT \
	SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
mkdir "$W/data"
/usr/bin/python3 "$top_srcdir/tests/runtime/tiny_shard.py" "$W/data/s.bin" || fail "no token shard"
D=$W/ck
TRAIN="$LT --model $top_srcdir/configs/tiny.yaml --data $W/data --seq 16 --micro-batch 1 --ckpt-interval 2 --quiet"
$TRAIN --steps 4 --ckpt-dir "$D" >"$W/first.out" 2>&1 || { cat "$W/first.out"; fail "first run"; }
cat >"$W/flip.sh" <<'FLIP'
#!/bin/sh
f=$1; shift
if [ ! -e "$f.flipped" ]; then
	printf '\377' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null; : >"$f.flipped"
fi
exec "$@"
FLIP
chmod +x "$W/flip.sh"
"$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	"$W/flip.sh" "$D/step_00000004/rank_00000.bin" $TRAIN --steps 4 --ckpt-dir "$D" >"$W/wrap.out" 2>&1 ||
	{ cat "$W/wrap.out"; fail "first job: exit $?"; }
L=$D/ledger.jsonl
grep -q '"event":"ckpt_bad"' "$L" || { cat "$L"; fail "step 4 not marked bad"; }
ls -d "$D"/step_00000004.superseded.* >/dev/null 2>&1 || fail "the bad step 4 not moved aside: $(ls "$D")"
"$LT" ckpt-verify "$D/step_00000004" >/dev/null 2>&1 || fail "the new step 4 is not valid"
"$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	$TRAIN --steps 6 --ckpt-dir "$D" >"$W/again.out" 2>&1 || { cat "$W/again.out"; fail "second job: exit $?"; }
grep '"event":"launch"' "$L" | tail -n 1 | grep -q '"resume_step":4' ||
	{ cat "$W/again.out"; grep launch "$L"; fail "second job: the new good step 4 skipped"; }
echo "the re-saved step 4 is used; the mark stays on the one moved aside"

#!/bin/sh
# tests/runtime/import_resume.sh: the checkpoint `llm-train import` writes
# is a start for every way a run picks one, in real MPI jobs on the
# emulated cluster (tiny model, fp32, global batch 8). The reference is
# `--init-from HFDIR` (same weights, fresh optimizer, step 0) under
# (tp,pp,dp) = (2,1,2), 3 steps:
# - --resume CKPT under (2,1,2): final master weights, AdamW m and v
#   bit-identical to the reference (ckpt_compare.py), same losses;
# - --ckpt-dir CKPT (the automatic resume) under (1,2,1): within 1e-4
#   (fp32 sums in another order); then a second run in the same CKPT_DIR
#   resumes from its newest checkpoint (step 3), not from the import;
# - llm-train-wrap in a batch job (its ckpt-list + LLM_TRAIN_RESUME) under
#   (1,1,2): within 1e-4, the wrapper's launch event names step 0;
# - generate --ckpt on the (2,1,2) and (1,2,1) checkpoints gives the same
#   greedy tokens as generate --hf on their exports.
# Fails on the old code: every path refused the import with "no blob train
# of rank 0" (exit 66).
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
CMP="/usr/bin/python3 $top_srcdir/tests/runtime/ckpt_compare.py"
WRAP=$top_builddir/wrapper/llm-train-wrap
W=$CLUSTER_WORK
common="--precision fp32 --steps 3 --micro-batch 2"

# a model that is not its initialisation: 2 steps, exported for PyTorch
"$LT" --model "$MODEL" --data "$CORPUS" --seq 64 --steps 2 --micro-batch 2 --ckpt-dir "$W/base" --quiet \
	>"$W/base.out" 2>&1 || { cat "$W/base.out"; fail "base run: exit $?"; }
"$LT" export --dtype fp32 "$W/base" "$W/hf" >/dev/null || fail "export: exit $?"
"$LT" import "$W/hf" "$W/I" >"$W/import.out" 2>&1 || { cat "$W/import.out"; fail "import: exit $?"; }

rtrain "$W/R0" "" 2 1 2 $common --grad-accum 2 --init-from "$W/hf" --ckpt-dir "$W/R0" \
	|| { rc=$?; cat "$W/last.out"; fail "reference (--init-from): exit $rc"; }

cp -r "$W/I" "$W/I1"
rtrain "$W/R1" "" 2 1 2 $common --grad-accum 2 --resume "$W/I1" --ckpt-dir "$W/R1" \
	|| { rc=$?; cat "$W/last.out"; fail "--resume IMPORTED: exit $rc"; }
grep -q "starting from the imported weights of $W/I1/step_00000000" "$W/last.out" ||
	{ cat "$W/last.out"; fail "--resume: not started from the import"; }
$CMP "$W/R0/step_00000003" "$W/R1/step_00000003" || fail "--resume IMPORTED differs from --init-from"
losses "$W/R0/metrics.jsonl" >"$W/r0.loss"
losses "$W/R1/metrics.jsonl" | cmp -s "$W/r0.loss" - || fail "--resume IMPORTED: other losses"

cp -r "$W/I" "$W/I2"
rtrain "$W/I2" "$W/I" 1 2 1 $common --grad-accum 4 --ckpt-dir "$W/I2" \
	|| { rc=$?; cat "$W/last.out"; fail "--ckpt-dir IMPORTED under (1,2,1): exit $rc"; }
grep -q "starting from the imported weights of $W/I2/step_00000000" "$W/last.out" ||
	{ cat "$W/last.out"; fail "--ckpt-dir: not started from the import"; }
$CMP "$W/I2/step_00000003" "$W/R0/step_00000003" 1e-4 || fail "--ckpt-dir IMPORTED under (1,2,1) differs"
rtrain "$W/I2" "" 1 2 1 --precision fp32 --steps 4 --micro-batch 2 --grad-accum 4 --ckpt-dir "$W/I2" \
	|| { rc=$?; cat "$W/last.out"; fail "second run in the imported CKPT_DIR: exit $rc"; }
grep -q "resumed from $W/I2/step_00000003 at step 3" "$W/last.out" ||
	{ cat "$W/last.out"; fail "second run: not resumed from step 3"; }

# through the wrapper: it lists the checkpoints and hands the newest over
cp -r "$W/I" "$W/I3"
cat >"$W/wrap.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/I3" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- "$LT" --model "$MODEL" \\
	--data "$CORPUS" --seq 64 --lr 1e-3 --warmup 2 $common --grad-accum 2 --quiet
JOB
chmod +x "$W/wrap.sh"
j=$(cd "$W" && SLURM_MPI_TYPE=pmix LLM_TRAIN_TP=1 LLM_TRAIN_PP=1 LLM_TRAIN_DP=2 \
	sbatch --parsable -o wrap.out -N2 --ntasks-per-node=1 wrap.sh) || fail "sbatch"
st=$(cluster_sbatch_wait "$j" 240) || { cat "$W/wrap.out"; fail "wrapper job $j ended $st"; }
grep -q "starting from the imported weights of $W/I3/step_00000000" "$W/wrap.out" ||
	{ cat "$W/wrap.out"; fail "wrapper: not started from the import"; }
grep '"event":"launch"' "$W/I3/ledger.jsonl" | head -n 1 | grep -q '"resume_step":0' ||
	{ cat "$W/I3/ledger.jsonl"; fail "wrapper: the launch does not resume step 0"; }
$CMP "$W/I3/step_00000003" "$W/R0/step_00000003" 1e-4 || fail "wrapper run from the import differs"
# generate gathers a checkpoint of any layout: the same greedy tokens as
# from its export, for checkpoints saved under (2,1,2) and (1,2,1)
for ck in R0 I2; do
	"$LT" export --dtype fp32 "$W/$ck/step_00000003" "$W/$ck.hf" >/dev/null || fail "export $ck: exit $?"
	"$LT" generate --ckpt "$W/$ck/step_00000003" --ids --prompt "In the beginning" --max-new 24 \
		>"$W/$ck.gen" 2>"$W/gen.err" || { cat "$W/gen.err"; fail "generate --ckpt $ck: exit $?"; }
	"$LT" generate --hf "$W/$ck.hf" --ids --prompt "In the beginning" --max-new 24 >"$W/$ck.hgen" 2>"$W/gen.err" ||
		{ cat "$W/gen.err"; fail "generate --hf $ck: exit $?"; }
	[ "$(wc -w <"$W/$ck.gen")" = 24 ] && cmp -s "$W/$ck.gen" "$W/$ck.hgen" ||
		fail "generate from the $ck checkpoint: $(cat "$W/$ck.gen") vs its export: $(cat "$W/$ck.hgen")"
done
echo "PASS: the import starts --resume, --ckpt-dir (another layout) and the wrapper"

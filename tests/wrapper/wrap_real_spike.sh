#!/bin/sh
# tests/wrapper/wrap_real_spike.sh: loss-spike rollback under
# llm-train-wrap with the real trainer (llm-train, tiny model, dp=2 over
# two nodes, MPI over PMIx) on the emulated cluster. The loss and
# gradients are scaled x1000 in steps 10, 11 and 12 (LLM_TRAIN_FAULT
# spike, first attempt only): llm-train's spike guard (loss above 3x its
# running mean) skips those updates and, three bad steps in a row, exits
# 85; the wrapper classifies a numerical fault, rolls back 4 steps
# (checkpoint of step 8) and skips 2 batches past the fault, and the job
# completes: step 24 checkpointed.
# RT_SRC/RT_BUILD: where llm-train's sources and build are (default the tree).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
export LLM_TRAIN_FAULT=spike@10,spike@11,spike@12
STEPS=24
C=$W/spike

cat >"$W/spike.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$C" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 4 --hang-timeout-max 60 \\
	--backoff 0.2 --rollback-steps 4 --skip-batches 2 -- "$LT" --model "$RT_SRC/configs/tiny.yaml" \\
	--data "$W/corpus" --seq 64 --micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 4 \\
	--max-bad-steps 3 --quiet
JOB
chmod +x "$W/spike.sh"
j=$(cd "$W" && sbatch --parsable --requeue -N2 --ntasks-per-node=1 -o spike.out spike.sh) || fail "sbatch"
st=$(cluster_sbatch_wait "$j" 180) || { cat "$W/spike.out"; fail "job $j ended $st"; }

out=$W/spike.out
grep -q "step 10: loss spike" "$out" || { cat "$out"; fail "the spike guard did not see step 10 as a loss spike"; }
grep -q "3 bad steps in a row" "$out" || fail "llm-train did not give up after 3 bad steps"
skipped=$(/usr/bin/python3 -c 'import json,sys
print(" ".join(str(o["step"]) for o in map(json.loads, open(sys.argv[1])) if o["skipped"]))' "$C/metrics.jsonl")
[ "$skipped" = "10 11 12" ] || fail "skipped updates in steps '$skipped', want '10 11 12'"
[ "$(count failure "$C/ledger.jsonl" '"class":"numerical"')" = 1 ] ||
	{ grep failure "$C/ledger.jsonl"; fail "no numerical failure in the ledger"; }
# fails at step 12 (the step after the last heartbeat counts): resume at
# or before 13 - 4 = 9 (step 8), skip data through step 13 + 2 = 15
grep '"event":"launch"' "$C/ledger.jsonl" | tail -n 1 | grep '"resume_step":8' | grep -q '"skip_batches":7' ||
	{ grep launch "$C/ledger.jsonl"; fail "not resumed at 8 skipping 7 batches"; }
grep -q 'skipping 7 global batches' "$out" || fail "llm-train did not skip the data"
"$LT" ckpt-verify "$(printf '%s/step_%08d' "$C" $STEPS)" >/dev/null || fail "no valid checkpoint of step $STEPS"
[ "$(tail -n 1 "$C/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')" = $STEPS ] ||
	fail "the run did not end at step $STEPS"
echo "spikes in steps 10-12: exit 85, rolled back to step 8, 7 batches skipped, step $STEPS reached"
ledger spike "launches=2 failures=numerical restarts=1 requeues=0"
echo PASS

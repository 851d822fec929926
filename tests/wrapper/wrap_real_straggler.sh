#!/bin/sh
# tests/wrapper/wrap_real_straggler.sh: a straggler acted on, with the real
# trainer (llm-train, tiny model, dp=3, MPI over PMIx) under llm-train-wrap
# on four nodes, one a spare (-N4, --spares 1). From step 5 on, node3's
# rank sleeps 99 times its compute part (slow!@5/node3,
# LLM_TRAIN_FAULT_SLOW=100): its compute per step (the timing line's
# compute part; the other ranks only wait longer) stays above 1.5x the
# median for 5 steps, and its slowdown over the 150 steps left costs
# several restarts, so the wrapper ends the step, calls node3 a node fault and
# restarts on the spare from the last checkpoint; the arithmetic is in the
# ledger. The job reaches its last step. Fails on the old code (stragglers
# were only reported: the job ran on node3 to the end).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
export LLM_TRAIN_DP=3 LLM_TRAIN_FAULT='slow!@5/node3' LLM_TRAIN_FAULT_SLOW=100
STEPS=150
C=$W/strag
cat >"$W/strag.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$C" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 10 --hang-timeout-max 60 \\
	--backoff 0.2 --spares 1 --no-preflight -- "$LT" --model "$RT_SRC/configs/tiny.yaml" --data "$W/corpus" \\
	--seq 64 --micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 10 --quiet
JOB
chmod +x "$W/strag.sh"
j=$(cd "$W" && sbatch --parsable -N4 --ntasks-per-node=1 -o strag.out strag.sh) || fail "sbatch"
unset LLM_TRAIN_FAULT LLM_TRAIN_FAULT_SLOW
st=$(cluster_sbatch_wait "$j" 300) || { cat "$W/strag.out"; fail "job $j ended $st"; }
L=$C/ledger.jsonl
"$LT" ckpt-verify "$(printf '%s/step_%08d' "$C" $STEPS)" >/dev/null || { cat "$W/strag.out"; fail "no valid checkpoint of step $STEPS"; }
a=$(grep '"event":"straggler_action"' "$L") || { cat "$W/strag.out"; fail "no straggler_action in the ledger"; }
echo "$a"
echo "$a" | grep -q '"node":"node3"' && echo "$a" | grep -q '"replace":true' ||
	fail "the straggler action is not a replacement of node3"
echo "$a" | grep -q 'steps left = .* > restart .* + lost work .*: replace by a spare' || fail "no arithmetic in the ledger"
grep '"event":"launch"' "$L" | tail -n 1 | grep -q '"exclude":\["node3"\]' || { grep launch "$L"; fail "node3 not excluded"; }
# One node fault and nothing else, but for Open MPI 4.1.4's TCP wire-up
# crash (a segfault before the first step, tests/runtime/loop_lib.sh),
# which the wrapper restarts in place like any first crash
[ "$(count failure "$L" '"class":"node_fault"')" = 1 ] || { grep failure "$L"; fail "not one node fault"; }
[ "$(count failure "$L")" = "$(($(count failure "$L" '"class":"node_fault"') + \
	$(count failure "$L" '"class":"transient".*"signal":11,.*"step":0,')))" ] ||
	{ grep failure "$L"; fail "failures other than the straggler's"; }
echo "node3 slow (x100) from step 5: replaced by the spare, step $STEPS reached"
echo PASS

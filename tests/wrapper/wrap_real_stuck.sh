#!/bin/sh
# tests/wrapper/wrap_real_stuck.sh: a node that keeps freezing a rank
# outside communication, found through the communication watchdog, under
# llm-train-wrap with the real trainer (llm-train, tiny model, dp=2, MPI
# over PMIx) on 3 nodes with a spare (-N3, --spares 1). The rank on the
# allocation's second node stalls at step 7 on every attempt
# (stall!@7/NODE: 16 s, twice LLM_TRAIN_COMM_TIMEOUT=8); its peer waits in
# MPI, its heartbeat vouched for, until its watchdog ends it with 75, long
# before the wrapper's own hang timeout (100 s here). The wrapper names the
# stalled rank's node from the heartbeats: the first ending is transient on
# that node, the second (resumed from the step-4 checkpoint) a node fault
# that excludes it, and the job completes on the spare with the final
# checkpoint and metrics.
# RT_SRC/RT_BUILD: where llm-train's sources and build are (default the tree).
# --no-preflight: the self-test (wrap_preflight.sh) would judge speed on
# nodes that share this machine's cores and could exclude a node first.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
STEPS=24
C=$W/stuck
export LLM_TRAIN_COMM_TIMEOUT=8

# The bad node is the second of the allocation: the step's two nodes are
# the allocation's first two until one is excluded.
cat >"$W/stuck.sh" <<JOB
#!/bin/sh
bad=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | sed -n 2p)
echo "\$bad" >"$W/bad"
export LLM_TRAIN_FAULT="stall!@7/\$bad"
exec "$WRAP" --ckpt-dir "$C" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 100 --hang-timeout-max 200 \\
	--backoff 0.2 --spares 1 --no-preflight -- "$LT" --model "$RT_SRC/configs/tiny.yaml" --data "$W/corpus" --seq 64 \\
	--micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 4 --quiet
JOB
chmod +x "$W/stuck.sh"
j=$(cd "$W" && sbatch --parsable --no-requeue -N3 --ntasks-per-node=1 -o stuck.out stuck.sh) || fail "sbatch"
st=$(cluster_sbatch_wait "$j" 240) || { cat "$W/stuck.out"; fail "job $j ended $st"; }
bad=$(cat "$W/bad") && [ -n "$bad" ] || fail "the job script did not name the bad node"
L=$C/ledger.jsonl
show() { cat "$W/stuck.out"; grep -E '"event":"(launch|stuck|failure|action)"' "$L"; fail "$*"; }

# Both failed attempts: a peer's watchdog fired, the heartbeats named the node.
[ "$(grep -c 'communication watchdog: MPI_' "$W/stuck.out")" -ge 2 ] || show "no two watchdog exits"
[ "$(count stuck "$L" "\"node\":\"$bad\"")" = 2 ] || show "want two stuck events naming $bad"
[ "$(count failure "$L")" = 2 ] || show "want exactly two failures"
f1=$(grep '"event":"failure"' "$L" | sed -n 1p)
f2=$(grep '"event":"failure"' "$L" | sed -n 2p)
echo "$f1" | grep '"class":"transient"' | grep "\"node\":\"$bad\"" |
	grep -q "peer stalled the communication watchdog on $bad (first time)" || show "first failure: $f1"
echo "$f2" | grep '"class":"node_fault"' | grep "\"node\":\"$bad\"" |
	grep -q "peer stalled the communication watchdog on $bad, 1 time(s) before: node fault" || show "second failure: $f2"
# The second attempt ran on the same nodes (nothing excluded), the third without the bad node.
[ "$(count launch "$L")" = 3 ] || show "want three launches"
grep '"event":"launch"' "$L" | sed -n 2p | grep -q '"exclude":\[\]' || show "the second launch excludes a node"
grep '"event":"launch"' "$L" | tail -n 1 | grep -q "\"exclude\":\[\"$bad\"\]" || show "the last launch does not exclude $bad"
rs=$(grep '"event":"launch"' "$L" | tail -n 1 | sed -n 's/.*"resume_step":\([0-9]*\).*/\1/p')
[ -n "$rs" ] && [ "$rs" -ge 4 ] && [ "$rs" -lt 7 ] || show "not resumed from the step-4 checkpoint (resume_step '$rs')"
# ... and completed there.
"$LT" ckpt-verify "$(printf '%s/step_%08d' "$C" $STEPS)" >/dev/null || show "no valid checkpoint of step $STEPS"
last=$(tail -n 1 "$C/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
[ "$last" = $STEPS ] || show "the last metrics line is of step $last, want $STEPS"
[ "$(count requeue "$L")" = 0 ] || show "requeued although a spare was there"
grep '"event":"stuck"' "$L" | sed 's/.*"silent_s":\([0-9.]*\).*"gap_s":\([0-9.]*\).*/stalled rank silent \1 s, \2 s more than its peer/'
echo "rank on $bad stalled its peer into the watchdog twice: transient, then node fault; step $STEPS reached on the spare from step $rs"
echo PASS

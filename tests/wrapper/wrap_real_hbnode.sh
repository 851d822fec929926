#!/bin/sh
# tests/wrapper/wrap_real_hbnode.sh: the node heartbeat channel in a real
# Slurm job: llm-train-wrap with the real trainer (tiny model, dp=4, MPI
# over PMIx) on 2 nodes x 2 ranks. The ranks write one file per node,
# heartbeat/node_HOST, holding both of its ranks' records, and no rank
# files. SIGSTOP of rank 2, local rank 0 of the second node (the rank that
# created its node's segment), after the step-8 checkpoint: its node-mate
# goes on flushing the node's file, the stopped rank's record in it ages,
# and the wrapper's hang names rank 2 and its node; the job restarts from
# the checkpoint and completes; the killed attempt's shared-memory segments
# are gone (the plugin removes them at the step's end). Fails on the old
# code (rank files only: no node_HOST file).
# RT_SRC/RT_BUILD: where llm-train's sources and build are (default the tree).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
export LLM_TRAIN_DP=4
STEPS=24
C=$W/hbn
cat >"$W/hbn.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$C" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 4 --hang-timeout-max 60 \\
	--backoff 0.2 -- "$LT" --model "$RT_SRC/configs/tiny.yaml" --data "$W/corpus" --seq 64 \\
	--micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 4 --quiet
JOB
chmod +x "$W/hbn.sh"
j=$(export $SLOWAFTER8; cd "$W" && sbatch --parsable --no-requeue -N2 --ntasks-per-node=2 -o hbn.out hbn.sh) || fail "sbatch"
show() { cat "$W/hbn.out"; ls -l "$C/heartbeat"; fail "$*"; }
wait_file "$C/step_00000008/manifest.json" 120 || show "no step-8 checkpoint"
pid=$(real_pid "$j" 2) || show "no rank 2"
node=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^SLURMD_NODENAME=//p')
lid=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^SLURM_LOCALID=//p')
[ -n "$node" ] && [ "$lid" = 0 ] || show "rank 2: node '$node', local id '$lid' (want the second node's first task)"
# the channel: two node files, each with its two ranks, no rank file
[ "$(ls "$C/heartbeat" | grep -c '^node_[^.]*$')" = 2 ] || show "not two node files"
ls "$C/heartbeat" | grep -q '^rank_' && show "rank files written under a Slurm step"
head -n 1 "$C/heartbeat/node_$node" | grep -q "^node $node [0-9]*$" || show "node file header: $(head -n 1 "$C/heartbeat/node_$node")"
[ "$(grep -c '^r[23] [0-9]* [0-9]* [a-z]* [0-9.]* '"$node"'$' "$C/heartbeat/node_$node")" = 2 ] ||
	{ cat "$C/heartbeat/node_$node"; show "node_$node does not hold ranks 2 and 3"; }
kill -STOP "$pid"
st=$(cluster_sbatch_wait "$j" 240) || show "job $j ended $st"
kill -CONT "$pid" 2>/dev/null
L=$C/ledger.jsonl
[ "$(count hang "$L")" = 1 ] || show "want one hang"
[ "$(count hang "$L" '"rank":2,')" = 1 ] && [ "$(count hang "$L" "\"node\":\"$node\"")" = 1 ] ||
	{ grep '"event":"hang"' "$L"; show "the hang does not name rank 2 on $node"; }
grep -q "hang: rank 2 on $node silent" "$W/hbn.out" || show "the wrapper's hang line does not name rank 2 on $node"
[ "$(count launch "$L")" = 2 ] || show "want two launches"
# the killed attempt's segments are removed by the plugin at its step's end
left=$(ls /dev/shm | grep "^llmt-hb-$(id -u)-$j\.")
[ -z "$left" ] || show "segments left in /dev/shm: $left"
[ -f "$(printf '%s/step_%08d' "$C" $STEPS)/manifest.json" ] || show "no step-$STEPS checkpoint"
grep '"event":"hang"' "$L" | sed 's/.*"silent_s":\([0-9.]*\).*"timeout_s":\([0-9.]*\).*/stopped rank silent \1 s (timeout \2 s)/'
echo "rank 2 (local 0 on $node) stopped: found through its node's file, the job completed after one restart"
echo PASS

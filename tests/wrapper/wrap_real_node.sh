#!/bin/sh
# tests/wrapper/wrap_real_node.sh: a node lost mid-run under
# llm-train-wrap with the real trainer (llm-train, tiny model, dp=2, MPI
# over PMIx) in a private 3-node emulated cluster (a node crash must not
# touch other tests' jobs). The allocation has a spare (-N3, --spares 1):
# after the step-8 checkpoint the node of task 1 freezes and dies
# (cluster_node_crash: its slurmd, slurmstepd and rank); the wrapper calls
# it a node fault, restarts on the spare excluding the dead node, resumes
# from the last checkpoint, and the job completes with the final step's
# checkpoint and metrics.
# RT_SRC/RT_BUILD: where llm-train's sources and build are (default the tree).
# --no-preflight: the self-test (wrap_preflight.sh) would judge speed on
# nodes that share this machine's cores and could exclude a node first.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup --nodes 3 --cpus 2
STEPS=24
C=$W/node
# The first attempt stalls 10 s at step 9 (watchdog off), after the step-8
# checkpoint: the node is lost while training is under way (24 steps of this
# model take well under a second). Faults fire on the first attempt only.
export LLM_TRAIN_FAULT=stall@9 LLM_TRAIN_COMM_TIMEOUT=0

cat >"$W/node.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$C" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 4 --hang-timeout-max 60 \\
	--backoff 0.2 --spares 1 --no-preflight -- "$LT" --model "$RT_SRC/configs/tiny.yaml" --data "$W/corpus" --seq 64 \\
	--micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 4 --quiet
JOB
chmod +x "$W/node.sh"
j=$(cd "$W" && export $SLOWAFTER8 && sbatch --parsable --requeue --no-kill -N3 --ntasks-per-node=1 -o node.out node.sh) ||
	fail "sbatch"
wait_file "$C/step_00000008/manifest.json" 120 || { cat "$W/node.out"; fail "no step-8 checkpoint"; }

# task 1's llm-train process: of this cluster's job $j (job ids repeat
# across clusters, the configuration file does not)
pid=
for p in $(pgrep -f "$LT --model"); do
	e=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
	echo "$e" | grep -qx "SLURM_JOB_ID=$j" && echo "$e" | grep -qx "SLURM_PROCID=1" &&
		echo "$e" | grep -qx "SLURM_CONF=$SLURM_CONF" && { pid=$p; break; }
done
[ -n "$pid" ] || fail "no llm-train process for task 1 of job $j"
bad=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^SLURMD_NODENAME=//p')
[ -n "$bad" ] || fail "task 1 has no SLURMD_NODENAME"

# The node freezes at once (its slurmd, slurmstepds and the rank), then
# cluster_node_crash kills every process of it.
frozen=$(_cl_daemon_pid "$CLUSTER_DIR" slurmd "$bad") || fail "no slurmd for $bad"
frozen="$frozen $(_cl_stepd_pids "$CLUSTER_DIR" "$bad") $pid"
kill -STOP $frozen
cluster_node_crash "$bad" || fail "cannot crash $bad"

st=$(cluster_sbatch_wait "$j" 180) || { cat "$W/node.out"; fail "job $j ended $st"; }
"$LT" ckpt-verify "$(printf '%s/step_%08d' "$C" $STEPS)" >/dev/null || { cat "$W/node.out"; fail "no valid checkpoint of step $STEPS"; }
last=$(tail -n 1 "$C/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
[ "$last" = $STEPS ] || fail "the last metrics line is of step $last, want $STEPS"
[ "$(count failure "$C/ledger.jsonl" '"class":"node_fault"')" = 1 ] ||
	{ cat "$W/node.out"; grep failure "$C/ledger.jsonl"; fail "no node fault on $bad in the ledger"; }
grep '"event":"launch"' "$C/ledger.jsonl" | tail -n 1 | grep -q "\"exclude\":\[\"$bad\"\]" ||
	{ grep launch "$C/ledger.jsonl"; fail "the last launch does not exclude $bad"; }
rs=$(grep '"event":"launch"' "$C/ledger.jsonl" | tail -n 1 | sed -n 's/.*"resume_step":\([0-9]*\).*/\1/p')
[ -n "$rs" ] && [ "$rs" -ge 8 ] && [ "$rs" -lt $STEPS ] ||
	{ grep launch "$C/ledger.jsonl"; fail "not resumed from a checkpoint after the fault (resume_step '$rs')"; }
[ "$(count requeue "$C/ledger.jsonl")" = 0 ] || fail "requeued although a spare was there"
echo "node $bad lost after step 8: node fault, restarted on the spare from step $rs, step $STEPS reached"
ledger node "launches=2 failures=node_fault restarts=1 requeues=0"
echo PASS

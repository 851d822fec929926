#!/bin/sh
# tests/wrapper/wrap_real.sh: llm-train-wrap with the real trainer
# (llm-train, tiny model, dp=2 over two nodes, MPI over PMIx) on the
# emulated cluster. Faults, each ending with the job finished. "The same"
# is the final checkpoint's fp32 master weights and AdamW moments bit for
# bit (tests/runtime/ckpt_compare.py) against the unfaulted reference job;
# every job's ledger counts exactly its launches (the reference job: one),
# its failures by class, restarts and requeues, so an extra crash on the
# way cannot be restarted into a pass.
# - kill -9 of one rank mid-step: restart in place, the same final state;
# - SIGSTOP of one rank: hang found from its heartbeat, reported on the
#   node that heartbeat names (llm-train writes its node into it), step
#   killed, restart, bit-identical weights;
# - one bit flipped in one DP replica (exit 86): rollback to the last
#   checkpoint whose replicas agreed, bit-identical weights;
# - one rank's fp32 master share corrupted at rest (the replicas agree;
#   its own check says so, exit 86, cause master_share, one suspect):
#   requeue without that node, resume, bit-identical weights;
# - NaN in three steps in a row (the runtime gives up: exit 85): rollback
#   and data skip, the job finishes (weights differ: data was skipped);
# - preemption (SIGUSR1 to the batch shell): checkpoint, exit 87, requeue,
#   resume in the job's next run, bit-identical weights;
# - a corrupted checkpoint shard: skipped (reported, kept), resume from
#   the one before, bit-identical weights;
# - a crash loop stops when the restart budget is spent;
# - a config error (missing model file) is never retried.
# RT_SRC/RT_BUILD: where llm-train's sources and build are (default the tree).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
STEPS=24

job() {  # NAME [WRAPPER-OPTS] [-- TRAINER-OPTS]: submit a 2-node dp=2 job; print its id
	_n=$1; shift
	_wo=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do _wo="$_wo $1"; shift; done
	[ $# -gt 0 ] && shift
	cat >"$W/$_n.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$_n" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 4 --hang-timeout-max 60 \\
	--backoff 0.2 $_wo -- "$LT" --model "$RT_SRC/configs/tiny.yaml" --data "$W/corpus" --seq 64 \\
	--micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 4 --sdc-interval 2 --quiet $*
JOB
	chmod +x "$W/$_n.sh"
	(cd "$W" && sbatch --parsable --requeue --open-mode=append -o "$_n.out" -N2 --ntasks-per-node=1 "$_n.sh")
}

final() {  # NAME: the job's final checkpoint
	printf '%s/step_%08d' "$W/$1" $STEPS
}

finish() {  # NAME JOBID [same]: completed; with "same", the final fp32 master
	# weights and AdamW moments equal the reference's bit for bit
	_st=$(cluster_sbatch_wait "$2" 180) || { cat "$W/$1.out"; fail "$1: job $2 ended $_st"; }
	[ -f "$(final "$1")/manifest.json" ] || { cat "$W/$1.out"; fail "$1: no step-$STEPS checkpoint"; }
	if [ "${3:-}" = same ]; then
		/usr/bin/python3 "$top_srcdir/tests/runtime/ckpt_compare.py" "$(final ref)" "$(final "$1")" 0 ||
			{ cat "$W/$1.out"; fail "$1: final fp32 weights or optimizer state differ from the unfaulted run"; }
	fi
}

# preemption runs beside the others: SIGUSR1 to the batch shell after the
# step-8 checkpoint; llm-train checkpoints and exits 87; requeue; resume
pre=$(export $SLOWAFTER8; job pre) || fail "sbatch pre"
( wait_file "$W/pre/step_00000008/manifest.json" 120 && scancel --batch --signal=USR1 "$pre" ) &
prebg=$!

j=$(job ref) || fail "sbatch ref"
finish ref "$j"
ledger ref "launches=1 failures= restarts=0 requeues=0"

j=$(export $SLOWAFTER8; job kill9) || fail "sbatch kill9"
wait_file "$W/kill9/step_00000008/manifest.json" 120 || fail "kill9: no step-8 checkpoint"
kill -9 "$(real_pid "$j" 1)" || fail "kill9: no rank 1"
finish kill9 "$j" same
ledger kill9 "launches=2 failures=transient restarts=1 requeues=0"
[ "$(count failure "$W/kill9/ledger.jsonl" '"signal":9')" = 1 ] || fail "kill9: no signal-9 failure"

j=$(export $SLOWAFTER8; job stop) || fail "sbatch stop"
wait_file "$W/stop/step_00000008/manifest.json" 120 || fail "stop: no step-8 checkpoint"
pid=$(real_pid "$j" 1) || fail "stop: no rank 1"
node=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^SLURMD_NODENAME=//p')
rk=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^RANK=//p')
[ -n "$node" ] || fail "stop: task 1 has no SLURMD_NODENAME"
kill -STOP "$pid"
finish stop "$j" same
ledger stop "launches=2 failures=transient restarts=1 requeues=0"
kill -CONT "$pid" 2>/dev/null
[ "$(count hang "$W/stop/ledger.jsonl")" = 1 ] || fail "stop: no hang recorded"
[ "$(count hang "$W/stop/ledger.jsonl" "\"node\":\"$node\"")" = 1 ] ||
	{ grep '"event":"hang"' "$W/stop/ledger.jsonl"; fail "stop: the hang does not name the stopped task's node $node"; }
grep -q "hang: rank ${rk:-1} on $node silent" "$W/stop.out" || fail "stop: the wrapper's hang line does not name $node"
# found at the training limit (4 s floor), not at the startup cap or the
# save pause (60 s, 600 s): the stopped rank's last beat may be its init
# (the node file lags) or a save
sil=$(sed -n 's/.*"event":"hang".*"silent_s":\([0-9]*\).*/\1/p' "$W/stop/ledger.jsonl")
[ -n "$sil" ] && [ "$sil" -lt 60 ] || fail "stop: the hang was found after ${sil:-?} s of silence, at a cap, not the 4 s limit"

j=$(LLM_TRAIN_FAULT=bitflip@10:1; export LLM_TRAIN_FAULT; job sdc) || fail "sbatch sdc"
finish sdc "$j" same
ledger sdc "launches=2 failures=sdc restarts=1 requeues=0"
[ "$(count failure "$W/sdc/ledger.jsonl" '"class":"sdc"')" = 1 ] || fail "sdc: no sdc failure"
grep '"event":"launch"' "$W/sdc/ledger.jsonl" | tail -n 1 | grep -q '"resume_step":8' ||
	fail "sdc: not resumed from step 8"

j=$(LLM_TRAIN_FAULT=masterflip@10:1; export LLM_TRAIN_FAULT; job msdc) || fail "sbatch msdc"
finish msdc "$j" same
ledger msdc "launches=2 failures=sdc restarts=0 requeues=1"
/usr/bin/python3 - "$W/msdc" <<'PY' || fail "msdc: the report, the excluded node or the resume step"
import json, sys
d = sys.argv[1]
o = json.load(open(d + '/sdc.json'))
assert o['cause'] == 'master_share' and o['mismatches'][0] == 0 and o['mismatches'][1] >= 1, o
assert [s['dp_rank'] for s in o['suspects']] == [1], o
ev = [json.loads(l) for l in open(d + '/ledger.jsonl') if l.strip()]
rq = [e for e in ev if e['event'] == 'requeue']
assert len(rq) == 1 and rq[0]['exclude'] == o['suspects'][0]['hosts'], (rq, o)
assert [e['resume_step'] for e in ev if e['event'] == 'launch'][-1] == 8, ev
PY

j=$(LLM_TRAIN_FAULT=nan@14,nan@15,nan@16; export LLM_TRAIN_FAULT; job nan --rollback-steps 4 --skip-batches 2 -- --max-bad-steps 3) ||
	fail "sbatch nan"
finish nan "$j"
ledger nan "launches=2 failures=numerical restarts=1 requeues=0"
[ "$(count failure "$W/nan/ledger.jsonl" '"class":"numerical"')" = 1 ] || fail "nan: no numerical failure"
# fails at step 16 (the step after the last heartbeat counts): resume at
# or before 17 - 4 = 13 (step 12), skip data through step 17 + 2 = 19
grep '"event":"launch"' "$W/nan/ledger.jsonl" | tail -n 1 | grep '"resume_step":12' | grep -q '"skip_batches":7' ||
	{ grep launch "$W/nan/ledger.jsonl"; fail "nan: not resumed at 12 skipping 7 batches"; }
grep -q 'skipping 7 global batches' "$W/nan.out" || fail "nan: llm-train did not skip the data"

wait $prebg || fail "pre: no step-8 checkpoint to preempt"
finish pre "$pre" same
ledger pre "launches=2 failures=preempted restarts=0 requeues=1"
[ "$(count requeue "$W/pre/ledger.jsonl")" = 1 ] || fail "pre: not requeued"
[ "$(cluster_job_field "$pre" Restarts)" = 1 ] || fail "pre: Slurm did not requeue the job"

# corrupted checkpoint shard: a first job stops at step 15 (crash, no
# restart budget) after checkpoints 4, 8 and (its write is asynchronous:
# a loaded machine may not have finished it when the crash comes) 12; one
# shard of the newest complete one is overwritten in the middle; a second
# job in the same dir: llm-train ckpt-list refuses it (reported, kept
# aside, never deleted), the run resumes from the one before and ends with
# the unfaulted weights
j=$(LLM_TRAIN_FAULT=crash@15:0; export LLM_TRAIN_FAULT; job cor --max-restarts 0) || fail "sbatch cor"
cluster_sbatch_wait "$j" 120 >/dev/null && fail "cor: the first job did not stop"
ok=$(ls -d "$W"/cor/step_0000000[48] "$W"/cor/step_00000012 2>/dev/null | while read -r d; do
	[ -f "$d/manifest.json" ] && basename "$d"; done | tail -n 2)
bad=$(echo "$ok" | tail -n 1) prev=$(echo "$ok" | head -n 1)
[ "$(echo "$ok" | wc -l)" = 2 ] || { ls -la "$W/cor"; cat "$W/cor.out"; fail "cor: not two complete checkpoints"; }
shard=$W/cor/$bad/rank_00001.bin
[ -s "$shard" ] || { cat "$W/cor.out"; fail "cor: no $shard"; }
echo "cor: corrupting $bad, want a resume from $prev"
printf 'garbage!' | dd of="$shard" bs=1 seek=$(( $(stat -c %s "$shard") / 2 )) conv=notrunc 2>/dev/null
j=$(job cor) || fail "sbatch cor (2)"
finish cor "$j" same
ledger cor "launches=2 failures=transient restarts=0 requeues=0"
grep -l 'garbage!' "$W/cor/$bad"*/rank_00001.bin >/dev/null 2>&1 || fail "cor: the corrupt shard is gone"
[ "$(count checkpoint_skipped "$W/cor/ledger.jsonl" "$bad")" -ge 1 ] || fail "cor: corrupt checkpoint not reported"
grep '"event":"launch"' "$W/cor/ledger.jsonl" | tail -n 1 | grep -q "\"resume_step\":$(echo "$prev" | sed 's/step_0*//')," ||
	{ grep launch "$W/cor/ledger.jsonl"; fail "cor: not resumed from $prev"; }

# crash loop: rank 0 aborts at step 3 in every attempt; budget 1 restart
j=$(LLM_TRAIN_FAULT='crash!@3:0'; export LLM_TRAIN_FAULT; job loop --max-restarts 1) || fail "sbatch loop"
cluster_sbatch_wait "$j" 120 >/dev/null && fail "loop: a crash loop completed"
[ "$(count launch "$W/loop/ledger.jsonl")" = 2 ] || fail "loop: not 2 launches"
ledger loop "launches=2 failures=node_fault,transient restarts=1 requeues=0"
grep '"act":"stop"' "$W/loop/ledger.jsonl" | grep -q budget || fail "loop: not stopped by the budget"

j=$(job cfg -- --model "$W/no-such-model.yaml") || fail "sbatch cfg"
cluster_sbatch_wait "$j" 60 >/dev/null && fail "cfg: a config error completed"
[ "$(count launch "$W/cfg/ledger.jsonl")" = 1 ] || fail "cfg: config error retried"
ledger cfg "launches=1 failures=user_error restarts=0 requeues=0"
echo PASS

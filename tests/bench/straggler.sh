#!/bin/sh
# tests/bench/straggler.sh: goodput of one job with a straggler, with and
# without the wrapper's straggler action, both measured in this run on the
# emulated cluster (real trainer: llm-train, tiny model, dp=3, four nodes
# of which one is a spare). From step 5 node3's rank computes
# LLMT_BENCH_SLOW (default 20) times slower (slow!@5/node3). "act": the
# default (--straggler-steps 5) replaces node3 by the spare; "report":
# --straggler-steps 0 (reported, never acted on). Goodput here: the job's
# steps at the clean step time (the act run's last attempt, after the
# replacement) over the wall time the wrapper accounts (allocated_s of its
# end event); also the wrapper's own goodput and the wall times. Not part
# of the suite (minutes).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
STEPS=${LLMT_BENCH_STEPS:-150}
SLOW=${LLMT_BENCH_SLOW:-20}
export LLM_TRAIN_DP=3

run() {  # NAME WRAPPER-OPTS
	cat >"$W/$1.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$1" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 10 --hang-timeout-max 120 \\
	--backoff 0.2 --spares 1 --no-preflight $2 -- "$LT" --model "$RT_SRC/configs/tiny.yaml" --data "$W/corpus" \\
	--seq 64 --micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 10 --quiet
JOB
	chmod +x "$W/$1.sh"
	export LLM_TRAIN_FAULT='slow!@5/node3' LLM_TRAIN_FAULT_SLOW=$SLOW
	_j=$(cd "$W" && sbatch --parsable -N4 --ntasks-per-node=1 -o "$1.out" "$1.sh") || fail "$1: sbatch"
	unset LLM_TRAIN_FAULT LLM_TRAIN_FAULT_SLOW
	_st=$(cluster_sbatch_wait "$_j" 900) || { cat "$W/$1.out"; fail "$1: job $_j ended $_st"; }
}
run act ""
run report "--straggler-steps 0"
/usr/bin/python3 - "$W/act/ledger.jsonl" "$W/report/ledger.jsonl" "$STEPS" "$SLOW" <<'PY'
import json, sys
def ev(p):
    return [json.loads(l) for l in open(p) if l.strip()]
act, rep, steps, slow = ev(sys.argv[1]), ev(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
clean = [e for e in act if e['event'] == 'attempt'][-1]['step_s']
for name, e in (('act', act), ('report', rep)):
    end = [x for x in e if x['event'] == 'end'][-1]
    sa = [x for x in e if x['event'] == 'straggler_action']
    g = steps * clean / end['allocated_s']
    globals()[name] = g
    print('%-6s wall %.1f s, goodput %.3f (wrapper\'s own %.3f), restarts %d%s' % (
        name, end['allocated_s'], g, end['goodput'], end['restarts'],
        ('; ' + sa[0]['why']) if sa else ''))
print('node3 %sx slower from step 5, %d steps, clean step %.3f s: goodput act/report = %.2f' % (
    slow, steps, clean, act / report))
PY
echo PASS

#!/bin/sh
# tests/bench/autoplan_sweep.sh: the automatic layout against measurement.
# For three model configs and two allocations (2 and 4 ranks, mpirun on
# this host), every feasible layout llm-train-plan --auto lists (micro-
# batch 2, no recomputation, so layouts alone differ) is run with the real
# trainer and timed (median tokens/s of steps 3-8); prints per case the
# auto choice's measured tokens/s against the best measured one, and the
# Spearman rank correlation of predicted and measured tokens/s. Also the
# planner's time for a 10,000-GPU allocation. No thresholds (make bench).
# LLMT_SWEEP_CONFIGS (model configs) and LLMT_SWEEP_RANKS (rank counts)
# narrow it for a reduced run on a loaded machine.
set -u
P=$top_builddir/spank/llm-train-plan
LT=$top_builddir/runtime/llm-train
W=$(mktemp -d /tmp/llmt-sweep.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
for cfg in ${LLMT_SWEEP_CONFIGS:-configs/tiny.yaml tests/reference/ref-gqa.yaml configs/bench-768.yaml}; do
	for np in ${LLMT_SWEEP_RANKS:-2 4}; do
		case $cfg in *bench-768*) seq=128 ;; *) seq=64 ;; esac
		"$P" --auto --model "$top_srcdir/$cfg" --nodes 1 --tasks-per-node $np --mem-per-rank 8 \
			--seq $seq --micro-batch 2 --recompute none --global-batch $((np * 4)) --top 100 \
			--json >"$W/plan.json" || continue
		/usr/bin/python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["candidates"]:
    print(c["tp"], c["pp"], c["dp"], c["grad_accum"], c["tokens_per_s"])' "$W/plan.json" >"$W/cands"
		: >"$W/meas"
		while read -r tp pp dp ga pred; do
			rm -rf "$W/ck"
			timeout 600 mpirun -np $np --oversubscribe -x LLM_TRAIN_TP=$tp -x LLM_TRAIN_PP=$pp \
				-x OMP_NUM_THREADS "$LT" --model "$top_srcdir/$cfg" --data "$W/data" --steps 8 \
				--seq $seq --micro-batch 2 --grad-accum $ga --ckpt-dir "$W/ck" --ckpt-interval 0 \
				--quiet </dev/null >/dev/null 2>&1 || { echo "$cfg np=$np tp=$tp pp=$pp: run failed"; continue; }
			meas=$(sed -n 's/.*"step":\([3-8]\),.*"tokens_per_s":\([0-9.e+]*\).*/\2/p' "$W/ck/metrics.jsonl" |
				sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
			echo "$tp $pp $dp $pred $meas" >>"$W/meas"
		done <"$W/cands"
		/usr/bin/python3 - "$cfg" "$np" "$W/meas" <<'PYEOF'
import sys
cfg, np_, path = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [l.split() for l in open(path) if l.strip()]
if not rows:
    print("%s on %s ranks: no run" % (cfg, np_)); sys.exit(0)
pred = [float(r[3]) for r in rows]; meas = [float(r[4]) for r in rows]
def ranks(v):
    o = sorted(range(len(v)), key=lambda i: v[i]); r = [0] * len(v)
    for k, i in enumerate(o): r[i] = k
    return r
n = len(rows)
if n > 1:
    rp, rm = ranks(pred), ranks(meas)
    rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rp, rm)) / (n * (n * n - 1))
else:
    rho = float("nan")
best = max(meas)
print("%s on %s ranks: %d layouts; auto tp=%s pp=%s dp=%s measured %.0f tokens/s = %.1f%% of the best "
      "(%.0f); Spearman rho %.2f" % (cfg, np_, n, rows[0][0], rows[0][1], rows[0][2], meas[0],
      100 * meas[0] / best, best, rho))
for r in rows:
    print("   tp=%s pp=%s dp=%s predicted %.0f measured %.0f tokens/s" % (r[0], r[1], r[2], float(r[3]), float(r[4])))
PYEOF
	done
done
t0=$(date +%s.%N)
"$P" --auto --model "$top_srcdir/configs/gpt-1b.yaml" --nodes 1250 --tasks-per-node 8 --device gpu \
	--mem-per-rank 80 --seq 2048 --global-batch 10000 --top 3 >/dev/null 2>&1
t1=$(date +%s.%N)
echo "planner on 1250 nodes x 8 GPUs (10,000 ranks): $(awk "BEGIN {printf \"%.3f\", $t1 - $t0}") s"

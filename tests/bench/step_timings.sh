#!/bin/sh
# tests/bench/step_timings.sh: the per-rank timings' cost on step time,
# side by side with them off (LLM_TRAIN_STEP_TIMINGS=0: no clock reads
# around MPI calls and batch loads, no timing line). llm-train, tiny
# model, dp=2 as two local MPI ranks (mpirun, no cluster), PAIRS pairs of
# runs alternating on/off so the machine's load drifts over both alike;
# the median step time over steps 3.. of each run, then the median over
# runs. On a loaded machine that comparison is noise; so the fixed costs
# are also measured (bench/bench_steptime: a step's accounting and timing
# line, two clock reads per MPI call) and multiplied by the MPI calls of a
# step (the watchdog's bracket counts them: 6 per step here, dp=2 tiny)
# for their share of the median step. usage: step_timings.sh [PAIRS] [STEPS]
set -eu
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
LT=$top_builddir/runtime/llm-train
PAIRS=${1:-3}
STEPS=${2:-60}
[ -x "$LT" ] || { echo "step_timings: $LT not built"; exit 1; }
W=$(mktemp -d /tmp/llmt-bench-timings.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMPI_MCA_btl=self,tcp OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LLM_TRAIN=$LT "$top_srcdir/scripts/make-corpus" "$W/corpus" --max-bytes 200000 --shard-tokens 50000 >/dev/null
run() {  # DIR TIMINGS
	mpirun -np 2 -x LLM_TRAIN_TP=1 -x LLM_TRAIN_PP=1 -x LLM_TRAIN_DP=2 -x OMP_NUM_THREADS \
		-x LLM_TRAIN_STEP_TIMINGS="$2" "$LT" --model "$top_srcdir/configs/tiny.yaml" --data "$W/corpus" \
		--seq 64 --steps "$STEPS" --quiet --ckpt-dir "$1" --ckpt-interval 0 >"$1.out" 2>&1 ||
		{ cat "$1.out"; exit 1; }
}
i=0
while [ $i -lt "$PAIRS" ]; do
	run "$W/on$i" 1
	run "$W/off$i" 0
	grep -q '^timing ' "$W/on$i/heartbeat/rank_00000" || { echo "step_timings: no timing line with timings on"; exit 1; }
	! grep -q '^timing ' "$W/off$i/heartbeat/rank_00000" || { echo "step_timings: a timing line with timings off"; exit 1; }
	i=$((i + 1))
done
/usr/bin/python3 - "$W" "$PAIRS" <<'PY'
import json, statistics, sys
w, pairs = sys.argv[1], int(sys.argv[2])
def med(d):
    t = [json.loads(l)["step_time_s"] for l in open(d + "/metrics.jsonl")][2:]
    return statistics.median(t)
on = [med("%s/on%d" % (w, i)) for i in range(pairs)]
off = [med("%s/off%d" % (w, i)) for i in range(pairs)]
print("runs on : " + " ".join("%.5f" % x for x in on))
print("runs off: " + " ".join("%.5f" % x for x in off))
a, b = statistics.median(on), statistics.median(off)
print("step timings: median step %.5f s on, %.5f s off: %+.2f%% (%d pairs, noise included)" % (a, b, 100 * (a - b) / b, pairs))
PY
B=$top_builddir/tests/bench/bench_steptime
if [ -x "$B" ]; then
	out=$("$B")
	echo "$out"
	/usr/bin/python3 - "$out" "$W/on0/metrics.jsonl" <<'PY'
import json, statistics, sys
kv = dict(x.split("=") for x in sys.argv[1].split())
med = statistics.median(json.loads(l)["step_time_s"] for l in open(sys.argv[2]))
calls = 6   # MPI calls per step of this job (dp=2, tiny model, one micro-batch)
cost = float(kv["step_ns"]) + calls * float(kv["per_call_ns"]) + 2 * float(kv["clock_ns"])
print("step timings: fixed cost %.1f us per step = %.4f%% of the median step (%.4f s)" % (cost / 1e3, 100 * cost / 1e9 / med, med))
PY
fi

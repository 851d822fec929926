#!/bin/sh
# train_bench.sh CFG B T STEPS: llm-train itself on GPU 0 (the whole loop:
# data loader, guards, device norm/AdamW, metrics; bridge_optim.c) for
# STEPS steps of micro-batch B x sequence T on text (the GPL, repeated);
# prints one line
#   bench-loop CFG B=.. T=..: N tokens/s (median of steps 3..STEPS), ...
# tests/gpu/check sets it beside gpu_test bench's tokens/s of the same
# config measured in the same run (the loop's overhead over bare steps).
# SKIP (77) without CUDA in the build or a GPU.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
LT=${LLMT_BENCH_LLM_TRAIN:-$top_builddir/runtime/llm-train}
drv=$top_builddir/tests/gpu/gpu_test
[ $# = 4 ] || { echo "usage: train_bench.sh CFG B T STEPS" >&2; exit 64; }
if [ -z "${LLMT_BENCH_LLM_TRAIN:-}" ]; then
	[ -x "$drv" ] || { echo "SKIP: built without CUDA (configure found no CUDA + NCCL)"; exit 77; }
	"$drv" probe || exit $?
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/train_bench.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
unset LLM_TRAIN_TP LLM_TRAIN_PP LLM_TRAIN_DP RANK WORLD_SIZE LLM_TRAIN_RESUME LLM_TRAIN_CKPT_DIR
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
for i in 1 2 3 4; do cat "${LLMT_GPU_TEXT:-/usr/share/common-licenses/GPL-3}"; done >"$W/text.txt"
"$LT" tokenize "$W/text.txt" "$W/data" >/dev/null || { echo "FAIL: tokenize"; exit 1; }
LLM_TRAIN_GPU=${LLM_TRAIN_GPU:-0} "$LT" --model "$1" --data "$W/data" --micro-batch "$2" --seq "$3" \
	--steps "$4" --warmup 1 --quiet --sdc-interval 0 --run-dir "$W/run" >"$W/out" 2>&1
rc=$?
[ $rc = 0 ] || { tail -n 5 "$W/out"; echo "FAIL: llm-train exited $rc"; exit 1; }
"${LLMT_PYTHON:-/usr/bin/python3}" - "$W/run/metrics.jsonl" "$(basename "$1")" "$2" "$3" <<'PY'
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1])][2:]
if not r:
    sys.exit('FAIL: fewer than 3 steps')
med = lambda k: statistics.median(x[k] for x in r)
print('bench-loop %s B=%s T=%s: %.0f tokens/s (median of %d steps), step %.4f s, '
      'comm %.4f s, loss %.3f -> %.3f'
      % (sys.argv[2], sys.argv[3], sys.argv[4], med('tokens_per_s'), len(r), med('step_time_s'),
         med('comm_time_s'), r[0]['loss'], r[-1]['loss']))
PY

#!/bin/sh
# tests/spank/plan_auto.sh: llm-train-plan --auto, the automatic layout.
# Every candidate it prints divides the model and the allocation and keeps
# its memory (estimate + overhead) under margin x the limit; the JSON form
# agrees with the text; the choice, run for real (mpirun on this host),
# keeps every rank's peak resident memory (VmHWM) under the limit; a model
# that fits no layout is refused (64) with the smallest allocation that
# would fit, itself feasible; where full recomputation fits and none does
# not, full in the fewest layers that fit; bad input exits 64 naming the value.
set -u
fail() { echo "FAIL: $*"; exit 1; }
P=$top_builddir/spank/llm-train-plan
LT=$top_builddir/runtime/llm-train
[ -x "$P" ] || fail "$P is not built"
[ -x "$LT" ] || fail "$LT is not built"
W=$(mktemp -d /tmp/llmt-planauto.XXXXXX)
trap 'rm -rf "$W"' EXIT
PY=/usr/bin/python3
TINY=$top_srcdir/configs/tiny.yaml
BIG=$top_srcdir/configs/bench-768.yaml

# 1. candidates: divisibility and memory, text and JSON the same choice
"$P" --auto --model "$TINY" --nodes 1 --tasks-per-node 4 --mem-per-rank 0.5 --seq 64 \
	--global-batch 8 --top 50 --json >"$W/tiny.json" || fail "--auto --json exited $?"
"$P" --auto --model "$TINY" --nodes 1 --tasks-per-node 4 --mem-per-rank 0.5 --seq 64 \
	--global-batch 8 --top 50 >"$W/tiny.txt" || fail "--auto exited $?"
cat "$W/tiny.txt"
$PY - "$W/tiny.json" "$W/tiny.txt" <<'PYEOF' || fail "the candidates do not hold"
import json, re, sys
j = json.load(open(sys.argv[1])); txt = open(sys.argv[2]).read()
lim = 0.5 * 2**30 * 0.9
heads, kv, dff, layers = 4, 4, 512, 4   # configs/tiny.yaml
assert j["feasible"] > 0 and j["candidates"], "no candidate"
steps = [c["step_s"] for c in j["candidates"]]
assert steps == sorted(steps), "not fastest first"
for c in j["candidates"]:
    assert c["tp"] * c["pp"] * c["dp"] == 4, c
    assert heads % c["tp"] == 0 and dff % c["tp"] == 0 and layers % c["pp"] == 0, c
    assert c["dp"] * c["micro_batch"] * c["grad_accum"] == 8, c
    assert c["memory_bytes"] <= lim, c
ch = j["chosen"]
want = "chosen: --llm-train=tp=%d,pp=%d,dp=%d and llm-train --micro-batch %d --grad-accum %d --recompute %s" % (
    ch["tp"], ch["pp"], ch["dp"], ch["micro_batch"], ch["grad_accum"], ch["recompute"])
assert want in txt, "text and JSON choose differently: " + want
print("%d candidates hold; chosen %s" % (len(j["candidates"]), want))
open(sys.argv[1] + ".env", "w").write("tp=%d pp=%d mb=%d ga=%d rc=%s\n" % (
    ch["tp"], ch["pp"], ch["micro_batch"], ch["grad_accum"], ch["recompute"]))
PYEOF

# 1b. a limit between full's memory and none's: full in the fewest of the
# 12 layers that fit (--recompute-layers K), in the candidate line, the
# chosen line and the JSON alike (failed before: full in all 12 layers)
fl="--auto --model $BIG --nodes 1 --tasks-per-node 1 --seq 256 --global-batch 4 --micro-batch 4"
for r in none full; do
	"$P" $fl --mem-per-rank 100 --recompute $r --json >"$W/k-$r.json" || fail "--recompute $r exited $?"
done
lim=$($PY -c 'import json, sys; m = [json.load(open(f))["chosen"]["memory_bytes"] for f in sys.argv[1:]]
print("%.6f" % (sum(m) / 2 / 0.9 / 2**30))' "$W/k-none.json" "$W/k-full.json")
"$P" $fl --mem-per-rank "$lim" --json >"$W/k.json" || fail "--mem-per-rank $lim exited $?"
"$P" $fl --mem-per-rank "$lim" >"$W/k.txt" || fail "--mem-per-rank $lim exited $?"
k=$($PY -c 'import json, sys; c = json.load(open(sys.argv[1]))["chosen"]
assert c["recompute"] == "full", c
print(c["recompute_layers"])' "$W/k.json") || fail "not full recomputation at $lim GiB"
echo "$lim GiB per rank: full in $k of 12 layers"
[ "$k" -gt 0 ] && [ "$k" -lt 12 ] || { cat "$W/k.txt"; fail "chose full in $k layers, want fewer than all 12"; }
grep -q "^  1 .* full:$k " "$W/k.txt" && grep -q -- "--recompute full --recompute-layers $k\$" "$W/k.txt" ||
	{ cat "$W/k.txt"; fail "the text does not show full:$k and --recompute-layers $k"; }

# 2. the choice run for real: every rank's VmHWM under the limit
eval "$(cat "$W/tiny.json.env")"
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null || fail "tokenize"
command -v mpirun >/dev/null 2>&1 || fail "mpirun missing (openmpi-bin is a dependency)"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 timeout 300 \
	mpirun -np 4 --oversubscribe -x LLM_TRAIN_TP=$tp -x LLM_TRAIN_PP=$pp -x OMP_NUM_THREADS \
	"$LT" --model "$TINY" --data "$W/data" --steps 2 --seq 64 --micro-batch $mb --grad-accum $ga \
	--recompute $rc --ckpt-dir "$W/ck" >"$W/run" 2>&1 || { cat "$W/run"; fail "the chosen layout's run exited"; }
n=0
for peak in $(sed -n 's/.*memory rank [0-9]*: peak \([0-9.]*\) MiB (VmHWM).*/\1/p' "$W/run"); do
	echo "rank peak $peak MiB, limit 512 MiB"
	awk -v p="$peak" 'BEGIN { exit !(p <= 512) }' || fail "a rank of the chosen layout peaked at $peak MiB"
	n=$((n + 1))
done
[ $n = 4 ] || { cat "$W/run"; fail "want 4 ranks' peaks, got $n"; }

# 3. no layout fits one node: refused, the smallest allocation named and feasible
"$P" --auto --model "$BIG" --nodes 1 --tasks-per-node 2 --mem-per-rank 1.2 --seq 256 \
	--global-batch 8 >"$W/no.out" 2>"$W/no.err"; rc=$?
[ $rc = 64 ] || fail "a model that fits no layout: exit $rc, want 64"
cat "$W/no.err"
min=$(sed -n 's/.*the smallest allocation that fits: \([0-9]*\) nodes x 2 tasks.*/\1/p' "$W/no.err")
[ -n "$min" ] && [ "$min" -gt 1 ] || fail "no smallest allocation named"
"$P" --auto --model "$BIG" --nodes "$min" --tasks-per-node 2 --mem-per-rank 1.2 --seq 256 \
	--global-batch 8 >/dev/null || fail "the named allocation ($min nodes) is not feasible"
if [ "$min" -gt 2 ] && "$P" --auto --model "$BIG" --nodes $((min - 1)) --tasks-per-node 2 \
	--mem-per-rank 1.2 --seq 256 --global-batch 8 >/dev/null 2>&1; then
	fail "$((min - 1)) nodes fit too"
fi
grep -q 'over the memory limit' "$W/no.out" || fail "the rejection does not say memory"

# 4. bad input: 64, one line naming it
bad() {
	_want=$1; shift
	"$P" --auto "$@" >"$W/out" 2>"$W/err"; _rc=$?
	[ $_rc = 64 ] || fail "llm-train-plan --auto $*: exit $_rc, want 64"
	grep -q -- "$_want" "$W/err" || { cat "$W/err"; fail "llm-train-plan --auto $*: the message does not name $_want"; }
	[ "$(wc -l <"$W/err")" = 1 ] || { cat "$W/err"; fail "llm-train-plan --auto $*: more than one line"; }
}
bad "needs --model" --nodes 1 --tasks-per-node 2 --mem-per-rank 1
bad "/nonexistent.yaml" --model /nonexistent.yaml --nodes 1 --tasks-per-node 2 --mem-per-rank 1
bad "needs --mem-per-rank" --model "$TINY" --nodes 1 --tasks-per-node 2
bad "recompute sometimes" --model "$TINY" --nodes 1 --tasks-per-node 2 --mem-per-rank 1 --recompute sometimes
bad "n\[1-" --model "$TINY" --nodes 'n[1-' --tasks-per-node 2 --mem-per-rank 1
# found by review: a rank count that wrapped an int (it hung), a fraction
# taken as 0, a FIFO as the model (it blocked)
bad "16,777,216 ranks" --model "$TINY" --nodes 1000000 --tasks-per-node 65536 --mem-per-rank 1
bad "whole number" --model "$TINY" --nodes 1 --tasks-per-node 2 --mem-per-rank 1 --top 0.5
mkfifo "$W/fifo"
bad "not a regular file" --model "$W/fifo" --nodes 1 --tasks-per-node 2 --mem-per-rank 1
# GPU ranks recompute too (refused before the GPU backend had it)
"$P" --auto --model "$TINY" --nodes 1 --tasks-per-node 2 --mem-per-rank 4 --device gpu --recompute full \
	>"$W/gpu" 2>&1 || { cat "$W/gpu"; fail "--device gpu --recompute full: exit $?"; }
grep -q -- "--recompute full" "$W/gpu" || { cat "$W/gpu"; fail "--device gpu --recompute full not chosen"; }
"$P" --auto --model "$TINY" --nodes 1000 --tasks-per-node 8 --mem-per-rank 0.1 >/dev/null 2>"$W/err"
grep -q "overhead alone" "$W/err" || { cat "$W/err"; fail "a limit under the overhead: no reason given"; }
echo PASS

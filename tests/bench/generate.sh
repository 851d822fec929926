#!/bin/sh
# generate.sh: `llm-train generate` decode tokens/s (greedy, KV cache,
# fp32 weights) against a PyTorch greedy decode with a KV cache
# (tests/bench/gen_torch.py) of the same export, side by side in this run,
# on the same threads: the 12-layer 768-wide model (configs/bench-768.yaml,
# ~85M parameters, one training step from its initialisation), a 32-byte
# prompt, 128 new tokens. Best of BENCH_REPEAT (default 3) interleaved runs
# (other jobs on the machine only slow a run down). Also says whether the
# two decodes chose the same tokens. Prints a ratio; no thresholds.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
LT=$top_builddir/runtime/llm-train
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
reps=${BENCH_REPEAT:-3} n=${BENCH_NEW:-128}
prompt="In the beginning God created the"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
head -c 300000 /usr/share/common-licenses/GPL-3 >"$W/t.txt"
"$LT" tokenize "$W/t.txt" "$W/data" >/dev/null
"$LT" --model "$top_srcdir/configs/bench-768.yaml" --data "$W/data" --steps 1 --seq 64 --micro-batch 1 \
	--ckpt-dir "$W/ck" --quiet >/dev/null
"$LT" export --dtype fp32 "$W/ck" "$W/hf" >/dev/null
rm -rf "$W/ck"
ours=0 torch=0
for r in $(seq "$reps"); do
	"$LT" generate --hf "$W/hf" --ids --prompt "$prompt" --max-new "$n" >"$W/ours.ids" 2>"$W/ours.err"
	o=$(sed -n 's/.*(\([0-9.]*\) tokens\/s).*/\1/p' "$W/ours.err")
	/usr/bin/python3 "$top_srcdir/tests/bench/gen_torch.py" "$W/hf" "$prompt" "$n" >"$W/torch.out"
	t=$(sed -n 's/^tokens_per_s //p' "$W/torch.out")
	echo "run $r: llm-train $o tokens/s, PyTorch $t tokens/s"
	ours=$(awk -v a="$ours" -v b="$o" 'BEGIN { print (b > a) ? b : a }')
	torch=$(awk -v a="$torch" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
done
same=no
head -n 1 "$W/torch.out" | cmp -s - "$W/ours.ids" && same=yes
echo "generate (bench-768, fp32, $OMP_NUM_THREADS threads, $n new tokens, best of $reps):"
echo "  llm-train $ours tokens/s, PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') $torch tokens/s," \
	"ratio $(awk -v a="$ours" -v b="$torch" 'BEGIN { printf "%.2f", a / b }'), same tokens: $same"

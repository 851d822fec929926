#!/bin/sh
# tests/bench/autoplan_refs.sh: llm-train-plan --auto on published reference
# points (Llama-2 7B/13B/70B, a 175B GPT; 8-GPU nodes of 80 and 141 GB):
# the planner's choice and its prediction for the layout NeMo or Megatron-LM
# publish for the same model, GPU count, global batch and sequence, with
# predicted memory per GPU and MFU (bf16 dense peak 989 TFLOP/s per GPU, for
# H100 and H200 alike). A markdown table on stdout; nothing is asserted.
: "${top_srcdir:=.}" "${top_builddir:=.}"
plan=$top_builddir/spank/llm-train-plan
m=$top_srcdir/tests/bench/models
[ -x "$plan" ] || { echo "FAIL: $plan not built"; exit 1; }
echo "| model | GPUs | GBS x seq | GB/GPU | source: published tp/pp/mb | its predicted memory, MFU | planner's choice tp/pp/dp/mb recompute | memory, MFU | feasible |"
echo "|---|---|---|---|---|---|---|---|---|"
# model nodes gbs seq tp pp mb source
while read -r model nodes gbs seq tp pp mb src; do
	for mem in 80 141; do
		args="--auto --model $m/$model.yaml --nodes $nodes --tasks-per-node 8 --mem-per-rank $mem \
			--device gpu --global-batch $gbs --seq $seq --json"
		# shellcheck disable=SC2086
		"$plan" $args >/tmp/refs.$$.a 2>/dev/null
		# shellcheck disable=SC2086
		"$plan" $args --tp "$tp" --pp "$pp" --micro-batch "$mb" --margin 1 --mem-per-rank 100000 \
			>/tmp/refs.$$.p 2>/dev/null
		/usr/bin/python3 - "$m/$model.yaml" "$nodes" "$mem" "$seq" "$gbs" "$tp/$pp/$mb ($src)" \
			/tmp/refs.$$.a /tmp/refs.$$.p <<'PY'
import json, sys
cfgf, nodes, mem, seq, gbs, pub, af, pf = sys.argv[1:9]
c = {}
for l in open(cfgf):
    l = l.split("#")[0].strip()
    if ":" in l:
        k, v = l.split(":", 1); c[k.strip()] = v.strip()
d, L, H, V, F = (int(c[k]) for k in ("d_model", "n_layers", "n_heads", "vocab_size", "d_ff"))
KV = int(c.get("n_kv_heads", H)); hd = d // H; T = int(seq)
N = V * d * (1 if c.get("tie_embeddings", "true") == "true" else 2) + d + \
    L * (2 * d + (H + 2 * KV) * hd * d + d * H * hd + 3 * F * d)
fpt = 6 * N + 6 * L * T * d
gpus = int(nodes) * 8
def mfu(x):
    return x["tokens_per_s"] * fpt / (gpus * 989e12) * 100
a, p = json.load(open(af)), json.load(open(pf))
pc = p["chosen"]
pubcol = f"{pc['memory_bytes']/2**30:.1f} GiB{' (over)' if pc['memory_bytes'] > 0.9*int(mem)*2**30 else ''}, {mfu(pc):.1f}%" if pc else "not a layout here"
ch = a["chosen"]
chcol = f"{ch['tp']}/{ch['pp']}/{ch['dp']}/{ch['micro_batch']} {ch['recompute']}" if ch else (f"none (smallest: {a['min_nodes']} nodes x 8)" if a.get('min_nodes') else "none (nor at 64x the nodes)")
chm = f"{ch['memory_bytes']/2**30:.1f} GiB, {mfu(ch):.1f}%" if ch else "-"
print(f"| {cfgf.rsplit('/',1)[1][:-5]} ({N/1e9:.1f}B) | {gpus} | {gbs} x {seq} | {mem} | {pub} | {pubcol} | {chcol} | {chm} | {a['feasible']} |")
PY
	done
done <<'REFS'
llama2-7b 1 128 4096 1 1 1 NeMo
llama2-13b 2 128 4096 1 4 1 NeMo
llama2-70b 8 128 4096 4 4 1 NeMo
gpt-175b 16 256 2048 4 8 1 NeMo
gpt-175b 16 1536 2048 8 16 1 Megatron-LM
REFS
rm -f /tmp/refs.$$.a /tmp/refs.$$.p

#!/bin/sh
# tests/bench/loop_memory.sh: peak memory per rank (VmHWM, reported by
# llm-train at exit) against the analytic estimate (runtime/memory/memest.c:
# parameters, ZeRO-1 optimizer shard, 1F1B activations, scratch, pipeline
# buffers, reduce-scatter scratch). The fixed runtime overhead (libraries, MPI, oneDNN) is
# measured in the same run as the peak of a ~1M-parameter model and taken
# off before the ratio. Layouts (1,1,1) (1,1,2) (1,2,1) (2,1,1) of a
# ~25M-parameter model, B=4, T=128, 2 steps, mpirun on this host, in each
# precision of LOOP_MEMORY_PREC (default "bf16 fp32": bf16 runs the blocked
# attention where the CPU has AVX-512 BF16, fp32 oneDNN's full square).
. "${top_srcdir:-.}/tests/bench/loop_lib.sh"
export OMP_NUM_THREADS=1
peak() { # model tp pp dp A prec: prints "peak_mib estimate_mib" of the rank with the largest peak
	LLM_TRAIN_TP=$2 LLM_TRAIN_PP=$3 LLM_TRAIN_DP=$4 mpirun -x LLM_TRAIN_TP -x LLM_TRAIN_PP -x LLM_TRAIN_DP \
		-x OMP_NUM_THREADS -np $(($2 * $3 * $4)) --oversubscribe "$LT" --model "$1" --data "$W/corpus" \
		--steps 2 --micro-batch 4 --grad-accum "$5" --seq 128 --precision "$6" --sdc-interval 0 \
		--run-dir "$W/run" >"$W/out" 2>&1 || { cat "$W/out"; exit 1; }
	sed -n 's/^llm-train: memory rank [0-9]*: peak \([0-9.]*\) MiB (VmHWM), estimate \([0-9.]*\) MiB.*/\1 \2/p' "$W/out" \
		| sort -g | tail -n 1
}
for prec in ${LOOP_MEMORY_PREC:-bf16 fp32}; do
base=$(peak "$top_srcdir/configs/tiny.yaml" 1 1 1 1 "$prec")
b_peak=${base% *} b_est=${base#* }
over=$(awk -v p="$b_peak" -v e="$b_est" 'BEGIN { print p - e }')
echo "loop_memory: $prec: runtime overhead $over MiB (1M model: peak $b_peak MiB, estimate $b_est MiB)"
for lay in "1 1 1 2" "1 1 2 1" "1 2 1 2" "2 1 1 2"; do
	set -- $lay
	r=$(peak "$W/m25.yaml" "$1" "$2" "$3" "$4" "$prec")
	awk -v pr="$prec" -v t="$1" -v p="$2" -v d="$3" -v pk="${r% *}" -v e="${r#* }" -v o="$over" 'BEGIN {
		printf "loop_memory: %s tp=%d pp=%d dp=%d: peak %.1f MiB, estimate %.1f + overhead %.1f MiB; (peak - overhead) / estimate = %.3f\n",
			pr, t, p, d, pk, e, o, (pk - o) / e }'
done
done

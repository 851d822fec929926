#!/bin/sh
# tests/runtime/memplan.sh: `llm-train memory`, the plan before a run, says
# what llm-train itself estimates at the end of the same run (CPU rank; and
# on the emulated GPU, device and host) for the same model, micro-batch,
# sequence, threads and checkpointing; its stages' parameter counts add up
# to the whole model (the tied embedding's second copy on the last stage);
# --recompute full in the first K layers (--recompute-layers) too, between
# none and all; bad input exits 64 naming the value.
set -u
. "$top_srcdir/tests/cluster/lib.sh"   # mpi_local
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
EMU=$top_builddir/tests/gpu/llm-train-emu
MODEL=$top_srcdir/configs/tiny.yaml
W=$(mktemp -d /tmp/llmt-memplan.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null || fail "tokenize"
opts="--micro-batch 2 --seq 64"
"$LT" memory --model "$MODEL" $opts --threads 1 >"$W/plan" || fail "llm-train memory exited $?"
cat "$W/plan"

# field TEXT: the first "N.N MiB" after TEXT in a line
field() { sed -n "s/.*$1[^0-9]*\([0-9.]*\) MiB.*/\1/p" | head -n 1; }
plan_cpu=$(field "CPU rank (1 threads):" <"$W/plan")
"$LT" --model "$MODEL" --data "$W/data" --steps 2 $opts --ckpt-dir "$W/ck" >"$W/run" 2>&1 ||
	{ cat "$W/run"; fail "llm-train exited"; }
run_cpu=$(field "peak [0-9.]* MiB (VmHWM), estimate" <"$W/run")
echo "CPU rank: plan $plan_cpu MiB, the run's own estimate $run_cpu MiB"
[ -n "$plan_cpu" ] && [ "$plan_cpu" = "$run_cpu" ] || fail "the plan's CPU rank ($plan_cpu) is not the run's estimate ($run_cpu)"
# --recompute full in 2 of the 4 layers: the plan is the run's, below none, above all 4
"$LT" memory --model "$MODEL" $opts --threads 1 --recompute full >"$W/planf" || fail "memory --recompute full exited $?"
"$LT" memory --model "$MODEL" $opts --threads 1 --recompute full --recompute-layers 2 >"$W/plank" ||
	fail "memory --recompute full --recompute-layers 2 exited $?"
"$LT" --model "$MODEL" --data "$W/data" --steps 2 $opts --recompute full --recompute-layers 2 \
	--ckpt-dir "$W/ckk" >"$W/runk" 2>&1 || { cat "$W/runk"; fail "llm-train --recompute-layers 2 exited"; }
pk=$(field "CPU rank (1 threads):" <"$W/plank") pf=$(field "CPU rank (1 threads):" <"$W/planf")
rk=$(field "peak [0-9.]* MiB (VmHWM), estimate" <"$W/runk")
echo "CPU rank, --recompute full in 2 of 4 layers: plan $pk MiB, run $rk MiB (none $plan_cpu, all layers $pf)"
[ -n "$pk" ] && [ "$pk" = "$rk" ] || fail "--recompute-layers 2: the plan ($pk) is not the run's estimate ($rk)"
awk -v k="$pk" -v n="$plan_cpu" -v f="$pf" 'BEGIN { exit !(k < n && k > f) }' ||
	fail "--recompute-layers 2: the plan is not between none and all layers"

if [ -x "$EMU" ]; then
	LLM_TRAIN_GPU=0 "$EMU" --model "$MODEL" --data "$W/data" --steps 2 $opts --ckpt-dir "$W/ckg" >"$W/grun" 2>&1 ||
		{ cat "$W/grun"; fail "the emulated GPU run exited"; }
	pd=$(field "GPU rank: device" <"$W/plan")
	rd=$(field "device memory estimate of rank 0:" <"$W/grun")
	ph=$(field "GPU rank: host" <"$W/plan")
	rh=$(field "host peak [0-9.]* MiB (VmHWM), estimate" <"$W/grun")
	echo "GPU rank: device plan $pd MiB, run $rd MiB; host plan $ph MiB, run $rh MiB"
	[ -n "$pd" ] && [ "$pd" = "$rd" ] && [ "$ph" = "$rh" ] || fail "the plan's GPU rank is not the run's estimate"
	# --recompute full on the GPU (refused before): plan and run agree, on less
	"$LT" memory --model "$MODEL" $opts --threads 1 --recompute full >"$W/planf" ||
		fail "llm-train memory --recompute full exited $?"
	LLM_TRAIN_GPU=0 "$EMU" --model "$MODEL" --data "$W/data" --steps 2 $opts --recompute full \
		--ckpt-dir "$W/ckf" >"$W/grunf" 2>&1 || { cat "$W/grunf"; fail "the emulated GPU run with --recompute full exited"; }
	pf=$(field "GPU rank: device" <"$W/planf")
	rf=$(field "device memory estimate of rank 0:" <"$W/grunf")
	echo "GPU rank, --recompute full: device plan $pf MiB, run $rf MiB (none: $pd MiB)"
	[ -n "$pf" ] && [ "$pf" = "$rf" ] || fail "--recompute full: the plan's GPU rank is not the run's estimate"
	awk -v f="$pf" -v n="$pd" 'BEGIN { exit !(f < n) }' || fail "--recompute full: no less device memory"
	# and in the first 2 of the 4 layers: between none and all of them
	"$LT" memory --model "$MODEL" $opts --threads 1 --recompute full --recompute-layers 2 >"$W/plank" ||
		fail "llm-train memory --recompute-layers 2 exited $?"
	LLM_TRAIN_GPU=0 "$EMU" --model "$MODEL" --data "$W/data" --steps 2 $opts --recompute full \
		--recompute-layers 2 --ckpt-dir "$W/ckgk" >"$W/grunk" 2>&1 ||
		{ cat "$W/grunk"; fail "the emulated GPU run with --recompute-layers 2 exited"; }
	pk=$(field "GPU rank: device" <"$W/plank")
	rk=$(field "device memory estimate of rank 0:" <"$W/grunk")
	echo "GPU rank, --recompute full in 2 of 4 layers: device plan $pk MiB, run $rk MiB"
	[ -n "$pk" ] && [ "$pk" = "$rk" ] || fail "--recompute-layers 2: the plan's GPU rank is not the run's estimate"
	awk -v k="$pk" -v f="$pf" -v n="$pd" 'BEGIN { exit !(k < n && k > f) }' ||
		fail "--recompute-layers 2: the device plan is not between none and all layers"
else
	echo "note: built without CUDA: the GPU plan is not held against a run"
fi

# tensor parallel: the plan of a tp=2 layout (made offline, with no TP
# communicator; it used to exit "tp=2 needs a TP communicator") equals what
# each rank of a real tp=2 run estimates (mpirun on this host)
if command -v mpirun >/dev/null 2>&1; then
	"$LT" memory --model "$MODEL" --tp 2 $opts --threads 1 >"$W/tp2" || fail "llm-train memory --tp 2 exited $?"
	plan2=$(field "CPU rank (1 threads):" <"$W/tp2")
	mpi_local timeout 120 mpirun -np 2 \
		-x LLM_TRAIN_TP=2 -x OMP_NUM_THREADS "$LT" --model "$MODEL" --data "$W/data" --steps 2 $opts \
		--ckpt-dir "$W/ck2" >"$W/run2" 2>&1 || { cat "$W/run2"; fail "the tp=2 run exited"; }
	for r in 0 1; do
		got=$(field "memory rank $r: peak [0-9.]* MiB (VmHWM), estimate" <"$W/run2")
		echo "tp=2 rank $r: plan $plan2 MiB, the run's own estimate $got MiB"
		[ -n "$plan2" ] && [ "$plan2" = "$got" ] || fail "tp=2: the plan ($plan2) is not rank $r's estimate ($got)"
	done
else
	fail "mpirun missing (openmpi-bin is a dependency)"
fi

# stages: with pp = 4, stages 0, 1 and 3 printed, 2 as 1; the counts add up
"$LT" memory --model "$MODEL" --pp 4 >"$W/pp4" || fail "--pp 4 exited $?"
"$LT" memory --model "$MODEL" >"$W/pp1" || fail "--pp 1 exited $?"
cnt() { sed -n "s/^stage $1 of .*: \([0-9]*\) parameters per rank/\1/p" "$2"; }
s0=$(cnt 0 "$W/pp4") s1=$(cnt 1 "$W/pp4") s3=$(cnt 3 "$W/pp4") all=$(cnt 0 "$W/pp1")
grep -q "^stages 2-2: as stage 1" "$W/pp4" || fail "no line for the middle stage"
V=$(sed -n 's/^vocab_size: *//p' "$MODEL") d=$(sed -n 's/^d_model: *//p' "$MODEL")
sum=$((s0 + 2 * s1 + s3)) want=$((all + V * d))
echo "pp=4: $s0 + 2 x $s1 + $s3 = $sum parameters; whole model $all + tied copy $((V * d)) = $want"
[ "$sum" = "$want" ] || fail "the stages hold $sum parameters, want $want"

# bad input: exit 64 (66 for a missing file: CODE=66), the bad value named
bad() {
	_want=$1 _code=${CODE:-64}; shift
	"$LT" memory "$@" >"$W/out" 2>"$W/err"; _rc=$?
	[ $_rc = "$_code" ] || fail "llm-train memory $*: exit $_rc, want $_code"
	grep -q -- "$_want" "$W/err" || { cat "$W/err"; fail "llm-train memory $*: the message does not name $_want"; }
	[ "$(wc -l <"$W/err")" -le 3 ] || fail "llm-train memory $*: more than one message"
}
bad "tp=3" --model "$MODEL" --tp 3
bad "micro-batch 0" --model "$MODEL" --micro-batch 0
bad "seq 100000" --model "$MODEL" --seq 100000
CODE=66; bad "/nonexistent.yaml" --model /nonexistent.yaml; CODE=64
bad "model is required" --tp 2
bad "recompute-layers 5: a stage has 4 layers" --model "$MODEL" --recompute full --recompute-layers 5
bad "recompute-layers 2: a stage has 1 layers" --model "$MODEL" --pp 4 --recompute attn --recompute-layers 2
bad "recompute-layers -1" --model "$MODEL" --recompute full --recompute-layers -1
bad "recompute-layers x" --model "$MODEL" --recompute full --recompute-layers x
bad "recompute-layers 1: needs --recompute" --model "$MODEL" --recompute-layers 1
echo PASS

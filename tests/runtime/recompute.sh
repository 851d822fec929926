#!/bin/sh
# tests/runtime/recompute.sh: --recompute attn and full give the same
# training as none, bit for bit: every tensor of the checkpoint (fp32
# master weights, AdamW m and v) after 6 steps with gradient accumulation,
# in one process (bf16, the blocked attention where this CPU has it; and
# fp32, oneDNN's attention) and at tp=2 pp=2 (mpirun, 1F1B with 2 slots);
# and in the first K of the 4 layers only (--recompute-layers K = 0, 1, 2,
# 4; of a stage's 2 at pp=2: 1); a bad mode or K exits 64 naming it. The
# estimate's side: test_memest, memplan.sh.
set -u
. "$top_srcdir/tests/cluster/lib.sh"   # mpi_local
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
CMP="/usr/bin/python3 $top_srcdir/tests/runtime/ckpt_compare.py"
MODEL=$top_srcdir/configs/tiny.yaml
[ -x "$LT" ] || fail "$LT is not built"
W=$(mktemp -d /tmp/llmt-recompute.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=2
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null || fail "tokenize"
args="--model $MODEL --data $W/data --steps 6 --micro-batch 2 --seq 64 --grad-accum 2 --ckpt-interval 6 --quiet"

# run NAME LAUNCHER... -- llm-train options: one training run into $W/NAME
run() {
	_n=$1; shift
	"$@" --ckpt-dir "$W/$_n" >"$W/$_n.out" 2>&1 || { cat "$W/$_n.out"; fail "$_n: exit $?"; }
}
same() { # A B: every tensor of the two step-6 checkpoints bit-identical
	$CMP "$W/$1/step_00000006" "$W/$2/step_00000006" >"$W/cmp.out" 2>&1 ||
		{ cat "$W/cmp.out"; fail "$2 differs from $1"; }
	echo "$2: bit-identical to $1 ($(wc -l <"$W/cmp.out") lines of comparison)"
}
for prec in bf16 fp32; do
	for r in none attn full; do
		run "$prec-$r" "$LT" $args --precision $prec --recompute $r
	done
	same "$prec-none" "$prec-attn"
	same "$prec-none" "$prec-full"
done
for k in 0 1 2 4; do
	run "bf16-full-$k" "$LT" $args --recompute full --recompute-layers $k
	same bf16-none "bf16-full-$k"
done
run bf16-attn-2 "$LT" $args --recompute attn --recompute-layers 2
same bf16-none bf16-attn-2
run fp32-full-1 "$LT" $args --precision fp32 --recompute full --recompute-layers 1
same fp32-none fp32-full-1

command -v mpirun >/dev/null 2>&1 || fail "mpirun missing (openmpi-bin is a dependency)"
for r in none attn full "full --recompute-layers 1"; do
	run "par-$r" mpi_local OMP_NUM_THREADS=1 timeout 300 mpirun -np 4 --oversubscribe \
		-x LLM_TRAIN_TP=2 -x LLM_TRAIN_PP=2 -x OMP_NUM_THREADS "$LT" $args --recompute $r
done
same par-none par-attn
same par-none par-full
same par-none "par-full --recompute-layers 1"

"$LT" $args --recompute some --ckpt-dir "$W/bad" >"$W/bad.out" 2>&1; rc=$?
[ $rc = 64 ] || fail "--recompute some: exit $rc, want 64"
grep -q "recompute some" "$W/bad.out" || { cat "$W/bad.out"; fail "the message does not name the value"; }
# bad K: VALUE MESSAGE-PART OPTIONS...: exit 64, one line naming the value
badk() {
	_v=$1 _m=$2; shift 2
	"$LT" $args "$@" --recompute-layers "$_v" --ckpt-dir "$W/badk" >"$W/bad.out" 2>&1; rc=$?
	[ $rc = 64 ] || { cat "$W/bad.out"; fail "--recompute-layers $_v: exit $rc, want 64"; }
	grep -q -- "--recompute-layers $_v: .*$_m" "$W/bad.out" || { cat "$W/bad.out"; fail "--recompute-layers $_v: the message does not name the value"; }
	[ "$(wc -l <"$W/bad.out")" = 1 ] || { cat "$W/bad.out"; fail "--recompute-layers $_v: more than one line"; }
	if [ -d "$W/badk" ] && ls -A "$W/badk" | grep -q .; then fail "--recompute-layers $_v: it saved something"; fi
}
badk -1 "integer" --recompute full
badk two "integer" --recompute full
badk 5 "4 layers" --recompute full
badk 1 "needs --recompute" --recompute none
badk 1 "needs --recompute"
echo PASS

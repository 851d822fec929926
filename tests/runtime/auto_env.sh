#!/bin/sh
# tests/runtime/auto_env.sh: the training shape the plugin's automatic
# layout hands down (LLM_TRAIN_MICRO_BATCH, _GRAD_ACCUM, _SEQ, _RECOMPUTE)
# is llm-train's default: a run with them trains exactly as one with the
# same command-line options (every checkpoint tensor bit-identical), the
# command line wins over them, and a bad value exits 64 naming the
# variable. LLM_TRAIN_RECOMPUTE_LAYERS (the planner's K) sizes the run as
# --recompute-layers does (its memory estimate), and goes with the
# variable's mode only (--recompute none on the command line drops it).
# Fails on the code before tp=auto (the variables were ignored: the run
# with them differed from the one with the options).
set -u
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
CMP="/usr/bin/python3 $top_srcdir/tests/runtime/ckpt_compare.py"
[ -x "$LT" ] || fail "$LT is not built"
W=$(mktemp -d /tmp/llmt-autoenv.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null || fail "tokenize"
args="--model $top_srcdir/configs/tiny.yaml --data $W/data --steps 2 --ckpt-interval 2 --quiet"
run() { # NAME ENV... -- OPTIONS...
	_n=$1; shift
	env "$@" --ckpt-dir "$W/$_n" >"$W/$_n.out" 2>&1 || { cat "$W/$_n.out"; fail "$_n: exit $?"; }
}
shape="LLM_TRAIN_MICRO_BATCH=2 LLM_TRAIN_GRAD_ACCUM=2 LLM_TRAIN_SEQ=32 LLM_TRAIN_RECOMPUTE=full"
run env $shape "$LT" $args
run opts "$LT" $args --micro-batch 2 --grad-accum 2 --seq 32 --recompute full
run wins LLM_TRAIN_MICRO_BATCH=4 LLM_TRAIN_SEQ=64 "$LT" $args --micro-batch 2 --grad-accum 2 --seq 32
run plain "$LT" $args
$CMP "$W/opts/step_00000002" "$W/env/step_00000002" >"$W/c1" 2>&1 || { cat "$W/c1"; fail "the variables did not train as the options"; }
$CMP "$W/opts/step_00000002" "$W/wins/step_00000002" >"$W/c2" 2>&1 || { cat "$W/c2"; fail "the command line did not win"; }
$CMP "$W/opts/step_00000002" "$W/plain/step_00000002" >/dev/null 2>&1 && fail "the default shape trained the same: nothing was tested"
est() { sed -n 's/.*memory rank 0: .*estimate \([0-9.]*\) MiB.*/\1/p' "$W/$1.out"; }
args_k="--model $top_srcdir/configs/tiny.yaml --data $W/data --steps 1"
run envk LLM_TRAIN_RECOMPUTE=full LLM_TRAIN_RECOMPUTE_LAYERS=2 "$LT" $args_k
run optk "$LT" $args_k --recompute full --recompute-layers 2
run nonek LLM_TRAIN_RECOMPUTE=full LLM_TRAIN_RECOMPUTE_LAYERS=2 "$LT" $args_k --recompute none
run none "$LT" $args_k
echo "estimates: LLM_TRAIN_RECOMPUTE_LAYERS=2 $(est envk), --recompute-layers 2 $(est optk), --recompute none over both $(est nonek), none $(est none) MiB"
[ -n "$(est envk)" ] && [ "$(est envk)" = "$(est optk)" ] || fail "LLM_TRAIN_RECOMPUTE_LAYERS did not size the run as --recompute-layers"
[ "$(est nonek)" = "$(est none)" ] && [ "$(est none)" != "$(est optk)" ] || fail "--recompute none did not win over the variables"
for bad in LLM_TRAIN_MICRO_BATCH=0 LLM_TRAIN_GRAD_ACCUM=x LLM_TRAIN_SEQ=-3 LLM_TRAIN_RECOMPUTE=bogus \
	LLM_TRAIN_RECOMPUTE_LAYERS=x; do
	env "$bad" "$LT" $args --ckpt-dir "$W/bad" >"$W/bad.out" 2>&1
	rc=$?
	[ $rc = 64 ] || { cat "$W/bad.out"; fail "$bad: exit $rc, want 64"; }
	grep -q "${bad%%=*}" "$W/bad.out" || { cat "$W/bad.out"; fail "$bad: the message does not name it"; }
done
echo "ok: the plugin's training shape is llm-train's default, the command line wins, bad values exit 64"

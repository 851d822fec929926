# tests/runtime/loop_lib.sh: shared setup of the training-loop integration
# tests: the emulated cluster, the llm-train binary, a corpus of real text
# (the King James Bible, scripts/make-corpus) and a train wrapper running
# llm-train as a real MPI job (srun --mpi=pmix) with a given layout.
. "$top_srcdir/tests/cluster/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
[ -x "$LT" ] || fail "$LT is not built"
command -v bible >/dev/null 2>&1 || { echo "SKIP: bible-kjv not installed"; exit 77; }
cluster_need
export OMP_NUM_THREADS=1
CORPUS=$CLUSTER_WORK/corpus
LLM_TRAIN=$LT "$top_srcdir/scripts/make-corpus" "$CORPUS" --max-bytes 300000 \
	--shard-tokens 100000 >/dev/null || fail "make-corpus failed"
MODEL=$top_srcdir/configs/tiny.yaml

# train TP PP DP [llm-train options...]: run one job; prints nothing,
# returns llm-train's exit status; output in $CLUSTER_WORK/last.out
train() {
	_tp=$1 _pp=$2 _dp=$3; shift 3
	_n=$((_tp * _pp * _dp))
	_nodes=$(( _n < 4 ? _n : 4 ))
	LLM_TRAIN_TP=$_tp LLM_TRAIN_PP=$_pp LLM_TRAIN_DP=$_dp \
	timeout 300 srun --mpi=pmix -N "$_nodes" -n "$_n" "$LT" --model "$MODEL" --data "$CORPUS" \
		--seq 64 --lr 1e-3 --warmup 2 --quiet "$@" >"$CLUSTER_WORK/last.out" 2>&1
}

# losses FILE: the loss column of a metrics file, one a line
losses() {
	/usr/bin/python3 -c 'import json,sys
for l in open(sys.argv[1]): print(json.loads(l)["loss"])' "$1"
}

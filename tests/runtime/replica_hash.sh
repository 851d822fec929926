#!/bin/sh
# tests/runtime/replica_hash.sh: a checkpoint's replicas_agree means
# something when the fp32 master is a ZeRO-1 share (bf16, dp > 1): no
# buffer is then replicated, so each rank hashes what the DP replicas do
# hold alike (the bf16 weights and the fp32 copies: ckpt.h's alike). At
# dp=2 both ranks' replica_hash are equal and not XXH3 of nothing
# (2d06800538d394c2, which every rank wrote before: a vacuous "agree"
# that the wrapper's rollback trusts). Tiny model, 2 steps.
set -u
. "$top_srcdir/tests/cluster/lib.sh"   # mpi_local
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
command -v mpirun >/dev/null 2>&1 || fail "mpirun missing (openmpi-bin is a dependency)"
W=$(mktemp -d /tmp/llmt-rhash.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null || fail "tokenize"
mpi_local --tcp timeout 240 mpirun -np 2 -x LLM_TRAIN_DP=2 -x OMP_NUM_THREADS "$LT" --model "$top_srcdir/configs/tiny.yaml" \
	--data "$W/data" --steps 2 --seq 32 --micro-batch 1 --ckpt-dir "$W/ck" --ckpt-interval 2 >"$W/run" 2>&1 ||
	{ cat "$W/run"; fail "dp=2 run exited"; }
/usr/bin/python3 - "$W/ck/step_00000002/manifest.json" <<'PY' || fail "replica hashes"
import json, sys
m = json.load(open(sys.argv[1]))
h = m["replica_hashes"]
print("replicas_agree %s, replica_hashes %s" % (m["replicas_agree"], h))
assert m["replicas_agree"] is True, "replicas do not agree"
assert len(h) == 2 and h[0] == h[1], "two ranks, one hash"
assert h[0] != "2d06800538d394c2", "the hash of nothing: nothing the replicas hold was compared"
PY
echo "dp=2 share: the replicas' weights hashed alike"

#!/bin/sh
# tests/runtime/memshard.sh: ZeRO-1 in memory on the CPU, measured. A bf16
# run at dp=2 keeps half the fp32 master per rank and no fp32 all-gather
# staging: its peak resident memory (VmHWM) stands above its own estimate
# by the same runtime overhead (MPI, oneDNN, code) as the dp=1 run's, to
# within a tenth of what the share saves (n x 2 bytes of master, as much
# of staging); `llm-train memory --dp 2` says the run's estimate. Fails on
# a build that keeps the whole master at dp=2 (the dp=2 peak then stands
# ~n x 4 bytes higher above the estimate). The dp=2 run checks its
# replicas every step (--sdc-interval 1): the weights all-gathered from
# the shares agree. A 34M-parameter model, 2 steps.
set -u
. "$top_srcdir/tests/cluster/lib.sh"   # mpi_local
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
command -v mpirun >/dev/null 2>&1 || fail "mpirun missing (openmpi-bin is a dependency)"
W=$(mktemp -d /tmp/llmt-memshard.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1
cat >"$W/m.yaml" <<'EOF'
vocab_size: 256
d_model: 1024
n_layers: 2
n_heads: 8
d_ff: 4096
max_seq: 64
tie_embeddings: true
seed: 1234
EOF
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null || fail "tokenize"
opts="--micro-batch 1 --seq 16"
"$LT" memory --model "$W/m.yaml" --dp 2 $opts --threads 1 --no-ckpt >"$W/plan" || fail "llm-train memory exited $?"
n=$(sed -n 's/^stage 0 of 1 .*: \([0-9]*\) parameters per rank/\1/p' "$W/plan")
plan=$(sed -n 's/.*CPU rank (1 threads): \([0-9.]*\) MiB.*/\1/p' "$W/plan")
for dp in 1 2; do
	mpi_local --tcp timeout 240 mpirun -np $dp -x LLM_TRAIN_DP=$dp -x OMP_NUM_THREADS "$LT" --model "$W/m.yaml" \
		--data "$W/data" --steps 2 --sdc-interval 1 $opts >"$W/run$dp" 2>&1 || { cat "$W/run$dp"; fail "dp=$dp run exited"; }
	grep "memory rank" "$W/run$dp"
done
[ -n "$n" ] && [ -n "$plan" ] || { cat "$W/plan"; fail "no parameter count or CPU rank in the plan"; }
/usr/bin/python3 - "$n" "$plan" "$W/run1" "$W/run2" <<'PY' || fail "the measured peaks do not follow the estimate"
import re, sys
n, plan = int(sys.argv[1]), float(sys.argv[2])
def ranks(path):
    return [(float(a), float(b)) for a, b in re.findall(
        r"memory rank \d+: peak ([0-9.]+) MiB \(VmHWM\), estimate ([0-9.]+) MiB", open(path).read())]
one, two = ranks(sys.argv[3]), ranks(sys.argv[4])
assert len(one) == 1 and len(two) == 2, (one, two)
saved = n * 4 / 1048576          # half the master and the fp32 staging, MiB
base = one[0][0] - one[0][1]
print("dp=1: peak %.1f, estimate %.1f, overhead %.1f MiB" % (one[0][0], one[0][1], base))
for r, (peak, est) in enumerate(two):
    print("dp=2 rank %d: peak %.1f, estimate %.1f, overhead %.1f MiB (the share saves ~%.1f MiB); plan %.1f" %
          (r, peak, est, peak - est, saved, plan))
    assert abs((peak - est) - base) < 0.1 * saved, "overhead differs by more than a tenth of the saving"
    assert abs(est - plan) < 0.05, "llm-train memory --dp 2 is not the run's estimate"
PY
echo "ZeRO-1 master share: dp=2 peak follows its estimate"

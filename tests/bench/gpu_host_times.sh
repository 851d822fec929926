#!/bin/sh
# tests/bench/gpu_host_times.sh: host time of a GPU rank's start-up init
# and of a save's replica hash, measured with perf uprobes (no timing code
# in the program): one training step and its checkpoint of MODEL at DP
# ranks (mpirun on this host) under llm-train-emu (the GPU backend over the
# emulated CUDA runtime) or BIN. Per rank, the seconds from entry to return
# of llmt_gmodel_create_rc (the model, with the init staged on the device:
# ginit_weights), gmaster_need (the optimizer's fp32 master: made from
# that init, or the init computed again), ginit_weights (each init) and
# llmt_gopt_snapshot (the checkpoint snapshot), and between XXH3 reset and
# digest (libxxhash: the first inside the snapshot is the whole master's
# replica hash, dp > 1; the second the writer's). The emulation's copies
# are host memcpys done when queued (a pinned destination poisoned until
# the host waits): it cannot show what a device overlaps.
# Needs root, perf and uprobes (/sys/kernel/tracing); removes its probes.
# Usage: gpu_host_times.sh [MODEL [DP [BIN]]]
# (default tests/gpu/gpu-124m.yaml, 2, tests/gpu/llm-train-emu); GHT_MIN_S: the
# shortest interval printed (default 0.01 s)
set -eu
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
MODEL=${1:-$top_srcdir/tests/gpu/gpu-124m.yaml}
DP=${2:-2}
BIN=$(readlink -f "${3:-$top_builddir/tests/gpu/llm-train-emu}")
LT=$top_builddir/runtime/llm-train
X=$(readlink -f /lib/x86_64-linux-gnu/libxxhash.so.0)
command -v perf >/dev/null || { echo "gpu_host_times: no perf"; exit 1; }
W=$(mktemp -d /tmp/llmt-ghost.XXXXXX)
trap 'perf probe -q -d "llmth:*" 2>/dev/null; rm -rf "$W"' EXIT INT TERM
"$LT" tokenize "$top_srcdir/LICENSE" "$W/data" >/dev/null
for f in llmt_gmodel_create_rc gmaster_need ginit_weights llmt_gopt_snapshot; do
	perf probe -q -x "$BIN" --add "llmth:$f=$f" --add "llmth:$f=$f%return"
done
perf probe -q -x "$X" --add "llmth:xxh3_reset=XXH3_64bits_reset" --add "llmth:xxh3_digest=XXH3_64bits_digest"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
	OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMP_NUM_THREADS=1
perf record -q -e 'llmth:*' -o "$W/perf.data" -- timeout 1200 mpirun -np "$DP" -x LLM_TRAIN_DP="$DP" \
	-x OMP_NUM_THREADS -x LLM_TRAIN_GPU=0 -x LLM_TRAIN_GPU_ATTN=chunked "$BIN" --model "$MODEL" \
	--data "$W/data" --seq 8 --micro-batch 1 --steps 1 --ckpt-dir "$W/ck" --ckpt-interval 1 \
	>"$W/run" 2>&1 || { cat "$W/run"; exit 1; }
perf script -i "$W/perf.data" -F pid,time,event 2>/dev/null | /usr/bin/python3 -c '
import sys, collections
open_ = collections.defaultdict(list)
for l in sys.stdin:
    p = l.split()
    if len(p) < 3:
        continue
    pid, t, ev = p[0], float(p[1].rstrip(":")), p[2].rstrip(":").split(":")[1]
    end = ev.endswith("__return") or ev == "xxh3_digest"
    f = ev[:-8] if ev.endswith("__return") else "xxh3" if ev.startswith("xxh3") else ev
    if not end:
        open_[(pid, f)].append(t)
    elif open_[(pid, f)]:
        d = t - open_[(pid, f)].pop()
        if d > float(sys.argv[1]):
            print("pid %s %-22s %8.3f s" % (pid, f, d))
' "${GHT_MIN_S:-0.01}"

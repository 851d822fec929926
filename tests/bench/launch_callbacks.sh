#!/bin/sh
# tests/bench/launch_callbacks.sh: the plugin's own share of a step launch
# (remote callbacks of one slurmstepd, in process, through the fake spank
# harness) for 8, 1024 and 8192 ranks. Complements launch.sh, whose
# end-to-end srun times on this shared 2-core machine are noisy.
set -u
: "${top_builddir:?}"
b=$top_builddir/tests/bench/bench_callbacks
[ -x "$b" ] || { echo "SKIP: $b not built (make -C tests bench/bench_callbacks)"; exit 77; }
exec "$b"

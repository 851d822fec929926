#!/bin/bash
# tests/bench/launch.sh: srun step launch time on the emulated cluster
# with and without llm_train.so, measured side by side in one run. Inside
# one 4-node allocation, rounds of `srun -N4 --ntasks-per-node=2 true`
# alternate between three plugstack settings: no plugin (empty
# plugstack.conf), plugin loaded but the job not a training job, and a
# training job (--llm-train=tp=2: policy, topology, rank map and
# environment on every node). Prints median ms per step and the ratio and
# ms added against no plugin. Goal: under 10 ms added.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
so=$top_builddir/spank/.libs/llm_train.so
[ -f "$so" ] || { echo "SKIP: $so not built"; exit 77; }
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need --nodes 4 --plugin "$so"
fail() { echo "FAIL: $*"; exit 1; }
d=$CLUSTER_DIR
w=$d/bench-launch
mkdir -p "$w" || exit 1
rounds=${LLMT_BENCH_ROUNDS:-5}
per=${LLMT_BENCH_STEPS:-10}
plug_line=$(cat "$d/etc/plugstack.conf")
[ -n "$plug_line" ] || fail "the cluster has no plugin in plugstack.conf"

# One job holds the nodes; it runs the rounds the driver file asks for.
cat >"$w/job.sh" <<EOF
#!/bin/bash
for r in \$(seq 1 $rounds); do
  for mode in none idle train; do
    if [ \$mode = none ]; then : >$d/etc/plugstack.conf; else echo "$plug_line" >$d/etc/plugstack.conf; fi
    opt=; [ \$mode = train ] && opt=--llm-train=tp=2
    srun -N4 --ntasks-per-node=2 \$opt true || exit 1     # warm-up
    for i in \$(seq 1 $per); do
      t0=\$(date +%s%N); srun -N4 --ntasks-per-node=2 \$opt true || exit 1; t1=\$(date +%s%N)
      echo "\$mode \$(( (t1 - t0) / 1000 ))"
    done
  done
done
echo "$plug_line" >$d/etc/plugstack.conf
EOF
jid=$(sbatch --parsable -N4 --ntasks-per-node=2 -o "$w/times" "$w/job.sh") || fail "sbatch"
st=$(cluster_sbatch_wait "$jid" 600) || { cat "$w/times"; fail "benchmark job ended $st"; }
/usr/bin/python3 - "$w/times" <<'EOF'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 2 and p[0] in ("none", "idle", "train"):
        t.setdefault(p[0], []).append(int(p[1]) / 1000.0)
ref = statistics.median(t["none"])
print(f"srun -N4 --ntasks-per-node=2 true, {len(t['none'])} steps per setting, median ms:")
for k, label in (("none", "no plugin"), ("idle", "plugin, not a training job"),
                 ("train", "plugin, --llm-train=tp=2")):
    m = statistics.median(t[k])
    print(f"  {label:28s} {m:7.1f} ms  ratio {m / ref:5.3f}  added {m - ref:+6.1f} ms"
          f"  (min {min(t[k]):.1f}, max {max(t[k]):.1f})")
EOF

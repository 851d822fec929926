#!/bin/sh
# tests/cluster/smoke_job.sh: a 4-node sbatch job on the emulated cluster
# whose srun step runs one task on every node (SLURMD_NODENAME and the
# topology address of each task checked), and the plugin's options when
# the plugin is built.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
cluster_need

cat >"$CLUSTER_WORK/job.sh" <<'JOB'
#!/bin/sh
srun -N4 -n4 sh -c 'echo "task $SLURM_PROCID node $SLURMD_NODENAME addr $SLURM_TOPOLOGY_ADDR"'
JOB
jobid=$(cd "$CLUSTER_WORK" && sbatch --parsable -N4 -o job.out job.sh) || fail "sbatch failed"
state=$(cluster_sbatch_wait "$jobid" 60)
cat "$CLUSTER_WORK/job.out"
[ "$state" = COMPLETED ] || fail "job $jobid ended $state"

nodes=$(scontrol show hostnames "$(cluster_job_field "$jobid" NodeList)")
[ "$(echo "$nodes" | wc -l)" = 4 ] || fail "job $jobid got nodes '$nodes', not 4"
[ "$(grep -c '^task ' "$CLUSTER_WORK/job.out")" = 4 ] || fail "want 4 task lines"
for n in $nodes; do
	line=$(grep " node $n addr " "$CLUSTER_WORK/job.out") || fail "no task ran on $n"
	# SLURM_TOPOLOGY_ADDR is top.<leaf>.<node>, the leaf from topology.conf.
	case $line in *" addr top."*".$n") ;; *) fail "bad topology address: $line";; esac
	leaf=$(echo "$line" | sed 's/.* addr top\.\([^.]*\)\..*/\1/')
	scontrol show topology "$leaf" | grep -q "SwitchName=$leaf " || fail "no switch $leaf"
	[ "$(scontrol show hostnames "$(scontrol show topology "$leaf" | sed -n 's/.* Nodes=\([^ ]*\).*/\1/p')" | grep -cx "$n")" = 1 ] ||
		fail "$n is not on switch $leaf"
done
echo "4-node job $jobid ran on: $(echo $nodes)"

# The plugin: when built, the cluster loads it and sbatch offers its option.
plugin=$top_builddir/spank/.libs/llm_train.so
if [ ! -f "$plugin" ]; then
	fail "plugin not built ($plugin): a build output, never a skip"
elif ! grep -q llm_train.so "$CLUSTER_DIR/etc/plugstack.conf"; then
	echo "SKIP: cluster $CLUSTER_DIR runs without the plugin: --llm-train check skipped"
else
	sbatch --help 2>&1 | grep -q -- '--llm-train' || fail "sbatch --help does not list --llm-train"
	echo "plugin loaded: sbatch --help lists --llm-train"
fi
echo "PASS"

#!/bin/sh
# tests/spank/cluster_ports.sh: MASTER_PORT on the emulated cluster
# (MpiParams=ports, tests/cluster/start). Two training steps running at
# the same time on the same node get different MASTER_PORTs, each the last
# of the ports slurmctld reserved for it (ResvPorts of `scontrol show
# step`, asked from inside the live step). A step without reserved ports
# (--resv-ports=0) whose environment carries a forged SLURM_STEP_RESV_PORTS
# (backwards, overlong) runs with the fallback hash that llm-train-plan
# --env gives for its job and step, and its stderr says so once.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
plan=$top_builddir/spank/llm-train-plan
[ -x "$plan" ] || { echo "FAIL: $plan not built (a build output, never a skip)"; exit 1; }
[ -f "$top_builddir/spank/.libs/llm_train.so" ] || { echo "FAIL: llm_train.so not built"; exit 1; }
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need
fail() { echo "FAIL: $*"; exit 1; }
W=$CLUSTER_WORK
scontrol show config | grep -q '^MpiParams *= *ports=' ||
	fail "the cluster in $CLUSTER_DIR has no MpiParams=ports (start it with this tree's tests/cluster/start)"

# One task of a step: its ids, MASTER_PORT, the variable and slurmctld's
# record of the step's ports; then it waits (bounded) for the other step's
# line, so both steps hold their ports at once.
cat >"$W/task.sh" <<'EOF'
#!/bin/sh
r=$(scontrol show step "$SLURM_JOB_ID.$SLURM_STEP_ID" | tr ' ' '\n' | sed -n 's/^ResvPorts=//p')
echo "$SLURM_STEP_ID $SLURMD_NODENAME ${MASTER_PORT-unset} ${SLURM_STEP_RESV_PORTS-unset} ${r:-none}" >"$1.tmp"
mv "$1.tmp" "$1"
i=0
while [ ! -s "$2" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$2" ] || echo "the other step never ran alongside" >>"$1"
EOF
chmod +x "$W/task.sh"
cat >"$W/job.sh" <<EOF
#!/bin/sh
srun -n1 --exact --llm-train=tp=1 "$W/task.sh" "$W/a" "$W/b" &
srun -n1 --exact --llm-train=tp=1 "$W/task.sh" "$W/b" "$W/a" &
wait
SLURM_STEP_RESV_PORTS=12000-11999 srun -n1 --resv-ports=0 --llm-train=tp=1 \\
	sh -c 'echo "F \$SLURM_STEP_ID \$MASTER_PORT"' >"$W/f.out" 2>"$W/f.err"
SLURM_STEP_RESV_PORTS=\$(seq -s, 20000 22000) srun -n1 --resv-ports=0 --llm-train=tp=1 \\
	sh -c 'echo "F \$SLURM_STEP_ID \$MASTER_PORT"' >"$W/h.out" 2>"$W/h.err"
EOF
jid=$(cd "$W" && sbatch --parsable -N1 -n2 -o "$W/job.out" "$W/job.sh") || fail "sbatch refused the job"
st=$(cluster_sbatch_wait "$jid" 120) || { cat "$W/job.out"; fail "job $jid ended $st"; }

# ---- two steps at once on one node ---------------------------------------------
for s in a b; do
	[ -s "$W/$s" ] || { cat "$W/job.out"; fail "step $s wrote nothing"; }
	[ "$(wc -l <"$W/$s")" = 1 ] || { cat "$W/$s"; fail "step $s: $(tail -n 1 "$W/$s")"; }
done
set -- $(cat "$W/a") $(cat "$W/b")
[ $# = 10 ] || fail "want 5 fields a step: $*"
[ "$2" = "$7" ] || fail "the steps ran on different nodes ($2, $7)"
last() { echo "${1##*[,-]}"; }
for x in "$1 $3 $4 $5" "$6 $8 $9 ${10}"; do
	set -- $x
	[ "$4" != none ] || fail "step $1: slurmctld reserved no ports"
	[ "$3" = "$4" ] || fail "step $1: SLURM_STEP_RESV_PORTS=$3 but slurmctld reserved $4"
	[ "$2" = "$(last "$4")" ] || fail "step $1: MASTER_PORT=$2, not the last of its reserved ports $4"
done
set -- $(cat "$W/a") $(cat "$W/b")
[ "$3" != "$8" ] || fail "both steps got MASTER_PORT $3"
echo "ok: steps $1 and $6 on $2 at once: MASTER_PORT $3 and $8, the last of ResvPorts $5 and ${10}"

# ---- no reservation, a forged variable: the fallback hash, said once -------------
pol=$CLUSTER_DIR/etc/llm-train.yaml
for f in f h; do
	set -- $(cat "$W/$f.out")
	[ "${1:-}" = F ] || { cat "$W/$f.out" "$W/$f.err"; fail "$f: the step did not run"; }
	want=$("$plan" --policy "$pol" --nodes node1 --layout tp=1 --env --job-id "$jid" --step-id "$2" 2>/dev/null |
		sed -n 's/^ *MASTER_PORT=//p' | head -n 1)
	[ -n "$want" ] && [ "$3" = "$want" ] || fail "$f: MASTER_PORT=$3, llm-train-plan --env says '$want'"
done
[ "$(grep -c 'llm_train: SLURM_STEP_RESV_PORTS ' "$W/f.err")" = 1 ] &&
	grep -q "SLURM_STEP_RESV_PORTS '12000-11999': range 12000-11999 runs backwards" "$W/f.err" ||
	{ cat "$W/f.err"; fail "no one line about the backwards SLURM_STEP_RESV_PORTS"; }
[ "$(grep -c 'llm_train: SLURM_STEP_RESV_PORTS longer than 1024 bytes' "$W/h.err")" = 1 ] ||
	{ cat "$W/h.err"; fail "no one line about the overlong SLURM_STEP_RESV_PORTS"; }
echo "ok: --resv-ports=0 with a forged SLURM_STEP_RESV_PORTS: the fallback hash, one line on stderr"
echo "PASS"

#!/bin/sh
# tests/security/cluster_root_env.sh: what the unprivileged user nobody can
# make the plugin's root and slurmstepd code believe, on the emulated
# cluster. Fails on the old code in both parts:
#   1. A task named "EDAC MC0: 1 UE " (prctl; 15 bytes, the most a task
#      name holds) that segfaults makes the kernel log
#      "EDAC MC0: 1 UE [PID]: segfault at ..." (facility 0): the old
#      pattern took that for an uncorrected memory error and the next
#      training job's prolog drained the node. The record is written, with
#      the comm and pid nobody's task really had, into the node's
#      kmsg-format kernel_log= file (as tests/spank/cluster_hostile.sh
#      does: the host's one /dev/kmsg is every emulated cluster's).
#   2. An account capped at 1 node by the policy: `SLURM_JOB_ACCOUNT=x
#      srun -N2 --llm-train` in the batch script ran on 2 nodes (srun
#      passes the exported variable to slurmstepd untouched); now
#      slurmstepd asks slurmctld and every task is refused.
# Afterwards: no node drained, every slurmd alive, no slurmstepd left.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
so=$top_builddir/spank/.libs/llm_train.so
[ -f "$so" ] || { echo "SKIP: $so not built"; exit 77; }
. "$top_srcdir/tests/security/lib.sh"
sec_need_root
. "$top_srcdir/tests/cluster/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
pol=$(mktemp /tmp/llmt-sec-pol.XXXXXX) || exit 1
sed 's/^  partitions:$/  accounts:\n    students: {max_nodes: 1}\n  partitions:/' \
	"$top_srcdir/tests/spank/cluster-policy.yaml" >"$pol" && grep -q 'students: {max_nodes: 1}' "$pol" ||
	fail "policy with an account cap"
chmod 644 "$pol" || exit 1
cluster_need --nodes 2 --plugin "$so" --policy "$pol"
rm -f "$pol"
d=$CLUSTER_DIR w=$CLUSTER_WORK
chown nobody: "$w" || exit 1
sed -i "s|\$| state_dir=$d/llmt-state|" "$d/etc/plugstack.conf" || exit 1
as_nobody() {
	(cd "$w" && sec_as_nobody env -i PATH=/usr/bin:/bin HOME="$w" SLURM_CONF="$SLURM_CONF" "$@")
}

# ---- 1. a task named like the fixed part of an EDAC record -------------------
# a first training job sets every node's mark; the spoof comes after it
as_nobody srun -N2 --llm-train true || fail "nobody's first training step"
cluster_wait_idle 30 || fail "nodes not idle after the first job"
t=$(as_nobody srun -N1 -w node1 /usr/bin/python3 -c '
import ctypes, os
ctypes.CDLL(None).prctl(15, b"EDAC MC0: 1 UE ", 0, 0, 0)
print(os.getpid(), open("/proc/self/comm").read().rstrip("\n"), sep="|")') || fail "naming a task"
[ "${t#*|}" = "EDAC MC0: 1 UE " ] || fail "task name not set: '$t'"
printf '6,101,%s,-;%s[%s]: segfault at 0 ip 0000000000401136 sp 00007ffd3c1c4e40 error 6 in python3[401000+1000]\n' \
	"$(cluster_mono_us)" "${t#*|}" "${t%%|*}" >>"$d/klog/node1"
jid=$(as_nobody sbatch --parsable -N2 --llm-train -o "$w/edac.out" --wrap 'srun true') || fail "sbatch"
state=$(cluster_sbatch_wait "$jid" 60) || fail "job after the EDAC spoof ended $state: $(cat "$w/edac.out")"
cluster_wait_idle 30 || fail "nodes not idle after the EDAC spoof"
cluster_no_drain "by a task named 'EDAC MC0: 1 UE '"
echo "ok: a task named 'EDAC MC0: 1 UE ' that segfaulted drained nothing (job $state)"

# ---- 2. the account cap against an exported SLURM_JOB_ACCOUNT ----------------
jid=$(as_nobody sbatch --parsable -A students -N2 -o "$w/acct.out" --wrap '
SLURM_JOB_ACCOUNT=other srun -N2 --llm-train sh -c "echo RAN \$RANK"; echo "two=$?"
srun -N1 --llm-train sh -c "echo RAN1 \$RANK"; echo "one=$?"') || fail "sbatch -A students"
cluster_sbatch_wait "$jid" 60 >/dev/null || fail "the account job did not end: $(cat "$w/acct.out")"
grep -q '^two=0' "$w/acct.out" && fail "2 nodes ran past the account's 1-node cap: $(cat "$w/acct.out")"
grep -q '^RAN ' "$w/acct.out" && fail "a task ran past the cap: $(cat "$w/acct.out")"
grep -q "task refused: --llm-train: 2 nodes exceed the account 'students' limit of 1 nodes" "$w/acct.out" ||
	fail "no refusal naming the cap: $(cat "$w/acct.out")"
grep -q '^RAN1 0' "$w/acct.out" && grep -q '^one=0' "$w/acct.out" ||
	fail "a step within the cap did not run: $(cat "$w/acct.out")"
echo "ok: SLURM_JOB_ACCOUNT=other did not lift the account's 1-node cap; 1 node ran"

# ---- afterwards ---------------------------------------------------------------
cluster_all_well
echo "ok: every node idle and undrained, every slurmd alive, no slurmstepd left"
echo "PASS"

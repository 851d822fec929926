#!/bin/sh
# tests/spank/cluster_hostile.sh: issue 14 as a hostile user would try it,
# run as the unprivileged user nobody on the emulated cluster. Fails on the
# old code (it drained every node on the first spoof, with the user's text
# as the reason, and wrote the user's newline into slurmd's log).
#   1. Xid spoofs: nobody names a task "NVRM: Xid" or "PCIe Bus Error"
#      (prctl); the kernel logs a segfault of such a task as
#      "COMM[PID]: segfault at ..." (facility 0). The test writes exactly
#      that record, with the comm and pid nobody's task really had, into
#      the node's kernel log (kernel_log=DIR/klog/%n, kmsg format): making
#      the real kernel log it would put the spoof into the one /dev/kmsg
#      every emulated cluster on this host reads. A user-space record
#      (facility 1) with a genuine-looking Xid is added as well.
#   2. The newline attempt, through sbatch's option and through the job
#      environment that slurmstepd reads.
#   3. SLURM_CONF in the job's environment pointing at a directory whose
#      topology.conf is a FIFO (this cluster's slurmd is started with -f,
#      so slurmstepd has its own SLURM_CONF: the hang itself is shown by
#      tests/spank/test_callbacks with slurmstepd's environment as on a
#      default-configured site; here it must simply do no harm).
# Afterwards every node is idle and undrained, no slurmstepd is left, and a
# normal --llm-train job runs to the end; a genuine-format Xid record still
# drains its node with the code in the reason.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
so=$top_builddir/spank/.libs/llm_train.so
[ -f "$so" ] || { echo "SKIP: $so not built"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (runs jobs as nobody)"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need --nodes 3 --plugin "$so"
fail() { echo "FAIL: $*"; exit 1; }
d=$CLUSTER_DIR
h=$(mktemp -d /tmp/llmt-hostile.XXXXXX) || exit 1
trap 'rc=$?; rm -rf "$h"; cluster_cleanup $rc' EXIT
chown nobody: "$h" && chmod 755 "$h" || exit 1
mkdir -p "$d/klog" || exit 1
for n in $(cluster_nodes); do : >"$d/klog/$n"; done
chmod 644 "$d"/klog/*
sed -i "s|\$| kernel_log=$d/klog/%n state_dir=$d/llmt-state|" "$d/etc/plugstack.conf"

# nobody's commands: a clean environment, the cluster's client config only
as_nobody() {
	(cd "$h" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env -i PATH=/usr/bin:/bin HOME="$h" SLURM_CONF="$SLURM_CONF" "$@")
}

# A first training job: every node's prolog and epilog set its mark.
as_nobody srun -N3 --llm-train true || fail "nobody's first training step"
cluster_wait_idle 30 || fail "nodes not idle after the first job"

# ---- 1. Xid spoofs ------------------------------------------------------------
# nobody's task names itself; its real comm and pid are what the kernel
# would print on its segfault.
name_task() {
	as_nobody srun -N1 -w "$1" /usr/bin/python3 -c '
import ctypes, os, sys
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
print(os.getpid(), open("/proc/self/comm").read().strip(), sep="|")' "$2"
}
seq=100
spoof() {   # NODE COMM-AND-PID-LINE TAIL
	pid=${2%%|*} comm=${2#*|}
	seq=$((seq + 1))
	printf '6,%s,%s,-;%s[%s]: segfault at 0 ip 0000000000401136 sp 00007ffd3c1c4e40 error 6 in %s\n' \
		"$seq" "$(cluster_mono_us)" "$comm" "$pid" "$3" >>"$d/klog/$1"
}
t=$(name_task node1 "NVRM: Xid") || fail "naming a task"
case $t in *"|NVRM: Xid") ;; *) fail "task name not set: '$t'";; esac
spoof node1 "$t" "x[401000+1000]"
t=$(name_task node2 "PCIe Bus Error") || fail "naming a task"
case $t in *"|PCIe Bus Error") ;; *) fail "task name not set: '$t'";; esac
spoof node2 "$t" "severity=Uncorrected[401000+1000]"
# a 15-byte name that starts the driver's form, and a user-space record
t=$(name_task node3 "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus") || fail "naming a task"
spoof node3 "$t" "GPU has fallen off the bus[401000+1000]"
printf '12,%s,%s,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n' 200 "$(cluster_mono_us)" \
	>>"$d/klog/node3"
jid=$(as_nobody sbatch --parsable -N3 --llm-train -o "$h/spoof.out" --wrap 'srun true') || fail "sbatch"
state=$(cluster_sbatch_wait "$jid" 120) || fail "job after the spoofs ended $state: $(cat "$h/spoof.out")"
cluster_no_drain "by a spoofed kernel log"
echo "ok: NVRM and PCIe/AER task-name spoofs and a user-space record drained nothing (job $state)"

# ---- 2. newline attempts ------------------------------------------------------
nl=$(printf '\nx') nl=${nl%x}
out=$(as_nobody sbatch --llm-train="tp=1${nl}error: llm_train: prolog on node1: draining: FORGED1" --wrap true 2>&1)
rc=$?
[ $rc != 0 ] || fail "sbatch accepted a SPEC with a newline"
# our one line (Slurm adds its own "plugin failed" lines after it)
[ "$(printf '%s\n' "$out" | grep -c 'error: llm_train: ')" = 1 ] || fail "sbatch refusal is not one line: $out"
case $out in *FORGED1*) fail "the user's text was echoed: $out";; *"holds a control character"*) ;;
*) fail "refusal '$out'";; esac
as_nobody env "SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train=tp=1${nl}error: FORGED2" \
	srun -N1 -w node1 true >"$h/nl.out" 2>&1 && fail "a step with a newline in its option ran"
grep -q 'holds a control character' "$h/nl.out" || fail "no refusal: $(cat "$h/nl.out")"
if grep -l 'FORGED' "$d"/log/*.log; then fail "the user's line reached a daemon's log"; fi
echo "ok: newline in --llm-train (sbatch) and in the job environment (slurmstepd) refused, never logged"

# ---- 3. SLURM_CONF from the job's environment, topology.conf a FIFO ----------
mkdir "$h/evil" && cp "$SLURM_CONF" "$h/evil/slurm.conf" && mkfifo "$h/evil/topology.conf" &&
	chown -R nobody: "$h/evil" || fail "evil dir"
as_nobody env SLURM_CONF="$h/evil/slurm.conf" timeout 120 srun -N3 --llm-train true >"$h/fifo.out" 2>&1 ||
	fail "step with the job's SLURM_CONF at a FIFO: $(cat "$h/fifo.out")"
echo "ok: a job SLURM_CONF beside a FIFO topology.conf: the step ran (slurmstepd reads its own)"

# ---- a genuine record still drains, with the code ----------------------------
cluster_wait_idle 30 || fail "nodes not idle"
printf '3,300,%s,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n' "$(cluster_mono_us)" \
	>>"$d/klog/node3"
jid=$(as_nobody sbatch --parsable -N3 --llm-train -o "$h/real.out" --wrap 'srun true') || fail "sbatch"
reason=
for _ in $(seq 1 150); do
	reason=$(sinfo -h -N -n node3 -o '%E' 2>/dev/null | head -n 1)
	case $reason in *"Xid 79"*) break;; esac
	sleep 0.2
done
case $reason in *"llm_train: kernel log: Xid 79"*"GPU has fallen off the bus"*) ;;
*) fail "genuine Xid: node3 reason '$reason'";; esac
# Slurm drains node3 again itself when slurmd reports the failed prolog
# (after the plugin's drain, and it requeues the job): cancel and resume
# until node3 stays idle (a single resume raced that second drain in CI)
for _ in $(seq 1 40); do
	scancel "$jid" 2>/dev/null
	scontrol update NodeName=node3 State=RESUME 2>/dev/null
	sleep 1
	case $(cluster_node_state node3) in idle*) ;; *) continue;; esac
	sleep 2
	case $(cluster_node_state node3) in idle*) break;; esac
done
case $(cluster_node_state node3) in idle*) ;; *) fail "node3 did not stay resumed: $(cluster_node_state node3)";; esac
echo "ok: a genuine Xid 79 record drained node3 ('$reason'); resumed"

# ---- afterwards ---------------------------------------------------------------
cluster_wait_idle 60 || fail "nodes not idle at the end"
jid=$(as_nobody sbatch --parsable -N3 --llm-train=tp=1 -o "$h/last.out" \
	--wrap 'srun sh -c "echo R \$RANK \$MASTER_ADDR"') || fail "sbatch"
state=$(cluster_sbatch_wait "$jid" 120) || fail "last job ended $state: $(cat "$h/last.out")"
[ "$(grep -c '^R ' "$h/last.out")" = 3 ] || fail "last job output: $(cat "$h/last.out")"
cluster_all_well
echo "ok: every node idle and undrained, every slurmd alive, no slurmstepd left, a normal --llm-train job ran to the end"
echo "PASS"

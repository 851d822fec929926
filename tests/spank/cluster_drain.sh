#!/bin/bash
# tests/spank/cluster_drain.sh: a failing job_prolog health check drains
# the node with the reason and the job learns why. The plugstack argument
# kernel_log=DIR/klog/%n gives each emulated node its own fake kernel log
# (the nodes share one host and one real /dev/kmsg); an NVIDIA Xid 79 line
# written into node2's log must drain node2 only, with the Xid in the
# node's reason and in the job's Comment.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
so=$top_builddir/spank/.libs/llm_train.so
[ -f "$so" ] || { echo "FAIL: $so not built (a build output, never a skip)"; exit 1; }
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need --nodes 3 --plugin "$so"
fail() { echo "FAIL: $*"; exit 1; }
d=$CLUSTER_DIR
mkdir -p "$d/klog" || exit 1
for n in $(cluster_nodes); do : >"$d/klog/$n"; done
chmod 644 "$d"/klog/*
# admin-side configuration: plugstack arguments (read by each new prolog)
sed -i "s|\$| kernel_log=$d/klog/%n state_dir=$d/llmt-state|" "$d/etc/plugstack.conf"
grep -q 'kernel_log=' "$d/etc/plugstack.conf" || fail "plugstack.conf not updated"

# A first training job on a clean log runs and drains nothing.
srun -N3 --llm-train true || fail "training step on healthy nodes"
for n in $(cluster_nodes); do
	case $(cluster_node_state "$n") in drain*|drng*) fail "$n drained on a clean log";; esac
done

cluster_wait_idle 30 || fail "nodes not idle after the first job"
# The first job's epilogs have checked the logs up to now (that is what
# moves each node's mark). Xid 79 on node2, stamped now on the kernel
# log's clock (CLOCK_MONOTONIC), as the kernel would.
now=$(/usr/bin/python3 -c 'import time; print(int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6))')
echo "3,4242,$now,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=777, GPU has fallen off the bus." >>"$d/klog/node2"
jid=$(sbatch --parsable -N3 --llm-train -o "$d/drain.out" --wrap 'srun true') || fail "sbatch"
reason=
for _ in $(seq 1 100); do
	reason=$(sinfo -h -N -n node2 -o '%E' 2>/dev/null | head -n 1)
	case $reason in *"Xid 79"*) break;; esac
	sleep 0.2
done
case $reason in
*"llm_train: kernel log: Xid 79"*"GPU has fallen off the bus"*) ;;
*) scontrol show node node2; fail "node2 reason '$reason'";;
esac
case $(cluster_node_state node2) in drain*|drng*) ;; *) fail "node2 not drained: $(cluster_node_state node2)";; esac
for n in node1 node3; do
	case $(cluster_node_state "$n") in drain*|drng*) fail "$n drained too";; esac
done
comment=
for _ in $(seq 1 50); do
	comment=$(scontrol show job "$jid" 2>/dev/null | sed -n "s/^ *Comment=//p")
	case $comment in *drained*) break;; esac
	sleep 0.2
done
case $comment in
*"node node2 drained"*"Xid 79"*) ;;
*) scontrol show job "$jid"; fail "job comment '$comment'";;
esac
grep -q 'llm_train: prolog on node2: draining' "$d/log/slurmd-node2.log" || fail "no slurmd log line"
scancel "$jid" 2>/dev/null
echo "ok: Xid 79 in node2's kernel log drained node2 ('$reason'); job comment says why"

# Resumed, the node is not drained again for the error already acted on.
scontrol update NodeName=node2 State=RESUME || fail "resume"
srun -N3 --llm-train true || fail "training step after resume"
case $(cluster_node_state node2) in drain*|drng*) fail "node2 drained again for the old Xid";; esac
echo "PASS"

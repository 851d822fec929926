# tests/wrapper/torch_lib.sh: sourced by the wrapper's local PyTorch tests
# (wrap_torch*.sh) after setting TAG: lib-wrap.sh, a skip without Debian's
# torch, a temporary $T (kept when the test fails), the module on the path,
# $CK (llm-train-ckpt-torch), $EX (etc/examples/ddp_train.py) and
# $T/two.sh COMMAND... (two local ranks, as a Slurm step of two tasks
# would start them, on a free port; the first failing exit code).
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { echo "SKIP: python3-torch missing"; exit 77; }
T=$(mktemp -d "/tmp/llmt-$TAG.XXXXXX") || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_CKPT_INTERVAL LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW
export PYTHONPATH=$top_srcdir/wrapper/python LLM_TRAIN_PYTHONPATH=$top_srcdir/wrapper/python OMP_NUM_THREADS=1
CK=$top_builddir/wrapper/llm-train-ckpt-torch
EX=$top_srcdir/etc/examples/ddp_train.py
cat >"$T/two.sh" <<'TWO'
#!/bin/sh
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2
RANK=1 SLURMD_NODENAME=nB "$@" & p1=$!
RANK=0 SLURMD_NODENAME=nA "$@"; rc=$?
wait $p1; r1=$?
[ $rc = 0 ] && rc=$r1
exit $rc
TWO
chmod +x "$T/two.sh"

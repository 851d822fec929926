#!/bin/sh
# tests/wrapper/wrap_real_savestop.sh: a rank SIGSTOPped inside a
# checkpoint save, under llm-train-wrap with the real trainer (llm-train,
# tiny model, dp=2 over two nodes, MPI over PMIx) on the emulated cluster.
# Every rank sleeps in the save of step 8 (slowsave@8: twice the
# communication deadline, 600 s by default), so both ranks show phase save
# at step 8, the phase that pauses hang detection for up to
# 10 x --hang-timeout-max (600 s here). Rank 1 is stopped once its
# heartbeat says save and its slowsave has begun: its heartbeat thread
# stops with it, its saving peer's goes on beating, and the wrapper must
# take it for stopped once it is max(hang timeout, WR_PAUSE_BEHIND_S = 10 s)
# behind that peer (wr_hang_find, wrapper/hang.c; doc/contracts.md): a hang
# on its node after well under the 60 s cap, the step killed, a restart
# from the step-4 checkpoint (the step-8 save never got written) and final
# fp32 weights and AdamW moments bit for bit those of an unfaulted job run
# beside it. Red when the rule is gone: no hang for the pause cap.
# RT_SRC/RT_BUILD: where llm-train's sources and build are (default the tree).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
STEPS=16
pid= sj=
# on the way out: the stopped rank let go, a job left running cancelled
trap '_rc=$?; [ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null; [ -n "$sj" ] && scancel "$sj" 2>/dev/null; cluster_cleanup $_rc' EXIT

job() {  # NAME: submit a 2-node dp=2 job (wrap_real.sh's settings); print its id
	cat >"$W/$1.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$1" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 4 --hang-timeout-max 60 \\
	--backoff 0.2 -- "$LT" --model "$RT_SRC/configs/tiny.yaml" --data "$W/corpus" --seq 64 \\
	--micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 4 --sdc-interval 2 --quiet
JOB
	chmod +x "$W/$1.sh"
	(cd "$W" && sbatch --parsable --no-requeue -o "$1.out" -N2 --ntasks-per-node=1 "$1.sh")
}
final() { printf '%s/step_%08d' "$W/$1" $STEPS; }

ref=$(job ref) || fail "sbatch ref"
sj=$(LLM_TRAIN_FAULT=slowsave@8; export LLM_TRAIN_FAULT; job ss) || fail "sbatch ss"
C=$W/ss L=$C/ledger.jsonl
show() { cat "$W/ss.out"; ls -l "$C/heartbeat" 2>/dev/null; grep -E '"event":"(launch|hang|failure|action)"' "$L"; fail "$*"; }

# task 1: its pid, node and rank (RANK from the plugin, else the task id:
# tp=pp=1, the MPI rank)
i=0
until pid=$(real_pid "$sj" 1); do
	i=$((i + 1)); [ $i -le 600 ] || show "no task 1 after 120 s"
	sleep 0.2
done
node=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^SLURMD_NODENAME=//p')
rk=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^RANK=//p')
rk=${rk:-1}
[ -n "$node" ] || show "task 1 has no SLURMD_NODENAME"
hb=$C/heartbeat/node_$node
# inside the slowed save: the fault has fired in that rank and its
# heartbeat record says phase save at step 8
saving() { grep -q "rank $rk: injected fault slowsave@8" "$W/ss.out" && grep -q "^r$rk 8 [0-9]* save " "$hb"; }
i=0
until saving 2>/dev/null; do
	i=$((i + 1)); [ $i -le 600 ] || show "rank $rk never seen in the slowed save of step 8 (120 s)"
	sleep 0.2
done
grep -o "injected fault slowsave@8 ([0-9.]* s)" "$W/ss.out" | head -n 1 | sed "s/^/rank $rk: /"
kill -STOP "$pid" || show "kill -STOP $pid"
echo "rank $rk stopped on $node in phase save: $(grep "^r$rk " "$hb")"
# found within the 60 s cap (--hang-timeout-max), not at the pause cap
i=0
until [ "$(count hang "$L" 2>/dev/null)" = 1 ]; do
	i=$((i + 1))
	[ $i -le 300 ] || show "no hang 60 s after rank $rk was stopped in its save beside a saving peer: the wrapper waits for the pause cap (10 x --hang-timeout-max = 600 s), the stopped rank not taken for stopped"
	sleep 0.2
done
echo "peer at the hang: $(grep -hv "^node \|^r$rk " "$C"/heartbeat/node_* | head -n 1)"
st=$(cluster_sbatch_wait "$sj" 180) || show "job $sj ended $st"
sj=
kill -CONT "$pid" 2>/dev/null
pid=

[ "$(count hang "$L" "\"rank\":$rk,")" = 1 ] && [ "$(count hang "$L" "\"node\":\"$node\"")" = 1 ] ||
	show "the hang does not name rank $rk on $node"
grep -q "hang: rank $rk on $node silent" "$W/ss.out" || show "the wrapper's hang line does not name rank $rk on $node"
# the rule fired: the stopped rank's silence is about WR_PAUSE_BEHIND_S
# (10 s) behind its peer's beats, far from the 600 s pause cap and below
# the 60 s cap
sil=$(sed -n 's/.*"event":"hang".*"silent_s":\([0-9]*\).*/\1/p' "$L")
[ -n "$sil" ] && [ "$sil" -lt 30 ] || show "the hang was found after ${sil:-?} s of silence, not ~10 s behind the saving peer"
grep '"event":"hang"' "$L" | sed 's/.*"silent_s":\([0-9.]*\).*"timeout_s":\([0-9.]*\).*/stopped rank silent \1 s (timeout \2 s, pause cap 600 s)/'
ledger ss "launches=2 failures=transient restarts=1 requeues=0"
grep '"event":"launch"' "$L" | tail -n 1 | grep -q '"resume_step":4,' || show "not resumed from the step-4 checkpoint"
[ -f "$(final ss)/manifest.json" ] || show "no step-$STEPS checkpoint"
rst=$(cluster_sbatch_wait "$ref" 120) || { cat "$W/ref.out"; fail "ref: job $ref ended $rst"; }
ledger ref "launches=1 failures= restarts=0 requeues=0"
/usr/bin/python3 "$top_srcdir/tests/runtime/ckpt_compare.py" "$(final ref)" "$(final ss)" 0 ||
	show "final fp32 weights or optimizer state differ from the unfaulted run"
echo "rank $rk stopped in a checkpoint save: hang after $sil s, restart from step 4, the unfaulted weights"
echo PASS

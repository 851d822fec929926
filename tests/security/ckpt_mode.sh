#!/bin/bash
# Checkpoint directories (CKPT_DIR, its missing parents, heartbeat/) are
# created 0700 and owned by the job's user, whatever the umask: run as
# nobody with umask 022 through the runtime's own writer.
. "${top_srcdir:?}/tests/security/lib.sh"
sec_need_root
sec_tmpdir
cp "${top_builddir:?}/tests/security/ckpt_mode" "$sec_dir/ckpt_mode" && chmod 755 "$sec_dir/ckpt_mode" || exit 1
mkdir "$sec_dir/scratch" && chown nobody: "$sec_dir/scratch" || exit 1
d=$sec_dir/scratch/me/run7
(umask 022; sec_as_nobody "$sec_dir/ckpt_mode" "$d") || { echo "FAIL: ckpt_mode as nobody failed"; exit 1; }
fail=0
for p in "$sec_dir/scratch/me" "$d" "$d/heartbeat"; do
	got=$(stat -c '%U %a' "$p")
	if [ "$got" = "nobody 700" ]; then echo "ok: $p: $got"; else echo "FAIL: $p: $got (want nobody 700)"; fail=1; fi
done
# the real trainer: one step with a checkpoint, as nobody
lt=${top_builddir:?}/runtime/llm-train
if [ -x "$lt" ]; then
	mkdir "$sec_dir/data" && /usr/bin/python3 - "$sec_dir/data/a.bin" <<'PY' || exit 1
import struct, sys
h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = 4096
open(sys.argv[1], 'wb').write(struct.pack('<256i', *h) + struct.pack('<4096H', *([65] * 4096)))
PY
	printf 'vocab_size: 256\nd_model: 64\nn_layers: 1\nn_heads: 2\nd_ff: 128\nmax_seq: 32\n' >"$sec_dir/m.yaml"
	chmod -R a+rX "$sec_dir/data" "$sec_dir/m.yaml"
	c=$sec_dir/scratch/you/run1
	if ! out=$(cd "$sec_dir" && umask 022 && sec_as_nobody "$lt" --model "$sec_dir/m.yaml" --data "$sec_dir/data" \
		--steps 1 --seq 16 --micro-batch 1 --ckpt-dir "$c" --quiet 2>&1); then
		echo "FAIL: llm-train as nobody: $out"; fail=1
	fi
	for p in "$sec_dir/scratch/you" "$c" "$c/heartbeat" "$c/step_00000001"; do
		got=$(stat -c '%U %a' "$p" 2>&1)
		if [ "$got" = "nobody 700" ]; then echo "ok: llm-train: $p: $got"; else echo "FAIL: llm-train: $p: $got (want nobody 700)"; fail=1; fi
	done
fi
# the Python module of PyTorch jobs (wrapper/python/llm_train.py), as
# nobody: it made CKPT_DIR's parents, heartbeat/, the run dir and the
# step directories 0755 (os.makedirs) where llm-train makes them 0700
py=$sec_dir/scratch/py/run2
cp "${top_srcdir:?}/wrapper/python/llm_train.py" "$sec_dir/llm_train.py" && chmod 644 "$sec_dir/llm_train.py" || exit 1
if ! out=$(cd "$sec_dir" && umask 022 && sec_as_nobody env PYTHONPATH="$sec_dir" LLM_TRAIN_CKPT_DIR="$py" \
	LLM_TRAIN_RUN_DIR="$sec_dir/scratch/pyrun/r" /usr/bin/python3 -c '
import llm_train
j = llm_train.Job(); j.start(); j.step(1, loss=1.0)
j.ckpt_dir_for(1); j.ckpt_complete(1); j.done()' 2>&1); then
	echo "FAIL: the llm_train module as nobody: $out"; fail=1
fi
for p in "$sec_dir/scratch/py" "$py" "$py/heartbeat" "$py/step_00000001" "$sec_dir/scratch/pyrun" "$sec_dir/scratch/pyrun/r"; do
	got=$(stat -c '%U %a' "$p" 2>&1)
	if [ "$got" = "nobody 700" ]; then echo "ok: llm_train.py: $p: $got"; else echo "FAIL: llm_train.py: $p: $got (want nobody 700)"; fail=1; fi
done
exit $fail

#!/bin/bash
# A checkpoint, heartbeat or run directory that another user made first
# (uid 4242 here; a planted checkpoint in it) or that sits under a
# directory every user may write without the sticky bit is refused with
# one line and exit 64, before anything in it is read: by llm-train, by
# llm-train-wrap and by the PyTorch jobs' module, as nobody and as root.
# Before the fix all three used such directories (llm-train resumed from
# or wrote into them; exit 0 or a checkpoint error, never 64).
. "${top_srcdir:?}/tests/security/lib.sh"
lt=${top_builddir:?}/runtime/llm-train W=${top_builddir:?}/wrapper/llm-train-wrap
sec_need_root
sec_built "$lt" "$W"
sec_tmpdir
d=$sec_dir
fail=0
bad() { echo "FAIL: $*"; fail=1; }
sec_tiny "$d"
cp "${top_srcdir:?}/wrapper/python/llm_train.py" "$d/llm_train.py"
chmod a+r "$d/llm_train.py"
mkdir -m 1777 "$d/scratch" || exit 1   # like /tmp: sticky, every user writes
train() {    # $1: as (nobody|root); the rest: llm-train's extra options
	local as=$1; shift
	local run=("$lt" --model "$d/m.yaml" --data "$d/data" --steps 1 --seq 16 --micro-batch 1 --quiet "$@")
	if [ "$as" = nobody ]; then (cd "$d" && sec_as_nobody "${run[@]}"); else (cd "$d" && "${run[@]}"); fi
}
# another user's checkpoint dir (0755) with a planted checkpoint
f=$d/scratch/victim/run7
mkdir -p "$f/step_00000005" && echo '{"step":5}' >"$f/step_00000005/manifest.json" && ln -s step_00000005 "$f/latest" &&
	chown -R -h 4242:4242 "$d/scratch/victim" && chmod -R 755 "$d/scratch/victim" || exit 1
train nobody --ckpt-dir "$f" >"$d/o1" 2>&1; rc=$?
sec_want64 "llm-train, uid 4242's ckpt dir" "$d/o1" "checkpoint dir $f: owned by uid 4242, not by this user (uid 65534): refused" $rc
train root --ckpt-dir "$f" >"$d/o2" 2>&1; rc=$?
sec_want64 "llm-train as root, uid 4242's ckpt dir" "$d/o2" "owned by uid 4242, not by this user (uid 0)" $rc
sec_as_nobody "$W" --no-srun --ckpt-dir "$f" -- true >"$d/o3" 2>&1; rc=$?
sec_want64 "llm-train-wrap, uid 4242's ckpt dir" "$d/o3" "llm-train-wrap: run dir $f: owned by uid 4242" $rc
[ -e "$f/ledger.jsonl" ] && bad "the wrapper wrote its ledger into uid 4242's dir"
(cd "$d" && sec_as_nobody env PYTHONPATH="$d" LLM_TRAIN_CKPT_DIR="$f" /usr/bin/python3 -c 'import llm_train; llm_train.Job()') \
	>"$d/o4" 2>&1; rc=$?
sec_want64 "llm_train.py, uid 4242's ckpt dir" "$d/o4" "llm_train: rank 0: checkpoint dir $f: owned by uid 4242" $rc
# nobody's own ckpt dir, but heartbeat/ and the run dir made by uid 4242
o=$d/scratch/own && mkdir -p "$o/ck/heartbeat" "$o/run" && chown -R nobody: "$o" && chown 4242 "$o/ck/heartbeat" "$o/run" || exit 1
train nobody --ckpt-dir "$o/ck" >"$d/o5" 2>&1; rc=$?
sec_want64 "llm-train, uid 4242's heartbeat/" "$d/o5" "heartbeat dir $o/ck/heartbeat: owned by uid 4242" $rc
sec_as_nobody "$W" --no-srun --ckpt-dir "$o/ck2" --run-dir "$o/run" -- true >"$d/o6" 2>&1; rc=$?
sec_want64 "llm-train-wrap, uid 4242's run dir" "$d/o6" "run dir $o/run: owned by uid 4242" $rc
# a parent every user may write without the sticky bit (anyone can swap the dir)
mkdir -p "$d/open/me" && chown -R nobody: "$d/open" && chmod 777 "$d/open" || exit 1
train nobody --ckpt-dir "$d/open/me/run1" >"$d/o7" 2>&1; rc=$?
sec_want64 "llm-train under a 0777 parent" "$d/o7" "$d/open is writable by every user without the sticky bit (mode 0777)" $rc
# the same through nobody's own link (the parents of where it leads count)
ln -s "$d/open/me" "$d/scratch/lnk" && chown -h nobody: "$d/scratch/lnk" || exit 1
train nobody --ckpt-dir "$d/scratch/lnk/run1" >"$d/o7l" 2>&1; rc=$?
sec_want64 "llm-train through a link to under a 0777 parent" "$d/o7l" "checkpoint dir $d/scratch/lnk/run1: $d/open is writable by every user without the sticky bit (mode 0777)" $rc
(cd "$d" && sec_as_nobody env PYTHONPATH="$d" LLM_TRAIN_CKPT_DIR="$d/scratch/lnk/run2" /usr/bin/python3 -c 'import llm_train; llm_train.Job()') \
	>"$d/o7p" 2>&1; rc=$?
sec_want64 "llm_train.py through a link to under a 0777 parent" "$d/o7p" "$d/open is writable by every user without the sticky bit" $rc
# the good paths: nobody's new dir under the sticky scratch; root's own
train nobody --ckpt-dir "$d/scratch/mine/run1" >"$d/o8" 2>&1 || bad "llm-train in nobody's own dir: $(cat "$d/o8")"
[ -d "$d/scratch/mine/run1/step_00000001" ] || bad "no checkpoint in nobody's own dir"
train root --ckpt-dir "$d/rootrun" >"$d/o9" 2>&1 || bad "llm-train in root's own dir: $(cat "$d/o9")"
# export and import into another user's empty dir (sticky, open to all:
# they made it to read what lands there): refused; into one's own: done
x=$d/scratch/theirs && y=$d/scratch/theirs2 && mkdir -m 1777 "$x" "$y" && chown 4242:4242 "$x" "$y" || exit 1
(cd "$d" && sec_as_nobody "$lt" export "$d/scratch/mine/run1/step_00000001" "$x") >"$d/o10" 2>&1; rc=$?
sec_want64 "llm-train export into uid 4242's dir" "$d/o10" "llm-train: export: export dir $x: owned by uid 4242" $rc
[ -e "$x/model.safetensors" ] && bad "export wrote the model into uid 4242's dir"
(cd "$d" && sec_as_nobody "$lt" export "$d/scratch/mine/run1/step_00000001" "$d/scratch/mine/hf") >"$d/o11" 2>&1 ||
	bad "export into nobody's own dir: $(cat "$d/o11")"
(cd "$d" && sec_as_nobody "$lt" import "$d/scratch/mine/hf" "$y") >"$d/o12" 2>&1; rc=$?
sec_want64 "llm-train import into uid 4242's dir" "$d/o12" "checkpoint dir $y: owned by uid 4242" $rc
[ -e "$y/latest" ] || [ -n "$(ls "$y")" ] && bad "import wrote into uid 4242's dir: $(ls "$y")"
(cd "$d" && sec_as_nobody "$lt" import "$d/scratch/mine/hf" "$d/scratch/mine/imp") >"$d/o13" 2>&1 ||
	bad "import into nobody's own dir: $(cat "$d/o13")"
[ -f "$f/step_00000005/manifest.json" ] && [ "$(stat -c %u "$f/step_00000005/manifest.json")" = 4242 ] ||
	bad "the planted checkpoint changed"
# ---- the same dirs made by uid 4242 between the check and the job's own
# mkdir, which then fails with EEXIST: an LD_PRELOAD shim (mkdir_race.c)
# plays that user at the moment of the mkdir; each checks again once the
# directory is there (before: all three used uid 4242's directory)
${CC:-cc} -shared -fPIC -O1 -o "$d/race.so" "$top_srcdir/tests/security/mkdir_race.c" -ldl ||
	{ echo "FAIL: the shim does not build"; exit 1; }
race() { env LD_PRELOAD="$d/race.so" LLMT_RACE_DIR="$1" "${@:2}"; }
c=$d/c1
(cd "$d" && race "$c" "$lt" --model "$d/m.yaml" --data "$d/data" --steps 1 --seq 16 --micro-batch 1 --quiet \
	--ckpt-dir "$c") >"$d/o1" 2>&1; rc=$?
sec_want64 "llm-train, ckpt dir made under it" "$d/o1" "checkpoint dir $c: owned by uid 4242, not by this user (uid 0): refused" $rc
[ -z "$(ls -A "$c")" ] || bad "llm-train wrote into uid 4242's dir: $(ls -A "$c")"
h=$d/c2
mkdir "$h" || exit 1
(cd "$d" && race "$h/heartbeat" "$lt" --model "$d/m.yaml" --data "$d/data" --steps 1 --seq 16 --micro-batch 1 \
	--quiet --ckpt-dir "$h") >"$d/o2" 2>&1; rc=$?
sec_want64 "llm-train, heartbeat/ made under it" "$d/o2" "heartbeat dir $h/heartbeat: owned by uid 4242" $rc
r=$d/r3
race "$r" "$W" --no-srun --ckpt-dir "$r" -- true >"$d/o3" 2>&1; rc=$?
sec_want64 "llm-train-wrap, run dir made under it" "$d/o3" "llm-train-wrap: run dir $r: owned by uid 4242" $rc
[ -e "$r/ledger.jsonl" ] && bad "llm-train-wrap wrote its ledger into uid 4242's dir"
k=$d/k4
race "$k" "$W" --no-srun --ckpt-dir "$k" --run-dir "$d/own4" -- true >"$d/o4" 2>&1; rc=$?
sec_want64 "llm-train-wrap, ckpt dir made under it" "$d/o4" "llm-train-wrap: checkpoint dir $k: owned by uid 4242" $rc
p=$d/p5
(cd "$d" && race "$p" env PYTHONPATH="$d" LLM_TRAIN_CKPT_DIR="$p" /usr/bin/python3 -c 'import llm_train; llm_train.Job()') \
	>"$d/o5" 2>&1; rc=$?
sec_want64 "llm_train.py, ckpt dir made under it" "$d/o5" "llm_train: rank 0: checkpoint dir $p: owned by uid 4242" $rc
# ---- a project directory another member of the caller's group made
# (uid 4242, group nogroup, 2770): refused by default, trusted by
# LLM_TRAIN_TRUST_GROUP=nogroup (nobody's group), never for a group the
# caller is not in
g=$d/scratch/proj && mkdir -m 2770 "$g" "$g/run1" && chown 4242:nogroup "$g" "$g/run1" || exit 1
train nobody --ckpt-dir "$g/run1" >"$d/g1" 2>&1; rc=$?
sec_want64 "llm-train, a group member's project dir" "$d/g1" "owned by uid 4242, not by this user (uid 65534): refused (a project directory of your group 65534: LLM_TRAIN_TRUST_GROUP=65534)" $rc
(cd "$d" && sec_as_nobody env LLM_TRAIN_TRUST_GROUP=nogroup "$lt" --model "$d/m.yaml" --data "$d/data" --steps 1 \
	--seq 16 --micro-batch 1 --quiet --ckpt-dir "$g/run1") >"$d/g2" 2>&1 || bad "LLM_TRAIN_TRUST_GROUP=nogroup: $(cat "$d/g2")"
[ -d "$g/run1/step_00000001" ] || bad "no step 1 in the trusted project dir"
(cd "$d" && sec_as_nobody env PYTHONPATH="$d" LLM_TRAIN_TRUST_GROUP=65534 LLM_TRAIN_CKPT_DIR="$g/run1" /usr/bin/python3 \
	-c 'import llm_train; llm_train.Job()') >"$d/g3" 2>&1 || bad "llm_train.py, LLM_TRAIN_TRUST_GROUP=65534: $(cat "$d/g3")"
chown 4242:4242 "$g/run1" || exit 1
(cd "$d" && sec_as_nobody env LLM_TRAIN_TRUST_GROUP=4242 "$lt" --model "$d/m.yaml" --data "$d/data" --steps 3 \
	--seq 16 --micro-batch 1 --quiet --ckpt-dir "$g/run1") >"$d/g4" 2>&1; rc=$?
sec_want64 "llm-train, LLM_TRAIN_TRUST_GROUP of a group it is not in" "$d/g4" "owned by uid 4242, not by this user" $rc
(cd "$d" && sec_as_nobody env PYTHONPATH="$d" LLM_TRAIN_TRUST_GROUP=4242 LLM_TRAIN_CKPT_DIR="$g/run1" /usr/bin/python3 \
	-c 'import llm_train; llm_train.Job()') >"$d/g5" 2>&1; rc=$?
sec_want64 "llm_train.py, LLM_TRAIN_TRUST_GROUP of a group it is not in" "$d/g5" "owned by uid 4242" $rc
exit $fail

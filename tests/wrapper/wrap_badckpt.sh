#!/bin/sh
# tests/wrapper/wrap_badckpt.sh: a checkpoint that comes back broken does
# not end the job (llm-train, one rank, tiny model, seconds, --no-srun, no
# cluster). A first run leaves checkpoints of steps 2 and 4; a second job
# under llm-train-wrap lists them (step 4 valid at that moment), then step
# 4's shard goes bad before the trainer loads it (a flipped byte: storage
# returning other bytes than were verified). llm-train exits 89 naming the
# checksum; the wrapper records ckpt_bad for step 4, resumes from step 2
# and the job completes (exit 0). The bad checkpoint is not deleted: it is
# moved aside (step_00000004.superseded.*) when step 4 is saved again.
# A second run of the same run dir never picks it again, but a good
# re-save of that step is used; the only checkpoint broken stops the job
# (89) instead of a fresh start. Fails on the old code: the resume exited
# 65 (bad data), never retried: the job ended 65; a step without its
# manifest was 66 (stopped), then marked by path alone.
set -u
TAG=badck
. "$top_srcdir/tests/wrapper/real_lib.sh"
tiny_data
D=$W/ck
TRAIN="$LT --model $MODEL --data $W/data --seq 16 --micro-batch 1 --ckpt-interval 2 --quiet"
$TRAIN --steps 4 --ckpt-dir "$D" >"$W/first.out" 2>&1 || { cat "$W/first.out"; fail "first run: exit $?"; }
[ -d "$D/step_00000002" ] && [ -d "$D/step_00000004" ] || fail "first run: no checkpoints 2 and 4: $(ls "$D")"

# the trainer's command flips a byte of step 4's shard once, after the
# wrapper listed it, before llm-train loads it
cat >"$W/flip.sh" <<'FLIP'
#!/bin/sh
f=$1; shift
if [ ! -e "$f.flipped" ]; then
	printf '\377' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null; : >"$f.flipped"
fi
exec "$@"
FLIP
chmod +x "$W/flip.sh"
"$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	"$W/flip.sh" "$D/step_00000004/rank_00000.bin" $TRAIN --steps 6 --ckpt-dir "$D" >"$W/wrap.out" 2>&1
rc=$?
[ $rc = 0 ] || { cat "$W/wrap.out"; fail "a broken newest checkpoint: wrapper exit $rc, want 0"; }
L=$D/ledger.jsonl
grep -q "wrong checksum" "$W/wrap.out" || { cat "$W/wrap.out"; fail "no checksum message"; }
grep '"event":"ckpt_bad"' "$L" | grep '"rule":"exit_code"' | grep -q "\"path\":\"$D/step_00000004\"" ||
	{ cat "$L"; fail "no ckpt_bad event for step 4"; }
grep '"event":"launch"' "$L" | sed -n 2p | grep -q '"resume_step":2' || { cat "$L"; fail "not resumed from step 2"; }
[ "$(grep -c '"event":"launch"' "$L")" = 2 ] || { cat "$L"; fail "not 2 launches"; }
[ -d "$D/step_00000006" ] || fail "the job did not reach step 6: $(ls "$D")"
ls -d "$D"/step_00000004.superseded.* >/dev/null 2>&1 || ls -d "$D/step_00000004" >/dev/null ||
	fail "the bad checkpoint is gone: $(ls "$D")"
bad=$(ls -d "$D"/step_00000004.superseded.* 2>/dev/null | head -n 1)
[ -n "$bad" ] && ! "$LT" ckpt-verify "$bad" >/dev/null 2>&1 || fail "the bad checkpoint was not kept aside as it was"
echo "broken step 4: exit 89, ckpt_bad, resumed from step 2, done; kept as $(basename "$bad")"

# a later run of the run dir: the mark is read back from the ledger
grep -q '"ckpt_bad"' "$L" || fail "ledger lost the mark"
"$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	$TRAIN --steps 8 --ckpt-dir "$D" >"$W/again.out" 2>&1 || { cat "$W/again.out"; fail "second job: exit $?"; }
grep '"event":"launch"' "$L" | tail -n 1 | grep -q '"resume_step":6' || { cat "$L"; fail "second job: not resumed from 6"; }
echo "second job: resumed from step 6"

# the only checkpoint (a fine-tune's import, say) broken before the job:
# the listing leaves it out, the trainer finds it itself and exits 89; the
# wrapper stops (89, one launch) rather than restart from random weights.
# On the old rule the restart ran with LLM_TRAIN_RESUME= : a fresh start.
D1=$W/only
$TRAIN --steps 2 --ckpt-dir "$D1" >"$W/only0.out" 2>&1 || { cat "$W/only0.out"; fail "only: first run: exit $?"; }
printf '\377' | dd of="$D1/step_00000002/rank_00000.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
"$WRAP" --no-srun --ckpt-dir "$D1" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	$TRAIN --steps 4 --ckpt-dir "$D1" >"$W/only.out" 2>&1
rc=$?
[ $rc = 89 ] || { cat "$W/only.out"; fail "the only checkpoint broken: wrapper exit $rc, want 89"; }
[ "$(grep -c '"event":"launch"' "$D1/ledger.jsonl")" = 1 ] || { cat "$W/only.out"; fail "the only checkpoint broken: restarted"; }
grep -q "not starting from random weights" "$W/only.out" || { cat "$W/only.out"; fail "the only checkpoint broken: no line saying why"; }
[ -d "$D1/step_00000004" ] && fail "the only checkpoint broken: trained on from random weights"
echo "only checkpoint broken: exit 89, one launch, no training from random weights"

# a ckpt_bad mark covers the broken checkpoint, not a later good save of
# the same step at the same path: step 4 broken, marked, the job resumes
# from 2 and saves step 4 again (the bad one moved aside); a second job
# resumes from the new step 4. On marks by path alone it skipped the good
# step 4 and resumed from 2 (an interval lost at every later restart).
R=$W/resave
$TRAIN --steps 4 --ckpt-dir "$R" >"$W/rfirst.out" 2>&1 || { cat "$W/rfirst.out"; fail "resave: first run"; }
cp -r "$R" "$W/noman" || fail "cannot copy $R"   # the noman case's start, below
"$WRAP" --no-srun --ckpt-dir "$R" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	"$W/flip.sh" "$R/step_00000004/rank_00000.bin" $TRAIN --steps 4 --ckpt-dir "$R" >"$W/rwrap.out" 2>&1 ||
	{ cat "$W/rwrap.out"; fail "resave: first job: exit $?"; }
LR=$R/ledger.jsonl
grep -q '"event":"ckpt_bad"' "$LR" || { cat "$LR"; fail "step 4 not marked bad"; }
ls -d "$R"/step_00000004.superseded.* >/dev/null 2>&1 || fail "the bad step 4 not moved aside: $(ls "$R")"
"$LT" ckpt-verify "$R/step_00000004" >/dev/null 2>&1 || fail "the new step 4 is not valid"
"$WRAP" --no-srun --ckpt-dir "$R" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	$TRAIN --steps 6 --ckpt-dir "$R" >"$W/ragain.out" 2>&1 || { cat "$W/ragain.out"; fail "resave: second job: exit $?"; }
grep '"event":"launch"' "$LR" | tail -n 1 | grep -q '"resume_step":4' ||
	{ cat "$W/ragain.out"; grep launch "$LR"; fail "second job: the new good step 4 skipped"; }
echo "the re-saved step 4 is used; the mark stays on the one moved aside"

# the same when step 4 lost its manifest after the listing (89: a broken
# checkpoint): the mark takes the directory's identity, so the re-saved
# step 4 is used by the next job. On marks by path alone (no manifest, no
# identity) the next job skipped it and resumed from 2.
cat >"$W/rmman.sh" <<'RMMAN'
#!/bin/sh
f=$1; shift
[ -e "$f.removed" ] || { rm -f "$f"; : >"$f.removed"; }
exec "$@"
RMMAN
chmod +x "$W/rmman.sh"
M=$W/noman   # steps 2 and 4, copied from the resave case's first run
"$WRAP" --no-srun --ckpt-dir "$M" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	"$W/rmman.sh" "$M/step_00000004/manifest.json" $TRAIN --steps 4 --ckpt-dir "$M" >"$W/mwrap.out" 2>&1 ||
	{ cat "$W/mwrap.out"; fail "noman: first job: exit $?"; }
grep -q "step_00000004/manifest.json: missing manifest" "$W/mwrap.out" &&
	grep '"event":"ckpt_bad"' "$M/ledger.jsonl" | grep -q '"id":"[0-9a-f]*:[0-9]*\.[0-9]*"' ||
	{ cat "$W/mwrap.out"; fail "noman: step 4 not marked bad with an identity"; }
"$WRAP" --no-srun --ckpt-dir "$M" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	$TRAIN --steps 6 --ckpt-dir "$M" >"$W/magain.out" 2>&1 || { cat "$W/magain.out"; fail "noman: second job: exit $?"; }
grep '"event":"launch"' "$M/ledger.jsonl" | tail -n 1 | grep -q '"resume_step":4' ||
	{ cat "$W/magain.out"; grep launch "$M/ledger.jsonl"; fail "noman: second job: the re-saved step 4 skipped"; }
echo "step 4 without its manifest: marked by its directory, the re-saved step 4 used"

# retention does not count the marked checkpoint (the wrapper hands the
# marks to the trainer in LLM_TRAIN_CKPT_BAD): steps 1, 2 and 4 kept, 4
# goes bad and is marked, the job resumes from 2 and saves 3 with
# --ckpt-keep 3: 3, 2 and 1 are the three kept, 4 stays as evidence. When
# the mark took a slot, step 1 (a good checkpoint) was pruned.
K=$W/keep
$TRAIN --steps 4 --ckpt-interval 1 --ckpt-keep 0 --ckpt-dir "$K" >"$W/kfirst.out" 2>&1 ||
	{ cat "$W/kfirst.out"; fail "keep: first run"; }
rm -rf "$K/step_00000003"
"$WRAP" --no-srun --ckpt-dir "$K" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	"$W/flip.sh" "$K/step_00000004/rank_00000.bin" $TRAIN --steps 3 --ckpt-interval 1 --ckpt-keep 3 \
	--ckpt-dir "$K" >"$W/kwrap.out" 2>&1 || { cat "$W/kwrap.out"; fail "keep: job: exit $?"; }
grep -q '"event":"ckpt_bad"' "$K/ledger.jsonl" || { cat "$W/kwrap.out"; fail "keep: step 4 not marked"; }
for s in 1 2 3 4; do
	[ -f "$K/step_0000000$s/manifest.json" ] || { ls "$K"; fail "keep: step $s is gone (the marked step 4 took a slot)"; }
done
echo "retention: the marked step 4 took no slot of --ckpt-keep 3 (steps 1, 2, 3 kept, 4 left as evidence)"

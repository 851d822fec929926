#!/bin/bash
# Root contexts of llm_train.so (sbatch's checks, slurmstepd, prolog and
# epilog, with every health check on) never open, create, stat or chown a
# path the user controls: the user's --llm-ckpt-dir is (a) a symlink the
# user swapped in pointing at a root-only directory, (b) a directory inside
# one owned by another user (nobody). Checked with strace: no file syscall
# names the user's tree; the victim directory is unchanged. Also: the task
# environment holds only contract variables, and nothing from the daemon's
# own environment (a secret, munge paths) or the plugin's admin paths.
. "${top_srcdir:?}/tests/security/lib.sh"
sec_need_root
command -v strace >/dev/null || { echo "SKIP: strace not installed"; exit 77; }
sec_tmpdir
drv=${top_builddir:?}/tests/security/priv_driver
w=$sec_dir/work u=$sec_dir/users v=$sec_dir/victim
mkdir -p "$w" "$u" "$v" && chmod 700 "$w" "$v" && chmod 1777 "$u" || exit 1
echo secret >"$v/secret"; chmod 600 "$v/secret"
: >"$w/kmsg.n1"; chmod 644 "$w/kmsg.n1"
printf '#!/bin/sh\nexit 0\n' >"$w/scontrol"; chmod 755 "$w/scontrol"
cat >"$w/policy.yaml" <<YAML
limits:
  ckpt_roots: [$u]
health:
  gpu_count: {enabled: true, timeout: 5}
  xid_scan: {enabled: true, timeout: 5}
  ckpt_free_space: {enabled: true, min_gib: 0.001, timeout: 5}
YAML
chmod 644 "$w/policy.yaml"
mkdir "$u/nobody" && chown nobody: "$u/nobody" && chmod 700 "$u/nobody" || exit 1
sec_as_nobody ln -s "$v" "$u/link" || exit 1
before=$(stat -c '%U %a %n' "$v" "$v"/* | sort)
fail=0
for ckpt in "$u/link/run" "$u/nobody/run"; do
	# LeakSanitizer cannot run under ptrace (scripts/sanitize-check builds)
	out=$(env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" LLMT_TEST_SECRET=s3cr3t MUNGE_SOCKET=/run/munge/munge.socket.2 \
		strace -f -qq -e trace=%file,chown,fchown,lchown,fchownat -o "$sec_dir/trace" \
		"$drv" chain "$w/policy.yaml" "$w" "$ckpt" 2>&1); rc=$?
	if [ $rc != 0 ]; then echo "FAIL: callbacks with $ckpt: exit $rc: $out"; fail=1; continue; fi
	touched=$(grep -F "$u/" "$sec_dir/trace" | grep -v 'execve(')
	if [ -n "$touched" ]; then
		echo "FAIL: root touched the user's tree for ckpt-dir $ckpt:"; echo "$touched"; fail=1
	else
		echo "ok: ckpt-dir $ckpt: $(grep -c . "$sec_dir/trace") file syscalls (statfs of the root $(grep -c "statfs(\"$u\"" "$sec_dir/trace")x, kernel log $(grep -c kmsg.n1 "$sec_dir/trace")x), none under $u/"
	fi
	env=$(grep '^ENV ' <<<"$out" | sed 's/^ENV //')
	grep -qx "LLM_TRAIN_CKPT_DIR=$ckpt" <<<"$env" || { echo "FAIL: task env lacks LLM_TRAIN_CKPT_DIR=$ckpt: $env"; fail=1; }
	odd=$(grep -Ev '^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|GROUP_RANK|GROUP_WORLD_SIZE|ROLE_RANK|ROLE_WORLD_SIZE|ROLE_NAME|CUDA_VISIBLE_DEVICES|NCCL_[A-Z0-9_]+|LLM_TRAIN[A-Z0-9_]*)=' <<<"$env")
	leak=$(grep -iE 's3cr3t|munge|'"$w" <<<"$env$(grep '^CTL ' <<<"$out")")
	if [ -n "$odd$leak" ]; then
		echo "FAIL: task environment: unexpected: $odd; leaked: $leak"; fail=1
	else
		echo "ok: task environment: $(wc -l <<<"$env") contract variables, no secret, no admin path"
	fi
done
after=$(stat -c '%U %a %n' "$v" "$v"/* | sort)
[ "$before" = "$after" ] && [ "$(ls -A "$v")" = secret ] && [ "$(stat -c %U "$u/nobody")" = nobody ] &&
	[ -z "$(ls -A "$u/nobody")" ] && echo "ok: victim and user directories unchanged" ||
	{ echo "FAIL: a directory changed: $before / $after / $(ls -lA "$v" "$u/nobody")"; fail=1; }
exit $fail

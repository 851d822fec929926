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
exit $fail

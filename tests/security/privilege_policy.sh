#!/bin/bash
# A policy file users could write is refused by the plugin (root reads it
# in slurmd/slurmstepd): owned by another user, group/other-writable, or a
# symbolic link; a root-owned 0644 copy of the same text is accepted.
. "${top_srcdir:?}/tests/security/lib.sh"
sec_need_root
sec_tmpdir
drv=${top_builddir:?}/tests/security/priv_driver
printf 'defaults:\n  tp: 1\nlimits:\n  ckpt_roots: [/tmp]\n' >"$sec_dir/good.yaml"
chmod 644 "$sec_dir/good.yaml"
fail=0
case_() {  # case_ NAME WANT-RC PATTERN FILE
	out=$("$drv" policy "$4" 2>&1); rc=$?
	if [ "$rc" = "$2" ] && grep -q -- "$3" <<<"$out"; then
		echo "ok: $1 (exit $rc): $(grep -m1 -- "$3" <<<"$out")"
	else
		echo "FAIL: $1: exit $rc (want $2), want /$3/ in: $out"; fail=1
	fi
}
case_ "root-owned 0644 policy" 0 "" "$sec_dir/good.yaml"
cp "$sec_dir/good.yaml" "$sec_dir/nobody.yaml"; chown nobody: "$sec_dir/nobody.yaml"
case_ "policy owned by nobody" 1 "owned by uid 65534" "$sec_dir/nobody.yaml"
cp "$sec_dir/good.yaml" "$sec_dir/gw.yaml"; chmod 664 "$sec_dir/gw.yaml"
case_ "group-writable policy" 1 "writable" "$sec_dir/gw.yaml"
cp "$sec_dir/good.yaml" "$sec_dir/ow.yaml"; chmod 646 "$sec_dir/ow.yaml"
case_ "world-writable policy" 1 "writable" "$sec_dir/ow.yaml"
ln -s "$sec_dir/good.yaml" "$sec_dir/link.yaml"
case_ "symlink to a good policy" 1 "symbolic link" "$sec_dir/link.yaml"
mkfifo "$sec_dir/fifo.yaml"
case_ "a FIFO instead of a file" 1 "llm_train" "$sec_dir/fifo.yaml"
exit $fail

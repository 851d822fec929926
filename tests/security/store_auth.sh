#!/bin/bash
# The munge-authenticated rendezvous store (runtime/comm/store.c) on one node:
# the job's user is served; another user's process (nobody, via setpriv),
# a credential for another job and a replayed credential are refused, each
# with one log line on the server.
. "${top_srcdir:?}/tests/security/lib.sh"
sec_need_root
sec_tmpdir
sec_munged
tool=$sec_dir/store_tool
cp "${top_builddir:?}/tests/security/store_tool" "$tool" && chmod 755 "$tool" || exit 1
export LLMT_MUNGE_SOCKET=$SEC_MUNGE_SOCKET
fail=0
check() {  # check NAME EXPECTED-RC PATTERN-IN-OUTPUT CMD...
	name=$1 want=$2 pat=$3; shift 3
	out=$("$@" 2>&1); rc=$?
	if [ "$rc" = "$want" ] && grep -q -- "$pat" <<<"$out"; then
		echo "ok: $name (exit $rc): $out"
	else
		echo "FAIL: $name: exit $rc (want $want), output: $out (want /$pat/)"; fail=1
	fi
}
"$tool" serve "$sec_dir/port" 4242 30000 2>"$sec_dir/server.log" &
sec_pids="$! $sec_pids"
server=$!
for _ in $(seq 50); do [ -s "$sec_dir/port" ] && break; sleep 0.1; done
port=$(cat "$sec_dir/port") || { echo "FAIL: store did not start"; cat "$sec_dir/server.log"; exit 1; }

check "same user, same job: set" 0 "" "$tool" set "$port" 4242 nccl_id 0123456789abcdef --save-cred "$sec_dir/cred"
check "same user, same job: get" 0 "^0123456789abcdef$" "$tool" get "$port" 4242 nccl_id
check "other user (nobody) on the same node" 1 "refused: uid 65534 is not the job's user (uid 0)" \
	sec_as_nobody "$tool" get "$port" 4242 nccl_id
check "other user cannot overwrite" 1 "refused" sec_as_nobody "$tool" set "$port" 4242 nccl_id evil
check "value unchanged" 0 "^0123456789abcdef$" "$tool" get "$port" 4242 nccl_id
check "same user, another job" 1 "refused: credential of uid 0 is not for job 4242" \
	"$tool" get "$port" 4243 nccl_id
check "replayed credential" 1 "refused: munge credential: Replayed credential" \
	"$tool" set "$port" 4242 nccl_id evil --cred "$sec_dir/cred"
check "garbage credential" 1 "refused: munge credential: Invalid credential" \
	"$tool" set "$port" 4242 nccl_id evil --cred /etc/hostname
check "value still unchanged" 0 "^0123456789abcdef$" "$tool" get "$port" 4242 nccl_id
kill "$server"; wait "$server"
n=$(grep -c '^llm-train store: refused ' "$sec_dir/server.log")
if [ "$n" = 5 ] && grep -q 'served, 5 refused' "$sec_dir/server.log"; then
	echo "ok: server logged one line per refusal (5)"
else
	echo "FAIL: server log has $n refusal lines (want 5):"; fail=1
fi
sed 's/^/  server: /' "$sec_dir/server.log"
exit $fail

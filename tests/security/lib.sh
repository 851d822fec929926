# tests/security/lib.sh: sourced by the security shell tests.
# sec_need_root: SKIP (77) unless root with the user nobody (the tests
#   switch to a real unprivileged user with setpriv).
# sec_tmpdir: a fresh 0755 directory under /tmp (reachable by nobody and
#   munge), removed at exit with everything sec_* started in it.
# sec_munged: a private munged (own key copy, socket $SEC_MUNGE_SOCKET).
sec_pids=
sec_dir=
sec_cleanup() {
	for p in $sec_pids; do kill "$p" 2>/dev/null; done
	for p in $sec_pids; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
	[ -n "$sec_dir" ] && rm -rf "$sec_dir"
}
trap sec_cleanup EXIT
sec_need_root() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (switches to the user nobody)"; exit 77; }
	id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
	command -v setpriv >/dev/null || { echo "SKIP: setpriv missing"; exit 77; }
}
sec_as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
sec_tmpdir() {
	sec_dir=$(mktemp -d /tmp/llmt-sec.XXXXXX) && chmod 755 "$sec_dir" || exit 1
}
sec_munged() {
	command -v munged >/dev/null || { echo "SKIP: munged not installed"; exit 77; }
	[ -f /etc/munge/munge.key ] || { echo "SKIP: no /etc/munge/munge.key"; exit 77; }
	m=$sec_dir/munge
	mkdir -p "$m" && cp /etc/munge/munge.key "$m/munge.key" && chown -R munge: "$m" &&
		chmod 700 "$m" && chmod 400 "$m/munge.key" || exit 1
	# the socket's directory must be reachable by every client
	chmod 755 "$m"
	SEC_MUNGE_SOCKET=$m/munge.socket
	runuser -u munge -- munged --socket="$SEC_MUNGE_SOCKET" --key-file="$m/munge.key" \
		--pid-file="$m/munged.pid" --seed-file="$m/munged.seed" --log-file="$m/munged.log" || {
		echo "FAIL: munged did not start"; cat "$m/munged.log"; exit 1; }
	for _ in $(seq 50); do [ -s "$m/munged.pid" ] && [ -S "$SEC_MUNGE_SOCKET" ] && break; sleep 0.1; done
	sec_pids="$sec_pids $(cat "$m/munged.pid")"
	export SEC_MUNGE_SOCKET
}

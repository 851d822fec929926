# tests/security/lib.sh: sourced by the security shell tests.
# sec_need_root: SKIP (77) unless root with the user nobody (the tests
#   switch to a real unprivileged user with setpriv).
# sec_tmpdir: a fresh 0755 directory under /tmp (reachable by nobody and
#   munge), removed at exit with everything sec_* started in it.
# sec_munged: a private munged (own key copy, socket $SEC_MUNGE_SOCKET).
# sec_built BIN...: FAIL (exit 1) unless each is built.
# sec_tiny DIR: DIR/data/a.bin (an llm.c shard of 4096 tokens) and
#   DIR/m.yaml (a one-layer model), readable by every user.
# sec_want64 CASE OUT TEXT RC: ok when RC is 64 and OUT is one line holding
#   TEXT, else the test's bad() with what came.
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
sec_tiny() {
	mkdir "$1/data" && /usr/bin/python3 - "$1/data/a.bin" <<'PY' || exit 1
import struct, sys
h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = 4096
open(sys.argv[1], 'wb').write(struct.pack('<256i', *h) + struct.pack('<4096H', *([65] * 4096)))
PY
	printf 'vocab_size: 256\nd_model: 64\nn_layers: 1\nn_heads: 2\nd_ff: 128\nmax_seq: 32\n' >"$1/m.yaml"
	chmod -R a+rX "$1/data" "$1/m.yaml"
}
sec_want64() {
	if [ "$4" = 64 ] && [ "$(wc -l <"$2")" = 1 ] && grep -qF -- "$3" "$2"; then echo "ok: $1: $(cat "$2")"
	else bad "$1: exit $4, want 64 and one line with '$3': $(head -c 600 "$2")"; fi
}
sec_built() {
	for b; do [ -x "$b" ] || { echo "FAIL: $b not built"; exit 1; }; done
}

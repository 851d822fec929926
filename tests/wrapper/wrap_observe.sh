#!/bin/sh
# tests/wrapper/wrap_observe.sh: a job seen while it runs, with real
# components. llm-train (tiny model, dp=2 over two nodes of the emulated
# cluster) under llm-train-wrap --metrics-every 1 --metrics-http; a crash
# of both ranks at step 10 (restart), then a 10 s stall at step 30 of the
# restarted attempt. A real Prometheus (Debian's prometheus) scrapes
# prometheus-node-exporter's textfile collector (the wrapper's textfile)
# and the wrapper's own /metrics, both on loopback ports: during the run
# its HTTP API returns the series with job, rank and node labels, and the
# step, loss and grad norm of a scrape equal that step's metrics.jsonl
# line; meanwhile 30 silent connections to the wrapper's port (another
# user of the node, each made again when the server closes it) leave
# every scrape up and under 1 s. Headless Chromium (Debian's chromium) opens RUN_DIR/dashboard.html
# from file:// during and after the run: the DOM after its script ran has
# every series with metrics.jsonl's point count, both per-rank heatmaps,
# the crash in the event timeline, checkpoints and goodput by cause; and
# again after `llm-train-wrap report RUN_DIR` rebuilt it. Every panel of
# the Grafana dashboard (etc/grafana/llm-train.json) has data from it.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
for b in prometheus prometheus-node-exporter chromium; do
	command -v $b >/dev/null 2>&1 || { echo "SKIP: $b not installed (scripts/install-deps)"; exit 77; }
done
real_trainer_setup
CHECK=$top_srcdir/tests/wrapper/observe_check.py
STEPS=40
R=$W/obs
mkdir -p "$R" "$W/tsdb"
ports=$(/usr/bin/python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
set -- $ports
PN=$1 PP=$2 PW=$3
cat >"$W/prom.yml" <<EOF2
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: node
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:$PN']}]
  - job_name: wrapper
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:$PW']}]
EOF2
prometheus-node-exporter --web.listen-address=127.0.0.1:$PN --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$R" >"$W/node.log" 2>&1 &
NPID=$!
prometheus --config.file="$W/prom.yml" --storage.tsdb.path="$W/tsdb" \
	--web.listen-address=127.0.0.1:$PP >"$W/prom.log" 2>&1 &
PPID_=$!
FLOOD=30
/usr/bin/python3 "$CHECK" flood $PW $FLOOD "$W/flood.status" &
FPID=$!
trap 'kill $NPID $PPID_ $FPID 2>/dev/null; wait $NPID $PPID_ $FPID 2>/dev/null' EXIT
URL=http://127.0.0.1:$PP

dom() {  # OUT: the rendered DOM of the dashboard
	timeout 120 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 \
		--user-data-dir="$W/chrome" --dump-dom "file://$R/dashboard.html" >"$1" 2>"$W/chrome.log"
}

cat >"$W/obs.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$R" --ckpt-tool "$LT" --tick 0.2 --hang-timeout-min 60 --hang-timeout-max 120 \\
	--backoff 0.2 --metrics-every 1 --metrics-http 127.0.0.1:$PW -- "$LT" --model "$RT_SRC/configs/tiny.yaml" \\
	--data "$W/corpus" --seq 64 --micro-batch 2 --lr 1e-3 --warmup 2 --steps $STEPS --ckpt-interval 4 \\
	--eval-interval 10 --quiet
JOB
chmod +x "$W/obs.sh"
id=$(cd "$W" && LLM_TRAIN_COMM_TIMEOUT=0 LLM_TRAIN_FAULT='crash@10,stall!@30' \
	sbatch --parsable -o obs.out -N2 --ntasks-per-node=1 obs.sh) || fail "sbatch failed"

# -- while it runs: Prometheus has the series (poll until a scrape has them)
seen=
i=0
while [ $i -lt 600 ]; do
	i=$((i + 1))
	st=$(cluster_job_state "$id")
	case $st in PENDING|RUNNING|CONFIGURING|COMPLETING) ;; *) break ;; esac
	out=$(/usr/bin/python3 "$CHECK" prom "$URL" "$R" "$id" 2); rc=$?
	[ $rc = 1 ] && { echo "$out"; fail "Prometheus' series"; }
	if [ $rc = 0 ] && [ "$out" -ge 11 ] && [ "$out" -lt $STEPS ]; then seen=$out; break; fi
	sleep 0.5
done
[ -n "$seen" ] || { cat "$W/obs.out"; echo "$out"; fail "Prometheus saw no step of the restarted attempt while the job ran"; }
echo "ok: Prometheus, while the job ran: step $seen, series and labels match metrics.jsonl"
i=0
until out=$(/usr/bin/python3 "$CHECK" scrapes "$URL" "$W/flood.status" $FLOOD); do
	[ $? = 1 ] && { echo "$out"; fail "scrapes of the wrapper during a flood of silent connections"; }
	i=$((i + 1)); [ $i -lt 60 ] || { echo "$out"; fail "no 10 s of good scrapes of the wrapper during the flood"; }
	sleep 0.5
done
echo "$out"
kill $FPID
i=0
until out=$(/usr/bin/python3 "$CHECK" grafana "$URL" "$top_srcdir/etc/grafana/llm-train.json" "$id"); do
	[ $? = 1 ] && { echo "$out"; fail "the Grafana dashboard's queries"; }
	i=$((i + 1)); [ $i -lt 60 ] || { echo "$out"; fail "the Grafana dashboard's queries have no data"; }
	sleep 0.5
done
echo "$out"
dom "$W/live.dom" || fail "chromium failed on the live dashboard: $(tail -3 "$W/chrome.log")"
/usr/bin/python3 "$CHECK" dom "$W/live.dom" "$R" live || fail "the live dashboard"
grep -q 'http-equiv="refresh"' "$W/live.dom" || fail "the live dashboard does not reload itself"

_st=$(cluster_sbatch_wait "$id" 300) || { cat "$W/obs.out"; fail "job $id ended $_st"; }
grep -q '"event":"failure"' "$R/ledger.jsonl" || fail "no failure in the ledger"
# -- after it: the final page, then the same rebuilt by `report`
dom "$W/final.dom" || fail "chromium failed on the final dashboard"
/usr/bin/python3 "$CHECK" dom "$W/final.dom" "$R" || fail "the final dashboard"
grep -q 'http-equiv="refresh"' "$W/final.dom" && fail "the final dashboard still reloads itself"
rm -f "$R/dashboard.html" "$R/loss.png"
"$WRAP" report "$R" >"$W/report.out" 2>&1 || { cat "$W/report.out"; fail "report failed"; }
grep -q "goodput [0-9.]*%" "$W/report.out" || fail "report: no summary"
[ -s "$R/loss.png" ] || fail "report: no loss.png"
dom "$W/report.dom" || fail "chromium failed on the rebuilt dashboard"
/usr/bin/python3 "$CHECK" dom "$W/report.dom" "$R" || fail "the rebuilt dashboard"
echo PASS

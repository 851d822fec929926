#!/usr/bin/python3
"""Checks for wrap_observe.sh (not the product).

prom URL RUNDIR JOB RANKS: queries a real Prometheus's HTTP API: the job's
  live series are there with their job/rank/node labels, and the step,
  loss and grad norm of one scrape equal a line of RUNDIR/metrics.jsonl.
  Prints the step it saw. Exit 0 / 1 (with a FAIL line) / 2 (no data yet).
grafana URL JSON JOB: every panel of the Grafana dashboard (etc/grafana),
  its $job set to JOB, returns series from that Prometheus.
flood PORT N STATUS: holds N silent connections to PORT (another user of
  the node), each made again when the server closes it, until killed;
  STATUS gets "held H renewed R" every round.
scrapes URL STATUS N: the flood above held N connections (all of them,
  and the server closed some: R > 0) while every scrape of the wrapper's
  /metrics in the last 10 s succeeded (up 1) within 1 s (less than one
  silent connection's 2 s for its request).
dom DOMFILE RUNDIR [live]: the DOM that headless Chromium printed after the
  page's scripts ran: every series plotted with as many points as
  metrics.jsonl / eval.jsonl have finite values, the heatmaps filled,
  a failure in the event timeline, goodput by cause.
"""
import html.parser, json, math, os, select, socket, sys, time, urllib.error, urllib.parse, urllib.request

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def later(msg):
    print("not yet: " + msg)
    sys.exit(2)

def query(url, q):
    u = url + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        with urllib.request.urlopen(u, timeout=10) as r:
            d = json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 503:   # Prometheus is still starting (its TSDB not ready)
            later("Prometheus answers 503 (starting)")
        raise
    except urllib.error.URLError as e:  # not listening yet
        later("Prometheus not reachable yet: %s" % e.reason)
    if d.get("status") != "success":
        fail("query %s: %r" % (q, d))
    return d["data"]["result"]

def metrics(rundir, name="metrics.jsonl"):
    out = {}
    try:
        for line in open(rundir + "/" + name):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            out[o["step"]] = o
    except FileNotFoundError:
        pass
    return out

def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-7 * max(1.0, abs(b))

def prom(url, rundir, job, ranks):
    res = query(url, '{__name__=~"llm_train_step|llm_train_loss|llm_train_grad_norm",job="%s"}' % job)
    # one scrape target (the node_exporter's textfile) gives a consistent triple
    by_inst = {}
    for r in res:
        by_inst.setdefault(r["metric"]["instance"], {})[r["metric"]["__name__"]] = float(r["value"][1])
    if not by_inst:
        later("no llm_train_step series")
    m = metrics(rundir)
    for inst, v in sorted(by_inst.items()):
        if len(v) != 3:
            later("%s: %r" % (inst, sorted(v)))
        step = int(v["llm_train_step"])
        rec = m.get(step)
        if rec is None:
            fail("%s: step %d is not in metrics.jsonl" % (inst, step))
        if not close(v["llm_train_loss"], rec["loss"]) or not close(v["llm_train_grad_norm"], rec["grad_norm"]):
            fail("%s: step %d loss %r grad norm %r, metrics.jsonl %r %r" % (inst, step, v["llm_train_loss"],
                 v["llm_train_grad_norm"], rec["loss"], rec["grad_norm"]))
    for name in ("llm_train_rank_step_seconds", "llm_train_rank_compute_seconds", "llm_train_rank_step"):
        res = query(url, '%s{job="%s"}' % (name, job))
        got = sorted({(r["metric"].get("rank"), bool(r["metric"].get("node"))) for r in res})
        want = [(str(k), True) for k in range(ranks)]
        if sorted(set(got)) != sorted(want):
            later("%s: rank/node labels %r, want %r" % (name, got, want))
    res = query(url, 'llm_train_rank_comm_wait_seconds{job="%s"}' % job)
    groups = {(r["metric"]["rank"], r["metric"]["group"]) for r in res}
    for k in range(ranks):
        for g in ("tp", "pp", "dp", "all"):
            if (str(k), g) not in groups:
                later("no comm wait series for rank %d group %s: %r" % (k, g, sorted(groups)))
    for name in ("llm_train_tokens_per_second", "llm_train_mfu", "llm_train_learning_rate",
                 "llm_train_goodput_ratio", "llm_train_restarts_total", "llm_train_lost_seconds"):
        if not query(url, '%s{job="%s"}' % (name, job)):
            later("no %s series" % name)
    if not query(url, 'up{job="wrapper"} == 1'):
        later("the wrapper's own /metrics endpoint was not scraped")
    print(min(int(v["llm_train_step"]) for v in by_inst.values()))

def grafana(url, path, job):
    d = json.load(open(path))
    for p in d["panels"]:
        got = 0
        for t in p["targets"]:
            got += len(query(url, t["expr"].replace("$job", job)))
        if not got:
            later("Grafana panel %r: no series from %r" % (p["title"], [t["expr"] for t in p["targets"]]))
    print("ok: %d Grafana panels have data" % len(d["panels"]))

class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.series, self.heat, self.events, self.causes, self.rendered = {}, {}, [], [], False
        self.in_ev = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body" and a.get("data-rendered") == "1":
            self.rendered = True
        if tag == "polyline" and "data-series" in a:
            pts = a.get("points", "").split()
            if int(a["data-points"]) != len(pts):
                fail("series %s: data-points %s but %d points drawn" % (a["data-series"], a["data-points"], len(pts)))
            self.series[a["data-series"]] = len(pts)
        if tag == "div" and "data-heatmap" in a:
            self.heat[a["data-heatmap"]] = (int(a["data-rows"]), int(a["data-cols"]))
        if tag == "li" and "data-event" in a:
            self.in_ev = [a["data-event"], ""]
            self.events.append(self.in_ev)
        if tag == "tr" and "data-cause" in a:
            self.causes.append(a["data-cause"])
    def handle_data(self, data):
        if self.in_ev is not None:
            self.in_ev[1] += data
    def handle_endtag(self, tag):
        if tag == "li":
            self.in_ev = None

def finite(rec, k):
    v = rec.get(k)
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)

def dom(path, rundir, live):
    d = Dom()
    d.feed(open(path, errors="replace").read())
    if not d.rendered:
        fail("the page's script did not run (no data-rendered)")
    m, ev = metrics(rundir), metrics(rundir, "eval.jsonl")
    for k in ("loss", "grad_norm", "lr", "tokens_per_s", "mfu", "step_time_s", "comm_time_s", "ckpt_time_s"):
        want = sum(1 for r in m.values() if finite(r, k))
        # live: metrics.jsonl may have grown after the page was written
        if k not in d.series or (d.series[k] != want if not live else not 0 < d.series[k] <= want):
            fail("series %s: %r points drawn, metrics.jsonl has %d" % (k, d.series.get(k), want))
    want = sum(1 for r in ev.values() if finite(r, "val_loss"))
    if d.series.get("val_loss") != want and not (live and 0 < d.series.get("val_loss", 0) <= want):
        fail("val_loss: %r points drawn, eval.jsonl has %d" % (d.series.get("val_loss"), want))
    for k in ("step_s", "comm_s"):
        rows, cols = d.heat.get(k, (0, 0))
        if rows != 2 or cols < 1:
            fail("heatmap %s: %d rows, %d columns" % (k, rows, cols))
    fails = [t for e, t in d.events if e == "failure"]
    if not fails:
        fail("no failure in the timeline: %r" % d.events)
    if not any(e == "checkpoint" for e, _ in d.events):
        fail("no checkpoint in the timeline")
    if "useful" not in d.causes or len(d.causes) < 2:
        fail("goodput by cause: %r" % d.causes)
    print("ok: %s; timeline: %s" % (", ".join("%s %d" % kv for kv in sorted(d.series.items())), fails[0].strip()))

def flood(port, n, status):
    def dial():
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:    # the wrapper not listening yet
            return None
    socks, renewed = [None] * n, 0
    while True:
        socks = [s or dial() for s in socks]
        live = [s for s in socks if s]
        with open(status + ".tmp", "w") as f:
            f.write("held %d renewed %d\n" % (len(live), renewed))
        os.replace(status + ".tmp", status)
        if not live:
            time.sleep(0.2)
            continue
        for s in select.select(live, [], [], 0.2)[0]:    # answered or closed by the server
            socks[socks.index(s)] = None
            s.close()
            renewed += 1

def scrapes(url, status, n):
    try:
        held, renewed = (int(x) for x in open(status).read().split()[1::2])
    except (OSError, ValueError):
        later("no flood status yet")
    up = query(url, 'min_over_time(up{job="wrapper"}[10s])')
    dur = query(url, 'max_over_time(scrape_duration_seconds{job="wrapper"}[10s])')
    if not up or not dur:
        later("no scrape of the wrapper yet")
    u, d = float(up[0]["value"][1]), float(dur[0]["value"][1])
    if held < n or renewed == 0 or u < 1:
        later("flood held %d of %d, renewed %d; up %g" % (held, n, renewed, u))
    if d >= 1.0:
        fail("a scrape of the wrapper took %.3f s while %d silent connections were open" % (d, held))
    print("ok: Prometheus scraped the wrapper in at most %.4f s (up 1) while %d silent connections were held "
          "(%d closed by the server and made again)" % (d, held, renewed))

if __name__ == "__main__":
    if sys.argv[1] == "flood":
        flood(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "scrapes":
        scrapes(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "grafana":
        grafana(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "prom":
        prom(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        dom(sys.argv[2], sys.argv[3], len(sys.argv) > 4)

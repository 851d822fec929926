/* dashboard.js: draws RUN_DIR/dashboard.html from the JSON in its
 * <script id="data"> (written by dashboard.c): line charts (SVG), the
 * per-rank heatmaps, the event timeline and goodput by cause. No network,
 * no library: the page works from file://. Every plotted series is a
 * <polyline class="series" data-series=NAME data-points=N>. */
(function () {
"use strict";
var D = JSON.parse(document.getElementById("data").textContent);
var SVG = "http://www.w3.org/2000/svg";
var app = document.getElementById("app");

function h(tag, attrs, parent, text) {
	var e = document.createElement(tag);
	for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
	if (text !== undefined) e.textContent = text;
	if (parent) parent.appendChild(e);
	return e;
}
function s(tag, attrs, parent, text) {
	var e = document.createElementNS(SVG, tag);
	for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
	if (text !== undefined) e.textContent = text;
	if (parent) parent.appendChild(e);
	return e;
}
function fmt(v) {
	if (v === null || v === undefined || !isFinite(v)) return "-";
	var a = Math.abs(v);
	return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(2) : (+v.toPrecision(4)).toString();
}

h("style", {}, document.head, "body{font:13px sans-serif;margin:12px;background:#fafafa;color:#222}" +
	"h1{font-size:18px}h2{font-size:14px;margin:4px 0}.card{display:inline-block;vertical-align:top;" +
	"background:#fff;border:1px solid #ddd;margin:4px;padding:6px}svg text{font-size:10px;fill:#444}" +
	".ev{margin:1px 0}.ev-failure,.ev-hang,.ev-stuck{color:#b00}.ev-action{color:#06c}" +
	"table{border-collapse:collapse}td{padding:1px 6px}");
var title = "llm-train job " + (D.job || "(no Slurm job)");
h("h1", {}, app, title + (D.live ? " (running: reloads every 10 s)" : " (finished)"));
var G = D.goodput;
if (G) h("p", { id: "summary" }, app, "goodput " + (100 * G.ratio).toFixed(1) + "% (useful " +
	G.useful_s.toFixed(1) + " s of " + G.allocated_s.toFixed(1) + " s, " + G.useful_steps + " steps), " +
	G.restarts + " restart(s)");

/* A line chart of one or more series [{name, x:[...], y:[...]}]. */
function chart(label, list, marks) {
	var W = 460, H = 200, L = 52, R = 8, T = 8, B = 24;
	var card = h("div", { "class": "card chart", "data-chart": label }, app);
	h("h2", {}, card, label);
	var legend = h("div", {}, card);
	var g = s("svg", { width: W, height: H }, card);
	var xs = [], ys = [];
	list.forEach(function (se) {
		se.x.forEach(function (x, i) {
			var y = se.y[i];
			if (y !== null && isFinite(y)) { xs.push(x); ys.push(y); }
		});
	});
	var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
	var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
	if (!xs.length) { x0 = 0; x1 = 1; y0 = 0; y1 = 1; }
	if (x1 === x0) x1 = x0 + 1;
	if (y1 === y0) { y1 = y0 + (Math.abs(y0) || 1) * 0.05; y0 = y0 - (y1 - y0); }
	function px(x) { return L + (x - x0) / (x1 - x0) * (W - L - R); }
	function py(y) { return T + (1 - (y - y0) / (y1 - y0)) * (H - T - B); }
	s("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#ccc" }, g);
	[y0, (y0 + y1) / 2, y1].forEach(function (v) {
		s("text", { x: L - 4, y: py(v) + 3, "text-anchor": "end" }, g, fmt(v));
	});
	[x0, x1].forEach(function (v) { s("text", { x: px(v), y: H - 8, "text-anchor": "middle" }, g, fmt(v)); });
	(marks || []).forEach(function (m) {
		if (m >= x0 && m <= x1)
			s("line", { x1: px(m), x2: px(m), y1: T, y2: H - B, stroke: "#9c9", "stroke-dasharray": "2,2",
				"class": "ckpt-mark" }, g);
	});
	var colors = ["#1f77b4", "#d62728", "#2ca02c"];
	list.forEach(function (se, k) {
		var pts = [];
		se.x.forEach(function (x, i) {
			var y = se.y[i];
			if (y !== null && isFinite(y)) pts.push(px(x).toFixed(1) + "," + py(y).toFixed(1));
		});
		s("polyline", { "class": "series", "data-series": se.name, "data-points": pts.length,
			points: pts.join(" "), fill: "none", stroke: colors[k % 3], "stroke-width": 1.5 }, g);
		if (pts.length)   /* no legend for a series without points (val_loss of a run without eval) */
			h("span", { "class": "legend", style: "color:" + colors[k % 3] + ";margin-right:8px" }, legend,
				se.name + " (" + pts.length + ")");
	});
}

var tr = D.train || { step: [] }, ev = D.eval || { step: [] };
function ser(src, name) { return { name: name, x: src.step || [], y: src[name] || [] }; }
chart("loss", [ser(tr, "loss"), ser(ev, "val_loss")], D.ckpt_steps);
chart("gradient norm", [ser(tr, "grad_norm")]);
chart("learning rate", [ser(tr, "lr")]);
chart("tokens/s", [ser(tr, "tokens_per_s")]);
chart("MFU", [ser(tr, "mfu")]);
chart("step, communication and checkpoint time (s, rank 0)",
	[ser(tr, "step_time_s"), ser(tr, "comm_time_s"), ser(tr, "ckpt_time_s")]);

/* Per-rank heatmap: rows ranks, columns samples in time. */
function heat(label, key) {
	var Rk = D.ranks || {}, cols = Rk[key] || [], rows = Rk.rows || [];
	var card = h("div", { "class": "card heatmap", "data-heatmap": key, "data-rows": rows.length,
		"data-cols": cols.length }, app);
	h("h2", {}, card, label);
	var cw = Math.max(2, Math.min(12, Math.floor(460 / Math.max(1, cols.length))));
	var rh = Math.max(2, Math.min(14, Math.floor(240 / Math.max(1, rows.length))));
	var g = s("svg", { width: 110 + cw * cols.length, height: rh * rows.length + 4 }, card);
	var mx = 0;
	cols.forEach(function (c) { c.forEach(function (v) { if (v !== null && v > mx) mx = v; }); });
	rows.forEach(function (r, i) {
		if (rows.length <= 32) s("text", { x: 104, y: i * rh + rh - 2, "text-anchor": "end" }, g, r);
	});
	cols.forEach(function (c, j) {
		c.forEach(function (v, i) {
			var f = v === null || mx <= 0 ? -1 : v / mx;
			var fill = f < 0 ? "#eee" : "rgb(" + Math.round(255 * f) + "," + Math.round(200 * (1 - f)) + ",60)";
			var r = s("rect", { x: 110 + j * cw, y: i * rh, width: cw, height: rh, fill: fill, "class": "cell" }, g);
			s("title", {}, r, rows[i] + ": " + fmt(v) + " s");
		});
	});
	h("div", {}, card, "colour: 0 .. " + fmt(mx) + " s (max over the ranks of a row)");
}
heat("step time per rank (s)", "step_s");
heat("communication wait per rank (s)", "comm_s");

/* The event timeline: a strip in time and the list. */
var evs = D.events || [];
var card = h("div", { "class": "card", id: "timeline" }, app);
h("h2", {}, card, "events");
var t0 = evs.length ? evs[0].t : 0, t1 = evs.length ? evs[evs.length - 1].t : 1;
if (t1 <= t0) t1 = t0 + 1;
var strip = s("svg", { width: 700, height: 30 }, card);
s("line", { x1: 10, x2: 690, y1: 15, y2: 15, stroke: "#999" }, strip);
var ul = h("ul", {}, card);
evs.forEach(function (e) {
	var bad = e.event === "failure" || e.event === "hang" || e.event === "stuck";
	var c = s("circle", { cx: 10 + (e.t - t0) / (t1 - t0) * 680, cy: 15, r: bad ? 5 : 3,
		fill: bad ? "#b00" : "#06c", "class": "ev-dot" }, strip);
	s("title", {}, c, e.event + " " + e.text);
	h("li", { "class": "ev ev-" + e.event, "data-event": e.event }, ul,
		"+" + (e.t - t0).toFixed(1) + " s " + e.event + (e.text ? ": " + e.text : ""));
});
(D.ckpt_steps || []).forEach(function (st) {
	h("li", { "class": "ev ev-checkpoint", "data-event": "checkpoint" }, ul, "checkpoint at step " + st);
});

/* Goodput by cause. */
if (G) {
	var gc = h("div", { "class": "card", id: "goodput" }, app);
	h("h2", {}, gc, "where the allocated time went");
	var parts = [["useful", G.useful_s]];
	for (var k in G.lost_s) if (G.lost_s[k] > 0) parts.push([k, G.lost_s[k]]);
	var bar = s("svg", { width: 460, height: 20 }, gc), x = 0;
	var pal = ["#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
	var tb = h("table", {}, gc);
	parts.forEach(function (p, i) {
		var w = G.allocated_s > 0 ? p[1] / G.allocated_s * 460 : 0;
		s("rect", { x: x, y: 0, width: w, height: 20, fill: pal[i % pal.length] }, bar);
		x += w;
		var row = h("tr", { "class": "cause", "data-cause": p[0] }, tb);
		h("td", { style: "color:" + pal[i % pal.length] }, row, p[0]);
		h("td", {}, row, p[1].toFixed(2) + " s");
	});
}
document.body.setAttribute("data-rendered", "1");
})();

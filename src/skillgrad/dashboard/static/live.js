// Polls the run's JSON endpoint and redraws the curve (inline SVG), the step table and the
// current / best skill.
(function () {
  "use strict";
  var cfg = document.getElementById("live").dataset;
  var NS = "http://www.w3.org/2000/svg";  // SVG namespace identifier, not a network resource
  var W = 900, H = 280, PAD = 36;

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }

  function drawCurve(points) {
    var svg = document.getElementById("curve");
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var pts = points.filter(function (p) { return typeof p.val_score === "number"; });
    svg.setAttribute("data-points", String(pts.length));
    el("line", {x1: PAD, y1: H - PAD, x2: W - 10, y2: H - PAD, "class": "axis"}, svg);
    el("line", {x1: PAD, y1: 10, x2: PAD, y2: H - PAD, "class": "axis"}, svg);
    if (!pts.length) { return; }
    var steps = pts.map(function (p) { return p.step; });
    var minStep = Math.min.apply(null, steps), maxStep = Math.max.apply(null, steps);
    var span = Math.max(1, maxStep - minStep);
    var x = function (s) { return PAD + 10 + (W - PAD - 30) * (s - minStep) / span; };
    var y = function (v) { return H - PAD - (H - PAD - 20) * Math.max(0, Math.min(1, v)); };
    [0, 0.5, 1].forEach(function (v) {
      el("text", {x: 4, y: y(v) + 4}, svg).textContent = String(v);
    });
    el("text", {x: PAD, y: H - 8}, svg).textContent = "step " + minStep;
    el("text", {x: W - 50, y: H - 8}, svg).textContent = "step " + maxStep;
    var line = function (key) {
      return pts.filter(function (p) { return typeof p[key] === "number"; })
        .map(function (p) { return x(p.step) + "," + y(p[key]); }).join(" ");
    };
    el("polyline", {points: line("best_score"), "class": "best"}, svg);
    el("polyline", {points: line("val_score"), "class": "val"}, svg);
    pts.forEach(function (p) {
      var c = el("circle", {cx: x(p.step), cy: y(p.val_score), r: 4,
        "class": "pt " + (p.accepted ? "accepted" : "rejected")}, svg);
      el("title", {}, c).textContent = "step " + p.step + ": " + p.val_score +
        (p.accepted ? " (accepted)" : " (rejected)");
    });
  }

  function fmt(v) {
    if (typeof v !== "number") { return v === null || v === undefined ? "–" : String(v); }
    return String(Math.round(v * 1000) / 1000);
  }

  function drawTable(points) {
    var body = document.getElementById("steps-body");
    if (!body) { return; }
    while (body.firstChild) { body.removeChild(body.firstChild); }
    points.forEach(function (p) {
      var tr = document.createElement("tr");
      tr.className = p.accepted ? "accepted" : "rejected";
      [p.step, p.epoch, p.kind, fmt(p.lr), fmt(p.train_score), fmt(p.val_score),
       fmt(p.best_score), p.verdict || (p.accepted ? "accepted" : "rejected"), p.n_applied,
       p.skill_tokens, fmt(p.cum_cost)].forEach(function (v) {
        var td = document.createElement("td");
        td.textContent = v === null || v === undefined ? "–" : String(v);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }

  function setText(id, text) {
    var node = document.getElementById(id);
    if (node && typeof text === "string") { node.textContent = text; }
  }

  function update(data) {
    drawCurve(data.points);
    drawTable(data.points);
    setText("current-skill", data.current_skill);
    setText("best-skill", data.best_skill);
    document.getElementById("status").textContent = data.status;
    document.getElementById("nsteps").textContent = String(data.steps);
    document.getElementById("best").textContent = fmt(data.best_score);
    var ev = data.last_event || {};
    document.getElementById("last-event").textContent =
      (ev.event || "") + (ev.step ? " step " + ev.step : "") + (ev.stage ? " " + ev.stage : "");
  }

  function poll() {
    fetch(cfg.api, {cache: "no-store"})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) { if (d) { update(d); } })
      .catch(function () { /* server gone: keep the last picture */ })
      .then(function () { setTimeout(poll, Number(cfg.poll)); });
  }
  poll();
})();

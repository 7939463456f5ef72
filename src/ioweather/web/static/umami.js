// The job page's climate-vs-weather panel (templates/_umami_panel.html) from data.umami, laid out as
// seed 003's figure: the metric over the motif's history on the left, its box on the right, the job's
// value a dashed line in its quartile's colour on both. Loaded before jobs.js, which calls draw().
(function () {
  "use strict";
  // plain numbers on the axes: never 1e-05 or 2.5e+06
  var AXIS = {exponentformat: "none", separatethousands: true, automargin: true};

  function jobLine(m) {
    return m.value === null ? [] : [{type: "line", xref: "paper", x0: 0, x1: 1, y0: m.value, y1: m.value,
                                     line: {dash: "dash", width: 2, color: m.hex}}];
  }

  function draw(u, lib) {
    if (!u || !u.available) { return []; }
    var jobs = [];
    u.metrics.forEach(function (m, i) {
      var series = document.getElementById("umami-s" + i);
      var box = document.getElementById("umami-b" + i);
      if (!series || !box) { return; }
      // one y range for both, so that the job's line sits at the same height beside the series and the box
      var ys = m.history.value.concat([m.value, m.box.p5, m.box.p95]).filter(function (v) { return v !== null; });
      var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys), pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.1 || 1;
      var layout = {height: 170, margin: {l: 64, r: 8, t: 6, b: 30}, font: lib.FONT, showlegend: false,
                    shapes: jobLine(m), yaxis: Object.assign({range: [lo - pad, hi + pad]}, AXIS)};
      jobs.push(Plotly.newPlot(series, [{type: "scatter", mode: "lines+markers", x: m.history.time,
                                         y: m.history.value, marker: {size: 4, color: "#555"},
                                         line: {width: 1, color: "#999"},
                                         hovertemplate: "%{x}<br>%{y:,.3f}<extra></extra>"}],
                               Object.assign({}, layout, {xaxis: {type: "date"}}), lib.CONFIG));
      var b = m.box;
      jobs.push(Plotly.newPlot(box, [{type: "box", name: "history", x: ["history"], q1: [b.q1], median: [b.median],
                                      q3: [b.q3], lowerfence: [b.p5], upperfence: [b.p95], mean: [b.mean],
                                      fillcolor: "rgba(120,120,120,0.25)", line: {color: "#555"}, hoverinfo: "y"}],
                               Object.assign({}, layout, {xaxis: {showticklabels: false}}), lib.CONFIG));
    });
    return jobs;
  }

  window.ioweatherUmami = {draw: draw};
})();

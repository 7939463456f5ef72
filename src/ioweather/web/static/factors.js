// The Factors page: the density of ln(duration) with maxima, splits and cutoff, and the samples coloured by class.
(function () {
  "use strict";
  var pages = window.ioweatherPages = window.ioweatherPages || {};
  var PALETTE = ["#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];
  var OUTLIER = "#d62728";
  var SYMBOLS = ["circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon", "hexagon", "star"];

  function colour(i, n) { return i === n - 1 ? OUTLIER : PALETTE[i % PALETTE.length]; }

  function vline(x, colour, dash) {
    return {type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1, line: {color: colour, dash: dash, width: 1.5}};
  }

  function density(data, lib) {
    var a = data.analysis;
    var x = a.grid_x.map(Math.exp);
    var shapes = a.maxima_s.map(function (m) { return vline(m, "#1f77b4", "dot"); })
      .concat(a.splits_s.map(function (s) { return vline(s, "#000", "dash"); }));
    if (a.cutoff_s !== null) { shapes.push(vline(a.cutoff_s, OUTLIER, "solid")); }
    return Plotly.newPlot(document.getElementById("factors-density"), [
      {type: "scatter", mode: "lines", name: "density", x: x, y: a.grid_y, line: {color: "#000", width: 1.5},
       fill: "tozeroy", fillcolor: "rgba(0,0,0,0.06)", hovertemplate: "%{x:.3s}s: density %{y:.3f}<extra></extra>"}
    ], {height: 300, margin: {l: 56, r: 12, t: 8, b: 44}, font: lib.FONT, showlegend: false, shapes: shapes,
        xaxis: lib.secondsAxis("duration (log scale)"), yaxis: {title: {text: "density of ln(duration)"}, rangemode: "tozero"}},
    lib.CONFIG);
  }

  function timeline(data, lib) {
    var t = data.timeline, classes = data.analysis.classes, n = classes.length;
    var traces = classes.map(function (c, i) {
      var idx = [];
      t["class"].forEach(function (k, j) { if (k === c.label) { idx.push(j); } });
      var name = (i === n - 1 ? "outliers" : "class " + c.label) + " (" + (100 * c.fraction).toFixed(1) + "%)";
      return {type: "scatter", mode: "markers", name: name, x: idx.map(function (j) { return lib.ms(t.time[j]); }),
              y: idx.map(function (j) { return t.duration_s[j]; }),
              marker: {size: i === n - 1 ? 6 : 4, color: colour(i, n), symbol: i === n - 1 ? "x" : SYMBOLS[i % SYMBOLS.length]},
              hovertemplate: name + "<br>%{y:.3s}s at %{x}<extra></extra>"};
    }).filter(function (tr) { return tr.x.length; });
    return Plotly.newPlot(document.getElementById("factors-timeline"), traces, {
      height: 340, margin: {l: 64, r: 12, t: 8, b: 44}, font: lib.FONT, hovermode: "closest",
      legend: {orientation: "h", y: 1.02, yanchor: "bottom"},
      xaxis: {type: "date", title: {text: "time (UTC)"}}, yaxis: lib.secondsAxis("duration")}, lib.CONFIG);
  }

  pages.factors = function (data, lib) {
    return [density(data, lib), timeline(data, lib)];
  };
})();

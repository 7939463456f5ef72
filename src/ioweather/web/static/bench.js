// The Benchmarks page: duration histogram with the optimum, fraction of peak over time, a run over the servers' rates.
(function () {
  "use strict";
  var pages = window.ioweatherPages = window.ioweatherPages || {};

  function base(lib, xtitle, ytitle) {
    return {height: 300, margin: {l: 60, r: 12, t: 8, b: 44}, font: lib.FONT, hovermode: "closest", showlegend: false,
            xaxis: {title: {text: xtitle}}, yaxis: {title: {text: ytitle}}};
  }

  function histogram(data, lib) {
    var el = document.getElementById("bench-histogram"), h = data.histogram;
    if (!el || !h.counts.length) { return null; }
    var mids = h.counts.map(function (_, i) { return (h.edges_s[i] + h.edges_s[i + 1]) / 2; });
    var runs = h.counts.reduce(function (a, b) { return a + b; }, 0), top = Math.max.apply(null, h.counts);
    var lo = h.edges_s[0], hi = h.edges_s[h.edges_s.length - 1];
    var layout = base(lib, "duration", "runs");
    layout.xaxis.tickformat = "~s";  // SI prefixes: 4ms, 2.5s, not 0.004
    layout.xaxis.ticksuffix = "s";
    layout.yaxis = lib.countAxis("runs", top);  // whole runs: one run was drawn as 0.2, 0.4, ... runs
    layout.shapes = [{type: "line", x0: h.optimum_s, x1: h.optimum_s, yref: "paper", y0: 0, y1: 1,
                      line: {dash: "dash", color: "#2ca02c", width: 2}}];
    if (hi - lo <= Math.abs(lo) * 1e-5 + 1e-9) {
      // Every run took the same time (stats.bench.histogram's one bin, a millionth wide): a point with
      // its value written beside it, on an axis from 0 to twice that value.
      layout.xaxis.range = [0, 2 * lo];
      return Plotly.newPlot(el, [{type: "scatter", mode: "markers+text", x: [lo], y: [runs], marker: {size: 10, color: "#1f77b4"},
                                  text: [lib.secs(lo) + (runs === 1 ? " (one run)" : " (" + runs + " runs)")],
                                  textposition: "top center", hovertemplate: "%{text}<extra></extra>"}], layout, lib.CONFIG);
    }
    return Plotly.newPlot(el, [{type: "bar", x: mids, y: h.counts, marker: {color: "#1f77b4"},
                                hovertemplate: "%{x:.3~s}s: %{y} runs<extra></extra>"}], layout, lib.CONFIG);
  }

  function fraction(data, lib) {
    var el = document.getElementById("bench-fraction"), s = data.series;
    if (!el || !s.time.length) { return null; }
    var layout = base(lib, "run start (UTC)", "fraction of peak");
    layout.yaxis.range = [0, 1.05];
    layout.yaxis.tickformat = ".0%";
    var span = lib.timeRange(lib.times(s.time));
    if (span) { layout.xaxis.range = span; }
    var p = Plotly.newPlot(el, [{type: "scatter", mode: "markers", x: s.time, y: s.fraction_of_peak,
                                 customdata: s.run_id.map(lib.text), marker: {size: 5},
                                 hovertemplate: "%{customdata}<br>%{y:.1%}<extra></extra>"}], layout, lib.CONFIG);
    el.on && el.on("plotly_click", function (ev) {
      var u = new URL(window.location.href);
      u.searchParams.set("run", s.run_id[ev.points[0].pointIndex]);
      window.location.href = u.toString();
    });
    return p;
  }

  function windowPlot(data, lib) {
    var el = document.getElementById("bench-window"), run = data.run;
    if (!el || !run || !run.rates) { return null; }
    var r = run.rates, layout = base(lib, "time (UTC)", "bytes/s");
    var top = lib.largest(r.read_bytes_bps, r.write_bytes_bps, run.results.map(function (x) { return x.bw_bps; }));
    layout.yaxis = lib.valueAxis("bytes/s", top, {tickformat: "~s"});
    if (!(top > 0)) { layout.annotations = [lib.emptyNote("no server traffic recorded during the run")]; }
    layout.shapes = [run.start, run.end].map(function (t) {
      return {type: "line", x0: t, x1: t, yref: "paper", y0: 0, y1: 1, line: {color: "#333", dash: "dot"}};
    });
    var traces = [{type: "scatter", mode: "lines", name: "read", x: r.time, y: r.read_bytes_bps, line: {color: "#d62728"}},
                  {type: "scatter", mode: "lines", name: "write", x: r.time, y: r.write_bytes_bps, line: {color: "#1f77b4"}}];
    run.results.forEach(function (res) {
      if (res.bw_bps === null) { return; }
      traces.push({type: "scatter", mode: "lines", name: lib.text(res.direction) + " (reported)", x: [run.start, run.end],
                   y: [res.bw_bps, res.bw_bps], line: {color: "#000", width: 3}});
    });
    return Plotly.newPlot(el, traces, layout, lib.CONFIG);
  }

  pages.bench = function (data, lib) {
    return [histogram(data, lib), fraction(data, lib), windowPlot(data, lib)].filter(Boolean);
  };
})();

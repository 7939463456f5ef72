// The Workload page: the aggregate signal with its events, daily rates, burstiness CDF, power spectrum, ACF.
(function () {
  "use strict";
  var pages = window.ioweatherPages = window.ioweatherPages || {};
  var READ = "#d62728", WRITE = "#1f77b4";  // seed 004: red for reads, blue for writes
  var MAX_SHAPES = 500;
  var NUM = "%{y:.3~r} ";  // the numbers are already in the axis' binary unit: no SI prefix on top

  function margins(lib, extra) {
    return Object.assign({margin: {l: 64, r: 12, t: 8, b: 44}, font: lib.FONT, hovermode: "closest",
                          legend: {orientation: "h", y: 1.02, yanchor: "bottom"}}, extra);
  }

  function signal(data, lib) {
    var s = data.series, r = data.result;
    var x = lib.times(s.time);
    var peakBps = r.events.map(function (e) { return e.peak_bps; });
    var u = lib.byteUnit(s.total_bps, s.smoothed_bps, peakBps), rate = u.name + "/s";
    var shapes = r.events.slice(0, MAX_SHAPES).map(function (e) {
      return {type: "rect", xref: "x", yref: "paper", x0: lib.ms(e.start), x1: lib.ms(e.end), y0: 0, y1: 1,
              fillcolor: "rgba(44,160,44,0.18)", line: {width: 0}, layer: "below"};
    });
    var peaks = {type: "scatter", mode: "markers", name: "event peak", x: r.events.map(function (e) { return lib.ms(e.peak_time); }),
                 y: u.scale(peakBps), marker: {symbol: "triangle-down", size: 9, color: "#2ca02c"},
                 hovertemplate: "peak " + NUM + rate + "<br>%{x}<extra></extra>"};
    return Plotly.newPlot(document.getElementById("workload-signal"), [
      {type: "scatter", mode: "lines", name: "aggregate (read + write)", x: x, y: u.scale(s.total_bps),
       line: {color: "#999", width: 1}, connectgaps: false, hovertemplate: NUM + rate + "<extra></extra>"},
      {type: "scatter", mode: "lines", name: "smoothed (" + (r.smooth_s / 60) + " min)", x: x, y: u.scale(s.smoothed_bps),
       line: {color: "#000", width: 1.5}, hovertemplate: "smoothed " + NUM + rate + "<extra></extra>"},
      peaks
    ], margins(lib, {height: 340, shapes: shapes, xaxis: {type: "date", title: {text: "time (UTC)"}},
                     yaxis: {title: {text: rate}, rangemode: "tozero"}}), lib.CONFIG);
  }

  function daily(data, lib) {
    var d = data.daily_rates, u = lib.byteUnit(d.read_bps, d.write_bps), rate = u.name + "/s";
    return Plotly.newPlot(document.getElementById("workload-daily"), [
      {type: "scatter", mode: "lines+markers", name: "read", x: d.date, y: u.scale(d.read_bps), line: {color: READ},
       marker: {symbol: "circle", size: 6}, hovertemplate: "read " + NUM + rate + "<extra>%{x}</extra>"},
      {type: "scatter", mode: "lines+markers", name: "write", x: d.date, y: u.scale(d.write_bps), line: {color: WRITE},
       marker: {symbol: "square", size: 6}, hovertemplate: "write " + NUM + rate + "<extra>%{x}</extra>"}
    ], margins(lib, {height: 300, xaxis: {type: "date", title: {text: "day (UTC)"}, tickformat: "%Y-%m-%d",
                             dtick: d.date.length > 14 ? undefined : 86400000},
                     yaxis: {title: {text: "mean rate (" + rate + ")"}, rangemode: "tozero"}}), lib.CONFIG);
  }

  function cdf(data, lib) {
    var r = data.result, b = r.burstiness;
    var shapes = [], notes = [], u = lib.byteUnit(b.cdf_bps, [r.peak_total_bps]), rate = u.name + "/s";
    if (r.peak_total_bps) {
      var x33 = 0.33 * r.peak_total_bps / u.div;
      shapes.push({type: "line", xref: "x", yref: "paper", x0: x33, x1: x33, y0: 0, y1: 1, line: {dash: "dash", color: "#777", width: 1}});
      notes.push({xref: "x", yref: "paper", x: x33, y: 0.02, xanchor: "left", showarrow: false, font: {size: 10, color: "#555"},
                  text: "33 % of peak"});
    }
    return Plotly.newPlot(document.getElementById("workload-cdf"), [
      {type: "scatter", mode: "lines", name: "CDF", x: u.scale(b.cdf_bps), y: b.cdf_frac, line: {shape: "hv", color: "#000"},
       hovertemplate: "%{y:.1%} of the time at or below %{x:.3~r} " + rate + "<extra></extra>"}
    ], margins(lib, {height: 300, showlegend: false, shapes: shapes, annotations: notes,
                     xaxis: {title: {text: "aggregate throughput (" + rate + ")"}, rangemode: "tozero"},
                     yaxis: {title: {text: "share of time"}, range: [0, 1.02], tickformat: ".0%"}}), lib.CONFIG);
  }

  function spectrum(data, lib) {
    var ps = data.result.power_spectrum, traces = [], shapes = [];
    var xu = lib.byteUnit(ps.read.bin_edges_bytes, ps.write.bin_edges_bytes), yu = lib.byteUnit(ps.read.bytes, ps.write.bytes);
    [["read", READ], ["write", WRITE]].forEach(function (k) {
      var s = ps[k[0]], e = s.bin_edges_bytes;
      if (e.length < 2 || e[e.length - 1] <= 0) { return; }
      traces.push({type: "bar", name: k[0], x: e.slice(0, -1).map(function (v, i) { return (v + e[i + 1]) / 2 / xu.div; }),
                   width: e.slice(0, -1).map(function (v, i) { return (e[i + 1] - v) / xu.div; }),
                   y: yu.scale(s.bytes), marker: {color: k[1]}, opacity: 0.65,
                   hovertemplate: k[0] + " " + NUM + yu.name + " in observations of ~%{x:.3~r} " + xu.name + "<extra></extra>"});
      if (s.centroid_bytes !== null) {
        var c = s.centroid_bytes / xu.div;
        shapes.push({type: "line", xref: "x", yref: "paper", x0: c, x1: c, y0: 0, y1: 1, line: {dash: "dash", color: k[1], width: 1.5}});
      }
    });
    return Plotly.newPlot(document.getElementById("workload-spectrum"), traces,
      margins(lib, {height: 300, barmode: "overlay", shapes: shapes,
                    xaxis: {title: {text: "bytes per target per sampling interval (" + xu.name + "); dashed: centroid"}},
                    yaxis: {title: {text: yu.name + " in bin"}}}), lib.CONFIG);
  }

  function acf(data, lib) {
    var a = data.result.acf;
    // lags in minutes up to two hours: five minutes of data ticked its lags "0.01 ... 0.06" hours
    var top = Math.max.apply(null, a.lags_s.concat([0])), unit = top < 7200 ? [60, "minutes", "min"] : [3600, "hours", "h"];
    var h = a.lags_s.map(function (v) { return v / unit[0]; });
    return Plotly.newPlot(document.getElementById("workload-acf"), [
      {type: "scatter", mode: "lines", name: "read", x: h, y: a.read, line: {color: READ}, hovertemplate: "read r=%{y:.2f} at %{x:.2f} " + unit[2] + "<extra></extra>"},
      {type: "scatter", mode: "lines", name: "write", x: h, y: a.write, line: {color: WRITE, dash: "dot"}, hovertemplate: "write r=%{y:.2f} at %{x:.2f} " + unit[2] + "<extra></extra>"}
    ], margins(lib, {height: 300, xaxis: {title: {text: "lag (" + unit[1] + ")"}}, yaxis: {title: {text: "autocorrelation"}, range: [-1, 1]}}),
    lib.CONFIG);
  }

  pages.workload = function (data, lib) {
    return [signal(data, lib), daily(data, lib), cdf(data, lib), spectrum(data, lib), acf(data, lib)];
  };
})();

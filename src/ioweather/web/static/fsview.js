// The admin's file-system pages: Servers, Metadata, Capacity, Talkers (services/telemetry/fsview.py computes).
// Labels from data (targets, job ids) reach Plotly only through lib.text and the DOM through textContent.
(function () {
  "use strict";
  var pages = window.ioweatherPages = window.ioweatherPages || {};
  var READ = "#d62728", WRITE = "#1f77b4", MiB = 1048576;
  // Plotly's "Blues" runs from dark blue at 0 to grey at the top (its "Reds" from grey to dark red): the write
  // map drew its busiest targets palest. Light to dark, as the read map.
  var WRITE_SCALE = [[0, "rgb(220,220,220)"], [0.3, "rgb(106,137,247)"], [0.5, "rgb(70,100,245)"],
                     [0.65, "rgb(40,60,190)"], [1, "rgb(5,10,172)"]];
  var MULTIPLES = 24;

  function layout(lib, extra) {
    return Object.assign({margin: {l: 64, r: 12, t: 8, b: 44}, font: lib.FONT, hovermode: "closest",
                          legend: {orientation: "h", y: 1.02, yanchor: "bottom"}}, extra);
  }

  function eventShapes(lib, events) {
    return events.slice(0, 500).map(function (e) {
      return {type: "rect", xref: "x", yref: "paper", x0: lib.ms(e.start), x1: lib.ms(e.end), y0: 0, y1: 1,
              fillcolor: "rgba(44,160,44,0.18)", line: {width: 0}, layer: "below"};
    });
  }

  function heatmap(data, lib, id, key) {
    // Each direction's colours end at its own highest rate (the table's peak when a column is one sample):
    // cells are levels of the top of both, so the scale stops at that direction's share of it.
    var h = data.heatmap, own = h["top_" + key + "_bps"], zmax = h.top_bps > 0 ? h.levels * own / h.top_bps : h.levels;
    var names = data.targets.map(function (t) { return lib.text(t.target); });
    var el = document.getElementById(id), moved = own > 0, x = lib.times(data.time);
    // The colour bar's labels are rates in their own unit (a top of 40 KiB/s read "0.0 / 0.0 / 0.0"
    // in MiB/s); with no traffic at all there is no scale to show, and the plot says so.
    var job = Plotly.newPlot(el, [{
      type: "heatmap", x: x, y: names, z: h[key], zmin: 0, zmax: zmax,
      colorscale: !moved ? [[0, "#eeeeee"], [1, "#eeeeee"]] : key === "read" ? "Reds" : WRITE_SCALE,
      reversescale: false, xgap: 0, ygap: 0, showscale: moved,
      colorbar: {title: {text: "rate"}, tickvals: [0, zmax / 2, zmax], ticktext: [0, own / 2, own].map(lib.rate)},
      hovertemplate: "%{y}<br>%{x}<br>level %{z} of " + h.levels + "<extra></extra>"
    }], layout(lib, {height: Math.min(900, 140 + 14 * names.length),
                     annotations: moved ? [] : [lib.emptyNote("no " + key + " traffic in this window")],
                     xaxis: {type: "date", title: {text: "time (UTC)"}, range: lib.timeRange(x)},
                     yaxis: {autorange: "reversed", type: "category", automargin: true}}), lib.CONFIG);
    return job.then(function () {
      el.on("plotly_click", function (ev) {
        var i = ev.points[0].pointIndex[0];
        var q = new URLSearchParams(window.location.search);
        q.set("target", data.targets[i].target);
        window.location.search = q.toString();
      });
    });
  }

  function multiples(data, lib) {
    var el = document.getElementById("servers-multiples");
    var shown = data.targets.slice(0, MULTIPLES), h = data.heatmap, scale = h.top_bps / h.levels / MiB;
    if (!shown.length) { return Promise.resolve(); }
    var x = lib.times(data.time), traces = [], notes = [];
    var cols = 4, rows = Math.ceil(shown.length / cols);
    shown.forEach(function (t, i) {
      var ax = i === 0 ? "" : String(i + 1);
      [["read", READ], ["write", WRITE]].forEach(function (k) {
        traces.push({type: "scatter", mode: "lines", x: x, xaxis: "x" + ax, yaxis: "y" + ax, showlegend: i === 0,
                     name: k[0], line: {color: k[1], width: 1}, connectgaps: false,
                     y: h[k[0]][i].map(function (v) { return v === null ? null : v * scale; }),
                     hovertemplate: lib.text(t.target) + " " + k[0] + " %{y:.1f} MiB/s<extra></extra>"});
      });
      notes.push({text: lib.text(t.target), xref: "x" + ax + " domain", yref: "y" + ax + " domain", x: 0, y: 1.15,
                  showarrow: false, xanchor: "left", font: {size: 10}});
    });
    var lay = layout(lib, {height: 150 * rows, grid: {rows: rows, columns: cols, pattern: "independent"},
                           annotations: notes, margin: {l: 40, r: 8, t: 20, b: 30}});
    shown.forEach(function (t, i) {
      var ax = i === 0 ? "" : String(i + 1);
      lay["xaxis" + ax] = {type: "date", showticklabels: false};
      lay["yaxis" + ax] = h.top_bps > 0 ? {rangemode: "tozero", range: [0, h.top_bps / MiB]}
                                        : lib.valueAxis("", 0);  // was -1…1 MiB/s without traffic
    });
    if (!(h.top_bps > 0)) { lay.annotations.push(lib.emptyNote("no traffic in this window")); }
    return Plotly.newPlot(el, traces, lay, lib.CONFIG);
  }

  function targetSeries(data, lib) {
    var s = data.series, x = lib.times(s.time), top = lib.largest(s.read_bps, s.write_bps);
    var mib = function (l) { return l.map(function (v) { return v === null ? null : v / MiB; }); };
    return Plotly.newPlot(document.getElementById("servers-target"), [
      {type: "scatter", mode: "lines", name: "read", x: x, y: mib(s.read_bps), line: {color: READ, width: 1}, connectgaps: false},
      {type: "scatter", mode: "lines", name: "write", x: x, y: mib(s.write_bps), line: {color: WRITE, width: 1}, connectgaps: false}
    ], layout(lib, {height: 320, shapes: eventShapes(lib, s.events),
                    xaxis: {type: "date", title: {text: "time (UTC)"}, range: lib.timeRange(x)},
                    yaxis: lib.valueAxis("MiB/s", top),
                    annotations: top > 0 ? [] : [lib.emptyNote("no traffic on this target in this window")]}), lib.CONFIG);
  }

  pages.servers = function (data, lib) {
    var jobs = [heatmap(data, lib, "servers-heat-read", "read"), heatmap(data, lib, "servers-heat-write", "write"),
                multiples(data, lib)];
    if (data.series) { jobs.push(targetSeries(data, lib)); }
    return jobs;
  };

  pages.metadata = function (data, lib) {
    var x = lib.times(data.time);
    var traces = Object.keys(data.series).map(function (op) {
      return {type: "scatter", mode: "lines", stackgroup: "ops", name: lib.text(op), x: x, y: data.series[op],
              hovertemplate: lib.text(op) + " %{y:.0f}/s<extra></extra>"};
    });
    var b = data.burstiness, top = lib.largest(Object.keys(data.series).map(function (op) { return data.series[op]; }));
    var none = top > 0 ? [] : [lib.emptyNote("no metadata operations in this window")];
    return [
      Plotly.newPlot(document.getElementById("md-rates"), traces,
        layout(lib, {height: 360, shapes: eventShapes(lib, data.events), annotations: none,
                     xaxis: {type: "date", title: {text: "time (UTC)"}, range: lib.timeRange(x)},
                     yaxis: lib.valueAxis("operations/s", top)}), lib.CONFIG),
      Plotly.newPlot(document.getElementById("md-cdf"), [
        {type: "scatter", mode: "lines", x: b.cdf_bps, y: b.cdf_frac, line: {shape: "hv", color: "#000"},
         hovertemplate: "%{y:.1%} of the time at or below %{x:.0f} operations/s<extra></extra>"}],
        layout(lib, {height: 280, showlegend: false, annotations: none,
                     xaxis: lib.valueAxis("total operations/s", lib.largest(b.cdf_bps)),
                     yaxis: {title: {text: "share of time"}, range: [0, 1.02], tickformat: ".0%"}}), lib.CONFIG)
    ];
  };

  pages.capacity = function (data, lib) {
    // One df snapshot is a point on an axis of its own hour, its value written beside it (it was one
    // dot on a 30-day axis); the targets' lines then need markers to be seen at all.
    var fs = data.fs_fullness.fullness, x = lib.times(data.time), traces = [];
    var span = lib.timeRange(x.filter(function (_, i) { return fs[i] !== null; })), one = Boolean(span);
    Object.keys(data.fullness).forEach(function (t) {
      if (t.indexOf("-MDT") >= 0) { return; }
      traces.push({type: "scatter", mode: one ? "markers" : "lines", name: lib.text(t), x: x, y: data.fullness[t],
                   connectgaps: true, line: {width: 1}, marker: {size: 4}, showlegend: false,
                   hovertemplate: lib.text(t) + " %{y:.1%}<extra></extra>"});
    });
    traces.push({type: "scatter", mode: one ? "markers+text" : "lines+markers", name: "file system", x: x, y: fs,
                 connectgaps: true, line: {color: "#000", width: 2.5}, marker: {size: one ? 10 : 3, color: "#000"},
                 text: one ? fs.map(function (v) { return v === null ? "" : "file system " + (100 * v).toFixed(1) + "% used"; }) : undefined,
                 textposition: "middle right", hovertemplate: "file system %{y:.1%}<extra></extra>"});
    return [Plotly.newPlot(document.getElementById("capacity-fullness"), traces,
      layout(lib, {height: 360, xaxis: {type: "date", title: {text: "time (UTC)"}, range: span || undefined},
                   yaxis: {title: {text: "used"}, tickformat: ".0%", range: [0, 1]}}), lib.CONFIG)];
  };

  pages.talkers = function (data, lib) {
    var rows = data.by_bytes.slice(0, 20).reverse();
    var y = rows.map(function (r) { return lib.text(r.job); });
    return [Plotly.newPlot(document.getElementById("talkers-bytes"), [
      {type: "bar", orientation: "h", name: "read", y: y, x: rows.map(function (r) { return r.read_bytes / MiB; }), marker: {color: READ}},
      {type: "bar", orientation: "h", name: "written", y: y, x: rows.map(function (r) { return r.write_bytes / MiB; }), marker: {color: WRITE}}
    ], layout(lib, {height: 120 + 18 * rows.length, barmode: "stack", xaxis: {title: {text: "MiB"}},
                    yaxis: {type: "category", automargin: true}}), lib.CONFIG)];
  };
})();

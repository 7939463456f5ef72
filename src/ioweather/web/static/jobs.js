// The Jobs list and the job page (drawn by ioweather.js's main with its shared pieces as `lib`).
(function () {
  "use strict";
  var pages = window.ioweatherPages = window.ioweatherPages || {};
  var LEVELS = [["HIGH", "#b22222", "x", "HIGH finding"], ["WARN", "#b8860b", "triangle-up", "WARN finding"],
                [null, "#4c78a8", "circle", "neither"]];
  var IFACES = ["POSIX", "STDIO", "MPI-IO", "HDF5", "PnetCDF", "DFS", "DAOS"];
  var IFACE_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d"];
  var GiB = 1073741824;

  // Ticks at powers of two, in the units of the table beside the plot ("64 GiB", "1 TiB"): Plotly's SI ticks
  // wrote "100GB" at a decade and "90G" between (no unit), in powers of ten where the table counts GiB.
  var BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  function byteAxis(values) {
    var v = values.filter(function (x) { return x > 0; });
    if (!v.length) { return {}; }
    var lo = Math.max(0, Math.floor(Math.log2(Math.min.apply(null, v))) - 1);
    var hi = Math.ceil(Math.log2(Math.max.apply(null, v))) + 1;
    var step = Math.max(1, Math.ceil((hi - lo) / 8)), vals = [], text = [];
    for (var k = Math.ceil(lo / step) * step; k <= hi; k += step) {
      var u = Math.min(Math.floor(k / 10), BYTE_UNITS.length - 1);
      vals.push(Math.pow(2, k));
      text.push(Math.pow(2, k - 10 * u) + " " + BYTE_UNITS[u]);
    }
    return {tickvals: vals, ticktext: text, range: [lo * Math.log10(2), hi * Math.log10(2)]};
  }

  function scatter(data, lib) {
    var el = document.getElementById("jobs-scatter");
    var p = data.plot;
    var traces = LEVELS.map(function (lv) {
      var idx = [];
      p.level.forEach(function (l, i) { if (l === lv[0] && p.runtime_s[i] !== null && p.moved_bytes[i] > 0) { idx.push(i); } });
      return {type: "scatter", mode: "markers", name: lv[3], x: idx.map(function (i) { return p.runtime_s[i]; }),
              y: idx.map(function (i) { return p.moved_bytes[i]; }),  // bytes: a GiB axis ticked "100µ" below 1 MiB
              customdata: idx.map(function (i) { return [p.id[i], p.jobid[i] === null ? "?" : p.jobid[i], p.nprocs[i]]; }),
              marker: {color: lv[1], symbol: lv[2], size: 8, line: {width: 1, color: "#333"}},
              hovertemplate: "job %{customdata[1]} (%{customdata[2]} procs)<br>%{y:.3s}B in %{x:.3s} s<extra></extra>"};
    });
    var job = Plotly.newPlot(el, traces, {
      height: 360, margin: {l: 64, r: 12, t: 8, b: 44}, font: lib.FONT, hovermode: "closest",
      legend: {orientation: "h", y: 1.02, yanchor: "bottom"},
      xaxis: {type: "log", title: {text: "run time (s)"}}, yaxis: Object.assign({type: "log", title: {text: "moved"}},
                                     byteAxis(p.moved_bytes.filter(function (b, i) { return p.runtime_s[i] !== null; })))}, lib.CONFIG);
    job.then(function () {
      el.on("plotly_click", function (ev) {
        var pt = ev.points && ev.points[0];
        if (pt && pt.customdata) { window.location.href = "/job?id=" + encodeURIComponent(pt.customdata[0]); }
      });
    });
    return job;
  }

  function interfaces(data, lib) {
    var el = document.getElementById("jobs-interfaces");
    if (!el) { return null; }
    var rows = data.summary.interfaces_by_size;
    var x = rows.map(function (r) { return r.size_class; });
    var traces = IFACES.map(function (name, k) {
      return {type: "bar", name: name, x: x, y: rows.map(function (r) { return r.bytes[name] / GiB; }),
              marker: {color: IFACE_COLORS[k]}, hovertemplate: name + " %{y:.3s} GiB<extra></extra>"};
    }).filter(function (t) { return t.y.some(function (v) { return v > 0; }); });
    // side by side: MPI-IO, HDF5 and PnetCDF bytes also pass through POSIX, so stacking would count them twice
    return Plotly.newPlot(el, traces, {
      height: 360, margin: {l: 64, r: 12, t: 8, b: 44}, font: lib.FONT, barmode: "group",
      legend: {orientation: "h", y: 1.02, yanchor: "bottom"},
      xaxis: {type: "category", title: {text: "processes per job"}}, yaxis: {title: {text: "GiB"}}}, lib.CONFIG);
  }

  pages.jobs = function (data, lib) {
    return [scatter(data, lib), interfaces(data, lib)].filter(Boolean);
  };

  pages.job = function (data, lib) {
    var jobs = [];
    var rows = data.interfaces;
    var names = rows.map(function (r) { return lib.text(r.module); });
    var layout = function (xtitle) {
      // read, write and metadata side by side per layer: a layer's time includes the layers under it
      return {height: 80 + 48 * rows.length, margin: {l: 96, r: 12, t: 8, b: 44}, font: lib.FONT, barmode: "group",
              legend: {orientation: "h", y: 1.02, yanchor: "bottom", traceorder: "normal"}, xaxis: {title: {text: xtitle}},
              yaxis: {type: "category", autorange: "reversed"}};
    };
    var bytes = document.getElementById("job-bytes");
    if (bytes) {
      jobs.push(Plotly.newPlot(bytes, [["bytes_read", "read", "#4c78a8"], ["bytes_written", "written", "#f58518"]].map(function (k) {
        return {type: "bar", orientation: "h", name: k[1], y: names, x: rows.map(function (r) { return r[k[0]] / GiB; }),
                marker: {color: k[2]}, hovertemplate: k[1] + " %{x:.3s} GiB<extra></extra>"};
      }), layout("GiB"), lib.CONFIG));
    }
    var time = document.getElementById("job-time");
    if (time) {
      jobs.push(Plotly.newPlot(time, [["read_time_s", "read", "#4c78a8"], ["write_time_s", "write", "#f58518"],
                                      ["meta_time_s", "metadata", "#54a24b"]].map(function (k) {
        return {type: "bar", orientation: "h", name: k[1], y: names, x: rows.map(function (r) { return r[k[0]]; }),
                marker: {color: k[2]}, hovertemplate: k[1] + " %{x:,.3f} s<extra></extra>"};
      }), layout("seconds (all ranks)"), lib.CONFIG));
    }
    if (window.ioweatherUmami) { jobs = jobs.concat(window.ioweatherUmami.draw(data.umami, lib)); }  // static/umami.js
    return jobs;
  };
})();

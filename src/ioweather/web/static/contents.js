// The Contents page: size and age CDFs of a snapshot (by files and by bytes) and the growth between two labels.
(function () {
  "use strict";
  var pages = window.ioweatherPages = window.ioweatherPages || {};
  var SIZE_TICKS = [1, 1024, 1048576, 1073741824, 1099511627776, 1125899906842624];
  var SIZE_TEXT = ["1 B", "1 KiB", "1 MiB", "1 GiB", "1 TiB", "1 PiB"];
  var DAY_TICKS = [1, 7, 30, 365, 3650];
  var DAY_TEXT = ["1 day", "1 week", "1 month", "1 year", "10 years"];

  function layout(lib, xaxis) {
    return {height: 330, margin: {l: 56, r: 12, t: 8, b: 44}, font: lib.FONT, hovermode: "closest",
            legend: {orientation: "h", y: 1.02, yanchor: "bottom"}, xaxis: xaxis,
            yaxis: {title: {text: "cumulative share"}, range: [0, 1.02], tickformat: ".0%"}};
  }

  function curve(c, weight, name, color, dash, unit) {
    return {type: "scatter", mode: "lines+markers", name: name, x: c.upper_bound, y: c[weight],
            line: {color: color, dash: dash, shape: "linear"}, marker: {size: 5, symbol: dash === "solid" ? "circle" : "square"},
            hovertemplate: "%{y:.1%} of " + (weight === "by_count" ? "files" : "bytes") + " at or below %{x:,} " + unit + "<extra></extra>"};
  }

  function size(data, lib) {
    var el = document.getElementById("contents-size");
    if (!el) { return null; }
    var c = data.cdfs.file_size;
    return Plotly.newPlot(el, [curve(c, "by_count", "files", "#1f77b4", "solid", "bytes"),
                               curve(c, "by_bytes", "bytes", "#d62728", "dash", "bytes")],
      layout(lib, {type: "log", title: {text: "file size (upper bound of the power-of-two bucket)"},
                   tickvals: SIZE_TICKS, ticktext: SIZE_TEXT}), lib.CONFIG);
  }

  function age(data, lib) {
    var el = document.getElementById("contents-age");
    if (!el) { return null; }
    var a = data.cdfs.atime_age_days, m = data.cdfs.mtime_age_days;
    return Plotly.newPlot(el, [curve(a, "by_count", "files by access age", "#2ca02c", "solid", "days"),
                               curve(a, "by_bytes", "bytes by access age", "#2ca02c", "dash", "days"),
                               curve(m, "by_count", "files by modification age", "#9467bd", "solid", "days"),
                               curve(m, "by_bytes", "bytes by modification age", "#9467bd", "dash", "days")],
      layout(lib, {type: "log", title: {text: "age in days (upper bound of the bucket)"}, tickvals: DAY_TICKS,
                   ticktext: DAY_TEXT}), lib.CONFIG);
  }

  function growth(data, lib) {
    var el = document.getElementById("contents-diff");
    if (!el || !data.diff) { return null; }
    var rows = data.diff.top_dirs.filter(function (r) { return r.bytes_change; }).slice(0, 15);
    var change = rows.map(function (r) { return r.bytes_change; });
    var u = lib.byteUnit(change);  // the tables' binary units (MiB), not Plotly's SI prefixes (10MB)
    return Plotly.newPlot(el, [{
      type: "bar", orientation: "h", y: rows.map(function (r) { return lib.text(r.name); }),
      x: u.scale(change),
      marker: {color: rows.map(function (r) { return r.bytes_change > 0 ? "#d62728" : "#2ca02c"; })},
      hovertemplate: "%{y}<br>%{x:+.3~r} " + u.name + "<extra></extra>"
    }], {height: 80 + 26 * rows.length, margin: {l: 160, r: 12, t: 8, b: 44}, font: lib.FONT,
         xaxis: {title: {text: "change of data (" + u.name + ")"}},
         yaxis: {type: "category", autorange: "reversed", automargin: true}}, lib.CONFIG);
  }

  pages.contents = function (data, lib) {
    return [size(data, lib), age(data, lib), growth(data, lib)].filter(Boolean);
  };
})();

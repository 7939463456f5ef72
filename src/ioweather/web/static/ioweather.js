// Draws the plots of an ioweather page from its JSON twin, embedded in #page-data.
// Text from data is only ever set with textContent; target names never go into Plotly strings.
(function () {
  "use strict";

  var OPS = ["data_write", "data_read", "md_create", "md_stat", "md_read", "md_delete"];
  var COLORS = {data_write: "#1f77b4", data_read: "#ff7f0e", md_create: "#2ca02c",
                md_stat: "#9467bd", md_read: "#8c564b", md_delete: "#e377c2"};
  var SYMBOLS = {data_write: "circle", data_read: "square", md_create: "triangle-up",
                 md_stat: "diamond", md_read: "triangle-down", md_delete: "cross"};
  var CONFIG = {responsive: true, displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"]};
  // The Status page's small plots have nothing to zoom; their mode bar only covered the threshold labels.
  var STATIC = Object.assign({}, CONFIG, {displayModeBar: false});
  var FONT = {family: "system-ui, sans-serif", size: 12};

  var RATIO_TICKS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
  // Log axis of slowdowns with plain ticks (0.5×, 1×, 2× …) instead of Plotly's minor-digit labels.
  function ratioAxis(title) {
    return {type: "log", title: {text: title}, tickvals: RATIO_TICKS,
            ticktext: RATIO_TICKS.map(function (v) { return v + "×"; })};
  }
  // Log axis of durations with one tick per decade, every label SI-prefixed seconds: 1µs, 10µs … 1ms … 1s
  // (minexponent 0: Plotly otherwise writes 0.001s beside 100µs).
  function secondsAxis(title, domain) {
    return {type: "log", domain: domain, title: {text: title}, dtick: 1, exponentformat: "SI", minexponent: 0,
            ticksuffix: "s"};
  }
  function ms(iso) { return Date.parse(iso); }
  function times(list) { return list.map(ms); }

  // One binary unit for a plot's bytes (or bytes/s), chosen as units.format_bytes chooses it, for the
  // largest value: 20 MiB/s reads "20 MiB/s", not "0.02 GiB/s". lists: arrays of numbers (null: no data).
  var BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function byteUnit() {
    var top = 0, i = 0;
    Array.prototype.forEach.call(arguments, function (list) {
      list.forEach(function (v) { if (v !== null && isFinite(v)) { top = Math.max(top, Math.abs(v)); } });
    });
    while (top >= 1024 && i < BINARY.length - 1) { top /= 1024; i += 1; }
    var div = Math.pow(1024, i);
    return {name: BINARY[i], div: div,
            scale: function (list) { return list.map(function (v) { return v === null ? null : v / div; }); }};
  }

  // Dashed horizontal (or vertical) lines at the state thresholds, labelled in text.
  function thresholdShapes(th, axis, vertical) {
    var out = {shapes: [], annotations: []};
    [[th.warn, "degraded", "#b8860b", "right"], [th.crit, "severe", "#b22222", "left"]].forEach(function (t) {
      var s = {type: "line", line: {dash: "dash", width: 1, color: t[2]}};
      var a = {text: t[1] + " " + t[0] + "×", showarrow: false, font: {size: 10, color: t[2]}};
      if (vertical) {
        Object.assign(s, {xref: "x" + (axis || ""), x0: t[0], x1: t[0], yref: "paper", y0: 0, y1: 1});
        Object.assign(a, {xref: "x" + (axis || ""), x: Math.log10(t[0]), yref: "paper", y: 1.0, yanchor: "bottom",
                          xanchor: t[3]});
      } else {
        Object.assign(s, {yref: "y" + (axis || ""), y0: t[0], y1: t[0], xref: "paper", x0: 0, x1: 1});
        // Left end: the mode bar sits at the top right and would cover a label there.
        Object.assign(a, {yref: "y" + (axis || ""), y: Math.log10(t[0]), xref: "paper", x: 0, xanchor: "left",
                          yanchor: "bottom"});
      }
      out.shapes.push(s);
      out.annotations.push(a);
    });
    return out;
  }

  // ---------------------------------------------------------------- status
  var LEARNING_LINE = "#9e9e9e";
  function drawStatus(data) {
    var jobs = [];
    data.targets.forEach(function (t, i) {
      var sp = document.getElementById("spark-" + i);
      if (sp && t.sparkline) {
        // An op whose baseline learns is drawn grey and named so: its ratio is about 1x by construction and
        // the card judges nothing by it (its `learning`, services/probe/status.py).
        var learns = {};
        t.ops.forEach(function (o) { learns[o.op] = o.learning; });
        var traces = OPS.map(function (op) {
          var color = learns[op] ? LEARNING_LINE : COLORS[op], label = learns[op] ? op + " (learning)" : op;
          return {x: times(t.sparkline.time), y: t.sparkline.slowdown[op], name: label, type: "scatter",
                  mode: "lines+markers", marker: {size: 3, symbol: SYMBOLS[op]},
                  line: {width: 1.5, color: color, dash: learns[op] ? "dot" : "solid"}, connectgaps: false,
                  hovertemplate: label + " %{y:.2f}×" + (learns[op] ? ", not judged" : "") + "<extra></extra>"};
        });
        var th = thresholdShapes(data.thresholds, "", false);
        jobs.push(Plotly.newPlot(sp, traces, {
          height: 190, margin: {l: 48, r: 8, t: 8, b: 28}, font: FONT, showlegend: true,
          legend: {x: 1.01, y: 1, font: {size: 10}, itemwidth: 20, tracegroupgap: 0},
          xaxis: {type: "date", tickformat: "%H:%M"}, yaxis: ratioAxis("slowdown"),
          shapes: th.shapes, annotations: th.annotations}, STATIC));
      }
      var cl = document.getElementById("climate-" + i);
      if (cl) {
        var ops = t.ops.filter(function (o) { return o.climate && o.climate.q1 !== null; });
        var box = {type: "box", orientation: "h", name: "climate", y: ops.map(function (o) { return o.op; }),
                   q1: ops.map(function (o) { return o.climate.q1; }),
                   median: ops.map(function (o) { return o.climate.median; }),
                   q3: ops.map(function (o) { return o.climate.q3; }),
                   lowerfence: ops.map(function (o) { return o.climate.p01; }),
                   upperfence: ops.map(function (o) { return o.climate.p99; }),
                   fillcolor: "rgba(120,120,120,0.25)", line: {color: "#555"}, hoverinfo: "x"};
        var now = t.ops.filter(function (o) { return o.slowdown !== null; });
        var marker = {type: "scatter", mode: "markers", name: "now", y: now.map(function (o) { return o.op; }),
                      x: now.map(function (o) { return o.slowdown; }),
                      marker: {symbol: "diamond", size: 11, color: now.map(function (o) {
                        return {"normal": "#2e7d32", "degraded": "#b8860b", "severely degraded": "#b22222"}[o.state] || "#555";
                      }), line: {width: 1, color: "#000"}},
                      hovertemplate: "%{y} now %{x:.2f}×<extra></extra>"};
        var thv = thresholdShapes(data.thresholds, "", true);
        jobs.push(Plotly.newPlot(cl, [box, marker], {
          height: 220, margin: {l: 80, r: 8, t: 22, b: 32}, font: FONT, showlegend: false,
          xaxis: ratioAxis("slowdown"), yaxis: {autorange: "reversed"},
          shapes: thv.shapes, annotations: thv.annotations}, STATIC));
      }
    });
    return jobs;
  }

  // ---------------------------------------------------------------- timeline
  function timelineTraces(data) {
    var traces = data.resolution === "raw" ? sampleTraces(data) : rollupTraces(data);
    var rows = {};
    OPS.forEach(function (op) { rows[op] = {x: [], median: [], p99: [], sd: []}; });
    data.intervals.forEach(function (r) {
      var a = rows[r.op];
      a.x.push(ms(r.interval_start)); a.median.push(r.median_s); a.p99.push(r.p99_s); a.sd.push(r.slowdown);
    });
    var first = firstSample(data);
    OPS.forEach(function (op) {  // close the last step at the end of its interval
      var a = rows[op], n = a.x.length;
      // No interval line before the first sample: the first step starts where the samples do.
      if (n && first !== null && a.x[0] < first) { a.x[0] = first; }
      if (n) {
        a.x.push(a.x[n - 1] + data.interval_s * 1000);
        a.median.push(a.median[n - 1]); a.p99.push(a.p99[n - 1]); a.sd.push(a.sd[n - 1]);
      }
    });
    OPS.forEach(function (op) {
      var a = rows[op];
      traces.push({x: a.x, y: a.median, name: op + " median", legendgroup: op, showlegend: false, type: "scatter",
                   mode: "lines", line: {shape: "hv", color: COLORS[op], width: 2}, yaxis: "y2",
                   hovertemplate: op + " median %{y:.3s}s<extra></extra>"});
      traces.push({x: a.x, y: a.p99, name: op + " p99", legendgroup: op, showlegend: false, type: "scatter",
                   mode: "lines", line: {shape: "hv", color: COLORS[op], width: 1, dash: "dot"}, yaxis: "y2",
                   hovertemplate: op + " p99 %{y:.3s}s<extra></extra>"});
      traces.push({x: a.x, y: a.sd, name: op + " slowdown", legendgroup: op, showlegend: false, type: "scatter",
                   mode: "lines+markers", line: {shape: "hv", color: COLORS[op], width: 1.5},
                   marker: {size: 4, symbol: SYMBOLS[op]}, yaxis: "y3",
                   hovertemplate: op + " %{y:.2f}×<extra></extra>"});
    });
    return traces.concat(timelineChangeTraces(data));
  }

  function sampleTraces(data) {
    var traces = OPS.map(function (op) {
      var s = data.samples[op];
      return {x: times(s.time), y: s.duration_s, name: op, legendgroup: op, type: "scatter", mode: "markers",
              marker: {size: 3, color: COLORS[op], symbol: SYMBOLS[op]}, yaxis: "y",
              hovertemplate: op + " %{y:.3s}s<br>%{x}<extra></extra>"};
    });
    var f = data.failures;
    traces.push({x: times(f.time), y: f.duration_s, name: "error / timeout", type: "scatter", mode: "markers",
                 text: f.op.map(function (op, i) { return op + " " + f.status[i]; }), yaxis: "y",
                 marker: {size: 8, symbol: "x", color: "#b22222"}, hovertemplate: "%{text}<br>%{x}<extra></extra>"});
    return traces;
  }

  // Over 6 h (services/probe/timeline.py): per op and interval a bar from its fastest to its slowest
  // sample around the median (the fastest when one sample has no median), so no outlier is hidden.
  // Failures are counted per interval: a cross at the op's slowest sample of it, else at the top.
  function rollupTraces(data) {
    var half = data.resolution_s * 500, until = ms(data.until), top = 0;
    function mid(t) { return Math.min(ms(t) + half, until); }
    var traces = OPS.map(function (op) {
      var s = data.samples[op];
      var y = s.median_s.map(function (m, i) { return m === null ? s.min_s[i] : m; });
      s.max_s.forEach(function (v) { top = Math.max(top, v); });
      return {x: s.time.map(mid), y: y, name: op, legendgroup: op, type: "scatter", mode: "markers",
              marker: {size: 4, color: COLORS[op], symbol: SYMBOLS[op]}, yaxis: "y",
              error_y: {type: "data", symmetric: false, thickness: 1, width: 0, color: COLORS[op],
                        array: s.max_s.map(function (v, i) { return v - y[i]; }),
                        arrayminus: s.min_s.map(function (v, i) { return y[i] - v; })},
              customdata: s.count.map(function (n, i) { return [n, s.min_s[i], s.max_s[i]]; }),
              hovertemplate: op + " median %{y:.3s}s, fastest %{customdata[1]:.3s}s, slowest %{customdata[2]:.3s}s" +
                             "<br>%{customdata[0]} samples from %{x}<extra></extra>"};
    });
    var f = data.failures;
    var y = f.op.map(function (op, i) {
      var s = data.samples[op], j = s.time.indexOf(f.time[i]);
      return j >= 0 ? s.max_s[j] : (top || 1);
    });
    traces.push({x: f.time.map(mid), y: y, name: "errors / timeouts", type: "scatter", mode: "markers",
                 text: f.op.map(function (op, i) { return op + ": " + f.errors[i] + " errors, " + f.timeouts[i] + " timeouts"; }),
                 yaxis: "y", marker: {size: 8, symbol: "x", color: "#b22222"},
                 hovertemplate: "%{text}<br>%{x}<extra></extra>"});
    return traces;
  }

  // Level changes (services/answers/changes.py): one marker per change on the median panel at the new level,
  // its tooltip the time, the op and the medians before and after; a dotted line across the plot.
  // Ops are the fixed names above: no label from the data goes into a Plotly string.
  function changeHover(c) {
    return [c.time, c.level_before, c.level_after, c.factor === null ? NaN : c.factor];
  }
  var CHANGE_HOVER = "level change of the median<br>%{customdata[0]}<br>" +
                     "%{customdata[1]:.3s}s → %{customdata[2]:.3s}s (×%{customdata[3]:.2f})";
  function timelineChangeTraces(data) {
    var ch = data.changes;
    if (!ch || !ch.points.length) { return []; }
    return OPS.map(function (op) {
      var pts = ch.points.filter(function (c) { return c.op === op; });
      if (!pts.length) { return null; }
      return {x: pts.map(function (c) { return ms(c.time); }), y: pts.map(function (c) { return c.level_after; }),
              customdata: pts.map(changeHover), name: op + " level change", legendgroup: op, showlegend: false,
              type: "scatter", mode: "markers", yaxis: "y2", meta: "change",
              marker: {symbol: "star-diamond", size: 13, color: COLORS[op], line: {width: 1, color: "#000"}},
              hovertemplate: op + " " + CHANGE_HOVER + "<extra></extra>"};
    }).filter(function (t) { return t !== null; });
  }
  function changeLines(data) {
    var ch = data.changes;
    return (ch ? ch.points : []).map(function (c) {
      return {type: "line", xref: "x", x0: ms(c.time), x1: ms(c.time), yref: "paper", y0: 0, y1: 1,
              line: {dash: "dot", width: 1.5, color: COLORS[c.op]}};
    });
  }

  // The marks arrive after the page is drawn (/api/<page>/changes with the page's query, web/registry.py
  // `parts`): the search loads ruptures and scipy once per server process, which no page waits for.
  // secs mirrors units.format_seconds (3 significant digits, never an exponent), ratio the `ratio` filter.
  function sig3(x) {
    var a = Math.abs(x), d = a >= 100 ? 0 : 2 - Math.floor(Math.log10(a)), t = x.toFixed(d);
    return t.indexOf(".") >= 0 ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
  }
  function secs(s) {
    if (s === null || !isFinite(s)) { return "-"; }
    var a = Math.abs(s);
    if (a === 0) { return "0 s"; }
    if (a < 1e-6) { return sig3(s * 1e9) + " ns"; }
    if (a < 1e-3) { return sig3(s * 1e6) + " µs"; }
    if (a < 1) { return sig3(s * 1e3) + " ms"; }
    if (a < 60) { return sig3(s) + " s"; }
    if (a < 3600) { return (s / 60).toFixed(1) + " min"; }
    if (a < 86400) { return (s / 3600).toFixed(1) + " h"; }
    return (s / 86400).toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1}) + " d";
  }
  function ratio(v) { return v === null ? "–" : v.toFixed(2) + "×"; }
  function cell(row, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) { td.className = cls; }
    row.appendChild(td);
  }
  // The table under the plot and the line above it; `withTarget`: the history's table has a target column.
  function fillChanges(ch, withTarget) {
    var body = document.querySelector("#change-marks tbody"), scope = document.getElementById("change-scope");
    if (!body) { return; }
    var columns = withTarget ? 6 : 5;
    body.textContent = "";
    ch.points.forEach(function (c) {
      var tr = document.createElement("tr");
      cell(tr, c.time);
      if (withTarget) { cell(tr, c.target, "target-name"); }
      cell(tr, c.op); cell(tr, secs(c.level_before)); cell(tr, secs(c.level_after)); cell(tr, ratio(c.factor));
      body.appendChild(tr);
    });
    if (!ch.points.length) {
      var tr = document.createElement("tr");
      cell(tr, "no change of level in this window");
      tr.firstChild.colSpan = columns;
      body.appendChild(tr);
    }
    if (scope) {
      scope.textContent = "Looked for from " + ch.since + " to " + ch.until +
                          (ch.until_settled ? " (the end of the last complete 10-minute interval; " : " (") +
                          "PELT, penalty " + ch.penalty_per_log_n + " log n; docs/changes.md), the same as ";
      var code = document.createElement("code");
      code.textContent = ch.command;
      scope.appendChild(code);
      scope.appendChild(document.createTextNode("."));
    }
  }
  function changesFailed(message) {
    var body = document.querySelector("#change-marks tbody");
    if (!body) { return; }
    var tr = document.createElement("tr");
    cell(tr, "could not look for level changes: " + message);
    tr.firstChild.colSpan = body.closest("table").querySelectorAll("thead th").length;
    body.textContent = "";
    body.appendChild(tr);
  }
  // The marks' query: the window the page was computed for, in absolute times, so that a relative
  // `since=1h` is not read again a moment later (web/pages/timeline.py and history.py take these).
  function changesQuery(data) {
    var q = new URLSearchParams({since: data.since, until: data.until, interval: String(data.interval_s) + "s",
                                 stat: data.stat});
    if (data.target) { q.set("target", data.target); }
    return q.toString();
  }
  // Fetches the marks of `data`'s window and fills the table (or says why not); resolves with them, or
  // with null when they failed or `current(query)` says a newer window was asked for meanwhile. Never
  // rejects, so that the page still reports its plots ready.
  function loadChanges(page, data, current) {
    var query = changesQuery(data);
    return fetch("/api/" + page + "/changes?" + query).then(function (r) {
      return r.json().then(function (body) {
        return r.ok ? {changes: body} : {error: body.error || r.status + " " + r.statusText};
      }, function () { return {error: r.status + " " + r.statusText}; });  // not JSON: a proxy's error page
    }, function (err) { return {error: String(err)}; }).then(function (res) {
      if (current && !current(query)) { return null; }
      if (res.error !== undefined) { changesFailed(res.error); return null; }
      fillChanges(res.changes, page === "history");
      return res.changes;
    });
  }

  // Time (ms) of the window's first sample, or null.
  function firstSample(data) {
    var all = [];
    OPS.forEach(function (op) { all = all.concat(data.samples[op].time); });
    all = all.concat(data.failures.time);
    if (!all.length) { return null; }
    return Math.min.apply(null, times(all));
  }

  // The window, from its first sample when less than the window exists (a probe started 5 minutes
  // ago shows 5 minutes across the axis, not the right 3 % of an hour).
  function timelineRange(data) {
    var first = firstSample(data), since = ms(data.since);
    return [first !== null && first > since ? first : since, ms(data.until)];
  }

  function timelineLayout(data, range) {
    var th = thresholdShapes(data.thresholds, "3", false);
    return {
      // uirevision: a redraw with the same range (the marks arriving) keeps what the user zoomed
      height: 760, margin: {l: 64, r: 12, t: 12, b: 40}, font: FONT, hovermode: "closest", uirevision: "timeline",
      legend: {orientation: "h", y: 1.02, yanchor: "bottom"},
      xaxis: {type: "date", range: range || timelineRange(data), title: {text: "time (UTC)"},
              anchor: "y3"},
      yaxis: secondsAxis("duration", [0.52, 1]),
      yaxis2: secondsAxis("median ─, p99 ┈", [0.27, 0.48]),
      yaxis3: Object.assign(ratioAxis("slowdown"), {domain: [0, 0.23]}),
      shapes: th.shapes.concat(changeLines(data)), annotations: th.annotations.concat(learningNote(data))};
  }
  // The slowdown panel while some op's baseline learns: those ops have no slowdown (services/probe/timeline.py).
  function learningNote(data) {
    var ops = OPS.filter(function (op) { return data.learning[op]; });
    if (!ops.length) { return []; }
    return [{xref: "paper", x: 0.5, yref: "paper", y: 0.115, showarrow: false, bgcolor: "#ececec",
             text: (ops.length === OPS.length ? "every op" : ops.join(", ")) + ": learning the baseline, not judged",
             font: {size: 12, color: "#333"}}];
  }

  function setSummary(data) {
    var el = document.getElementById("summary");
    if (!el) { return; }
    var text;
    if (data.resolution === "raw") {
      text = data.samples_shown + " of " + data.samples_total + " samples shown";
      if (data.downsampled) {
        text += " (downsampled: the fastest and the slowest sample of each time bucket are kept, so no outlier is hidden)";
      }
    } else {
      text = data.samples_total + " samples (" + data.failures_total + " errors and timeouts) in " + data.resolution +
             " intervals: each interval's fastest, median and slowest sample is shown, so no outlier is hidden";
    }
    el.textContent = text + ". Zoom with the mouse: the samples of the zoomed window are fetched again " +
                     "(every sample at 6 h or less).";
  }

  function toIso(v) {
    // Plotly gives date-axis ranges as "2026-11-22 03:15:22.123" in UTC.
    return (typeof v === "number") ? new Date(v).toISOString() : String(v).replace(" ", "T") + "Z";
  }

  function drawTimeline(data) {
    var el = document.getElementById("timeline");
    var original = data;
    var busy = false, timer = null, asked = null;
    function redraw() {
      busy = true;
      return Plotly.react(el, timelineTraces(data), timelineLayout(data, timelineRange(data)), CONFIG)
        .then(function () { busy = false; });
    }
    function marks() {
      asked = changesQuery(data);
      return loadChanges("timeline", data, function (query) { return query === asked; }).then(function (ch) {
        if (ch !== null) { data.changes = ch; return redraw(); }
      });
    }
    var job = Plotly.newPlot(el, timelineTraces(data), timelineLayout(data), CONFIG);
    var ready = job.then(function () {
      el.on("plotly_relayout", function (ev) {
        if (busy) { return; }
        var since, until;
        if (ev["xaxis.range[0]"] !== undefined) {
          since = toIso(ev["xaxis.range[0]"]); until = toIso(ev["xaxis.range[1]"]);
        } else if (ev["xaxis.autorange"]) {
          since = original.since; until = original.until;
        } else { return; }
        clearTimeout(timer);
        timer = setTimeout(function () { refetch(since, until); }, 250);
      });
      return marks();
    });
    function refetch(since, until) {
      var q = new URLSearchParams({target: data.target, since: since, until: until,
                                   interval: String(data.interval_s) + "s", stat: data.stat});
      fetch("/api/timeline?" + q.toString()).then(function (r) {
        return r.json().then(function (body) { return {ok: r.ok, body: body}; });
      }).then(function (res) {
        if (!res.ok) { document.getElementById("summary").textContent = res.body.error; return; }
        var shown = data.changes;  // kept on the plot until this window's own arrive
        data = res.body;
        data.changes = shown;
        redraw();
        marks();
        setSummary(data);
        ["since", "until"].forEach(function (k) {
          var input = document.querySelector("form.window input[name=" + k + "]");
          if (input) { input.value = data[k]; }
        });
        var page = new URLSearchParams(window.location.search);
        page.set("since", data.since); page.set("until", data.until); page.set("target", data.target);
        window.history.replaceState(null, "", "?" + page.toString());
      });
    }
    return [ready];
  }

  // ---------------------------------------------------------------- history
  var ZMIN = Math.log10(0.316), ZMAX = 2;
  function zpos(x) { return (Math.log10(x) - ZMIN) / (ZMAX - ZMIN); }
  // Diverging around 1×: blue faster, a pale green at the usual speed, orange from degraded, red from severe.
  // Cells without data show the plot's background, a grey no value of the scale has (NO_DATA).
  var NO_DATA = "#bdbdbd";
  // Cells of an op whose baseline is still learning: samples, but no slowdown judged (services/probe/history.py).
  var LEARNING = "#ececec";
  function heatColorscale(th) {
    return [[0, "#2166ac"], [zpos(0.7), "#92c5de"], [zpos(1), "#e6f5d0"], [zpos(th.warn), "#fdae61"],
            [zpos(th.crit), "#d7301f"], [1, "#67000d"]];
  }

  // Interval c runs from data.time[c] to data.time[c] + interval_s: Plotly takes one more x than columns as
  // the cells' edges, so each cell is drawn from its start to its end (given the starts alone, it centres
  // each cell on its start and the picture is half an interval early).
  function cellEdges(data) {
    var x = times(data.time);
    if (x.length) { x.push(x[x.length - 1] + data.interval_s * 1000); }
    return x;
  }

  // From the first interval with data when the window starts before the probe did (a week's axis with
  // one hour of data at its right end is a grey band), else the whole window.
  function historyRange(data, edges) {
    var columns = edges.length - 1;
    var first = columns;
    data.targets.forEach(function (t) {
      t.slowdown.forEach(function (row, o) {  // a learning op's cells hold samples too, only not judged
        var learns = t.learning[data.ops[o]];
        var c = row.findIndex(function (v, k) { return v !== null || (learns && t.count[o][k] > 0); });
        if (c >= 0 && c < first) { first = c; }
      });
    });
    if (first <= 0 || first >= columns) { return undefined; }
    return [edges[first], edges[columns]];
  }

  function drawHistory(data) {
    return [Promise.all(drawHeatmaps(data, Plotly.newPlot)).then(function () {
      return loadChanges("history", data).then(function (ch) {
        if (ch !== null) { data.changes = ch; return Promise.all(drawHeatmaps(data, Plotly.react)); }
      });
    })];
  }

  // plot: Plotly.newPlot, then Plotly.react once the marks arrive (uirevision keeps a zoom made meanwhile)
  function drawHeatmaps(data, plot) {
    var jobs = [];
    var x = cellEdges(data);
    var range = historyRange(data, x);
    var ticks = [0.5, 1, 2, 5, 10, 20, 50, 100];
    data.targets.forEach(function (t, i) {
      var el = document.getElementById("heatmap-" + i);
      if (!el) { return; }
      var z = t.slowdown.map(function (row) {
        return row.map(function (v) { return v === null || v <= 0 ? null : Math.log10(v); });
      });
      var custom = t.slowdown.map(function (row, o) {
        return row.map(function (v, c) {
          return [v === null ? "no data" : v.toFixed(2) + "×", t.count[o][c], t.timeouts[o][c],
                  data.time[c].replace("T", " ").replace(/\.000Z$|Z$/, "")];
        });
      });
      var learning = t.slowdown.map(function (row, o) {
        return row.map(function (v, c) { return t.learning[data.ops[o]] && t.count[o][c] > 0 ? 1 : null; });
      });
      var learningTrace = {type: "heatmap", x: x, y: data.ops, z: learning, customdata: custom, name: "learning",
                           meta: "learning", zmin: 0, zmax: 1, showscale: false, xgap: 0, ygap: 1,
                           colorscale: [[0, LEARNING], [1, LEARNING]],
                           hovertemplate: "%{y} from %{customdata[3]}<br>learning the baseline: not judged" +
                                          "<br>n = %{customdata[1]}, timeouts %{customdata[2]}<extra></extra>"};
      var learningLabels = data.ops.filter(function (op) { return t.learning[op]; }).map(function (op) {
        return {xref: "paper", x: 0.5, yref: "y", y: op, text: "learning the baseline", showarrow: false,
                font: {size: 11, color: "#333"}};
      });
      var marks = (data.changes ? data.changes.points : []).filter(function (c) { return c.target === t.target; });
      var markTrace = {type: "scatter", mode: "markers", name: "level change", meta: "change", showlegend: false,
                       x: marks.map(function (c) { return ms(c.time); }), y: marks.map(function (c) { return c.op; }),
                       customdata: marks.map(changeHover),
                       marker: {symbol: "diamond", size: 12, color: "#fff", line: {width: 2, color: "#000"}},
                       hovertemplate: "%{y} " + CHANGE_HOVER + "<extra></extra>"};
      var rowLines = marks.map(function (c) {
        var row = data.ops.indexOf(c.op);
        return {type: "line", xref: "x", x0: ms(c.time), x1: ms(c.time), yref: "y", y0: row - 0.5, y1: row + 0.5,
                line: {width: 2, color: "#000"}};
      });
      jobs.push(plot(el, [{
        type: "heatmap", x: x, y: data.ops, z: z, customdata: custom, zmin: ZMIN, zmax: ZMAX,
        colorscale: heatColorscale(data.thresholds), xgap: 0, ygap: 1,
        colorbar: {title: {text: "slowdown"}, tickvals: ticks.map(Math.log10), ticktext: ticks.map(function (v) { return v + "×"; })},
        hovertemplate: "%{y} from %{customdata[3]}<br>slowdown %{customdata[0]}<br>n = %{customdata[1]}, timeouts %{customdata[2]}<extra></extra>"
      }].concat(learningLabels.length ? [learningTrace] : [], marks.length ? [markTrace] : []),
          {height: 290, margin: {l: 80, r: 12, t: 8, b: 56}, font: FONT, annotations: learningLabels,
           plot_bgcolor: NO_DATA, shapes: rowLines, showlegend: false, uirevision: "history",
           xaxis: {type: "date", title: {text: "time (UTC); each cell from its interval's start to its end", standoff: 16}, automargin: true, range: range},
           yaxis: {autorange: "reversed", type: "category", categoryarray: data.ops}}, CONFIG));
    });
    return jobs;
  }

  // ---------------------------------------------------------------- pages in their own scripts
  // A page's script (static/<page>.js, loaded before this one) sets window.ioweatherPages[slug] to
  // function (data, lib) returning the Plotly promises; lib holds the shared pieces below.
  // Plotly interprets a few HTML tags in every string it draws; labels from data go through
  // lib.text, which turns <, > and & into entities that Plotly shows as the characters themselves.
  function plotText(s) {
    return String(s === null || s === undefined ? "" : s)
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  // Little data (issue 30): an axis takes the data's own range and unit. Plotly's defaults for a
  // single value or none drew seven ticks all reading "340ms", a 30-day axis around one point and a
  // -1…1 axis with nothing on it.
  function largest() {  // the largest finite value of the lists given (nested lists too), or 0
    var top = 0;
    Array.prototype.forEach.call(arguments, function walk(v) {
      if (Array.isArray(v)) { v.forEach(walk); } else if (v !== null && isFinite(v)) { top = Math.max(top, Math.abs(v)); }
    });
    return top;
  }
  // A value axis from 0: its range is left to Plotly when there is something to show, [0, 1]
  // without ticks when every value is 0 or missing (said by `emptyNote`).
  function valueAxis(title, top, extra) {
    var axis = Object.assign({title: {text: title}, rangemode: "tozero"}, extra || {});
    if (!(top > 0)) { Object.assign(axis, {range: [0, 1], showticklabels: false, autorange: false}); }
    return axis;
  }
  function emptyNote(text) {
    return {text: text, xref: "paper", yref: "paper", x: 0.5, y: 0.5, showarrow: false, font: {size: 13, color: "#666"}};
  }
  // A count axis (runs, jobs): whole numbers only.
  function countAxis(title, top) {
    return {title: {text: title}, rangemode: "tozero", tickformat: ",d",
            dtick: top <= 10 ? 1 : undefined, range: top <= 10 ? [0, Math.max(1, top) + 0.5] : undefined};
  }
  // A time axis around the times given (ms): one distinct time gets an hour either side, not Plotly's
  // default span; several, or none, are left to Plotly (undefined).
  function timeRange(x) {
    var t = x.filter(function (v) { return v !== null && isFinite(v); });
    if (!t.length) { return undefined; }
    var lo = Math.min.apply(null, t), hi = Math.max.apply(null, t);
    return hi > lo ? undefined : [lo - 3600e3, hi + 3600e3];
  }
  function rate(bps) {  // bytes/s as units.format_bytes writes sizes, per second
    var units = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "PiB/s"], v = bps, i = 0;
    if (bps === null || !isFinite(bps)) { return "–"; }
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return (i === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + units[i];
  }
  var LIB = {CONFIG: CONFIG, FONT: FONT, ms: ms, times: times, text: plotText, ratioAxis: ratioAxis,
             secondsAxis: secondsAxis, byteUnit: byteUnit, secs: secs, largest: largest, valueAxis: valueAxis,
             emptyNote: emptyNote, countAxis: countAxis, timeRange: timeRange, rate: rate};

  // ---------------------------------------------------------------- main
  function main() {
    var node = document.getElementById("page-data");
    var data = JSON.parse(node.textContent);
    var page = document.body.dataset.page;
    var extra = (window.ioweatherPages || {})[page];
    var draw = {status: drawStatus, timeline: drawTimeline, history: drawHistory}[page] ||
               (extra && function (d) { return extra(d, LIB); });
    if (!draw || data.message || data.no_data || !window.Plotly) {  // no_data: fs_none.html, nothing to draw
      // without Plotly (it failed to load) the change table is still filled
      var table = (page === "timeline" || page === "history") && !data.message ? loadChanges(page, data) : null;
      Promise.resolve(table).then(function () { document.body.dataset.plotsReady = "1"; });
      return;
    }
    Promise.all(draw(data)).then(function () { document.body.dataset.plotsReady = "1"; });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", main);
  } else {
    main();
  }
})();

/*
 * report.js - draws the HTML report (src/report/html_page.c) from the
 * page's three JSON blobs: gp-report (the JSON report, docs/json-schema.md),
 * gp-text (the text report) and gp-timeline (html_timeline.c's bounded
 * summary).  Promises: fetches nothing; every figure comes from the blobs
 * (the JSON report's own numbers, raw values kept in data-* attributes);
 * session text only ever reaches the page through textContent or
 * attributes, never as markup; a script error is written into #gp-errors
 * (the browser test asserts it stays empty).
 */
(function () {
  'use strict';
  var errors = [];
  function fail(msg) {
    errors.push(msg);
    var box = document.getElementById('gp-errors');
    if (box) {
      box.textContent = errors.join('\n');
      box.className = 'shown';
    }
  }
  window.onerror = function (msg, src, line) {
    fail(String(msg) + ' (report.js line ' + line + ')');
  };

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (attrs[k] === null || attrs[k] === undefined) continue;
        if (k === 'text') e.textContent = String(attrs[k]);
        else if (k === 'cls') e.className = attrs[k];
        else e.setAttribute(k, String(attrs[k]));
      }
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }
  function svgEl(tag, attrs) {
    var e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }

  /* -------------------------------------------------------- numbers */
  function na(v) { return v === null || v === undefined; }
  function fmtNs(ns) {
    if (na(ns)) return 'n/a';
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' us';
    return ns + ' ns';
  }
  function fmtBytes(b) {
    if (na(b)) return 'n/a';
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(2) : String(b)) + ' ' + u[i];
  }
  function fmtNum(v, d) {
    if (na(v)) return 'n/a';
    if (typeof v !== 'number') return String(v);
    return Number.isInteger(v) ? String(v) : v.toFixed(d === undefined ? 2 : d);
  }
  function fmtKey(key, v) {
    if (na(v)) return 'n/a';
    if (typeof v !== 'number') return typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (/_ns$/.test(key)) return fmtNs(v);
    if (/_bytes$/.test(key)) return fmtBytes(v);
    if (/_mw$/.test(key)) return (v / 1000).toFixed(1) + ' W';
    if (/_pct$/.test(key)) return v.toFixed(1) + ' %';
    if (/_j$/.test(key)) return v.toFixed(1) + ' J';
    return fmtNum(v);
  }

  /* -------------------------------------------------------- tables */
  /* A table of rows (objects), sortable by a click on a header; cols: the
   * keys shown (default: the first row's).  Raw values in data-value. */
  function table(rows, cols, opts) {
    opts = opts || {};
    if (!rows || !rows.length) return el('p', {cls: 'none', text: 'none'});
    cols = cols || Object.keys(rows[0]);
    var tbody = el('tbody');
    var state = {col: null, dir: 1};
    function fill(list) {
      tbody.textContent = '';
      list.forEach(function (r) {
        var tr = el('tr', opts.rowAttrs ? opts.rowAttrs(r) : null);
        cols.forEach(function (c) {
          var v = r[c], td;
          if (Array.isArray(v) && v.length && typeof v[0] === 'object' && opts.depth !== 1) {
            td = el('td', null, [table(v, null, {depth: 1})]);
          } else {
            td = el('td', {'data-key': c, 'data-value': (v !== null && typeof v === 'object') ?
                           JSON.stringify(v) : v, text: fmtKey(c, v)});
            if (typeof v === 'number') td.className = 'num';
          }
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
    }
    var head = el('tr');
    cols.forEach(function (c) {
      var th = el('th', {text: c.replace(/_/g, ' '), title: 'sort by ' + c, 'data-col': c});
      th.addEventListener('click', function () {
        state.dir = state.col === c ? -state.dir : (typeof rows[0][c] === 'number' ? -1 : 1);
        state.col = c;
        var sorted = rows.slice().sort(function (a, b) {
          var x = a[c], y = b[c];
          if (na(x)) return 1;
          if (na(y)) return -1;
          if (typeof x === 'number' && typeof y === 'number') return (x - y) * state.dir;
          return String(x).localeCompare(String(y)) * state.dir;
        });
        fill(sorted);
      });
      head.appendChild(th);
    });
    fill(rows);
    return el('table', {cls: 'grid' + (opts.cls ? ' ' + opts.cls : '')},
              [el('thead', null, [head]), tbody]);
  }

  /* Every array of objects in obj as a titled table; scalars as a list. */
  function generic(obj) {
    var box = el('div');
    if (Array.isArray(obj)) { box.appendChild(table(obj)); return box; }
    var dl = el('dl', {cls: 'kv'});
    Object.keys(obj).forEach(function (k) {
      var v = obj[k];
      if (Array.isArray(v) && v.length && typeof v[0] === 'object') {
        box.appendChild(el('h3', {text: k.replace(/_/g, ' ')}));
        box.appendChild(table(v));
      } else if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        box.appendChild(el('h3', {text: k.replace(/_/g, ' ')}));
        box.appendChild(generic(v));
      } else {
        dl.appendChild(el('dt', {text: k.replace(/_/g, ' ')}));
        dl.appendChild(el('dd', {'data-key': k, 'data-value': Array.isArray(v) ? JSON.stringify(v) : v,
                                 text: Array.isArray(v) ? v.join(', ') : fmtKey(k, v)}));
      }
    });
    box.insertBefore(dl, box.firstChild);
    return box;
  }

  function section(app, id, title, kids) {
    var s = el('section', {id: id}, [el('h2', {text: title})].concat(kids));
    app.appendChild(s);
    return s;
  }

  /* -------------------------------------------------------- headline */
  function card(label, value, key, raw) {
    return el('div', {cls: 'card'}, [el('div', {cls: 'label', text: label}),
      el('div', {cls: 'value', 'data-key': key, 'data-value': raw, text: value})]);
  }
  function headline(app, R, text) {
    var s = R.session || {}, sum = R.summary || {};
    var devs = (s.devices || []).map(function (d) { return 'GPU ' + d.id + ' ' + (d.name || 'n/a'); });
    var busy = (sum.gpu_busy || []).map(function (b) {
      return (na(b.device_id) ? 'no device' : 'GPU ' + b.device_id) + ': ' + fmtNs(b.busy_ns) +
             ' (' + fmtNum(b.busy_pct, 1) + ' %)';
    });
    document.title = 'gpu-profile report: ' + (s.app || 'session') + ' ' + (s.session_id || '');
    app.appendChild(el('header', null, [
      el('h1', {text: 'gpu-profile report: ' + (s.app || 'n/a')}),
      el('p', {cls: 'sub', text: 'session ' + (s.session_id || 'n/a') + ' on ' + (s.hostname || 'n/a') +
               ', pid ' + fmtNum(s.pid) + ', engine ' + (s.profiling_engine || 'n/a') +
               (s.crashed ? ', CRASHED (no shutdown record)' : '') +
               (s.recording ? ', still recording' : '')})]));
    var cards = el('div', {cls: 'cards', id: 'gp-headline'}, [
      card('Duration', fmtNs(s.duration_ns), 'duration_ns', s.duration_ns),
      card('GPUs', devs.length ? devs.join('; ') : 'none listed', 'gpus', devs.length),
      card('GPU busy', busy.length ? busy.join('; ') : 'n/a', 'busy', null),
      card('Kernel time', fmtNs(sum.kernel_time_ns) + ' in ' + fmtNum(sum.kernel_launches) + ' launches',
           'kernel_time_ns', sum.kernel_time_ns),
      card('Copies', fmtBytes(sum.memcpy_bytes) + ' in ' + fmtNum(sum.memcpy_count) + ', ' +
           fmtNs(sum.memcpy_time_ns), 'memcpy_bytes', sum.memcpy_bytes),
      card('Energy', na(sum.energy_j) ? 'n/a' : sum.energy_j.toFixed(1) + ' J' +
           (sum.energy_source ? ' (' + sum.energy_source + ')' : ''), 'energy_j', sum.energy_j),
      card('Syncs', fmtNum(sum.synchronizations) + ', ' + fmtNs(sum.synchronization_time_ns),
           'synchronization_time_ns', sum.synchronization_time_ns)]);
    app.appendChild(cards);
    /* The verdict lines: the text report's summary, word for word. */
    var at = text.search(/^report /m);
    var summary = text.slice(at < 0 ? 0 : at).replace(/^\n+/, '').split(/\n\n/)[0];
    app.appendChild(el('pre', {cls: 'verdict', id: 'gp-verdict', text: summary}));
  }

  /* -------------------------------------------------------- device charts */
  var SERIES = [['util_gpu_pct', 'util.gpu %', 1], ['sm_active_pct', 'SM active %', 2],
                ['mem_used_mib', 'memory used MiB', 3], ['power_w', 'power W', 4],
                ['temp_c', 'temperature C', 5]];
  function lineChart(points, col, label, durNs) {
    var W = 420, H = 110, P = 28;
    var pts = points.filter(function (p) { return !na(p[col]); });
    var svg = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, cls: 'chart',
                            role: 'img', 'aria-label': label});
    if (!pts.length) {
      var t = svgEl('text', {x: P, y: H / 2});
      t.textContent = label + ': not recorded';
      svg.appendChild(t);
      return svg;
    }
    var ymax = Math.max.apply(null, pts.map(function (p) { return p[col]; }));
    if (/%/.test(label)) ymax = Math.max(ymax, 100);
    if (!(ymax > 0)) ymax = 1;
    var xmax = Math.max(durNs || 0, pts[pts.length - 1][0]) || 1;
    var path = pts.map(function (p, i) {
      var x = P + (W - P - 4) * p[0] / xmax, y = H - 16 - (H - 28) * p[col] / ymax;
      return (i ? 'L' : 'M') + x.toFixed(1) + ' ' + y.toFixed(1);
    }).join(' ');
    svg.appendChild(svgEl('path', {d: path, fill: 'none', stroke: '#2a6fdb', 'stroke-width': 1.5}));
    if (pts.length < 3) {
      pts.forEach(function (p) {
        svg.appendChild(svgEl('circle', {cx: P + (W - P - 4) * p[0] / xmax,
                                         cy: H - 16 - (H - 28) * p[col] / ymax, r: 3, fill: '#2a6fdb'}));
      });
    }
    svg.appendChild(svgEl('line', {x1: P, y1: H - 16, x2: W - 4, y2: H - 16, stroke: '#999'}));
    var tl = svgEl('text', {x: 2, y: 12, cls: 'axis'});
    tl.textContent = label + ' (max axis ' + fmtNum(ymax, 1) + ')';
    svg.appendChild(tl);
    var tx = svgEl('text', {x: W - 4, y: H - 3, 'text-anchor': 'end', cls: 'axis'});
    tx.textContent = fmtNs(xmax);
    svg.appendChild(tx);
    return svg;
  }
  // "Busy but stuck" as the text report says it: n/a (unknown) where the
  // session had no util.gpu, GPM SM activity and power in one sample.
  function stuckLine(st) {
    if (!st) return 'Busy but stuck: n/a (no sample had util.gpu, GPM SM activity and power)';
    var r = st.rule;
    var head = 'Busy but stuck: ' + (st.stretch_count ? st.stretch_count + ' stretch' +
      (st.stretch_count === 1 ? '' : 'es') : 'none') + ' in ' + st.known_samples +
      ' samples (util.gpu >= ' + r.util_min_pct + '%, SM active <= ' + r.sm_active_max_pct +
      '%, power <= ' + r.power_idle_ratio + ' x idle, ' + r.after_samples + ' in a row)';
    return head + st.stretches.map(function (k) {
      return '; at +' + (k.start_offset_s === null ? '?' : k.start_offset_s.toFixed(3)) +
        ' s for ' + k.duration_s.toFixed(3) + ' s';
    }).join('');
  }

  function devices(app, R, T) {
    var devs = R.devices || [];
    if (!devs.length && !(T && T.series.devices.length)) return;
    var kids = [];
    var sessT0 = T ? T.series.t0_ns : 0;
    devs.forEach(function (d) {
      var ser = T ? T.series.devices.filter(function (x) { return x.device_id === d.device_id; })[0] : null;
      var charts = el('div', {cls: 'charts'});
      if (ser) {
        var dur = ser.points.length ? ser.points[ser.points.length - 1][0] : 0;
        SERIES.forEach(function (s) { charts.appendChild(lineChart(ser.points, s[2], s[1], dur)); });
      }
      kids.push(el('div', {cls: 'device', 'data-device': d.device_id}, [
        el('h3', {text: 'GPU ' + d.device_id + ' ' + (d.name || '')}),
        table([d], ['samples', 'util_gpu_mean_pct', 'util_gpu_max_pct', 'util_mem_mean_pct',
                    'mem_used_max_bytes', 'mem_total_bytes', 'temp_max_c', 'power_mean_mw',
                    'power_max_mw', 'clock_sm_mean_mhz', 'energy_j'], {cls: 'means'}),
        el('p', {cls: 'stuck', text: stuckLine(d.stuck)}),
        charts]));
    });
    void sessT0;
    section(app, 'gp-devices', 'GPUs over time', kids.concat([el('p', {cls: 'note',
      text: 'Means per time bucket (at most 400 points per GPU); the table gives the report\'s figures.'})]));
  }

  /* -------------------------------------------------------- hotspots */
  function hotspots(app, R) {
    var h = R.hotspots;
    if (!h || !h.kernels || !h.kernels.length) {
      section(app, 'gp-hotspots', 'Kernel hotspots', [el('p', {cls: 'none', text: 'no kernels recorded'})]);
      return;
    }
    var bars = el('div', {cls: 'bars'});
    h.kernels.forEach(function (k) {
      bars.appendChild(el('div', {cls: 'bar-row'}, [
        el('div', {cls: 'bar-label', title: k.name || '', text: k.name || 'kernel ' + k.kernel_id}),
        el('div', {cls: 'bar-track'}, [el('div', {cls: 'bar', style: 'width:' +
          Math.max(0, Math.min(100, k.time_pct || 0)).toFixed(2) + '%'})]),
        el('div', {cls: 'bar-value', text: fmtNs(k.total_ns) + ' (' + fmtNum(k.time_pct, 1) + ' %)'})]));
    });
    var t = table(h.kernels, ['rank', 'name', 'count', 'total_ns', 'time_pct', 'mean_ns', 'p50_ns',
                              'p99_ns', 'min_ns', 'max_ns', 'grid', 'block', 'registers_max',
                              'occupancy_pct', 'limiting_resource', 'op', 'line'],
                  {cls: 'hot', rowAttrs: function (k) {
                    /* what launched it: its op and Python (or program) line */
                    return {'data-kernel': k.name, 'data-total-ns': k.total_ns, 'data-count': k.count,
                            'data-op': k.op || '', 'data-line': k.line || ''};
                  }});
    var kids = [bars, t];
    /* report --by op|line: the launches grouped, above the kernels */
    if (h.by && h.by !== 'kernel' && h.groups) {
      kids.unshift(el('h3', {text: 'by ' + h.by + ' (' + h.groups.length + ' of ' + h.group_count +
                             '; ' + fmtNum(h.grouped_launches) + ' launches)'}),
                   table(h.groups, ['name', 'launches', 'gpu_ns', 'kernels'], {cls: 'by'}),
                   el('h3', {text: 'by kernel'}));
    }
    section(app, 'gp-hotspots', 'Kernel hotspots (' + h.kernels.length + ' of ' + h.distinct_kernels +
            ' kernels; click a column to sort)', kids);
  }

  /* -------------------------------------------------------- framework ops */
  function ops(app, R) {
    var o = R.ops;
    if (!o || !o.ops || !o.ops.length) return;
    section(app, 'gp-ops', 'Framework ops (' + o.ops.length + ' of ' + o.count + '; ' +
            fmtNum(o.launches) + ' launches, ' + fmtNs(o.gpu_ns) + ')',
            [table(o.ops, ['name', 'kind', 'id', 'launches', 'gpu_ns', 'kernels'],
                   {rowAttrs: function (r) { return {'data-op': r.name, 'data-gpu-ns': r.gpu_ns}; }})]);
  }

  /* -------------------------------------------------------- timeline */
  var COLORS = {kernel: '#2a6fdb', memcpy: '#d9822b', graph: '#7b4bd6', sync: '#c23030',
                scope: '#2f9e6e', nvtx: '#8a8a2a'};
  function timeline(app, T) {
    if (!T || !T.tracks.length) return;
    var span = T.bucket_ns * T.buckets;
    var end = 0;
    T.tracks.forEach(function (tr) {
      tr.cells.forEach(function (c) { end = Math.max(end, c[1] + c[2]); });
    });
    span = Math.max(Math.min(span, end), 1);
    var ROW = 22, LBL = 170, W = 1200;
    var H = T.tracks.length * ROW + 24;
    var canvas = el('canvas', {width: W, height: H, id: 'gp-timeline-canvas'});
    var tip = el('div', {cls: 'tip'});
    var view = {a: 0, b: span};
    /* Times said from the session's start (job_start), as the report does. */
    var off = T.origin_ns && T.origin_ns <= T.t0_ns ? T.t0_ns - T.origin_ns : 0;
    function draw() {
      var g = canvas.getContext('2d');
      if (!g) return;
      g.clearRect(0, 0, W, H);
      g.font = '11px sans-serif';
      var scale = (W - LBL) / (view.b - view.a);
      T.tracks.forEach(function (tr, i) {
        var y = i * ROW;
        g.fillStyle = i % 2 ? '#f6f7f9' : '#ffffff';
        g.fillRect(0, y, W, ROW);
        g.fillStyle = '#333';
        g.fillText(tr.label, 4, y + 14);
        tr.cells.forEach(function (c) {
          var x0 = LBL + (c[1] - view.a) * scale, x1 = LBL + (c[1] + c[2] - view.a) * scale;
          if (x1 < LBL || x0 > W) return;
          /* density: the bucket's summed time under the event */
          var bx0 = LBL + (c[0] * T.bucket_ns - view.a) * scale, bw = T.bucket_ns * scale;
          var dens = Math.min(1, c[6] / T.bucket_ns);
          g.fillStyle = 'rgba(0,0,0,' + (0.08 + 0.3 * dens).toFixed(2) + ')';
          g.fillRect(Math.max(LBL, bx0), y + ROW - 5, Math.max(1, bw), 4);
          g.fillStyle = COLORS[c[3]] || '#555';
          g.fillRect(Math.max(LBL, x0), y + 3, Math.max(1, Math.min(W, x1) - Math.max(LBL, x0)), ROW - 9);
        });
      });
      g.fillStyle = '#333';
      g.fillText(fmtNs(view.a + off), LBL, H - 6);
      var r = fmtNs(view.b + off);
      g.fillText(r, W - g.measureText(r).width - 4, H - 6);
    }
    function at(ev) {
      var rect = canvas.getBoundingClientRect();
      var x = (ev.clientX - rect.left) * W / rect.width, y = (ev.clientY - rect.top) * H / rect.height;
      return {x: x, y: y, t: view.a + (x - LBL) * (view.b - view.a) / (W - LBL)};
    }
    canvas.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var p = at(ev);
      if (p.x < LBL) return;
      var f = ev.deltaY < 0 ? 0.8 : 1.25;
      var a = p.t - (p.t - view.a) * f, b = p.t + (view.b - p.t) * f;
      view.a = Math.max(0, a);
      view.b = Math.min(span, Math.max(view.a + 1000, b));
      draw();
    }, {passive: false});
    var drag = null;
    canvas.addEventListener('mousedown', function (ev) { drag = {x: at(ev).x, a: view.a, b: view.b}; });
    window.addEventListener('mouseup', function () { drag = null; });
    canvas.addEventListener('mousemove', function (ev) {
      var p = at(ev);
      if (drag) {
        var dt = (p.x - drag.x) * (drag.b - drag.a) / (W - LBL);
        var w = drag.b - drag.a;
        view.a = Math.max(0, Math.min(span - w, drag.a - dt));
        view.b = view.a + w;
        draw();
        return;
      }
      var tr = T.tracks[Math.floor(p.y / ROW)];
      var hit = null;
      if (tr) tr.cells.forEach(function (c) { if (p.t >= c[1] && p.t <= c[1] + c[2]) hit = c; });
      tip.textContent = hit ? hit[4] + ' (' + hit[3] + ') at ' + fmtNs(hit[1]) + ', ' + fmtNs(hit[2]) +
        (hit[5] > 1 ? '; ' + hit[5] + ' events in this bucket, ' + fmtNs(hit[6]) : '') +
        (hit[7] ? '; op ' + hit[7] : '') + (hit[8] ? '; line ' + hit[8] : '') : '';
    });
    canvas.addEventListener('dblclick', function () { view.a = 0; view.b = span; draw(); });
    section(app, 'gp-timeline', 'Timeline', [
      el('p', {cls: 'note', text: 'Session pid ' + fmtNum(T.pid) + ': ' + T.events + ' events in ' +
               T.tracks.length + ' tracks' + (T.events_not_shown ? ' (' + T.events_not_shown +
               ' on tracks past the limit not shown)' : '') + '. Each of ' + T.buckets +
               ' buckets of ' + fmtNs(T.bucket_ns) + ' keeps its longest event; the grey strip ' +
               'is the bucket\'s busy share. Wheel: zoom, drag: pan, double click: all.'}),
      el('div', {cls: 'canvas-box'}, [canvas]), tip]);
    draw();
  }

  /* -------------------------------------------------------- the rest */
  function optional(app, R, key, id, title) {
    var v = R[key];
    if (v === null || v === undefined || (Array.isArray(v) && !v.length)) return;
    section(app, id, title, [generic(v)]);
  }

  function main() {
    var R = JSON.parse(document.getElementById('gp-report').textContent);
    var text = JSON.parse(document.getElementById('gp-text').textContent);
    var T = JSON.parse(document.getElementById('gp-timeline').textContent);
    var app = document.getElementById('gp-app');
    app.textContent = '';
    headline(app, R, text);
    if (R.run) {
      section(app, 'gp-run', 'Run ' + (R.run.run_id || 'n/a') + ': every process', [
        table(R.run.processes || []),
        el('h3', {text: 'stragglers'}), table(R.run.stragglers || [])]);
    }
    devices(app, R, T);
    hotspots(app, R);
    ops(app, R);
    timeline(app, T);
    if (R.scopes && R.scopes.items && R.scopes.items.length)
      section(app, 'gp-scopes', 'Scopes', [table(R.scopes.items)]);
    if (R.memcpy && R.memcpy.length) section(app, 'gp-memcpy', 'Copies', [table(R.memcpy)]);
    optional(app, R, 'stalls', 'gp-stalls', 'PC sampling: stall reasons, kernels, hot source lines');
    optional(app, R, 'sass_metrics', 'gp-sass', 'SASS metrics');
    optional(app, R, 'perf_metrics', 'gp-perf', 'Perf metrics');
    optional(app, R, 'kernel_perf_metrics', 'gp-kperf', 'Range profiler: kernels');
    optional(app, R, 'scope_perf_metrics', 'gp-sperf', 'Range profiler: scopes');
    optional(app, R, 'host', 'gp-host', 'Host');
    optional(app, R, 'capture', 'gp-capture', 'What was captured (and the fall-backs)');
    optional(app, R, 'read', 'gp-read', 'What the reader read');
    section(app, 'gp-text-report', 'The text report', [el('details', null, [
      el('summary', {text: 'gpu-profile report, as text'}), el('pre', {text: text})])]);
  }
  try {
    main();
  } catch (e) {
    fail(String(e && e.stack ? e.stack : e));
  }
  document.body.setAttribute('data-rendered', errors.length ? 'error' : 'ok');
})();

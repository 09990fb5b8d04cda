// collect's congestion pages: the episodes timeline (#/congestion), the
// node x time heatmap of queue occupancy (#/heatmap) and one episode
// (#/episode/ID), each drawn from its own JSON under /api/congestion
// (docs/congestion.md). Times are the reports' clock: ms since the epoch.
// Uses app.js's esc, ns, api and facts.
"use strict";

const Congestion = (() => {
  // The spans offered, ms; the URL keeps the one chosen (?span=).
  const SPANS = [[1000, "1 s"], [10000, "10 s"], [60000, "1 min"], [600000, "10 min"], [3600000, "1 h"], [86400000, "1 day"]];

  // A time of the reports' clock as a clock time here, to the ms.
  function at(ms) {
    const d = new Date(ms);
    return d.toLocaleTimeString([], {hour12: false}) + "." + String(Math.floor(ms) % 1000).padStart(3, "0");
  }

  function spanName(ms) {
    const known = SPANS.find(([v]) => v === ms);
    if (known) return known[1];
    return ms < 1000 ? ms + " ms" : ms < 120000 ? (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s" : Math.round(ms / 60000) + " min";
  }

  function spanPicker(route, span, extra) {
    return '<div class="spans">' + SPANS.map(([v, name]) =>
      `<a href="#/${route}?span=${v}${extra || ""}" class="${v === span ? "here" : ""}" data-span="${v}">${name}</a>`).join("") + "</div>";
  }

  function queueName(q) {
    return `${esc(q.node_name != null ? q.node_name : String(q.node))} q${q.queue}`;
  }

  function flowLink(f) {
    if (!f) return "–";
    return f.flow != null ? `<a href="#/flow/${f.flow}" class="flow-link">${esc(f.name)}</a>` : esc(f.name);
  }

  function occupancy(v, unit) {
    if (v == null) return "–";
    return unit && unit !== "unknown" ? `${v} ${esc(unit)}` : String(v);
  }

  // The timeline: a row per queue with an episode in the span, each
  // episode a bar from its start to its end (to now while under way).
  async function timeline(query) {
    const span = Number(query.get("span")) || 60000;
    const t = await api(`congestion?span_ms=${span}&limit=500`);
    const w = 1100, left = 170, rowH = 20, top = 8, bottom = 26;
    const x0 = t.from_ms, x1 = Math.max(t.clock_ms, x0 + 1);
    const x = v => left + (Math.min(Math.max(v, x0), x1) - x0) / (x1 - x0) * (w - left - 10);
    const h = top + t.queues.length * rowH + bottom;
    const rows = t.queues.map((q, i) => {
      const y = top + i * rowH;
      const bars = q.episodes.map(([id, start, end, peak]) => {
        const bx = x(start), bw = Math.max(3, x(end == null ? x1 : end) - bx);
        return `<a href="#/episode/${id}"><g class="bar${end == null ? " open" : ""}" data-episode="${id}" data-queue="${q.node}/${q.queue}">` +
          `<title>${esc(at(start))}${end == null ? ", under way" : " – " + esc(at(end))}, peak ${occupancy(peak, q.unit)}</title>` +
          `<rect x="${bx.toFixed(1)}" y="${y + 3}" width="${bw.toFixed(1)}" height="${rowH - 6}" rx="2"/></g></a>`;
      }).join("");
      return `<g class="row"><line class="grid" x1="${left}" x2="${w - 10}" y1="${y + rowH / 2}" y2="${y + rowH / 2}"/>` +
        `<a href="#/node/${q.node}"><text x="${left - 8}" y="${y + rowH / 2 + 4}" text-anchor="end">${queueName(q)}</text></a>${bars}</g>`;
    }).join("");
    const axis = `<line class="axis" x1="${left}" y1="${h - bottom}" x2="${w - 10}" y2="${h - bottom}"/>` +
      `<text x="${left}" y="${h - 8}">${esc(at(x0))}</text><text x="${w - 10}" y="${h - 8}" text-anchor="end">${esc(at(x1))}</text>`;
    const chart = t.queues.length ? `<svg id="episodes-chart" class="episodes" viewBox="0 0 ${w} ${h}" width="100%">${rows}${axis}</svg>`
      : `<p class="muted" id="episodes-none">No congestion episode in the last ${spanName(t.span_ms)}.</p>`;
    const table = t.newest.map(e => `<tr class="row episode" data-episode="${e.id}" onclick="location.hash='#/episode/${e.id}'">` +
      `<td><a href="#/episode/${e.id}">${e.id}</a></td><td>${queueName(e)}</td><td>${esc(at(e.start_ms))}</td>` +
      `<td class="num">${e.end_ms == null ? '<span class="badge open">under way</span>' : esc(ns(e.duration_ns))}</td>` +
      `<td class="num">${occupancy(e.peak_occupancy, e.unit)}</td><td class="num">${esc(ns(e.peak_latency_ns))}</td>` +
      `<td class="num">${e.packets}</td><td>${flowLink(e.culprit)}</td></tr>`).join("");
    const shown = t.shown < t.in_span ? ` <span class="muted">(the newest ${t.shown} of ${t.in_span})</span>` : "";
    return `<h2 id="episodes-title">Congestion episodes <span class="muted">(${t.in_span} in the last ${spanName(t.span_ms)}, ${t.open} under way)</span>${shown}</h2>` +
      spanPicker("congestion", span) + chart +
      (table ? `<h3>Newest episodes</h3><table id="episodes"><tr><th>#</th><th>queue</th><th>start</th><th class="num">duration</th>` +
        `<th class="num">peak occupancy</th><th class="num">peak hop latency</th><th class="num">packets</th><th>top culprit</th></tr>${table}</table>` : "");
  }

  // A cell's colour: the most held against the node's threshold (green
  // calm, red at or over it), or against the most shown where the node
  // has none.
  function heat(v, scale) {
    if (v == null) return "#eceef2";
    const r = Math.min(v / Math.max(scale, 1), 1);
    return `hsl(${Math.round(120 * (1 - r))},${Math.round(55 + 25 * r)}%,${Math.round(78 - 36 * r)}%)`;
  }

  // The heatmap: a row per node, a column per slice of the span, each
  // cell the most the node's queues held; a click zooms into its column.
  async function heatmap(query) {
    const span = Number(query.get("span")) || 60000, end = query.get("end");
    const m = await api(`congestion/heatmap?span_ms=${span}` + (end ? `&end_ms=${end}` : ""));
    const w = 1100, left = 150, rowH = 16, top = 6, bottom = 26;
    const cw = (w - left - 10) / Math.max(m.columns, 1), h = top + m.rows.length * rowH + bottom;
    const most = Math.max(1, ...m.rows.map(r => r.peak || 0));
    const rows = m.rows.map((r, i) => {
      const y = top + i * rowH, scale = r.threshold != null ? r.threshold : most;
      const cells = r.cells.map((v, c) => `<rect class="cell" data-node="${r.node}" data-col="${c}"${v != null ? ` data-value="${v}"` : ""}` +
        ` x="${(left + c * cw).toFixed(1)}" y="${y}" width="${(cw + 0.4).toFixed(1)}" height="${rowH - 1}" fill="${heat(v, scale)}">` +
        `<title>${esc(at(m.from_ms + c * m.column_ms))}: ${v == null ? "no figure" : occupancy(v, r.unit)}</title></rect>`).join("");
      return `<g class="heat-row" data-node="${r.node}" data-peak="${r.peak == null ? "" : r.peak}"><a href="#/node/${r.node}">` +
        `<text x="${left - 8}" y="${y + rowH - 4}" text-anchor="end">${esc(r.node_name != null ? r.node_name : String(r.node))}</text></a>${cells}</g>`;
    }).join("");
    const axis = `<text x="${left}" y="${h - 8}">${esc(at(m.from_ms))}</text><text x="${w - 10}" y="${h - 8}" text-anchor="end">${esc(at(m.to_ms))}</text>`;
    const svg = m.rows.length ? `<svg id="heatmap" class="heatmap" viewBox="0 0 ${w} ${h}" width="100%" data-from="${m.from_ms}" data-column="${m.column_ms}">${rows}${axis}</svg>`
      : '<p class="muted">No queue figure yet.</p>';
    const resolution = {1: "1 ms", 1000: "1 s", 60000: "1 min"}[m.resolution_ms] || m.resolution_ms + " ms";
    const rowsShown = m.rows.length < m.nodes ? ` · the ${m.rows.length} of ${m.nodes} nodes nearest their threshold` : "";
    const live = end ? ` · <a href="#/heatmap?span=${span}" id="heat-live">back to live</a>` : " · live";
    return `<h2 id="heatmap-title">Queue occupancy by node <span class="muted">(${m.nodes} nodes, the last ${spanName(m.span_ms)})</span></h2>` +
      spanPicker("heatmap", span) +
      `<div class="legend" id="heat-legend">books' resolution ${resolution}, a column ${spanName(m.column_ms)}${live}${rowsShown} · ` +
      `each cell the most any queue of the node held, against its threshold <span class="heat-bar"></span> at or over it` +
      ` <span class="muted">· click a cell to zoom in</span></div>` + svg;
  }

  // An episode's queue across it: occupancy (and its threshold) over
  // time, the episode's span shaded.
  function curve(e) {
    const pts = e.curve;
    if (!pts.length) return '<p class="muted">No figure of the queue kept for it.</p>';
    const w = 700, h = 220, left = 60, bottom = 24;
    const t0 = pts[0][0], t1 = Math.max(pts[pts.length - 1][0], t0 + 1);
    const hi = Math.max(...pts.map(p => p[1]), e.threshold_occupancy || 0, 1);
    const x = t => left + (t - t0) / (t1 - t0) * (w - left - 10), y = v => 10 + (1 - v / hi) * (h - bottom - 10);
    const line = pts.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    const sx = x(Math.max(e.start_ms, t0)), ex = x(Math.min(e.end_ms == null ? t1 : e.end_ms, t1));
    const threshold = e.threshold_occupancy != null ? `<line class="threshold" x1="${left}" x2="${w - 10}" y1="${y(e.threshold_occupancy)}" y2="${y(e.threshold_occupancy)}"/>` : "";
    return `<svg id="episode-curve" class="chart" viewBox="0 0 ${w} ${h}" width="100%" data-peak="${Math.max(...pts.map(p => p[1]))}">` +
      `<rect class="span" x="${sx.toFixed(1)}" y="10" width="${Math.max(1, ex - sx).toFixed(1)}" height="${h - bottom - 10}"/>` +
      `<line class="axis" x1="${left}" y1="${h - bottom}" x2="${w - 10}" y2="${h - bottom}"/><line class="axis" x1="${left}" y1="10" x2="${left}" y2="${h - bottom}"/>` +
      `<text x="${left - 6}" y="14" text-anchor="end">${hi}</text><text x="${left - 6}" y="${h - bottom}" text-anchor="end">0</text>` +
      `<text x="${left}" y="${h - 6}">${esc(at(t0))}</text><text x="${w - 10}" y="${h - 6}" text-anchor="end">${esc(at(t1))}</text>` +
      threshold + `<polyline points="${line}"/></svg>`;
  }

  async function episode(id) {
    const e = await api("congestion/episodes/" + id);
    if (!e) return `<p>Episode ${esc(id)} is not in the view.</p>`;
    const state = e.end_ms == null ? '<span class="badge open">under way</span>' : `<span class="badge fresh">ended (${esc(e.ended)})</span>`;
    const culprits = e.culprits.map((c, i) => `<tr class="culprit"><td class="num">${i + 1}</td><td>${flowLink(c)}</td>` +
      `<td class="num">${c.packets}</td><td class="num">${c.bytes}</td><td class="num">${(100 * c.share).toFixed(1)}%</td></tr>`).join("");
    const victims = e.victims.map(v => `<tr class="victim"><td>${flowLink(v)}</td><td class="num">${esc(ns(v.latency_before_ns))}</td>` +
      `<td class="num">${esc(ns(v.latency_max_ns))}</td><td class="num">${v.rise == null ? "–" : "×" + v.rise.toFixed(2)}</td><td class="num">${v.packets}</td></tr>`).join("");
    const name = e.node_name != null ? e.node_name : String(e.node);
    return `<h2 id="episode-title">Episode ${e.id}: <a href="#/node/${e.node}">${esc(name)}</a> queue ${e.queue} ${state}</h2>` +
      facts([["start", esc(at(e.start_ms))], ["end", e.end_ms == null ? "–" : esc(at(e.end_ms))],
        ["duration", e.end_ms == null ? "under way" : esc(ns(e.duration_ns))], ["peak occupancy", occupancy(e.peak_occupancy, e.unit)],
        ["peak hop latency", esc(ns(e.peak_latency_ns))], ["packets", e.packets], ["bytes", e.bytes], ["flows", e.flows],
        ["opened by", esc(String(e.trigger).replace("_", " "))],
        ["threshold", e.threshold_occupancy != null ? occupancy(e.threshold_occupancy, e.unit) : esc(ns(e.threshold_latency_ns))]]) +
      `<h3>Queue occupancy across the episode <span class="muted">(shaded; dashed: the threshold)</span></h3>${curve(e)}` +
      `<div class="charts"><div><h3>Culprits <span class="muted">(by share of the reported packets)</span></h3>` +
      (culprits ? `<table id="culprits"><tr><th class="num">#</th><th>flow</th><th class="num">packets</th><th class="num">bytes</th><th class="num">share</th></tr>${culprits}</table>` : '<p class="muted">No reported packet crossed it.</p>') +
      (e.other_packets ? `<p class="muted">${e.other_packets} packets of flows past those followed.</p>` : "") +
      `</div><div><h3>Victims <span class="muted">(latency rose, at most a fair share)</span></h3>` +
      (victims ? `<table id="victims"><tr><th>flow</th><th class="num">latency before</th><th class="num">at most</th><th class="num">rise</th><th class="num">packets</th></tr>${victims}</table>` : '<p class="muted">No victim found.</p>') +
      `</div></div>`;
  }

  // A click on a heatmap cell: the tenth of the span around its column.
  function zoom(event) {
    const cell = event.target.closest("#heatmap rect.cell");
    if (!cell) return;
    const svg = cell.closest("svg"), column = Number(svg.dataset.column), from = Number(svg.dataset.from);
    const params = new URLSearchParams(location.hash.split("?")[1] || "");
    const span = Number(params.get("span")) || 60000, next = Math.max(120, Math.round(span / 10));
    const middle = from + (Number(cell.dataset.col) + 0.5) * column;
    location.hash = `#/heatmap?span=${next}&end=${Math.round(middle + next / 2)}`;
  }

  return {timeline, heatmap, episode, zoom};
})();

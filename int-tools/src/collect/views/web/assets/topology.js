// The topology's drawing: nodes placed by the paths flows take now
// (columns by the rank /api/topology gives, sources left, sinks right;
// nodes on no current path in a row of their own beneath, "idle since"),
// links as curves (a pair's links side by side, links that skip columns
// bent off the nodes between), labels placed where they overlap nothing
// else and left to the link's tooltip where they would, zoom and pan on
// the SVG's viewBox. A fleet past GROUP_OVER nodes is drawn by groups
// (a name's prefix in one column: "leaf ×200"), each opened by a click.
// Uses app.js's esc, ns, nodeName, colour, clock and refresh.
"use strict";

const Topology = (() => {
  const MARGIN = 80, ROW_H = 72, COLUMN_MIN = 170, IDLE_GAP = 140, TOP = 36;
  // Where along a link its label may go (fractions of the curve), best first.
  const SVG_NS = "http://www.w3.org/2000/svg";
  const SPOTS = [0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8];
  // The user's zoom and pan ({x, y, w, h}), kept across redraws.
  let zoom = null;
  // Nodes drawn one by one up to this many; past it, by groups.
  const GROUP_OVER = 120;
  // The groups the user opened (their members drawn one by one).
  const opened = new Set();

  const byName = (a, b) => nodeName(a).localeCompare(nodeName(b), undefined, {numeric: true});

  // Each column's nodes in an order that crosses fewer links: by name
  // first (a name prefix stays together), then by the mean row of the
  // neighbours in the columns already ordered, left to right and back.
  function order(columns, links) {
    const row = new Map(), near = new Map();
    for (const l of links) {
      if (!near.has(l.from)) near.set(l.from, []);
      if (!near.has(l.to)) near.set(l.to, []);
      near.get(l.from).push(l.to);
      near.get(l.to).push(l.from);
    }
    const number = column => column.forEach((n, i) => row.set(n.node, (i + 0.5) / column.length));
    const mean = n => {
      const rows = (near.get(n.node) || []).map(m => row.get(m)).filter(r => r != null);
      return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : row.get(n.node);
    };
    columns.forEach(c => { c.sort(byName); number(c); });
    for (const sweep of [columns.slice(1), columns.slice(0, -1).reverse()]) {
      for (const c of sweep) {
        const keys = new Map(c.map(n => [n.node, mean(n)]));
        c.sort((a, b) => (keys.get(a.node) - keys.get(b.node)) || byName(a, b));
        number(c);
      }
    }
  }

  // A node's group: its name without the number that ends it ("leaf-17"
  // is in "leaf"; a node with no name in its column's), in its own
  // column, so that a group is never right of the sinks it leads to.
  function groupOf(n) {
    const column = n.rank == null ? "idle" : `tier ${n.rank + 1}`;
    const prefix = n.node_name != null ? (n.node_name.replace(/[-_.:/ ]*\d+$/, "") || n.node_name) : column;
    return {key: `${prefix}|${n.rank == null ? "idle" : n.rank}`, prefix, column};
  }

  // The topology as drawn: at most GROUP_OVER nodes one by one ("auto"),
  // else each group as one node (opened ones by their members) and the
  // links between groups as one link each: its worst latency, its flows
  // and links summed. `mode` "prefix" groups whatever the size, "none"
  // never.
  function grouped(topo, mode) {
    if (mode === "none" || (mode !== "prefix" && topo.nodes.length <= GROUP_OVER)) return topo;
    const groups = new Map();
    for (const n of topo.nodes) {
      const g = groupOf(n);
      if (!groups.has(g.key)) groups.set(g.key, {...g, members: []});
      groups.get(g.key).members.push(n);
    }
    const prefixes = new Map();
    for (const g of groups.values()) prefixes.set(g.prefix, (prefixes.get(g.prefix) || 0) + 1);
    const nodes = [], into = new Map(), names = new Map();
    for (const g of groups.values()) {
      if (g.members.length === 1 || opened.has(g.key)) {
        nodes.push(...g.members.map(n => g.members.length > 1 ? {...n, in_group: g.key} : n));
        continue;
      }
      const id = "group:" + g.key;
      g.members.forEach(n => into.set(n.node, id));
      const name = `${g.prefix} ×${g.members.length}` + (prefixes.get(g.prefix) > 1 && g.prefix !== g.column ? ` · ${g.column}` : "");
      names.set(id, name);
      const stale = g.members.filter(n => n.stale).length;
      const onPath = g.members.map(n => n.on_path_ms).filter(t => t != null);
      nodes.push({node: id, node_name: name, group: g.key, members: g.members.map(n => n.node), stale_members: stale,
        stale: stale === g.members.length, rank: g.members[0].rank, on_path_ms: onPath.length ? Math.max(...onPath) : null});
    }
    return {...topo, nodes, links: joined(topo.links, into, names), grouped: true};
  }

  // Links between groups: one per pair, the worst of its links' figures.
  function joined(links, into, names) {
    const by = new Map();
    const worst = (a, b) => a == null ? b : b == null ? a : Math.max(a, b);
    for (const l of links) {
      const from = into.get(l.from) ?? l.from, to = into.get(l.to) ?? l.to;
      if (from === to) continue;
      if (!into.has(l.from) && !into.has(l.to)) { by.set(`${from}>${to}`, l); continue; }
      const key = `${from}>${to}`;
      const j = by.get(key) || {from, to, links: 0, flows: 0, measured: false, latency_ns: {count: 0},
        from_name: into.has(l.from) ? names.get(from) : l.from_name, to_name: into.has(l.to) ? names.get(to) : l.to_name};
      j.links += 1;
      j.flows += l.flows;
      j.measured = j.measured || l.measured;
      j.latency_ns.count += l.latency_ns.count;
      for (const q of ["p50", "p99", "max"]) j.latency_ns[q] = worst(j.latency_ns[q], l.latency_ns[q]);
      by.set(key, j);
    }
    return [...by.values()];
  }

  // Positions: ranked nodes in columns; idle ones in rows beneath, from
  // the left, never right of the last column (the sinks').
  function layout(topo) {
    const ranks = Math.max(1, topo.ranks || 0);
    const columns = Array.from({length: ranks}, () => []), idle = [];
    for (const n of topo.nodes) (n.rank != null && n.rank < ranks ? columns[n.rank] : idle).push(n);
    order(columns, topo.links);
    const width = Math.max(1100, 2 * MARGIN + (ranks - 1) * COLUMN_MIN);
    const right = width - MARGIN;
    const x = i => ranks > 1 ? MARGIN + i * (right - MARGIN) / (ranks - 1) : width / 2;
    const tallest = Math.max(1, ...columns.map(c => c.length));
    const body = tallest * ROW_H;
    const at = new Map();
    columns.forEach((c, i) => c.forEach((n, j) =>
      at.set(n.node, {x: x(i), y: TOP + (body - c.length * ROW_H) / 2 + ROW_H * (j + 0.5)})));
    const idleTop = TOP + body + (idle.length ? 50 : 0);
    const rows = placeIdle(idle, topo.links, at, {left: MARGIN, right, top: idleTop + 30});
    const height = Math.max(260, idleTop + rows * (ROW_H + 12) + 20);
    const gap = ranks > 1 ? (right - MARGIN) / (ranks - 1) : width;
    return {at, width, height, gap, idleTop: idle.length ? idleTop : null};
  }

  // Idle nodes in rows from `top`: each under the mean place of the
  // ranked nodes it links to (a transit off its paths under the transits
  // that took them over), at least IDLE_GAP apart, never right of
  // `right` (the sinks'); returns the rows used.
  function placeIdle(idle, links, at, {left, right, top}) {
    const near = new Map(idle.map(n => [n.node, []]));
    for (const l of links) {
      if (near.has(l.from) && at.has(l.to)) near.get(l.from).push(at.get(l.to).x);
      if (near.has(l.to) && at.has(l.from)) near.get(l.to).push(at.get(l.from).x);
    }
    const want = n => { const xs = near.get(n.node); return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : left; };
    const keyed = idle.map(n => [want(n), n]).sort((a, b) => (a[0] - b[0]) || byName(a[1], b[1]));
    let row = 0, next = left;
    for (const [x, n] of keyed) {
      let at_x = Math.max(x, next);
      if (at_x > right) { row += 1; at_x = Math.max(left, Math.min(x, right)); }
      at.set(n.node, {x: at_x, y: top + row * (ROW_H + 12)});
      next = at_x + IDLE_GAP;
    }
    return idle.length ? row + 1 : 0;
  }

  // A link's curve: a quadratic bent off the straight line by `bend`
  // (to the left of the lower id towards the higher: a pair's two
  // directions bend apart).
  function curve(a, b, bend, forward) {
    const dx = b.x - a.x, dy = b.y - a.y, len = Math.hypot(dx, dy) || 1;
    const sign = forward ? 1 : -1;
    const cx = (a.x + b.x) / 2 - dy / len * bend * sign, cy = (a.y + b.y) / 2 + dx / len * bend * sign;
    const point = t => ({x: (1 - t) * (1 - t) * a.x + 2 * (1 - t) * t * cx + t * t * b.x,
                         y: (1 - t) * (1 - t) * a.y + 2 * (1 - t) * t * cy + t * t * b.y});
    return {d: `M${a.x.toFixed(1)} ${a.y.toFixed(1)}Q${cx.toFixed(1)} ${cy.toFixed(1)} ${b.x.toFixed(1)} ${b.y.toFixed(1)}`, point};
  }

  // How far each link bends: the links of one pair of nodes side by
  // side; a link within a column or across columns bent off the nodes
  // it would run through.
  function bends(links, at, gap) {
    const pairs = new Map();
    for (const l of links) {
      const key = Math.min(l.from, l.to) + "-" + Math.max(l.from, l.to);
      if (!pairs.has(key)) pairs.set(key, []);
      pairs.get(key).push(l);
    }
    const bend = new Map();
    for (const group of pairs.values()) {
      group.forEach((l, k) => {
        const a = at.get(l.from), b = at.get(l.to);
        if (!a || !b) return;
        // A quadratic's middle is half its bend off the line: a pair's
        // links 18 px apart there, a link over n columns 20n px off them.
        const spread = (k - (group.length - 1) / 2) * 36;
        const across = Math.abs(b.x - a.x);
        const skip = across < 1 ? 60 : across > gap * 1.5 ? 40 * Math.round(across / gap - 1) : 0;
        bend.set(l, spread + (spread < 0 ? -skip : skip));
      });
    }
    return bend;
  }

  function linkSvg(l, at, bend, q, lo, hi) {
    const a = at.get(l.from), b = at.get(l.to);
    const {d, point} = curve(a, b, bend.get(l) || 0, l.from < l.to);
    const v = l.latency_ns[q];
    const text = l.measured ? ns(v) : "no timestamps";
    const spots = SPOTS.map(t => point(t)).map(p => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(";");
    const kind = (l.measured ? "" : " unmeasured") + (l.flows ? "" : " old");
    const many = l.links != null ? `${l.links} links, the worst ` : "";
    const title = `${linkName(l)}: ${many}${l.measured ? `${q} ${ns(v)}` : "no timestamps: latency not measured"}, ` +
      (l.flows ? `${l.flows} flow(s) now` : "on no current path");
    // A link between groups has no page of its own: open a group for its links'.
    const href = l.links != null ? "" : ` href="#/link/${l.from}/${l.to}"`;
    return `<g class="link${kind}" data-link="${l.from}-${l.to}" data-latency="${v == null ? "" : v}" data-measured="${l.measured}">` +
      `<a${href}><title>${esc(title)}</title>` +
      `<path d="${d}" stroke="${l.measured ? colour(v, lo, hi) : "#7b8190"}"/>` +
      `<text class="label" data-spots="${spots}" text-anchor="middle">${esc(text)}</text></a></g>`;
  }

  // A fleet's links: one path per shade of colour (thousands of elements
  // would take seconds to draw); each link's page is reached from its nodes.
  function shades(links, at, q, lo, hi) {
    const by = new Map();
    for (const l of links) {
      const a = at.get(l.from), b = at.get(l.to);
      const c = l.measured ? colour(l.latency_ns[q], lo, hi) : "#7b8190";
      by.set(c, (by.get(c) || "") + `M${a.x} ${a.y}L${b.x} ${b.y}`);
    }
    return [...by].map(([c, d]) => `<path class="shade" d="${d}" stroke="${c}" stroke-width="1" opacity="0.5"/>`).join("");
  }

  function nodeSvg(n, p, nowMs) {
    const idle = n.rank == null, group = n.group != null;
    const since = idle ? (n.on_path_ms != null ? `idle since ${clock(n.on_path_ms, nowMs)}` : "on no path") : "";
    const r = group ? 15 + Math.min(15, Math.sqrt(n.members.length)) : 15;
    const stale = group ? (n.stale_members ? `${n.stale_members} stale` : "") : n.stale ? "stale" : "";
    // A group opens where it is clicked; a node goes to its page.
    const link = group ? `<a data-open="${esc(n.group)}">` : `<a href="#/node/${n.node}">`;
    const title = group ? `${nodeName(n)}: click to draw its nodes one by one` : nodeName(n);
    return `<g class="node${n.stale ? " stale" : ""}${idle ? " idle" : ""}${group ? " group" : ""}" data-node="${esc(n.node)}" data-stale="${n.stale}" data-idle="${idle}"` +
      (group ? ` data-group="${esc(n.group)}" data-members="${n.members.join(",")}"` : "") + `>` +
      `${link}<title>${esc(title)}${idle ? ": " + since : ""}</title><circle cx="${p.x}" cy="${p.y}" r="${r}"/>` +
      `<text x="${p.x}" y="${p.y + r + 17}" text-anchor="middle">${esc(nodeName(n))}</text>` +
      (stale ? `<text class="state" x="${p.x}" y="${p.y - r - 7}" text-anchor="middle">${stale}</text>` : "") +
      (idle ? `<text class="since" x="${p.x}" y="${p.y + r + 31}" text-anchor="middle">${esc(since)}</text>` : "") + `</a></g>`;
  }

  // The groups opened, each with a button that closes it again.
  function openedBar(topo) {
    if (!topo.grouped || !opened.size) return "";
    const keys = [...opened].filter(k => topo.nodes.some(n => n.in_group === k));
    return keys.length ? `<div class="opened">open groups: ${keys.map(k =>
      `<button data-close="${esc(k)}">${esc(k.split("|")[0])} ✕</button>`).join(" ")}</div>` : "";
  }

  // The SVG, its labels unplaced (place() puts them once in the page).
  function svg(topo, q, labelled) {
    const {at, width, height, gap, idleTop} = layout(topo);
    const values = topo.links.filter(l => l.measured).map(l => l.latency_ns[q]).filter(v => v != null);
    const lo = Math.min(...values), hi = Math.max(...values);
    const links = topo.links.filter(l => at.has(l.from) && at.has(l.to) && l.from !== l.to);
    const box = zoom ? `${zoom.x} ${zoom.y} ${zoom.w} ${zoom.h}` : `0 0 ${width} ${height}`;
    let out = `<svg class="topology" id="topology" viewBox="${box}" data-size="${width} ${height}" preserveAspectRatio="xMidYMin meet">`;
    if (idleTop != null) {
      out += `<line class="idle-rule" x1="20" y1="${idleTop}" x2="${width - 20}" y2="${idleTop}"/>` +
        `<text class="idle-title" x="${width - 24}" y="${idleTop - 6}" text-anchor="end">idle: on no path a flow takes now</text>`;
    }
    if (labelled) {
      const bend = bends(links, at, gap);
      out += links.map(l => linkSvg(l, at, bend, q, lo, hi)).join("");
    } else {
      out += shades(links, at, q, lo, hi);
    }
    out += topo.nodes.map(n => nodeSvg(n, at.get(n.node), topo.now_ms)).join("");
    return {svg: out + "</svg>", lo, hi};
  }

  const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

  // Each link's label at the first of its spots where it overlaps no
  // node and no label placed before; none left: the label goes (the
  // link's tooltip still says it). Measured in the page: a label's width
  // is the font's.
  function place(root) {
    const svgEl = root.querySelector("#topology");
    // A fleet's shades have no label: nothing to measure.
    if (!svgEl || !svgEl.querySelector("g.link text.label")) return;
    const taken = [...svgEl.querySelectorAll("g.node circle, g.node text, text.idle-title")].map(e => pad(e.getBBox(), 2));
    for (const text of svgEl.querySelectorAll("g.link text.label")) {
      const spots = text.dataset.spots.split(";").map(s => s.split(",").map(Number));
      let placed = false;
      // Above the curve, else below it.
      for (const [x, y] of spots.flatMap(([x, y]) => [[x, y - 5], [x, y + 13]])) {
        text.setAttribute("x", x);
        text.setAttribute("y", y);
        const box = pad(text.getBBox(), 1);
        if (!taken.some(t => overlaps(t, box))) { taken.push(box); placed = true; break; }
      }
      if (!placed) text.remove();
    }
    // Placed labels above every line and node, each still its link's way
    // to its page and tooltip.
    const top = document.createElementNS(SVG_NS, "g");
    top.setAttribute("class", "labels");
    for (const text of svgEl.querySelectorAll("g.link text.label")) {
      const link = text.closest("g.link"), a = document.createElementNS(SVG_NS, "a");
      a.setAttribute("href", link.querySelector("a").getAttribute("href"));
      a.setAttribute("data-link", link.dataset.link);
      a.append(link.querySelector("title").cloneNode(true), text);
      top.append(a);
    }
    svgEl.append(top);
  }

  function pad(b, by) { return {x: b.x - by, y: b.y - by, width: b.width + 2 * by, height: b.height + 2 * by}; }

  // Wheel zooms about the pointer, a drag pans, a double click resets;
  // handlers on `root` (the page is drawn anew each refresh).
  function interact(root) {
    const svgOf = e => e.target.closest && e.target.closest("#topology");
    const viewOf = el => { const [x, y, w, h] = el.getAttribute("viewBox").split(" ").map(Number); return {x, y, w, h}; };
    const set = (el, v) => { zoom = v; el.setAttribute("viewBox", `${v.x} ${v.y} ${v.w} ${v.h}`); };
    root.addEventListener("wheel", e => {
      const el = svgOf(e);
      if (!el) return;
      e.preventDefault();
      const v = viewOf(el), r = el.getBoundingClientRect(), f = e.deltaY > 0 ? 1.2 : 1 / 1.2;
      const px = v.x + (e.clientX - r.left) / r.width * v.w, py = v.y + (e.clientY - r.top) / r.height * v.h;
      set(el, {x: px - (px - v.x) * f, y: py - (py - v.y) * f, w: v.w * f, h: v.h * f});
    }, {passive: false});
    let drag = null;
    root.addEventListener("mousedown", e => { const el = svgOf(e); if (el) drag = {x: e.clientX, y: e.clientY, moved: false}; });
    window.addEventListener("mouseup", () => { drag = null; });
    root.addEventListener("mousemove", e => {
      const el = root.querySelector("#topology");
      if (!drag || !el || !e.buttons) return;
      const v = viewOf(el), r = el.getBoundingClientRect(), s = v.w / r.width;
      set(el, {x: v.x - (e.clientX - drag.x) * s, y: v.y - (e.clientY - drag.y) * s, w: v.w, h: v.h});
      drag.x = e.clientX; drag.y = e.clientY;
    });
    root.addEventListener("click", e => {
      const open = e.target.closest && e.target.closest("[data-open]");
      const close = e.target.closest && e.target.closest("[data-close]");
      if (!open && !close) return;
      e.preventDefault();
      if (open) opened.add(open.dataset.open); else opened.delete(close.dataset.close);
      refresh();
    });
    root.addEventListener("dblclick", e => {
      const el = svgOf(e);
      if (!el) return;
      zoom = null;
      const [w, h] = el.dataset.size.split(" ");
      el.setAttribute("viewBox", `0 0 ${w} ${h}`);
    });
  }

  return {svg, place, interact, grouped, openedBar};
})();

// collect's live view: one page, routes in the URL's hash, each page
// polling its own JSON under /api/ every second. No framework, no network
// beyond collect itself.
"use strict";

const POLL_MS = 1000;
const page = document.getElementById("page");
const quantile = document.getElementById("quantile");
const grouping = document.getElementById("grouping");
let timer = null;
// Each refresh has a number; a refresh overtaken by a newer one (the user
// went to another page meanwhile) paints nothing and schedules nothing.
let generation = 0;
// Rows of the topology's tables at most: at a fleet's size the rest are
// on each node's page.
const TABLE_ROWS = 100;
const LABELLED_LINKS = 200;

function esc(text) {
  return String(text).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

// A node as the page names it: its name where the JSON has one, else its
// id as a number (never a dotted quad: IOAM's ids are 24 bits).
function linkName(l) {
  return `${esc(l.from_name != null ? l.from_name : String(l.from))} → ${esc(l.to_name != null ? l.to_name : String(l.to))}`;
}
function nodeName(n) { return n.node_name != null ? n.node_name : String(n.node != null ? n.node : n); }

function ns(v) {
  if (v == null) return "–";
  const a = Math.abs(v);
  if (a < 1e3) return v + " ns";
  if (a < 1e6) return (v / 1e3).toFixed(a < 1e4 ? 2 : 1) + " µs";
  if (a < 1e9) return (v / 1e6).toFixed(a < 1e7 ? 2 : 1) + " ms";
  return (v / 1e9).toFixed(2) + " s";
}

function ago(ms) {
  if (ms < 1500) return "now";
  if (ms < 120000) return Math.round(ms / 1000) + " s ago";
  return Math.round(ms / 60000) + " min ago";
}

// A time of the view (ms since it started) as a clock time here.
function clock(tMs, nowMs) {
  return new Date(Date.now() - (nowMs - tMs)).toLocaleTimeString([], {hour12: false});
}

async function api(path) {
  const response = await fetch("/api/" + path, {cache: "no-store"});
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(path + ": " + response.status);
  return response.json();
}

// Green (fast) to red (slow), on a log scale from the fastest link shown
// to the slowest, or to SPREAD times the fastest if that is further: links
// a few per cent apart are not painted as far apart as green and red.
const SPREAD = 4;
function scaleTop(lo, hi) { return Math.max(hi, lo * SPREAD); }
function colour(v, lo, hi) {
  if (v == null) return "#b9bec9";
  const span = Math.log(Math.max(scaleTop(lo, hi), 1)) - Math.log(Math.max(lo, 1));
  const x = span > 0 ? (Math.log(Math.max(v, 1)) - Math.log(Math.max(lo, 1))) / span : 0;
  return "hsl(" + Math.round(120 * (1 - x)) + ",72%,42%)";
}

async function showTopology() {
  const topo = await api("topology");
  const q = quantile.value;
  // A fleet drawn by groups; the tables below keep every node and link.
  const drawn = Topology.grouped(topo, grouping.value);
  // Latencies written on the links only while they can be read.
  const {svg, lo, hi} = Topology.svg(drawn, q, drawn.links.length <= LABELLED_LINKS);
  const top = scaleTop(lo, hi);
  const scale = Number.isFinite(lo) ? `link latency ${q}: ${esc(ns(lo))}<span class="bar"></span>${esc(ns(top))}` +
    (top > hi ? ` <span class="muted">(slowest ${esc(ns(hi))})</span>` : "") : `link latency ${q}: none measured`;
  const groups = drawn.grouped ? ` · ${topo.nodes.length} nodes in ${drawn.nodes.length} groups and nodes: click a group to open it` : "";
  const legend = topo.links.length ? `<div class="legend">${scale}` +
    `<span class="dash"></span>no timestamps <span class="muted">· wheel zooms, drag pans, double click resets${groups}</span></div>` : "";
  // The most observed links, the stale nodes first: the rest are on the
  // nodes' pages.
  const byCount = topo.links.slice().sort((a, b) => b.latency_ns.count - a.latency_ns.count).slice(0, TABLE_ROWS);
  const staleFirst = topo.nodes.slice().sort((a, b) => (b.stale - a.stale) || (a.node - b.node)).slice(0, TABLE_ROWS);
  const of = (shown, all) => shown.length < all.length ? ` <span class="muted">(${shown.length} of ${all.length})</span>` : "";
  const links = byCount.map(l => `<tr class="row" data-link="${l.from}-${l.to}" onclick="location.hash='#/link/${l.from}/${l.to}'">` +
    `<td>${linkName(l)}${l.measured ? "" : ' <span class="muted">no timestamps</span>'}</td><td class="num p50">${ns(l.latency_ns.p50)}</td><td class="num p99">${ns(l.latency_ns.p99)}</td>` +
    `<td class="num">${l.latency_ns.count}</td></tr>`).join("");
  const nodes = staleFirst.map(n => `<tr class="row" data-node="${n.node}" onclick="location.hash='#/node/${n.node}'">` +
    `<td>${esc(nodeName(n))}</td><td>${badge(n.stale)}</td><td class="num">${n.hops}</td>` +
    `<td class="num">${ns(n.hop_latency.p50)}</td><td class="num">${ns(n.hop_latency.p99)}</td><td class="num">${n.drops}</td>` +
    `<td>${ago(n.seen_ms_ago)}</td></tr>`).join("");
  return (`<h2>Topology</h2>${legend}${Topology.openedBar(drawn)}${topo.nodes.length ? svg : '<p class="muted">No node yet: no INT 2.1 or IOAM hop reported.</p>'}` +
    `<div class="charts"><div><h3>Links${of(byCount, topo.links)}</h3><table id="links"><tr><th>link</th><th class="num">p50</th><th class="num">p99</th><th class="num">observations</th></tr>${links}</table></div>` +
    `<div><h3>Nodes${of(staleFirst, topo.nodes)}</h3><table id="nodes"><tr><th>node</th><th>state</th><th class="num">hops</th><th class="num">hop latency p50</th><th class="num">p99</th><th class="num">drop reports</th><th>last report</th></tr>${nodes}</table></div></div>`);
}

function badge(stale) {
  return stale ? '<span class="badge stale">stale</span>' : '<span class="badge fresh">reporting</span>';
}

// A line chart of `points[key]` over time (null values are gaps left out).
function chart(title, points, key, show, nowMs) {
  const w = 520, h = 200, left = 70, bottom = 24;
  const pts = points.filter(p => p[key] != null);
  if (!pts.length) return `<div class="chart-box"><h3>${esc(title)}</h3><p class="muted">No value yet.</p></div>`;
  const t0 = pts[0].t_ms, t1 = Math.max(pts[pts.length - 1].t_ms, t0 + 1);
  const vs = pts.map(p => p[key]), lo = Math.min(0, ...vs), hi = Math.max(...vs, lo + 1);
  const x = t => left + (t - t0) / (t1 - t0) * (w - left - 10);
  const y = v => 10 + (1 - (v - lo) / (hi - lo)) * (h - bottom - 10);
  const line = pts.map(p => `${x(p.t_ms).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
  return `<div class="chart-box"><h3>${esc(title)}</h3><svg class="chart" viewBox="0 0 ${w} ${h}" width="100%">` +
    `<line class="axis" x1="${left}" y1="${h - bottom}" x2="${w - 10}" y2="${h - bottom}"/><line class="axis" x1="${left}" y1="10" x2="${left}" y2="${h - bottom}"/>` +
    `<text x="${left - 6}" y="14" text-anchor="end">${esc(show(hi))}</text><text x="${left - 6}" y="${h - bottom}" text-anchor="end">${esc(show(lo))}</text>` +
    `<text x="${left}" y="${h - 6}">${clock(t0, nowMs)}</text><text x="${w - 10}" y="${h - 6}" text-anchor="end">${clock(t1, nowMs)}</text>` +
    (pts.length === 1 ? `<circle cx="${x(pts[0].t_ms)}" cy="${y(pts[0][key])}" r="3" fill="#2457c5"/>` : `<polyline points="${line}"/>`) + `</svg></div>`;
}

// Events by cause: each node by its name, a flow's link where the event
// names one, else how many flows with a link to the event's page.
function eventsTable(events, nowMs, id) {
  if (!events.length) return '<p class="muted">No event.</p>';
  const node = n => `<a href="#/node/${n.node}">${esc(nodeName(n))}</a>`;
  const flows = e => e.flow != null ? `<a href="#/flow/${e.flow}">flow ${e.flow}</a>`
    : e.event != null ? `<a href="#/event/${e.event}">${e.event_flows === 1 ? "its event" : `one of ${e.event_flows} flows`}</a>`
    : e.flows > 1 ? `<a href="#/event/${e.id}">${e.flows} flows</a>` : "";
  const rows = events.map(e => `<tr class="event" data-kind="${e.kind}"${e.id != null ? ` data-event="${e.id}"` : ""}><td>${clock(e.t_ms, nowMs)}</td>` +
    `<td><span class="kind ${e.kind}">${e.kind.replace("_", " ")}</span></td><td>${esc(e.text)}</td>` +
    `<td>${(e.nodes || []).map(node).join(", ")}</td><td>${flows(e)}</td></tr>`).join("");
  return `<table id="${id}"><tr><th>time</th><th>event</th><th>what</th><th>nodes</th><th>flows</th></tr>${rows}</table>`;
}

function facts(pairs) {
  return '<div class="card facts">' + pairs.map(([k, v]) => `<div><b>${v}</b><span>${esc(k)}</span></div>`).join("") + "</div>";
}

async function showNode(id) {
  const n = await api("nodes/" + id);
  if (!n) { return (`<p>Node ${esc(id)} is not in the view.</p>`); }
  const drops = Object.entries(n.drops_by_reason).map(([r, c]) => `<tr><td>${esc(r)}</td><td class="num">${c}</td></tr>`).join("");
  const links = n.links.map(l => `<tr class="row" onclick="location.hash='#/link/${l.from}/${l.to}'"><td>${linkName(l)}</td>` +
    `<td class="num">${ns(l.latency_ns.p50)}</td><td class="num">${ns(l.latency_ns.p99)}</td></tr>`).join("");
  return (`<h2 id="node-title">Node ${esc(nodeName(n))} ${badge(n.stale)}</h2>` +
    facts([["hops", n.hops], ["hop latency p50", ns(n.hop_latency.p50)], ["hop latency p99", ns(n.hop_latency.p99)],
      ["queue p50", n.queue_occupancy.p50 ?? "–"], ["queue max", n.queue_occupancy.max ?? "–"], ["drop reports", n.drops], ["last report", ago(n.seen_ms_ago)]]) +
    `<div class="charts">${chart("Hop latency (mean per interval)", n.over_time, "hop_latency", ns, nowOf())}` +
    `${chart("Queue occupancy (mean per interval)", n.over_time, "queue", v => String(Math.round(v)), nowOf())}</div>` +
    `<div class="charts"><div><h3>Drops by reason</h3>${drops ? `<table id="drops"><tr><th>reason</th><th class="num">reports</th></tr>${drops}</table>` : '<p class="muted">No drop report.</p>'}</div>` +
    `<div><h3>Links</h3><table><tr><th>link</th><th class="num">p50</th><th class="num">p99</th></tr>${links}</table></div></div>` +
    `<h3>Events</h3>${eventsTable(n.events, nowOf(), "node-events")}`);
}

// The view's time now, as the last overview said.
let viewNow = 0;
function nowOf() { return viewNow; }

async function showLink(from, to) {
  const l = await api(`links/${from}/${to}`);
  if (!l) { return (`<p>Link ${esc(from)} → ${esc(to)} is not in the view.</p>`); }
  return (`<h2 id="link-title">Link <a href="#/node/${l.from}">${esc(l.from_name != null ? l.from_name : String(l.from))}</a> → <a href="#/node/${l.to}">${esc(l.to_name != null ? l.to_name : String(l.to))}</a></h2>` +
    facts([["observations", l.latency_ns.count], ["p50", ns(l.latency_ns.p50)], ["p99", ns(l.latency_ns.p99)],
      ["min", ns(l.latency_ns.min)], ["max", ns(l.latency_ns.max)], ["last observation", ago(l.seen_ms_ago)]]) +
    chart("Latency, egress to next ingress (mean per interval)", l.over_time, "latency", ns, nowOf()));
}

// The flows table's query, as the URL keeps it (#/flows?q=..&node=..&path=..
// &sort=..&offset=..): a page of it can be shared and reloaded.
const FLOW_ROWS = 200;
const FLOW_PARAMS = ["q", "node", "path", "sort", "offset"];
function flowQuery(query) {
  const params = new URLSearchParams(query || "");
  const kept = {};
  for (const name of FLOW_PARAMS) if (params.get(name)) kept[name] = params.get(name);
  if (!kept.sort) kept.sort = "latency";
  return kept;
}
function flowsHash(kept) {
  const params = new URLSearchParams();
  for (const name of FLOW_PARAMS) if (kept[name] && !(name === "offset" && kept[name] === "0")) params.set(name, kept[name]);
  return "#/flows?" + params.toString();
}

// A latency figure the flow has: its percentile, else (not computed yet)
// the stand-in named beside the figure.
function figure(value, standIn, name) {
  if (value != null) return ns(value);
  if (standIn == null) return "–";
  return `<span class="stand-in" title="percentiles not computed yet: its ${name}">${name} ${ns(standIn)}</span>`;
}

async function showFlows(query) {
  const kept = flowQuery(query);
  const ask = new URLSearchParams({...kept, limit: FLOW_ROWS});
  const response = await fetch("/api/flows?" + ask.toString(), {cache: "no-store"});
  const f = await response.json();
  const field = (name, label, hint) => `<label>${label} <input id="flow-${name}" name="${name}" value="${esc(kept[name] || "")}" placeholder="${esc(hint)}"></label>`;
  const form = `<form id="flow-search" class="search">${field("q", "search", "10.0.3.7  :443  10.0.3.7:443  udp")}` +
    `${field("node", "node", "name or id")}${field("path", "path", "leaf-8>spine-1")}` +
    `<button type="submit">Find</button> <a href="#/flows" id="flow-clear">clear</a></form>`;
  if (!response.ok) return `<h2>Flows</h2>${form}<p class="error" id="flows-error">${esc(f.error || response.status)}</p>`;
  const sort = kept.sort, offset = f.offset;
  const head = (key, label) => `<th class="num sort${sort === key ? " sorted" : ""}" data-sort="${key}">${label}</th>`;
  const rows = f.flows.map(r => `<tr class="row" data-flow="${r.id}" onclick="location.hash='#/flow/${r.id}'">` +
    `<td>${r.id}</td><td>${esc(r.name)}</td><td>${r.path ? esc((r.path_names || r.path).join(" › ")) : "–"}</td><td class="num">${r.latency_ns.count}</td>` +
    `<td class="num p50">${figure(r.latency_ns.p50, r.latency_ns.avg, "avg")}</td><td class="num p99">${figure(r.latency_ns.p99, r.latency_ns.max, "max")}</td><td class="num">${r.lost_packets}</td>` +
    `<td>${ago(r.changed_ms_ago)}</td></tr>`).join("");
  const last = offset + f.flows.length;
  const range = f.matched ? `rows ${offset + 1}-${last} of ${f.matched} matched` : "no flow matched";
  const of = f.matched < f.total ? ` <span class="muted">(${f.total} flows)</span>` : "";
  const pager = `<div class="pager"><button type="button" id="flows-prev" data-offset="${Math.max(0, offset - FLOW_ROWS)}"${offset > 0 ? "" : " disabled"}>‹ prev</button>` +
    `<span id="flows-range">${range}</span>${of}` +
    `<button type="button" id="flows-next" data-offset="${offset + FLOW_ROWS}"${last < f.matched ? "" : " disabled"}>next ›</button></div>`;
  const note = f.with_percentiles < f.total ? `<p class="note" id="flows-note">p50 and p99 known for ${f.with_percentiles} of ${f.total} flows ` +
    `(computed in turns, 4,096 a sample); the others show their mean (avg) and max until then, and sort by their max.</p>` : "";
  return (`<h2>Flows</h2>${form}${pager}${note}` +
    `<table id="flows"><tr><th>#</th><th>flow</th><th>path</th><th class="num">reports</th><th class="num">latency p50</th>` +
    `${head("latency", "p99")}${head("loss", "lost")}${head("change", "last change").replace("num ", "")}</tr>${rows}</table>`);
}

// The flows page's query changed: a new hash, so the URL says it.
function askFlows(change) {
  const kept = {...flowQuery(location.hash.split("?")[1]), ...change};
  location.hash = flowsHash(kept);
}

async function showFlow(id) {
  const f = await api("flows/" + id);
  if (!f) { return (`<p>Flow ${esc(id)} is not in the view.</p>`); }
  const pathLinks = (p, names) => p.map((n, i) => `<a href="#/node/${n}">${esc(names ? names[i] : String(n))}</a>`).join(" › ");
  const history = f.path_history.slice().reverse().map(p => `<tr class="path"><td>${clock(p.t_ms, nowOf())}</td><td>${pathLinks(p.path, p.path_names)}</td></tr>`).join("");
  return (`<h2 id="flow-title">Flow ${f.id}: ${esc(f.name)}</h2>` +
    facts([["path now", f.path ? pathLinks(f.path, f.path_names) : "–"], ["reports", f.latency_ns.count], ["latency p50", ns(f.latency_ns.p50)],
      ["latency p99", ns(f.latency_ns.p99)], ["lost", f.lost_packets], ["last change", ago(f.changed_ms_ago)]]) +
    `<div class="charts">${chart("Latency (mean per interval)", f.over_time, "latency", ns, nowOf())}` +
    `${chart("Packets lost per interval", f.over_time, "lost", v => String(Math.round(v)), nowOf())}</div>` +
    `<h3>Path history</h3>${history ? `<table id="path-history"><tr><th>seen from</th><th>path</th></tr>${history}</table>` : '<p class="muted">No path followed.</p>'}` +
    `<h3>Events</h3>${eventsTable(f.events, nowOf(), "flow-events")}`);
}

const EVENT_KINDS = ["path_change", "loss", "drops", "hop_change", "stale", "back", "congestion"];

// The events page, filtered by the URL's kind and node (an id or a name).
async function showEvents(query) {
  const kind = query.get("kind") || "", node = query.get("node") || "";
  const ask = new URLSearchParams({limit: "500"});
  if (kind) ask.set("kind", kind);
  if (node) ask.set("node", node);
  const e = await api("events?" + ask);
  const kinds = ["", ...EVENT_KINDS].map(k => `<option value="${k}"${k === kind ? " selected" : ""}>${k ? k.replace("_", " ") : "every kind"}</option>`).join("");
  const form = `<form id="event-filter" class="filter"><select id="event-kind">${kinds}</select>` +
    `<input id="event-node" placeholder="node id or name" value="${esc(node)}"><button>filter</button>` +
    (kind || node ? ` <a href="#/events">all events</a>` : "") + `</form>`;
  const f = e.filter, about = f.node != null ? ` about ${esc(f.node_name != null ? f.node_name : f.node)}` : "";
  const table = f.unknown_node != null ? `<p class="muted">No node has the id or name ${esc(f.unknown_node)}.</p>` : eventsTable(e.events, e.now_ms, "events");
  return (`<h2>Events${about} <span class="muted">(${e.events.length} of ${e.total}, newest first)</span></h2>${form}${table}`);
}

// The events page's filter into the URL: the page reads it from there.
function filterEvents() {
  const ask = new URLSearchParams();
  const kind = document.getElementById("event-kind").value, node = document.getElementById("event-node").value.trim();
  if (kind) ask.set("kind", kind);
  if (node) ask.set("node", node);
  document.activeElement.blur();
  location.hash = "#/events" + (String(ask) ? "?" + ask : "");
}

const EVENT_FLOW_ROWS = 100;

// One event and the flows it names, a page of them at a time.
async function showEvent(id, query) {
  const offset = Math.max(0, Number(query.get("offset")) || 0);
  const [e, f] = await Promise.all([api("events/" + id), api(`events/${id}/flows?offset=${offset}&limit=${EVENT_FLOW_ROWS}`)]);
  if (!e || !f) return `<p>Event ${esc(id)} is not in the view.</p>`;
  const rows = f.flows.map(r => `<tr class="row" data-flow="${r.id}" onclick="location.hash='#/flow/${r.id}'"><td>${r.id}</td>` +
    `<td>${esc(r.name || "–")}</td><td>${r.path ? esc((r.path_names || r.path).join(" › ")) : "–"}</td></tr>`).join("");
  const page = (to, label) => `<a href="#/event/${id}?offset=${to}">${label}</a>`;
  const pages = (offset > 0 ? page(Math.max(0, offset - EVENT_FLOW_ROWS), "newer page") + " " : "") +
    (offset + EVENT_FLOW_ROWS < f.listed ? page(offset + EVENT_FLOW_ROWS, "next page") : "");
  const unlisted = f.total > f.listed ? ` <span class="muted">(the first ${f.listed} listed)</span>` : "";
  return (`<h2 id="event-title"><span class="kind ${e.kind}">${e.kind.replace("_", " ")}</span> ${esc(e.text)}</h2>` +
    facts([["flows", e.flows], ["first", clock(e.t_ms, nowOf())], ["last", clock(e.last_ms, nowOf())],
      ["nodes", (e.nodes || []).map(n => `<a href="#/node/${n.node}">${esc(nodeName(n))}</a>`).join(", ") || "–"]]) +
    (f.flows.length ? `<h3>Flows ${offset + 1}–${offset + f.flows.length} of ${f.total}${unlisted}</h3>` +
      `<table id="event-flows"><tr><th>#</th><th>flow</th><th>path now</th></tr>${rows}</table><p>${pages}</p>` : ""));
}

async function showOverview() {
  const o = await api("overview");
  viewNow = o.now_ms;
  document.getElementById("overview").textContent =
    `${o.reports} reports · ${o.nodes} nodes (${o.stale_nodes} stale) · ${o.links} links · ${o.flows} flows`;
}

function route() {
  const [path, search] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/"), query = new URLSearchParams(search || "");
  document.querySelectorAll("header nav a").forEach(a => a.classList.remove("here"));
  const here = {"": "topology", node: "topology", link: "topology", flows: "flows", flow: "flows", events: "events", event: "events",
    congestion: "congestion", episode: "congestion", heatmap: "heatmap"}[parts[0]];
  if (here) document.getElementById("nav-" + here).classList.add("here");
  switch (parts[0]) {
    case "node": return showNode(parts[1]);
    case "link": return showLink(parts[1], parts[2]);
    case "flows": return showFlows(search);
    case "flow": return showFlow(parts[1]);
    case "events": return showEvents(query);
    case "event": return showEvent(parts[1], query);
    case "congestion": return Congestion.timeline(query);
    case "heatmap": return Congestion.heatmap(query);
    case "episode": return Congestion.episode(parts[1]);
    default: return showTopology();
  }
}

// A form being filled in on the page: the page is not drawn anew under it.
function filling() {
  const here = document.activeElement;
  return here && page.contains(here) && (here.tagName === "INPUT" || here.tagName === "SELECT");
}

async function refresh() {
  clearTimeout(timer);
  if (filling()) { timer = setTimeout(refresh, POLL_MS); return; }
  const mine = ++generation, started = performance.now();
  try {
    await showOverview();
    const html = await route();
    if (mine !== generation) return;
    const typed = typing();
    page.innerHTML = html;
    typed();
    Topology.place(page);
    document.body.dataset.loaded = "yes";
    // Drawings counted: a test waits for the next one.
    document.body.dataset.drawn = String(Number(document.body.dataset.drawn || 0) + 1);
  } catch (error) {
    document.getElementById("overview").textContent = "collect unreachable: " + error.message;
  }
  // A page that takes long to draw (a fleet's topology) is drawn less
  // often: the browser stays free four fifths of the time.
  if (mine === generation) timer = setTimeout(refresh, Math.max(POLL_MS, 4 * (performance.now() - started)));
}

// What is typed in the page's fields, and where, outlives a redraw: the
// page is drawn anew every second. Returns what puts it back.
function typing() {
  const values = [...page.querySelectorAll("input[id]")].map(i => [i.id, i.value]);
  const focus = document.activeElement;
  const at = focus && focus.id && page.contains(focus) && focus.tagName === "INPUT"
    ? [focus.id, focus.selectionStart, focus.selectionEnd] : null;
  const drawn = location.hash;
  return () => {
    if (drawn !== lastDrawn) { lastDrawn = drawn; return; }
    for (const [id, value] of values) { const i = document.getElementById(id); if (i) i.value = value; }
    const i = at && document.getElementById(at[0]);
    if (i) { i.focus(); i.setSelectionRange(at[1], at[2]); }
  };
}
let lastDrawn = null;

// The flows table's sortable headers and pager (drawn anew at every
// refresh), and its search.
page.addEventListener("click", event => {
  const th = event.target.closest("th.sort");
  if (th) askFlows({sort: th.dataset.sort, offset: "0"});
  const pager = event.target.closest(".pager button");
  if (pager && !pager.disabled) askFlows({offset: pager.dataset.offset});
});
page.addEventListener("submit", event => {
  if (event.target.id !== "flow-search") return;
  event.preventDefault();
  const form = new FormData(event.target);
  askFlows({q: form.get("q").trim(), node: form.get("node").trim(), path: form.get("path").trim(), offset: "0"});
});

// The heatmap's cells zoom in (drawn anew at every refresh).
page.addEventListener("click", event => Congestion.zoom(event));

// The events page's filter (drawn anew at every refresh).
page.addEventListener("change", event => { if (event.target.id === "event-kind") filterEvents(); });
page.addEventListener("submit", event => {
  if (event.target.id === "event-filter") { event.preventDefault(); filterEvents(); }
});

Topology.interact(page);
window.addEventListener("hashchange", refresh);
quantile.addEventListener("change", refresh);
grouping.addEventListener("change", refresh);
refresh();

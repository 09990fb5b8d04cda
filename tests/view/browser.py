#!/usr/bin/env python3
"""collect's live view in a real browser: headless Chromium (Debian's
chromium and chromium-driver) driven by selenium, against a collect that
int-tools/tests/view.rs has fed. Every step waits for a state of the page
(elements present, text equal), never for a time. Prints what it read as
one JSON object on stdout; fails (exit 1) with the step that did not
happen."""

import argparse
import base64
import json
import shutil
import sys
import tempfile
import time

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    sys.exit("selenium is missing: scripts/install-deps.sh installs it (pip install selenium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--window-size=1400,1000"]


def browser(profile):
    for binary in ("chromium", "chromedriver"):
        if shutil.which(binary) is None:
            sys.exit(f"{binary} is missing: scripts/install-deps.sh installs chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    # The driver given by path: selenium's own manager would go to the network.
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


class Steps:
    def __init__(self, driver, url, shots, timeout, prefix=""):
        self.driver, self.url, self.shots, self.prefix = driver, url, shots, prefix
        # The page draws itself anew every second: an element found may be
        # gone when read; the condition is then tried again.
        ignored = [NoSuchElementException, StaleElementReferenceException]
        self.wait = WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=ignored)

    def until(self, what, condition, why=None):
        """Waits for `condition(driver)` to be truthy; fails naming `what`
        (and what `why()` says of the page, if given)."""
        try:
            return self.wait.until(condition)
        except Exception:
            said = f"{why()}\n" if why else ""
            sys.exit(f"view: {what} never happened; {said}page:\n{''.join(self.texts('#page'))[:3000]}")

    def go(self, hash_):
        self.driver.execute_script("location.hash = arguments[0]", hash_)

    def shot(self, name, height=4000):
        # The whole page, whatever its length (up to `height`), not just the window.
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], height), "scale": 1}
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip})
        with open(f"{self.shots}/{self.prefix}{name}.png", "wb") as file:
            file.write(base64.b64decode(shot["data"]))

    def attrs(self, selector, attribute):
        return set(self.read(selector, attribute))

    def read(self, selector, attribute):
        """`attribute` of every element `selector` finds, read at once (in
        the page, between two of its redraws)."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.getAttribute(arguments[1]))",
            selector, attribute)

    def texts(self, selector):
        return self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText)", selector)


def topology(s, named, links):
    started = time.monotonic()
    s.driver.get(s.url)
    s.until("every node on the topology", lambda d: s.attrs("#topology g.node", "data-node") == set(named))
    load_ms = (time.monotonic() - started) * 1000
    s.until("every node by its name", lambda d: dict(d.execute_script(
        "return [...document.querySelectorAll('#topology g.node')]"
        ".map(e => [e.dataset.node, e.querySelector('text').textContent])")) == named)
    s.until("every link on the topology", lambda d: s.attrs("#topology g.link", "data-link") == set(links))
    latency = {}
    for q in ("p50", "p99"):
        Select(s.driver.find_element(By.ID, "quantile")).select_by_value(q)
        # The legend and the links are drawn together.
        drawn = s.until(f"links coloured by {q}", lambda d: d.execute_script(
            "const legend = document.querySelector('.legend');"
            "return legend && legend.innerText.includes('latency ' + arguments[0]) &&"
            " [...document.querySelectorAll('#topology g.link')].map(e => [e.dataset.link, e.dataset.latency])", q))
        for link, value in drawn:
            latency.setdefault(link, {})[q] = int(value)
    Select(s.driver.find_element(By.ID, "quantile")).select_by_value("p50")
    s.until("links coloured by p50 again", lambda d: any("latency p50" in t for t in s.texts(".legend")))
    s.shot("topology")
    return load_ms, latency


def path_change(s, old, new):
    s.go("#/events")
    text = f"path {old} -> {new}"
    flow = s.until("the path change in the events", lambda d: d.execute_script(
        "const row = [...document.querySelectorAll('#events tr.event[data-kind=path_change]')]"
        ".find(r => r.innerText.includes(arguments[0]));"
        "return row && row.querySelector('a[href^=\"#/flow/\"]').getAttribute('href')", text))
    s.shot("events")
    s.go(flow)
    history = s.until("the flow's drill-down with both paths",
                      lambda d: (lambda rows: len(rows) == 2 and rows)(s.texts("#path-history tr.path")))
    s.until("the path change among the flow's events",
            lambda d: any(text in t for t in s.texts("#flow-events tr.event")))
    s.shot("flow")
    return history


def pages(s, node, reason, link):
    s.go(f"#/node/{node}")
    s.until(f"node {node}'s drops by reason",
            lambda d: any(t.split()[:1] == [reason] for t in s.texts("#drops tr")))
    s.until(f"node {node}'s charts", lambda d: len(s.texts("svg.chart polyline, svg.chart circle")) >= 2)
    s.shot("node")
    s.go(f"#/link/{link.replace('-', '/')}")
    s.until(f"link {link}'s page", lambda d: s.texts("#link-title") and s.texts("svg.chart"))
    s.shot("link")
    s.go("#/flows")
    s.until("the flows table", lambda d: s.texts("#flows tr.row"))
    s.until("a click on loss", lambda d: d.find_element(By.CSS_SELECTOR, "th[data-sort=loss]").click() or True)
    s.until("the flows sorted by loss", lambda d: s.texts("th.sorted[data-sort=loss]"))
    s.shot("flows")
    return len(s.texts("#flows tr.row"))


def stale(s, quiet, reporting):
    s.go("#/")
    s.until(f"node {quiet} shown stale while {reporting} report", lambda d: (
        s.attrs(f"#topology g.node[data-node='{quiet}']", "data-stale") == {"true"}
        and all(s.attrs(f"#topology g.node[data-node='{n}']", "data-stale") == {"false"} for n in reporting)))
    s.shot("topology-stale")
    s.go("#/events")
    s.until(f"node {quiet} stale in the events",
            lambda d: any(f"({quiet}):" in t for t in s.texts("#events tr.event[data-kind=stale]")))


# The events table as shown, read in one go: each row's kind, text, nodes
# cell (each node a link), flows cell and its link.
READ_EVENTS = """
const table = document.querySelector('#events');
if (!table) return document.querySelector('#page p.muted') ? [] : null;
return [...table.querySelectorAll('tr.event')].map(r => {
  const cells = [...r.querySelectorAll('td')].map(c => c.innerText.trim());
  const link = r.querySelector('td:last-child a');
  return {kind: r.dataset.kind, text: cells[2], nodes: [...r.querySelectorAll('td:nth-child(4) a')].map(a => a.innerText),
          flows: cells[4], href: link ? link.getAttribute('href') : null};
});
"""


def events_page(s, args):
    """The events page at a fleet's size: the aggregated event, its nodes
    by name and its flows counted; filters by kind and by node, chosen on
    the page and kept in the URL (a reload shows the same); the event's
    page with its flows, and a flow's page with its change."""
    s.driver.get(s.url + "#/events")
    rows = s.until(f"the event {args.events!r}", lambda d: (lambda rows: rows and any(
        r["text"] == args.events for r in rows) and rows)(d.execute_script(READ_EVENTS)))
    event = next(r for r in rows if r["text"] == args.events)
    numbers = [n for r in rows for n in r["nodes"] if n.isdigit()]
    if numbers or not event["nodes"] or event["flows"] != f"{args.events_flows} flows":
        sys.exit(f"view: the event's nodes or flows as shown: {event}; nodes without a name: {numbers}")
    s.shot("events-fleet")
    s.until("choosing loss", lambda d: Select(d.find_element(By.ID, "event-kind")).select_by_value("loss") or True)
    s.until("the loss events only, the kind in the URL", lambda d: d.execute_script("return location.hash") ==
            "#/events?kind=loss" and (lambda rows: rows and all(r["kind"] == "loss" for r in rows) and any(
                r["text"].startswith(args.events_loss) for r in rows))(d.execute_script(READ_EVENTS)))
    s.until("choosing path changes", lambda d: Select(d.find_element(By.ID, "event-kind"))
            .select_by_value("path_change") or True)
    s.until("the path changes", lambda d: d.execute_script("return location.hash") == "#/events?kind=path_change")

    def type_node(d):
        field = d.find_element(By.ID, "event-node")
        field.clear()
        field.send_keys(args.events_node, Keys.ENTER)
        return True
    s.until(f"typing {args.events_node}", type_node)
    wanted = f"#/events?kind=path_change&node={args.events_node}"
    filtered = lambda d: [r["text"] for r in d.execute_script(READ_EVENTS) or []] == [args.events_node_text]
    s.until(f"the filter by kind and node in the URL and the page",
            lambda d: d.execute_script("return location.hash") == wanted and filtered(d))
    s.driver.refresh()
    s.until("the same filter after a reload", lambda d: filtered(d) and d.execute_script(
        "return [document.getElementById('event-kind').value, document.getElementById('event-node').value]")
        == ["path_change", args.events_node])
    s.shot("events-filtered")
    s.go("#/events")
    s.until("the event's flows link", lambda d: d.execute_script(READ_EVENTS) and d.execute_script(
        "const a = [...document.querySelectorAll('#events tr.event')].find(r => r.innerText.includes(arguments[0]));"
        "return a && (a.querySelector('a[href^=\"#/event/\"]').click() || true)", args.events))
    s.until("the event's page with its flows", lambda d: any(args.events in t for t in s.texts("#event-title"))
            and len(s.texts("#event-flows tr.row")) == 100
            and any(f"of {args.events_flows}" in t for t in s.texts("#page h3")))
    s.shot("event")
    s.until("a click on its first flow", lambda d: d.find_element(By.CSS_SELECTOR, "#event-flows tr.row").click() or True)
    old, new = args.events.split(" moved ")[1].split(" -> ")
    change = s.until("the flow's change among its events", lambda d: next((t for t in s.texts(
        "#flow-events tr.event[data-kind=path_change]") if f"{old} >" in t and f"{new} >" in t), None))
    return {"event": event, "flow_change": change}


def rerouted(s, args):
    """A rerouted flow found on the flows page by a search (`--rerouted`),
    shown on its new path; its page with both paths, the new one first,
    and the path change among its events."""
    s.driver.get(s.url + "#/flows")
    s.until("the flows table", lambda d: s.texts("#flows tr.row"))
    s.shot("flows", 900)
    find(s, q=args.rerouted, node="", path="")
    row = flows_table(s, f"the search {args.rerouted!r}", "rows 1-1 of 1 matched")["rows"][0]
    if row["path"] != args.new_path:
        sys.exit(f"view: the rerouted flow {row['flow']} shown over {row['path']!r}, not {args.new_path!r}")
    s.shot("flows-search", 900)
    s.until("a click on the flow", lambda d: d.find_element(By.CSS_SELECTOR, "#flows tr.row").click() or True)
    history = s.until("the flow's page with both paths",
                      lambda d: (lambda rows: len(rows) == 2 and rows)(s.texts("#path-history tr.path")))
    if not (history[0].endswith(args.new_path) and history[1].endswith(args.old_path)):
        sys.exit(f"view: the flow's path history {history}, not {args.new_path!r} after {args.old_path!r}")
    text = f"path {args.old_path} -> {args.new_path}".replace(" › ", " > ")
    s.until(f"{text!r} among the flow's events", lambda d: any(text in t for t in s.texts("#flow-events tr.event")))
    s.shot("flow")
    return {"flow": row["flow"], "path": row["path"], "path_history": history}


def measure(s):
    """Load times at a fleet's size: the topology (every node drawn), the
    flows table (its first 200 rows), a node's page, in ms."""
    times = {}
    nodes = s.driver.execute_script("return fetch('/api/overview').then(r => r.json()).then(o => o.nodes)")
    started = time.monotonic()
    s.driver.get(s.url)
    s.until("every node drawn", lambda d: sum(len((m or n).split(",")) for n, m in zip(
        s.read("#topology g.node", "data-node"), s.read("#topology g.node", "data-members"))) == nodes)
    times["topology_ms"] = (time.monotonic() - started) * 1000
    for name, hash_, selector, rows in (("flows_ms", "#/flows", "#flows tr.row", 200),
                                        ("node_ms", "#/node/1", "#node-title", 1)):
        started = time.monotonic()
        s.go(hash_)
        s.until(name, lambda d: len(s.texts(selector)) >= rows)
        times[name] = (time.monotonic() - started) * 1000
    times["nodes"] = nodes
    return times


# The flows table as drawn, read in one go: the pager's text, each row's
# id, flow, path and p99 cell, the note, an error.
READ_FLOWS = """
const range = document.querySelector('#flows-range');
const rows = [...document.querySelectorAll('#flows tr.row')].map(r => ({id: r.dataset.flow,
  flow: r.children[1].innerText, path: r.children[2].innerText, p99: r.querySelector('td.p99').innerText}));
const note = document.querySelector('#flows-note'), error = document.querySelector('#flows-error');
return {hash: location.hash, range: range && range.innerText, rows, note: note && note.innerText,
        error: error && error.innerText, drawn: document.body.dataset.drawn};
"""


def flows_table(s, what, range_):
    """Waits for the flows table to say `range_` (its rows drawn with it)."""
    return s.until(f"{what}: {range_!r}", lambda d: (lambda t: t["range"] == range_ and t)(d.execute_script(READ_FLOWS)))


def find(s, **fields):
    """Fills the search form's fields and submits it, as a person does."""
    s.until("the search form", lambda d: d.execute_script(
        "const form = document.querySelector('#flow-search'); if (!form) return false;"
        "for (const [k, v] of Object.entries(arguments[0])) form.querySelector('#flow-' + k).value = v;"
        "form.querySelector('button[type=submit]').click(); return true;", fields))


def flows_page(s, args):
    """The flows page at a fleet's size: every row has a latency figure
    (no '–'), the pager goes through the rows and the URL keeps the page;
    a search by address and port, a node and a path each show exactly
    their flows; what is typed outlives a redraw; a bad query says why."""
    total, page = args.flows, 200
    s.driver.get(s.url + "#/flows")
    first = flows_table(s, "the first page", f"rows 1-{page} of {total} matched")
    problems = [f"row {r['id']} has no p99 figure" for r in first["rows"] if r["p99"] in ("", "–")]
    if len(first["rows"]) != page:
        problems.append(f"{len(first['rows'])} rows on the first page")
    s.until("the next page", lambda d: d.find_element(By.ID, "flows-next").click() or True)
    second = flows_table(s, "the second page", f"rows {page + 1}-{2 * page} of {total} matched")
    if "offset=200" not in second["hash"]:
        problems.append(f"the URL does not keep the page: {second['hash']}")
    if {r["id"] for r in first["rows"]} & {r["id"] for r in second["rows"]}:
        problems.append("the second page repeats rows of the first")
    problems += [f"row {r['id']} has no p99 figure" for r in second["rows"] if r["p99"] in ("", "–")]
    s.driver.refresh()
    flows_table(s, "the second page after a reload", f"rows {page + 1}-{2 * page} of {total} matched")
    s.until("the previous page", lambda d: d.find_element(By.ID, "flows-prev").click() or True)
    flows_table(s, "the first page again", f"rows 1-{page} of {total} matched")
    s.shot("flows-fleet", 900)
    # Typed, not yet submitted: the next redraws keep it.
    drawn = s.driver.execute_script(
        "document.querySelector('#flow-q').value = 'typed'; return document.body.dataset.drawn")
    s.until("a redraw", lambda d: d.execute_script("return document.body.dataset.drawn") not in (drawn, str(int(drawn) + 1)))
    if s.driver.execute_script("return document.querySelector('#flow-q').value") != "typed":
        problems.append("a redraw lost what was typed in the search")
    seen = {}
    for name, fields, count, check in (
            ("search", {"q": args.search, "node": "", "path": ""}, args.search_count,
             lambda r: args.search in r["flow"]),
            ("node", {"q": "", "node": args.node, "path": ""}, args.node_count,
             lambda r: args.node in r["path"].split(" › ")),
            ("path", {"q": "", "node": "", "path": args.path}, args.path_count,
             lambda r: " › ".join(args.path.split(">")) in r["path"])):
        find(s, **fields)
        shown = min(count, page)
        table = flows_table(s, name, f"rows 1-{shown} of {count} matched")
        if len(table["rows"]) != shown:
            problems.append(f"{name}: {len(table['rows'])} rows, not {shown}")
        problems += [f"{name}: row {r['flow']} over {r['path']} is not one asked for" for r in table["rows"] if not check(r)]
        s.driver.refresh()
        flows_table(s, f"{name} after a reload", f"rows 1-{shown} of {count} matched")
        if count > page:
            s.until(f"{name}: the next page", lambda d: d.find_element(By.ID, "flows-next").click() or True)
            flows_table(s, f"{name}: the next page", f"rows {page + 1}-{min(count, 2 * page)} of {count} matched")
        s.shot(f"flows-{name}", 900)
        seen[name] = table["hash"]
    find(s, q="", node="", path="nobody>here")
    error = s.until("the bad path's error", lambda d: d.execute_script(READ_FLOWS)["error"])
    if "nobody" not in error:
        problems.append(f"the bad path's error does not say which: {error!r}")
    if problems:
        sys.exit("view: the flows page:\n" + "\n".join(problems[:30]))
    return {"first_note": first["note"], "hashes": seen, "error": error}


# The topology as drawn, read in the page in one go: each node's place,
# idle mark and text; each link's label box (those shown) and each idle
# node's "idle since" box, whether a link is measured, and its curve.
READ_LAYOUT = """
const svg = document.querySelector('#topology');
if (!svg) return null;
const nodes = {}, idle = {}, idleText = {};
for (const g of svg.querySelectorAll('g.node')) {
  const c = g.querySelector('circle');
  nodes[g.dataset.node] = [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))];
  if (g.dataset.idle === 'true') idleText[g.dataset.node] = (g.querySelector('text.since') || {}).textContent || '';
}
const links = [...svg.querySelectorAll('g.link')].map(g => ({link: g.dataset.link, measured: g.dataset.measured,
  d: (e => !e ? '' : e.tagName === 'line' ? ['x1', 'y1', 'x2', 'y2'].map(a => e.getAttribute(a)).join(' ')
    : e.getAttribute('d'))(g.querySelector('path, line')),
}));
const labels = [...svg.querySelectorAll('g.link text, text.label, text.since')].map(t => { const b = t.getBBox(); return [b.x, b.y, b.width, b.height, t.textContent]; });
return {nodes, idleText, links, labels};
"""


def overlap(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def zoom(s):
    """The wheel zooms in, and the next drawing keeps the zoom."""
    box = lambda d: d.execute_script("return document.querySelector('#topology').getAttribute('viewBox')")
    whole = box(s.driver)
    s.driver.execute_script("""
const svg = document.querySelector('#topology'), r = svg.getBoundingClientRect();
svg.drawnBefore = true;
svg.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: r.left + r.width / 2,
  clientY: r.top + 100, bubbles: true, cancelable: true}));""")
    zoomed = s.until("the wheel zooming in", lambda d: (lambda b: b != whole and b)(box(d)))
    if float(zoomed.split()[2]) >= float(whole.split()[2]):
        sys.exit(f"view: the wheel zoomed out: {whole} -> {zoomed}")
    s.until("the zoom kept by the next drawing", lambda d: d.execute_script(
        "const svg = document.querySelector('#topology');"
        "return svg && !svg.drawnBefore && svg.getAttribute('viewBox') === arguments[0]", zoomed))


def layout(s, args):
    """Waits for the topology to hold every node and link (and the idle
    nodes marked idle), then checks where they are: every node of a
    flow's path left of its sink, idle nodes not right of any sink, no two
    nodes on one spot, no two links on one curve, no two labels overlapping."""
    s.driver.get(s.url)
    want_links = set(args.expect_links.split(",")) if args.expect_links else None
    idle = set(args.idle.split(",")) if args.idle else set()

    last = {}

    def ready(d):
        seen = d.execute_script(READ_LAYOUT)
        last["seen"] = seen
        if not seen or len(seen["nodes"]) != args.expect_nodes:
            return False
        links = {l["link"] for l in seen["links"]}
        if want_links is not None and links != want_links:
            return False
        if args.link_count is not None and len(links) != args.link_count:
            return False
        return seen
    # The test starts the browser once the view holds the paths it checks:
    # the first drawing with every node and link is the one to judge.
    def drawn():
        seen = last.get("seen") or {"nodes": {}, "links": []}
        links = {l["link"] for l in seen["links"]}
        missing, more = sorted((want_links or set()) - links), sorted(links - (want_links or links))
        return f"{len(seen['nodes'])} nodes, {len(links)} links drawn; links missing {missing[:20]}, not asked {more[:20]}"
    seen = s.until("every node and link drawn", ready, drawn)
    if args.nodes:
        named = dict(pair.split("=") for pair in args.nodes.split(","))
        s.until("every node by its name", lambda d: dict(d.execute_script(
            "return [...document.querySelectorAll('#topology g.node')]"
            ".map(e => [e.dataset.node, e.querySelector('text').textContent])")) == named)
    s.shot(args.layout)
    flows = s.driver.execute_script("return fetch('/api/flows?limit=1000').then(r => r.json())")
    at = seen["nodes"]
    sinks = {str(f["path"][-1]) for f in flows["flows"] if f["path"]}
    problems = []
    for f in flows["flows"]:
        path = [str(n) for n in f["path"] or []]
        for node in path[:-1]:
            if at[node][0] >= at[path[-1]][0]:
                problems.append(f"{node} of {'>'.join(path)} at x {at[node][0]}, not left of its sink at {at[path[-1]][0]}")
    problems += [f"node {node} not marked idle" for node in sorted(idle - set(seen["idleText"]))]
    for node in idle:
        if any(at[node][0] > at[sink][0] for sink in sinks):
            problems.append(f"idle node {node} at x {at[node][0]}, right of a sink")
    spots = {}
    for node, xy in at.items():
        spots.setdefault(tuple(xy), []).append(node)
    problems += [f"nodes {n} on one spot {xy}" for xy, n in spots.items() if len(n) > 1]
    curves = {}
    for l in seen["links"]:
        curves.setdefault(l["d"], []).append(l["link"])
    problems += [f"links {n} on one curve" for d, n in curves.items() if len(n) > 1]
    labels = seen["labels"]
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if overlap(a, b):
                problems.append(f"labels {a[4]!r} at {a[:4]} and {b[4]!r} at {b[:4]} overlap")
    if problems:
        sys.exit("view: the topology is misdrawn:\n" + "\n".join(problems[:30]))
    zoom(s)
    return {"labels": len(labels), "links": len(seen["links"]), "idle_text": seen["idleText"],
            "unmeasured": sorted(l["link"] for l in seen["links"] if l["measured"] == "false")}


def groups(s, args):
    """A fleet past 120 nodes drawn by groups: every node in exactly one
    drawn group or node, few drawn, each flow's nodes left of its sink's
    group, no two labels overlapping; a click opens a group (its members
    drawn one by one) and its button closes it."""
    s.driver.get(s.url)

    def drawn(d):
        seen = d.execute_script(READ_LAYOUT)
        members = d.execute_script(
            "return Object.fromEntries([...document.querySelectorAll('#topology g.node')]"
            ".map(g => [g.dataset.node, g.dataset.members ? g.dataset.members.split(',') : [g.dataset.node]]))")
        if not seen or sum(len(m) for m in members.values()) != args.expect_nodes:
            return False
        return seen, members
    seen, members = s.until("every node drawn in a group", drawn)
    s.shot(args.groups)
    where = {node: drawn_as for drawn_as, nodes in members.items() for node in nodes}
    problems = [f"{node} drawn twice" for node in where if sum(node in m for m in members.values()) > 1]
    if len(members) > 20:
        problems.append(f"{len(members)} nodes and groups drawn for {args.expect_nodes} nodes")
    at = seen["nodes"]
    flows = s.driver.execute_script("return fetch('/api/flows?limit=1000').then(r => r.json())")
    for f in flows["flows"]:
        path = [where[str(n)] for n in f["path"] or []]
        for node in path[:-1]:
            if at[node][0] >= at[path[-1]][0]:
                problems.append(f"{node} of flow {f['id']} not left of its sink's {path[-1]}")
    labels = seen["labels"]
    problems += [f"labels {a[4]!r} and {b[4]!r} overlap" for i, a in enumerate(labels)
                 for b in labels[i + 1:] if overlap(a, b)]
    if problems:
        sys.exit("view: the grouped topology is misdrawn:\n" + "\n".join(problems[:30]))
    group = max(members, key=lambda g: len(members[g]))
    inside = set(members[group])
    s.driver.execute_script(
        "document.querySelector(`#topology g.node[data-node='${arguments[0]}'] a`)"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))", group)
    s.until(f"group {group} opened", lambda d: inside <= s.attrs("#topology g.node", "data-node"))
    s.shot(args.groups + "-opened")
    s.driver.execute_script("document.querySelector('.opened button').click()")
    s.until(f"group {group} closed again", lambda d: group in s.attrs("#topology g.node", "data-node"))
    return {"drawn": len(members), "groups": {g: len(m) for g, m in members.items()}, "labels": len(labels),
            "opened": len(inside)}


# The congestion pages as drawn, read in one go: the timeline's bars, the
# heatmap's rows (each with its peak and its cells' values).
READ_BARS = """
return [...document.querySelectorAll('#episodes-chart g.bar')].map(g => ({id: g.dataset.episode, queue: g.dataset.queue,
  open: g.classList.contains('open')}));
"""
READ_HEAT = """
const svg = document.querySelector('#heatmap');
if (!svg) return null;
return {column: Number(svg.dataset.column), rows: [...svg.querySelectorAll('g.heat-row')].map(g => ({node: g.dataset.node,
  peak: g.dataset.peak, name: g.querySelector('text').textContent,
  cells: [...g.querySelectorAll('rect.cell')].map(c => c.dataset.value == null ? null : Number(c.dataset.value))}))};
"""


def congestion_pages(s, args):
    """The congestion pages of a fed fleet: the timeline holds the known
    episodes, every one on the burst queue; an episode's page names the
    culprit first (its link opens the flow's page) and the victims; the
    heatmap has a row per node, the burst node's with its peak and hot
    cells where the bursts were, every other row calm; a click on a hot
    cell zooms in and the burst stays in view."""
    problems = []
    s.driver.get(s.url + f"#/congestion?span={args.span}")
    bars = s.until(f"{args.episodes} episodes on the timeline", lambda d: (lambda b: len(b) == args.episodes and b)(
        d.execute_script(READ_BARS)))
    problems += [f"episode {b['id']} on queue {b['queue']}, not {args.burst_queue}" for b in bars if b["queue"] != args.burst_queue]
    problems += [f"episode {b['id']} still under way" for b in bars if b["open"]]
    title = s.texts("#episodes-title")[0]
    if f"({args.episodes} in the last" not in title:
        problems.append(f"the title does not count {args.episodes}: {title!r}")
    s.shot("congestion-episodes", 1200)
    first = sorted(bars, key=lambda b: int(b["id"]))[0]["id"]
    s.until("a click on the first episode's bar", lambda d: d.execute_script(
        "const a = document.querySelector(`#episodes-chart g.bar[data-episode='${arguments[0]}']`).closest('a');"
        "a.dispatchEvent(new MouseEvent('click', {bubbles: true})); return true;", first))
    culprits = s.until("the episode's culprits", lambda d: d.execute_script("return location.hash") == f"#/episode/{first}"
                       and s.texts("#culprits tr.culprit td:nth-child(2)"))
    if culprits[0] != args.culprit:
        problems.append(f"the first culprit is {culprits[0]!r}, not {args.culprit!r}")
    victims = s.until("the episode's victims", lambda d: s.texts("#victims tr.victim td:first-child"))
    if len(victims) != args.victims or args.culprit in victims:
        problems.append(f"victims {victims}, not {args.victims} flows without the culprit")
    peak = s.until("the episode's curve", lambda d: s.attrs("#episode-curve", "data-peak"))
    s.shot("congestion-episode", 1400)
    s.until("a click on the culprit", lambda d: d.find_element(By.CSS_SELECTOR, "#culprits a.flow-link").click() or True)
    flow = s.until("the culprit's flow page", lambda d: s.texts("#flow-title"))
    if args.culprit not in flow[0]:
        problems.append(f"the culprit's link opened {flow[0]!r}")
    s.go(f"#/heatmap?span={args.span}")
    heat = s.until(f"{args.expect_nodes} rows on the heatmap, node {args.burst_node} at its peak", lambda d: (
        lambda m: m and len(m["rows"]) == args.expect_nodes and any(
            r["node"] == args.burst_node and r["peak"] == str(args.burst_peak) for r in m["rows"]) and m)(
        d.execute_script(READ_HEAT)))
    rows = {r["node"]: r for r in heat["rows"]}
    burst = rows[args.burst_node]
    hot = [c for c, v in enumerate(burst["cells"]) if v is not None and v >= args.threshold]
    if len(hot) < args.episodes:
        problems.append(f"node {args.burst_node}'s hot cells: {hot}")
    problems += [f"node {r['node']} ({r['name']}) at {r['peak']}, over the threshold" for r in heat["rows"]
                 if r["node"] != args.burst_node and r["peak"] and int(r["peak"]) >= args.threshold]
    s.shot("congestion-heatmap", 1400)
    hottest = max(hot, key=lambda c: burst["cells"][c]) if hot else 0
    s.driver.execute_script(
        "document.querySelector(`#heatmap rect.cell[data-node='${arguments[0]}'][data-col='${arguments[1]}']`)"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))", args.burst_node, hottest)
    zoomed = s.until("the heatmap zoomed in on the burst", lambda d: (lambda m: m and m["column"] < heat["column"] and m)(
        d.execute_script(READ_HEAT)) if "end=" in d.execute_script("return location.hash") else False)
    zoomed_hot = [v for r in zoomed["rows"] if r["node"] == args.burst_node for v in r["cells"] if v and v >= args.threshold]
    if not zoomed_hot:
        problems.append("no hot cell of the burst node once zoomed in")
    if problems:
        sys.exit("view: the congestion pages:\n" + "\n".join(problems[:30]))
    return {"episodes": len(bars), "culprit": culprits[0], "victims": victims, "curve_peak": int(next(iter(peak))),
            "heat_rows": len(heat["rows"]), "burst_peak": int(burst["peak"]), "hot_columns": len(hot),
            "column_ms": heat["column"], "zoomed_column_ms": zoomed["column"], "zoomed_hot_cells": len(zoomed_hot)}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--measure", action="store_true", help="load times only (a fleet's size)")
    parser.add_argument("--shots", help="folder for the screenshots")
    parser.add_argument("--nodes", help="node ids expected, comma-separated, each ID=NAME")
    parser.add_argument("--links", help="links expected, FROM-TO comma-separated")
    parser.add_argument("--shot-prefix", default="", help="the screenshots' names start with it")
    parser.add_argument("--rerouted", help="check a rerouted flow only: a search finding it (with --old-path, --new-path)")
    parser.add_argument("--old-path")
    parser.add_argument("--new-path")
    parser.add_argument("--stale", help="the node that stops reporting")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--layout", help="check the topology's layout only; the screenshot's name")
    parser.add_argument("--groups", help="check a fleet drawn by groups; the screenshot's name")
    parser.add_argument("--expect-nodes", type=int, help="with --layout or --groups: the nodes drawn")
    parser.add_argument("--expect-links", help="with --layout: the links drawn, FROM-TO comma-separated")
    parser.add_argument("--link-count", type=int, help="with --layout: how many links are drawn")
    parser.add_argument("--idle", help="with --layout: the nodes on no current path, comma-separated")
    parser.add_argument("--events", help="check the events page only: an aggregated event's text")
    parser.add_argument("--events-flows", help="with --events: how many flows it names")
    parser.add_argument("--events-node", help="with --events: a node (name) to filter by")
    parser.add_argument("--events-node-text", help="with --events: the one path change about that node")
    parser.add_argument("--events-loss", help="with --events: the start of a loss event's text")
    parser.add_argument("--flows", type=int, help="check the flows page only: how many flows the view holds")
    parser.add_argument("--search", help="with --flows: an address and port to search")
    parser.add_argument("--search-count", type=int, help="with --flows: the flows the search finds")
    parser.add_argument("--node", help="with --flows: a node's name to filter by")
    parser.add_argument("--node-count", type=int, help="with --flows: the flows over it")
    parser.add_argument("--path", help="with --flows: a run of nodes to filter by, A>B")
    parser.add_argument("--path-count", type=int, help="with --flows: the flows over it")
    parser.add_argument("--congestion", action="store_true", help="check the congestion pages only")
    parser.add_argument("--span", type=int, default=10000, help="with --congestion: the span shown, ms")
    parser.add_argument("--episodes", type=int, help="with --congestion: the episodes expected")
    parser.add_argument("--burst-queue", help="with --congestion: the episodes' queue, NODE/QUEUE")
    parser.add_argument("--burst-node", help="with --congestion: the bursting queue's node")
    parser.add_argument("--burst-peak", type=int, help="with --congestion: its peak occupancy")
    parser.add_argument("--threshold", type=int, help="with --congestion: the occupancy threshold")
    parser.add_argument("--culprit", help="with --congestion: the first culprit's name")
    parser.add_argument("--victims", type=int, help="with --congestion: how many victims")
    args = parser.parse_args()
    profile = tempfile.mkdtemp(prefix="int-view-chromium-")
    driver = browser(profile)
    try:
        s = Steps(driver, args.url, args.shots, args.timeout, args.shot_prefix)
        if args.measure:
            driver.get(args.url)
            print(json.dumps(measure(s)))
            return
        if args.layout:
            print(json.dumps(layout(s, args)))
            return
        if args.groups:
            print(json.dumps(groups(s, args)))
            return
        if args.events:
            print(json.dumps(events_page(s, args)))
            return
        if args.congestion:
            print(json.dumps(congestion_pages(s, args)))
            return
        if args.flows:
            print(json.dumps(flows_page(s, args)))
            return
        if args.rerouted:
            print(json.dumps(rerouted(s, args)))
            return
        named = dict(pair.split("=") for pair in args.nodes.split(","))
        nodes, links = list(named), args.links.split(",")
        load_ms, latency = topology(s, named, links)
        history = path_change(s, args.old_path, args.new_path)
        flows = pages(s, "2", "71", links[0])
        stale(s, args.stale, [n for n in nodes if n != args.stale])
        print(json.dumps({"load_ms": load_ms, "links": latency, "path_history": history, "flows": flows}))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()

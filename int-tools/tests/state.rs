//! `collect --state DIR`: a collector (and an aggregator on a real
//! nats-server) stopped by SIGINT and started again with the same state
//! shows the same view and prints the same summary, and tells a flow's
//! next path against the one it kept; a state it cannot read stops it
//! with the file named and a hint; the view's events are kept within the
//! state's age and size bounds, the newest first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/servers.rs"]
mod servers;

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::Value;

use collector::{loss_report, path_report, summary_of};

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// An empty folder for one test.
fn workdir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// collect with its view on a free port and `args`; returns it, where it
/// listens for reports (none for an aggregator) and where its view is.
fn start(args: &[&str]) -> (Child, Option<String>, String) {
    let mut args = [&["--http", "127.0.0.1:0", "--quiet", "--json", "--view-stale-s", "3600"], args].concat();
    if !args.contains(&"--view-sample-ms") {
        args.extend(["--view-sample-ms", "50"]);
    }
    let aggregator = args.contains(&"--from-nats");
    let words: &[&str] =
        if aggregator { &["view on http://"] } else { &["listening on ", "view on http://"] };
    let (child, mut said) = collector::start_collect_saying(Path::new(BIN), &args, words);
    let view = said.pop().unwrap();
    (child, said.pop(), view)
}

fn get(view: &str, path: &str) -> Value {
    let body = collector::http_get(view, path);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// SIGINT, as an operator's Ctrl-C or systemd's stop: the summary it
/// prints at exit.
fn interrupt(child: Child) -> Value {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    summary_of(child)
}

/// The fleet's reports: flows from UDP ports 1 to 8 over 1 > 2 > 9 or
/// 1 > 3 > 9, three rounds; flows 3 and 5 lose packets (4 and 7); then
/// flow 1 moves to 1 > 4 > 9.
fn fleet() -> Vec<Vec<u8>> {
    let mut datagrams = Vec::new();
    for round in 0..3u32 {
        for port in 1..=8u16 {
            let sequence = datagrams.len() as u32 + 1;
            datagrams.push(path_report(sequence, port, &[1, 2 + u32::from(port % 2), 9]));
        }
        if round == 1 {
            datagrams.push(loss_report(datagrams.len() as u32 + 1, 9, 3, 4));
            datagrams.push(loss_report(datagrams.len() as u32 + 1, 9, 5, 7));
        }
    }
    datagrams.push(path_report(datagrams.len() as u32 + 1, 1, &[1, 4, 9]));
    datagrams
}

fn send(listen: &str, datagrams: &[Vec<u8>]) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        socket.send_to(datagram, listen).unwrap();
    }
}

/// Events of `kind` in the view.
fn events(view: &str, kind: &str) -> Vec<Value> {
    let all = get(view, "/api/events?limit=10000")["events"].as_array().unwrap().clone();
    all.into_iter().filter(|e| e["kind"] == kind).collect()
}

/// The flows that events of `kind` name, all events summed.
fn flows_in(view: &str, kind: &str) -> u64 {
    events(view, kind).iter().map(|e| e["flows"].as_u64().unwrap()).sum()
}

/// Waits for the view to show `reports` reports, `changes` flows moved
/// and `losses` flows losing (the events are by cause: one names many).
fn wait_for(view: &str, reports: u64, changes: u64, losses: u64) {
    while get(view, "/api/overview")["reports"].as_u64() != Some(reports)
        || flows_in(view, "path_change") != changes
        || flows_in(view, "loss") != losses
    {
        std::thread::yield_now();
    }
}

/// `value` without what moves with the clock: `now_ms`, how long ago
/// (`..._ago`), and when a node was last on a path (now, for a node on
/// one).
fn timeless(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !["now_ms", "on_path_ms"].contains(&k.as_str()) && !k.ends_with("_ago"))
                .map(|(k, v)| (k.clone(), timeless(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(timeless).collect()),
        other => other.clone(),
    }
}

/// What an operator sees: the overview, the flows, flow 1's page (the
/// moved one), the topology and the events.
fn pages(view: &str) -> Value {
    let flows = get(view, "/api/flows?limit=1000");
    let moved =
        flows["flows"].as_array().unwrap().iter().find(|f| f["name"].as_str().unwrap().contains(":1 "));
    let id = moved.expect("flow 1 in the view")["id"].as_u64().unwrap();
    timeless(&serde_json::json!({
        "overview": get(view, "/api/overview"),
        "flows": flows,
        "flow": get(view, &format!("/api/flows/{id}")),
        "topology": get(view, "/api/topology"),
        "events": get(view, "/api/events?limit=10000"),
    }))
}

/// The summary's books: without the counts of this run's outputs (the
/// view's requests, the state's writes), and without the congestion books
/// (not kept across restarts: docs/congestion.md).
fn books_of(mut summary: Value) -> Value {
    for output in ["view", "state", "nats_consumer", "congestion"] {
        summary.as_object_mut().unwrap().remove(output);
    }
    summary
}

/// A collector fed a fleet with loss and a path change, stopped by SIGINT
/// and started again with the same --state: the same overview, flows, flow
/// page, topology and events, the same summary; flow 1's next path is a
/// change from the path it was on before the restart.
#[test]
fn a_restarted_collector_goes_on_where_it_was() {
    let dir = workdir("state-restart");
    let state = dir.join("state");
    let args = ["--state", state.to_str().unwrap()];
    let datagrams = fleet();
    let (first, listen, view) = start(&args);
    send(listen.as_deref().unwrap(), &datagrams);
    wait_for(&view, datagrams.len() as u64, 1, 2);
    let before = pages(&view);
    assert_eq!(before["overview"]["flows"], 8);
    let first = interrupt(first);
    assert_eq!(first["path_changes"], 1, "{first}");

    let (second, _, view) = start(&args);
    assert_eq!(pages(&view), before, "the view goes on where it was");
    let second = interrupt(second);
    assert_eq!(books_of(second), books_of(first.clone()), "the summary goes on where it was");

    let (third, listen, view) = start(&args);
    send(listen.as_deref().unwrap(), &[path_report(1, 1, &[1, 2, 9])]);
    wait_for(&view, datagrams.len() as u64 + 1, 2, 2);
    // The newest first.
    let change = events(&view, "path_change").remove(0);
    assert!(change["text"].as_str().unwrap().ends_with("path 1 > 4 > 9 -> 1 > 2 > 9"), "{change}");
    let third = interrupt(third);
    assert_eq!(third["path_changes"], 2, "{third}");
    assert_eq!(third["reports"].as_u64(), Some(datagrams.len() as u64 + 1));
}

/// collect with `args` run to its end (it should refuse to start): its
/// exit status and what it said.
fn refused(args: &[&str]) -> String {
    let output = Command::new(BIN)
        .args(["collect", "--listen", "127.0.0.1:0", "--quiet", "--duration", "30"])
        .args(args)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!output.status.success(), "collect started on a state it cannot read: {said}");
    assert!(!said.contains("panicked"), "{said}");
    said
}

/// Writes `entries` into the state file's table as collect names it,
/// as another version of collect (or a damaged disk) would leave them.
fn overwrite(file: &Path, table: &str, entries: &[(&str, &[u8])]) {
    let db = redb::Database::create(file).unwrap();
    let write = db.begin_write().unwrap();
    {
        let mut table = write.open_table(redb::TableDefinition::<&str, &[u8]>::new(table)).unwrap();
        for (key, value) in entries {
            table.insert(*key, *value).unwrap();
        }
    }
    write.commit().unwrap();
}

/// A state collect cannot read stops it at start, naming the file, what
/// is wrong and what to do, and never panics: a file of another kind, a
/// cut one, another program's redb file, a state of another format, a
/// state whose books are damaged. The file is left as it was.
#[test]
fn a_state_that_cannot_be_read_is_refused_with_a_hint() {
    let dir = workdir("state-refused");
    let file = dir.join("collect.redb");
    let dir_arg = ["--state", dir.to_str().unwrap()];
    let named = file.display().to_string();

    std::fs::write(&file, "nodes:\n  1: spine-1\n".repeat(200)).unwrap();
    let said = refused(&dir_arg);
    assert!(
        said.contains(&named)
            && said.contains("not a state collect can read")
            && said.contains("hint: move the file away"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "nodes:\n  1: spine-1\n".repeat(200));

    // A whole state, cut in half.
    std::fs::remove_file(&file).unwrap();
    let (child, listen, view) = start(&dir_arg);
    send(listen.as_deref().unwrap(), &fleet());
    wait_for(&view, fleet().len() as u64, 1, 2);
    interrupt(child);
    let whole = std::fs::read(&file).unwrap();
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
    let said = refused(&dir_arg);
    assert!(said.contains(&named) && said.contains("hint:"), "{said}");

    std::fs::remove_file(&file).unwrap();
    overwrite(&file, "metrics", &[("a", b"1")]);
    let said = refused(&dir_arg);
    assert!(said.contains(&named) && said.contains("state format none (another program's file)"), "{said}");

    std::fs::remove_file(&file).unwrap();
    overwrite(&file, "collect-state", &[("format", &999u32.to_be_bytes()), ("books", b"\xa0")]);
    let said = refused(&dir_arg);
    assert!(
        said.contains(&format!("--state {named}: written in state format 999, this collect reads format 1 (hint: run the int-tools that wrote it, or move the file away")),
        "{said}"
    );

    overwrite(&file, "collect-state", &[("format", &1u32.to_be_bytes()), ("books", b"\xa1\x61x\xff")]);
    let said = refused(&dir_arg);
    assert!(
        said.contains(&format!("--state {named}: its books cannot be read")) && said.contains("hint:"),
        "{said}"
    );
}

/// The view's events by age: with --state-max-age-s 1, the loss event of
/// a second before the last (on a path to another sink: a cause of its own) is left
/// out of the state; the books (every flow's loss in the summary) are
/// kept whole.
#[test]
fn a_state_keeps_the_views_events_within_its_age() {
    let dir = workdir("state-age");
    let args = ["--state", dir.to_str().unwrap(), "--state-max-age-s", "1"];
    let (child, listen, view) = start(&args);
    let listen = listen.unwrap();
    // Each flow on a path to a sink of its own: a loss cause each.
    send(&listen, &[path_report(1, 1, &[1, 2, 9]), loss_report(2, 9, 1, 5)]);
    wait_for(&view, 2, 0, 1);
    let old = events(&view, "loss")[0]["t_ms"].as_u64().unwrap();
    // The view's own clock past the bound, then a newer loss.
    while get(&view, "/api/overview")["now_ms"].as_u64().unwrap() < old + 1500 {
        std::thread::yield_now();
    }
    send(&listen, &[path_report(3, 2, &[1, 2, 8]), loss_report(4, 8, 2, 6)]);
    wait_for(&view, 4, 0, 2);
    let first = interrupt(child);
    let (child, _, view) = start(&args);
    let kept: Vec<String> =
        events(&view, "loss").iter().map(|e| e["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(kept, ["loss on 1 flow to 8: 6 packet(s) lost"]);
    let second = interrupt(child);
    assert_eq!(books_of(second), books_of(first));
}

/// The state by size: 150 loss events and 145 path changes of 5 flows,
/// each to a sink of its own (about a third of the view's bytes), kept
/// once within the default bound (its size said in the summary), then
/// within 9/10 of that: the oldest events go first, the newest stay, the
/// state is within the bound, and the books are whole.
#[test]
fn a_state_keeps_within_its_size_the_newest_events_first() {
    let run = |test: &str, bound: Option<u64>| {
        let dir = workdir(test);
        let bound = bound.map(|b| b.to_string());
        let mut args = vec!["--state", dir.to_str().unwrap(), "--view-sample-ms", "10"];
        args.extend(bound.iter().flat_map(|b| ["--state-max-bytes", b.as_str()]));
        let (child, listen, view) = start(&args);
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        // 5 flows, each report on a path to a sink of its own and a loss
        // there: a path change (but a flow's first path) and a loss event
        // each.
        for n in 1..=150u32 {
            let (port, sink) = (1 + (n % 5) as u16, 100 + n);
            for report in [path_report(2 * n - 1, port, &[1, 2, sink]), loss_report(2 * n, sink, port, n)] {
                socket.send_to(&report, listen.as_deref().unwrap()).unwrap();
            }
            wait_for(&view, u64::from(2 * n), u64::from(n.saturating_sub(5)), u64::from(n));
        }
        let before = events(&view, "loss");
        let summary = interrupt(child);
        let (child, _, view) = start(&args);
        let after = events(&view, "loss");
        interrupt(child);
        (before, after, summary)
    };
    let (before, after, whole) = run("state-size-whole", None);
    assert_eq!(after, before);
    let state = &whole["state"];
    assert_eq!(state["trimmed"], 0, "{state}");
    let bound = state["bytes"].as_u64().unwrap() * 9 / 10;
    let (before, after, bounded) = run("state-size-bounded", Some(bound));
    let state = &bounded["state"];
    assert!(state["bytes"].as_u64().unwrap() <= bound && state["trimmed"].as_u64() > Some(0), "{state}");
    assert!(!after.is_empty() && after.len() < before.len(), "{} of {}", after.len(), before.len());
    assert_eq!(after[..], before[..after.len()], "the newest kept");
    assert_eq!(books_of(bounded)["flows"], books_of(whole)["flows"]);
}

/// An aggregator (`--from-nats`) on a real nats-server, restarted under
/// its consumer name with the same --state: the stream does not deliver
/// again what it acknowledged, and the view and the summary go on where
/// they were; a path change published while it was stopped is told
/// against the kept path.
#[test]
fn a_restarted_aggregator_goes_on_where_it_was() {
    let dir = workdir("state-aggregator");
    let port = servers::free_port();
    let nats = servers::start_nats(&dir, port, &[]);
    let url = format!("nats://127.0.0.1:{port}");
    // The default stream (1 GiB) needs more free disk than a test has.
    let stream = ["--nats-max-bytes", "67108864"];
    let (publisher, listen) =
        collector::start_collect(Path::new(BIN), &[&["--quiet", "--nats", &url], &stream[..]].concat());
    let state = dir.join("state");
    let args =
        [&["--from-nats", &url, "--nats-consumer", "view", "--state", state.to_str().unwrap()], &stream[..]]
            .concat();
    let datagrams = fleet();
    let (first, _, view) = start(&args);
    send(&listen, &datagrams);
    wait_for(&view, datagrams.len() as u64, 1, 2);
    let before = pages(&view);
    let first = interrupt(first);

    let (second, _, view) = start(&args);
    assert_eq!(pages(&view), before, "the view goes on where it was");
    let second = interrupt(second);
    assert_eq!(books_of(second), books_of(first), "the summary goes on where it was");

    send(&listen, &[path_report(1, 1, &[1, 2, 9])]);
    let (third, _, view) = start(&args);
    wait_for(&view, datagrams.len() as u64 + 1, 2, 2);
    let change = events(&view, "path_change").remove(0);
    assert!(change["text"].as_str().unwrap().ends_with("path 1 > 4 > 9 -> 1 > 2 > 9"), "{change}");
    let third = interrupt(third);
    assert_eq!(
        (third["reports"].as_u64(), third["path_changes"].as_u64()),
        (Some(datagrams.len() as u64 + 1), Some(2))
    );
    servers::stop(publisher);
    servers::stop(nats);
}

/// The figures of docs/output.md: the state and its file at 5,000 flows
/// over 110 nodes and 300 links (three rounds, each flow's middle node
/// moving: 1,000 events). Run by hand: `cargo test -p int-tools --test
/// state -- --ignored --nocapture`.
#[test]
#[ignore]
fn state_figures() {
    let dir = workdir("state-figures");
    let args = ["--state", dir.to_str().unwrap()];
    let (child, listen, view) = start(&args);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent = 0u32;
    for round in 0..3u32 {
        for f in 0..5000u32 {
            sent += 1;
            let path = [1 + f % 50, 100 + (f + round) % 50, 200 + f % 10];
            socket.send_to(&path_report(sent, (1000 + f) as u16, &path), listen.as_deref().unwrap()).unwrap();
            // A lot at a time: none overflows the receive buffer.
            if sent.is_multiple_of(500) {
                while get(&view, "/api/overview")["reports"].as_u64() < Some(u64::from(sent)) {
                    std::thread::yield_now();
                }
            }
        }
    }
    let summary = interrupt(child);
    let file = std::fs::metadata(dir.join("collect.redb")).unwrap().len();
    eprintln!("state: {}, file: {file} bytes", summary["state"]);
    let (child, _, view) = start(&args);
    eprintln!("read back: {}", get(&view, "/api/overview"));
    interrupt(child);
}

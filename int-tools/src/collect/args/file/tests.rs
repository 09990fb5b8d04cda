use std::path::Path;

use clap::FromArgMatches;

use super::*;

fn read(text: &str) -> Result<Vec<Setting>, Vec<Problem>> {
    settings(text, Path::new("/etc/int"))
}

fn value(settings: &[Setting], id: &str) -> Vec<String> {
    let setting = settings.iter().find(|s| s.id == id);
    setting.map(|s| s.values.iter().map(|v| v.to_string_lossy().into_owned()).collect()).unwrap_or_default()
}

/// Every flag of collect but --config and --check has one key in the
/// file, and every key names a flag: the file has the flags' settings.
#[test]
fn every_flag_has_one_key() {
    let command = CollectArgs::augment_args(Command::new("collect"));
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        let count = KEYS.iter().filter(|key| key.id == id).count();
        let expected = usize::from(!["config", "check"].contains(&id));
        assert_eq!(count, expected, "--{id} has {count} key(s)");
    }
    for key in KEYS {
        assert!(command.get_arguments().any(|arg| arg.get_id() == key.id), "{} names no flag", key.path);
    }
}

/// A section's keys become their flags, with the flags' texts; a list
/// becomes one flag per item; a switch on is the bare flag; off, an empty
/// key or an empty list is no flag;
/// relative files are the config file's neighbours.
#[test]
fn keys_become_flags() {
    let text = "log: debug\nnames: names.yaml\nlisten: {address: 127.0.0.1:9000, sockets: 2}\n\
                stdout: {json: true, quiet: false, summary_interval_s: 2.5}\n\
                view: {address: 127.0.0.1:8080, hosts: [a.example, b.example]}\n\
                state: {dir: /var/lib/int}\ninflux:\njoin: {domain_nodes: []}\n";
    let settings = read(text).unwrap();
    assert_eq!(value(&settings, "log"), ["debug"]);
    assert_eq!(value(&settings, "names"), ["/etc/int/names.yaml"]);
    assert_eq!(value(&settings, "listen"), ["127.0.0.1:9000"]);
    assert_eq!(value(&settings, "sockets"), ["2"]);
    assert_eq!(value(&settings, "interval"), ["2.5"]);
    assert_eq!(value(&settings, "http_hosts"), ["a.example", "b.example"]);
    assert_eq!(value(&settings, "state"), ["/var/lib/int"]);
    assert!(!settings.iter().any(|s| ["quiet", "influx", "domain_nodes"].contains(&s.id)));
    let flags: Vec<OsString> = settings.into_iter().flat_map(Setting::flags).collect();
    for flag in ["--json", "--listen=127.0.0.1:9000", "--http-host=a.example", "--http-host=b.example"] {
        assert!(flags.contains(&OsString::from(flag)), "{flag} not in {flags:?}");
    }
    assert!(!flags.contains(&OsString::from("--quiet")));
}

/// The flags' own parsers read the file's values: these parse as collect.
#[test]
fn the_flags_parse_what_the_file_gives() {
    let text = "join: {window_ms: 500, domain_nodes: [10.0.0.1, 7], confirm: 4}\n\
                reports: {int21_dscp: 0x17/0x3f, sink_id: present}\nnats: {format: json}\n";
    let mut argv = vec![OsString::from("collect")];
    argv.extend(read(text).unwrap().into_iter().flat_map(Setting::flags));
    let command = CollectArgs::augment_args(Command::new("collect"));
    let args = CollectArgs::from_arg_matches(&command.try_get_matches_from(argv).unwrap()).unwrap();
    assert_eq!(args.books.join_window_ms, std::time::Duration::from_millis(500));
    assert_eq!(args.books.domain_nodes, [0x0a00_0001, 7]);
    assert_eq!(args.books.join_confirm, 4);
    assert_eq!(args.receivers.sink_id, "present");
}

/// A misspelt key is named with the key it is nearest, in its section.
#[test]
fn an_unknown_key_is_told_its_near_miss() {
    let problems = read("view:\n  idel_ms: 500\n").unwrap_err();
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "view.idel_ms");
    assert_eq!(problems[0].message, "unknown key `idel_ms`");
    assert!(
        problems[0].hint.starts_with("did you mean idle_ms? view's keys: address, hosts,"),
        "{}",
        problems[0].hint
    );
    let top = read("lsten: {address: 127.0.0.1:1}\n").unwrap_err();
    assert!(
        top[0].hint.starts_with("did you mean listen? the top level's keys: log, names, listen,"),
        "{}",
        top[0].hint
    );
}

/// A value of the wrong type is named with its path and the type wanted.
#[test]
fn a_value_of_the_wrong_type_is_named() {
    let problems =
        read("stdout: {json: 1}\nlisten: {address: [a, b]}\nmetrics: 9100\nview: {hosts: [a, {b: c}]}\n")
            .unwrap_err();
    let found: Vec<(&str, &str)> = problems.iter().map(|p| (p.path.as_str(), p.message.as_str())).collect();
    assert_eq!(
        found,
        [
            ("stdout.json", "a number, where true or false is expected"),
            ("listen.address", "a list, where one value is expected"),
            ("metrics", "a section: a mapping of keys to values"),
            ("view.hosts[1]", "a mapping, where one value is expected"),
        ]
    );
    assert!(problems[0].hint.starts_with("stdout.json is --json:"), "{}", problems[0].hint);
    assert!(
        problems[2].hint.starts_with("metrics's keys: address, flows, nodes, links"),
        "{}",
        problems[2].hint
    );
}

/// A duration out of its bounds is refused by the flag's own bounds
/// (collect/values/duration.rs), with its path.
#[test]
fn a_duration_out_of_bounds_is_refused_with_its_bounds() {
    let problems = read("view: {idle_ms: 5}\n").unwrap_err();
    assert_eq!(problems[0].path, "view.idle_ms");
    assert!(
        problems[0].message.starts_with("5 is too short: give 100 to 3600000 ms"),
        "{}",
        problems[0].message
    );
    assert!(problems[0].hint.starts_with("view.idle_ms is --http-idle-ms"), "{}", problems[0].hint);
}

/// Every problem of the file at once, each with its path, in the file's
/// order.
#[test]
fn several_problems_are_named_at_once() {
    let text = "listen:\n  sockets: 0\n  rcvbuff: 1\nstate:\n  interval_s: -1\nnats:\n  format: xml\n\
                join:\n  domain_nodes: [10.0.0.1, nowhere]\nloog: info\n";
    let problems = read(text).unwrap_err();
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "listen.sockets",
            "listen.rcvbuff",
            "state.interval_s",
            "nats.format",
            "join.domain_nodes[1]",
            "loog"
        ]
    );
    assert!(problems[0].message.contains("0 is not in 1..=64"), "{}", problems[0].message);
    assert!(problems[2].message.starts_with("-1 is negative"), "{}", problems[2].message);
    assert!(problems[3].message.contains("batch"), "{}", problems[3].message);
    assert!(problems[4].message.contains("\"nowhere\": a node id"), "{}", problems[4].message);
    assert!(problems[5].hint.starts_with("did you mean log?"), "{}", problems[5].hint);
}

/// A file that is no YAML, or no mapping, is one problem.
#[test]
fn a_file_that_is_no_mapping_is_one_problem() {
    assert_eq!(read("listen: [\n").unwrap_err()[0].path, "(document)");
    assert_eq!(read("- a\n").unwrap_err()[0].message, "not a mapping of keys to values");
    assert_eq!(read("").unwrap(), []);
}

/// docs/commands.md's table has every key beside its flag, in its
/// section's row: the docs say the file as it is read.
#[test]
fn the_docs_table_has_every_key() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/commands.md")).unwrap();
    let command = CollectArgs::augment_args(Command::new("collect"));
    for key in KEYS {
        let (section, name) = key.path.split_once('.').unwrap_or(("(top)", key.path));
        let row = docs.lines().find(|line| line.starts_with(&format!("| `{section}` |")));
        let arg = command.get_arguments().find(|arg| arg.get_id() == key.id).unwrap();
        let cell = format!("`{name}` `--{}`", arg.get_long().unwrap());
        assert!(row.is_some_and(|row| row.contains(&cell)), "docs/commands.md: no {cell} in {section}'s row");
    }
}

/// The congestion section: good values become the settings; every bad
/// one is named at once, with its key (a list's item by its index).
#[test]
fn congestion_keys_and_every_bad_value_at_once() {
    let good = "congestion: {occupancy: 5000, node_latency_ns: [10.0.0.1=20000, 7=9], units: [7=cells], \
                relative: 0, exit_ratio: 0.25, queues: 16, idle_ms: 200}\n";
    let flags: Vec<OsString> = read(good).unwrap().into_iter().flat_map(Setting::flags).collect();
    let command = CollectArgs::augment_args(Command::new("collect"));
    let matches =
        command.try_get_matches_from(std::iter::once(OsString::from("collect")).chain(flags)).unwrap();
    let settings = CollectArgs::from_arg_matches(&matches).unwrap().congestion.settings();
    assert_eq!(settings.global.occupancy, Some(5000));
    assert_eq!(settings.thresholds(0x0a00_0001).latency_ns, Some(20000));
    assert_eq!(
        settings.thresholds(7),
        crate::collect::books::congestion::settings::Thresholds {
            occupancy: Some(5000),
            latency_ns: Some(9)
        }
    );
    assert_eq!(
        (settings.relative, settings.exit_ratio, settings.queues, settings.idle_ns),
        (0.0, 0.25, 16, 200_000_000)
    );
    let bad =
        "congestion: {occupancy: -1, node_occupancy: [7], units: [7=kb], relative: 0.5, exit_ratio: 2, \
               queues: 2000000, victim_rise: x}\n";
    let problems = read(bad).unwrap_err();
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    for key in ["occupancy", "node_occupancy", "units", "relative", "exit_ratio", "queues", "victim_rise"] {
        assert!(paths.iter().any(|p| p.starts_with(&format!("congestion.{key}"))), "{key} not in {paths:?}");
    }
    assert!(problems.iter().all(|p| p.hint.contains("--congestion-")), "{problems:?}");
}

/// The fleet view's keys: good values become the flags' settings; bad
/// ones are each named with their key and flag, at once.
#[test]
fn fleet_view_keys_and_every_bad_value_at_once() {
    let good = "nats: {consume: nats://127.0.0.1:4222, fleet_view: true, view_s: 0.5}\n";
    let flags: Vec<OsString> = read(good).unwrap().into_iter().flat_map(Setting::flags).collect();
    let command = CollectArgs::augment_args(Command::new("collect"));
    let matches =
        command.try_get_matches_from(std::iter::once(OsString::from("collect")).chain(flags)).unwrap();
    let nats = CollectArgs::from_arg_matches(&matches).unwrap().nats;
    assert!(nats.fleet_view);
    assert_eq!(nats.nats_view_s, std::time::Duration::from_millis(500));
    assert!(nats.consume().unwrap().is_some());
    let problems = read("nats: {fleet_view: perhaps, view_s: 9999}\n").unwrap_err();
    let named: Vec<(&str, bool)> = problems
        .iter()
        .map(|p| (p.path.as_str(), p.hint.contains("--fleet-view") || p.hint.contains("--nats-view-s")))
        .collect();
    assert_eq!(named, [("nats.fleet_view", true), ("nats.view_s", true)], "{problems:?}");
}

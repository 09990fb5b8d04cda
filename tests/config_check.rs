//! `int-node check`: every example config passes; a bad one gets one line
//! per problem with its YAML path and a hint, and a non-zero exit code,
//! without starting DPDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn examples(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(examples(&path));
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
    out
}

/// Who reads a config under config/, by its first folder there (as
/// config/README.md says): `lab/` holds the labs' topologies, which
/// `int-lab lab` reads; `collect/` the collector's settings, which
/// `int-tools collect --config` reads and `int-tools collect --check`
/// checks; every other file is an int-node config, checked by `int-node check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Node,
    Collector,
    Lab,
}

fn reader(config_dir: &Path, file: &Path) -> Reader {
    let first = file.strip_prefix(config_dir).ok().and_then(|rest| rest.components().next());
    match first.and_then(|folder| folder.as_os_str().to_str()) {
        Some("lab") => Reader::Lab,
        Some("collect") => Reader::Collector,
        _ => Reader::Node,
    }
}

/// Every example passes its reader's check from any working directory once
/// the one documented command has made the pcaps they read
/// (`config/make-pcaps.sh`): paths in a config resolve against its own
/// directory. The node's example for a bigger host (more CPUs than this
/// one) passes `--for-another-host`, and plain `check` says which CPUs it
/// lacks; the collector's pass `int-tools collect --check`.
#[test]
fn every_example_config_passes_check_from_anywhere() {
    // A copy of config/ (the repository's own is left alone): the command
    // makes the pcaps beside the copy, as it would beside the original.
    let root = workdir("examples-copy");
    let copied = Command::new("cp")
        .args(["-r"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../config"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(copied.success());
    let made = Command::new("bash").arg(root.join("config/make-pcaps.sh")).arg(tools_bin()).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let config_dir = root.join("config");
    let files = examples(&config_dir);
    let of = |kind| files.iter().filter(|f| reader(&config_dir, f) == kind).collect::<Vec<_>>();
    let (nodes, collectors) = (of(Reader::Node), of(Reader::Collector));
    assert!(nodes.len() >= 5, "{files:?}");
    assert!(!collectors.is_empty(), "no collector config under config/collect/: {files:?}");
    let elsewhere = workdir("examples-elsewhere");
    for file in nodes {
        node_example_passes_check(file, &elsewhere);
    }
    for file in collectors {
        let output = Command::new(tools_bin())
            .args(["collect", "--check", "--config"])
            .arg(file)
            .current_dir(&elsewhere)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{}: {said}", file.display());
        assert!(String::from_utf8_lossy(&output.stdout).ends_with(": ok\n"), "{}", file.display());
    }
}

/// `int-node check` on one example, run from `elsewhere`.
fn node_example_passes_check(file: &Path, elsewhere: &Path) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let check = |extra: &[&str]| {
        Command::new(BIN)
            .args(["check", "--config"])
            .arg(file)
            .args(extra)
            .current_dir(elsewhere)
            .output()
            .unwrap()
    };
    let output = check(&[]);
    let said = String::from_utf8_lossy(&output.stderr);
    if file.ends_with("smartnic-pci.yaml") && cpus < 5 {
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(said.contains("need CPU(s) ") && said.contains("this host lacks"), "{said}");
        let output = check(&["--for-another-host"]);
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{said}");
        assert_warnings_explained(file, &said);
        return;
    }
    assert!(output.status.success(), "{}: {said}", file.display());
    assert!(String::from_utf8_lossy(&output.stdout).contains(": ok ("));
    assert_warnings_explained(file, &said);
}

/// A shipped example checks with no warning, or says in a comment why it
/// keeps the one it has (a line beginning `# check warns`): an operator
/// copying it must not take a warning for a mistake of theirs.
fn assert_warnings_explained(file: &Path, said: &str) {
    if !said.contains("warning:") {
        return;
    }
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        text.lines().any(|line| line.starts_with("# check warns")),
        "{} warns on check and says not why (a '# check warns' comment): {said}",
        file.display()
    );
}

/// A config's relative input that is not there is named as the node would
/// open it: beside the config file, wherever check runs from.
#[test]
fn a_missing_input_is_named_beside_its_config() {
    let dir = workdir("missing-input");
    let config = node_config("forward", "nowhere.pcap", "out.pcap", "", None);
    std::fs::create_dir_all(dir.join("conf")).unwrap();
    std::fs::write(dir.join("conf/node.yaml"), config).unwrap();
    let output =
        Command::new(BIN).args(["check", "--config", "conf/node.yaml"]).current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("rx_pcap \"conf/nowhere.pcap\" does not exist"), "{said}");
    write_pcap(&dir.join("conf/nowhere.pcap"), &[]);
    let output =
        Command::new(BIN).args(["check", "--config", "conf/node.yaml"]).current_dir(&dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// What only the host tells, and what runs but not as meant: lcores on CPUs
/// the host lacks and RX queues no pipeline polls are refused; a source
/// whose full-size frames cannot take INT on its link is warned of.
#[test]
fn check_refuses_missing_cpus_and_unpolled_queues_and_warns_of_the_mtu() {
    let dir = workdir("host-checks");
    write_pcap(&dir.join("in.pcap"), &[]);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = format!(
        "
node_id: 10.0.0.1
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, -l, '0-{last}']
ports:
  - {{name: in, device: 'net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap', rx_queues: 4, tx_queues: 2}}
pipelines:
  - {{name: src, role: source, lcore: {last}, rx: {{port: in}}, tx: {{port: in}}}}
",
        last = cpus + 3
    );
    std::fs::write(dir.join("node.yaml"), config).unwrap();
    let check = |extra: &[&str]| {
        Command::new(BIN)
            .args(["check", "--config", "node.yaml"])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let output = check(&[]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    let missing = format!("{}-{}", cpus, cpus + 3);
    assert!(
        said.contains(&format!("need CPU(s) {missing} this host lacks: it has CPU(s) 0-{}", cpus - 1)),
        "{said}"
    );
    assert!(
        said.contains("ports[0].rx_queues: 4 RX queues, but no pipeline polls queue(s) 1, 2, 3"),
        "{said}"
    );
    // Elsewhere the CPUs are not judged; the queues are, whatever the host.
    let said = String::from_utf8_lossy(&check(&["--for-another-host"]).stderr).to_string();
    assert!(!said.contains("this host lacks") && said.contains("no pipeline polls"), "{said}");
    let fixed = std::fs::read_to_string(dir.join("node.yaml"))
        .unwrap()
        .replace(&format!("'0-{}'", cpus + 3), "'0-1'")
        .replace(&format!("lcore: {}", cpus + 3), "lcore: 1")
        .replace("rx_queues: 4", "rx_queues: 1");
    std::fs::write(dir.join("node.yaml"), fixed).unwrap();
    let output = check(&[]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("warning: pipelines[0] (src): INT adds up to 52 bytes (every hop's metadata), and port in both receives frames of its MTU 1500")
            && said.contains("frames over 1448 bytes pass without INT")
            && said.contains("give the INT side a port of MTU 1552 or more"),
        "{said}"
    );
}

#[test]
fn bad_config_names_every_problem() {
    let dir = workdir("bad-config");
    std::fs::write(
        dir.join("bad.yaml"),
        "
ports:
  - {name: in, device: 'net_pcap0,rx_pcap=a.pcap'}
pipelines:
  - role: source
    lcore: 1
    rx: {port: in}
    tx: {port: out}
    source: {instructions: [switch_id, colour], watchlist: [{dst: 10.0.0.0/40}]}
  - role: sink
    lcore: 1
    rx: {port: in}
    tx: {port: in}
    sink: {latency: {refresh_ms: 86400000}}
",
    )
    .unwrap();
    let output = Command::new(BIN).args(["check", "--config"]).arg(dir.join("bad.yaml")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "pipelines[0].tx.port: no port named \"out\"",
        "pipelines[0].source.instructions[1]: unknown instruction \"colour\"",
        "pipelines[0].source.watchlist[0].dst: \"10.0.0.0/40\" is not an IPv4 or IPv6 prefix",
        "pipelines[1].rx: this RX queue is already polled by another pipeline",
        "export: a sink pipeline needs an export section",
        "pipelines[1].sink.latency.refresh_ms: 86400000 ms is longer than a flow's report clock can count",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert!(stderr.matches("hint: ").count() >= 6, "a hint per problem:\n{stderr}");

    std::fs::write(dir.join("typo.yaml"), "ports: []\npipelins: []\n").unwrap();
    let output = Command::new(BIN).args(["check", "--config"]).arg(dir.join("typo.yaml")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown field `pipelins`"), "{stderr}");
    assert!(stderr.contains("hint: check the spelling"), "{stderr}");

    let output = Command::new(BIN).args(["check", "--config", "/nonexistent/x.yaml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read /nonexistent/x.yaml"));
}

/// Two ports on one device would have two lcores poll one queue (corrupted
/// packets, a corrupted mempool); two ports writing one pcap would lose
/// packets. `check` and `run` both refuse, with the YAML path.
#[test]
fn aliased_ports_are_refused_by_check_and_run() {
    let dir = workdir("aliased-ports");
    write_pcap(&dir.join("in.pcap"), &[]);
    std::fs::write(
        dir.join("aliased.yaml"),
        "
eal: [--no-huge, -m, '512', --no-pci, --no-shconf, -l, 0-1]
ports:
  - {name: a, device: 'net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap'}
  - {name: b, device: 'net_pcap0,rx_pcap=in.pcap,tx_pcap=other.pcap'}
  - {name: c, device: 'net_pcap2,rx_pcap=in.pcap,tx_pcap=out.pcap'}
pipelines:
  - {role: forward, lcore: 1, rx: {port: a}, tx: {port: b}}
  - {role: forward, lcore: 1, rx: {port: b}, tx: {port: c}}
",
    )
    .unwrap();
    for command in ["check", "run"] {
        let output =
            Command::new(BIN).args([command, "--config", "aliased.yaml"]).current_dir(&dir).output().unwrap();
        assert_ne!(output.status.code(), Some(0), "{command}");
        let said =
            format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(said.contains("ports[1].device: device \"net_pcap0\" is also ports[0]"), "{command}: {said}");
        assert!(
            said.contains("ports[2].device: tx_pcap \"out.pcap\" is also written by ports[0]"),
            "{command}: {said}"
        );
        assert!(!dir.join("out.pcap").exists(), "{command} started DPDK");
    }
}

/// A mistake is one problem: `role: Source` says so once, suggests the
/// role meant, and raises nothing about the pipeline's source section; a
/// pipeline on an lcore the config's EAL list lacks is refused before DPDK
/// starts; lab equipment is refused by a product build.
#[test]
fn one_problem_per_mistake_through_the_binary() {
    let dir = workdir("one-problem");
    std::fs::write(
        dir.join("role.yaml"),
        "
eal: [--no-huge, -m, '512', --no-pci, --no-shconf, -l, 0-1]
ports:
  - {name: in, device: net_null0}
pipelines:
  - {role: Source, lcore: 3, rx: {port: in}, tx: {port: in}, source: {marked: strip}}
",
    )
    .unwrap();
    let output =
        Command::new(BIN).args(["check", "--config", "role.yaml"]).current_dir(&dir).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("hint: ").count(), 2, "two mistakes, two problems:\n{stderr}");
    assert!(
        stderr.contains("pipelines[0].role: unknown value \"Source\"\n    hint: did you mean source?"),
        "{stderr}"
    );
    assert!(stderr.contains("pipelines[0].lcore: lcore 3 is not in the EAL lcore list (-l 0-1)"), "{stderr}");

    let lab = std::fs::read_to_string("../config/lab/node-wan.yaml").unwrap();
    std::fs::write(dir.join("wan.yaml"), lab).unwrap();
    let output =
        Command::new(BIN).args(["check", "--config", "wan.yaml"]).current_dir(&dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if cfg!(feature = "lab") {
        assert!(output.status.success(), "{stderr}");
    } else {
        assert_eq!(output.status.code(), Some(2));
        assert!(stderr.contains("impair is lab equipment"), "{stderr}");
    }
}

/// `run --stats-json` to a path that cannot be written fails at start,
/// before DPDK and before the run, naming the path.
#[test]
fn an_unwritable_stats_path_fails_at_start() {
    let dir = workdir("stats-path");
    write_pcap(&dir.join("in.pcap"), &mixed_traffic(4, 1, 0));
    std::fs::write(dir.join("node.yaml"), node_config("forward", "in.pcap", "out.pcap", "", None)).unwrap();
    let started = std::time::Instant::now();
    let output = Command::new(BIN)
        .args(["run", "--config", "node.yaml", "--duration", "30", "--stats-json", "/nonexistent/stats.json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("writing /nonexistent/stats.json: No such file or directory"), "{said}");
    assert!(!said.contains("EAL"), "refused before DPDK started: {said}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "not after the run");
}

/// The multi-hop lab's comment on its INT links says what `check` reckons
/// INT adds for its source (node-source21.yaml): the figure `check` warns
/// of once the source's INT port is no bigger than its edge, and a lab
/// link MTU that takes it without a warning.
#[test]
fn the_multi_hop_labs_int_bytes_are_checks() {
    let dir = workdir("lab-int-bytes");
    let source = std::fs::read_to_string("../config/lab/node-source21.yaml").unwrap();
    std::fs::write(dir.join("fits.yaml"), &source).unwrap();
    let fits = Command::new(BIN).args(["check", "--config", "fits.yaml"]).current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&fits.stderr);
    assert!(fits.status.success() && !said.contains("warning"), "the lab's MTU takes it: {said}");
    // The INT port at the edge's 1500: check names the bytes INT adds.
    let squeezed = source.replace("int_port: 2, mtu: 1700", "int_port: 2, mtu: 1500");
    assert_ne!(squeezed, source, "node-source21.yaml's out port changed: update this test");
    std::fs::write(dir.join("squeezed.yaml"), squeezed).unwrap();
    let out =
        Command::new(BIN).args(["check", "--config", "squeezed.yaml"]).current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    let bytes = said.split("INT adds up to ").nth(1).and_then(|r| r.split(' ').next()).expect(&said);
    let topology = std::fs::read_to_string("../config/lab/multihop21.yaml").unwrap();
    let comment = format!("up to {bytes} bytes more than the edges' MTU");
    assert!(topology.contains(&comment), "multihop21.yaml should say {comment:?}; check said {said}");
}

/// An INT-MX source adds a shim and the MX header, 16 bytes, whatever
/// its instructions: the MX lab's source checks without a warning (it
/// warned of 244 bytes, an INT-MD stack of 8 hops), and squeezed to its
/// edge's MTU, check names 16.
#[test]
fn an_mx_source_adds_sixteen_bytes() {
    let dir = workdir("mx-int-bytes");
    let source = std::fs::read_to_string("../config/lab/node-mx-src.yaml").unwrap();
    std::fs::write(dir.join("mx.yaml"), &source).unwrap();
    let out = Command::new(BIN).args(["check", "--config", "mx.yaml"]).current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !said.contains("warning"), "{said}");
    let squeezed = source.replace("mtu: 1700", "mtu: 1500");
    assert_ne!(squeezed, source, "node-mx-src.yaml's MTUs changed: update this test");
    std::fs::write(dir.join("squeezed.yaml"), squeezed).unwrap();
    let out =
        Command::new(BIN).args(["check", "--config", "squeezed.yaml"]).current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("INT adds up to 16 bytes"), "{said}");
}

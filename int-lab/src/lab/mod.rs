//! `int-lab lab --topology FILE`: brings a YAML-described lab up (hosts as
//! network namespaces, veth links, int-node processes on `net_af_packet`
//! vdevs, a collector), runs its scenario with real kernel TCP and UDP
//! traffic and netem impairments, checks what the reports say against what
//! was done, and tears everything down on every exit path. It only touches
//! namespaces it created (names prefixed with the lab's name) and refuses to
//! start if one of them already exists.
//!
//! The scenario (all steps optional, in this order):
//! 1. `tcp_transfer_mb`: a TCP transfer client -> server with nc; the
//!    SHA-256 at the far end must match: the sink restored packets the
//!    kernel accepts.
//! 2. `loss_percent` with `udp_packets` at `udp_rate`: netem loss on the
//!    impaired link; the Drop-Summary gap counts for the flow must equal
//!    what netem dropped (read from `tc -s qdisc`).
//! 3. `delay_ms`: a UDP flow runs, netem delay is added mid-run; a latency
//!    report must show the new one-way latency.
//!
//! The same checks hold for an INT 2.1 domain (config/lab/int21.yaml): its
//! Telemetry Report 2.0 latency and loss records are read in the terms of
//! the 0.5 ones.

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Deserialize;

mod states;

use states::{barrier, wait_for};

/// The most negative one-way latency the lab accepts between nodes on one
/// host clock, ns.
const SKEW_TOLERANCE_NS: i64 = 100_000;

#[derive(Debug, Args)]
pub struct LabArgs {
    /// The topology YAML (config/lab/*.yaml).
    #[arg(long, short)]
    pub topology: PathBuf,
    /// Where node logs, collector output and transfer files go.
    #[arg(long, default_value = "target/lab")]
    pub workdir: PathBuf,
    /// Leave the lab up after the scenario (tear down with --down).
    #[arg(long)]
    pub keep: bool,
    /// Only tear down a lab left up with --keep.
    #[arg(long)]
    pub down: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Topology {
    name: String,
    hosts: Vec<String>,
    links: Vec<Link>,
    #[serde(default)]
    nodes: Vec<NodeSpec>,
    collector: Option<CollectorSpec>,
    #[serde(default)]
    scenario: Scenario,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Link {
    /// `host/interface`.
    a: String,
    b: String,
    #[serde(default = "default_mtu")]
    mtu: u16,
    a_addr: Option<String>,
    b_addr: Option<String>,
    /// IPv6 addresses of the ends (dual stack), e.g. `fd00:10::1/64`.
    a_addr6: Option<String>,
    b_addr6: Option<String>,
    /// netem arguments applied at start on side a, e.g. "delay 1ms".
    netem: Option<String>,
}

fn default_mtu() -> u16 {
    1500
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeSpec {
    host: String,
    /// Node config, relative to the topology file.
    config: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectorSpec {
    host: String,
    listen: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// `host/interface` of the traffic's sender and receiver.
    client: Option<String>,
    server: Option<String>,
    /// `host/interface` whose egress gets netem.
    impaired: Option<String>,
    /// Where loss and delay come from: `netem` on `impaired`, `node` (an
    /// int-node impair pipeline reading `impair_control`), or `auto`: netem
    /// when the kernel has it, the node otherwise.
    #[serde(default = "default_impairment")]
    impairment: String,
    /// The impair node's control file (in the lab's work directory) and the
    /// host whose node log carries its counters.
    impair_control: Option<String>,
    impair_host: Option<String>,
    tcp_transfer_mb: Option<u64>,
    loss_percent: Option<f64>,
    #[serde(default = "default_udp_packets")]
    udp_packets: u64,
    #[serde(default = "default_udp_rate")]
    udp_rate: f64,
    delay_ms: Option<u64>,
    /// The TCP transfer again over IPv6 (the ends' `a_addr6`/`b_addr6`).
    #[serde(default)]
    ipv6_transfer: bool,
    /// The loss check again over IPv6: for domains whose loss reports can
    /// name an IPv6 flow (TR 2.0; Host-INT's Drop-Summary cannot).
    #[serde(default)]
    ipv6_loss: bool,
}

fn default_impairment() -> String {
    "auto".into()
}

fn default_udp_packets() -> u64 {
    20_000
}
fn default_udp_rate() -> f64 {
    4_000.0
}

fn split(endpoint: &str) -> Result<(&str, &str), String> {
    endpoint.split_once('/').ok_or_else(|| format!("{endpoint:?}: expected host/interface"))
}

/// Runs a command; its stdout, or an error with its stderr.
fn sh(args: &[&str]) -> Result<String, String> {
    let (program, rest) = args.split_first().ok_or("empty command")?;
    let output = Command::new(program).args(rest).output().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !output.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Everything the lab created, undone on drop.
struct Lab {
    prefix: String,
    namespaces: Vec<String>,
    children: Vec<(String, Child)>,
    keep: bool,
}

impl Lab {
    fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    fn exec(&self, host: &str, args: &[&str]) -> Result<String, String> {
        let ns = self.ns(host);
        let mut full = vec!["ip", "netns", "exec", ns.as_str()];
        full.extend_from_slice(args);
        sh(&full)
    }

    fn spawn(&mut self, name: &str, host: &str, args: &[&str], log: &Path) -> Result<(), String> {
        let file = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(host)])
            .args(args)
            .current_dir(log.parent().unwrap_or(Path::new(".")))
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("{name}: {e}"))?;
        self.children.push((name.to_string(), child));
        Ok(())
    }

    /// SIGTERM to one child, then wait (SIGKILL after 10 s).
    fn stop(&mut self, name: &str) {
        if let Some(index) = self.children.iter().position(|(n, _)| n == name) {
            let (_, mut child) = self.children.remove(index);
            terminate(&mut child);
        }
    }
}

fn terminate(child: &mut Child) {
    int_os::signals::terminate(child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for Lab {
    fn drop(&mut self) {
        for (_, child) in self.children.iter_mut().rev() {
            terminate(child);
        }
        if self.keep {
            eprintln!("lab: left up (int-lab lab --down --topology ... tears it down)");
            return;
        }
        for ns in self.namespaces.iter().rev() {
            if let Err(e) = sh(&["ip", "netns", "del", ns]) {
                eprintln!("lab: cleanup: {e}");
            }
        }
        eprintln!("lab: removed namespaces {}", self.namespaces.join(", "));
    }
}

struct Checks {
    results: Vec<(String, bool, String)>,
}

impl Checks {
    fn check(&mut self, name: &str, ok: bool, detail: String) {
        println!("lab: {} {name}: {detail}", if ok { "PASS" } else { "FAIL" });
        self.results.push((name.to_string(), ok, detail));
    }
}

pub fn run(args: &LabArgs) -> Result<(), String> {
    if !int_os::signals::is_root() {
        return Err("the lab creates network namespaces: run it as root".into());
    }
    let text = fs::read_to_string(&args.topology).map_err(|e| format!("{}: {e}", args.topology.display()))?;
    let topology: Topology =
        serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", args.topology.display()))?;
    let base = args.topology.parent().unwrap_or(Path::new("."));
    int_os::signals::catch_stop_signals();
    let mut lab =
        Lab { prefix: topology.name.clone(), namespaces: Vec::new(), children: Vec::new(), keep: args.keep };
    if args.down {
        lab.namespaces = topology.hosts.iter().map(|h| lab.ns(h)).filter(|ns| namespace_exists(ns)).collect();
        return Ok(());
    }
    let workdir = args.workdir.join(&topology.name);
    fs::create_dir_all(&workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;
    let workdir = fs::canonicalize(&workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;
    if let Some(control) = &topology.scenario.impair_control {
        fs::write(workdir.join(control), "loss_percent=0 delay_ms=0\n").map_err(|e| e.to_string())?;
    }
    up(&mut lab, &topology, base, &workdir)?;
    let checks = scenario(&mut lab, &topology, &workdir)?;
    // Stop nodes and collector so that their final words are in the logs.
    let names: Vec<String> = lab.children.iter().map(|(n, _)| n.clone()).collect();
    for name in names {
        lab.stop(&name);
    }
    let failed: Vec<&str> =
        checks.results.iter().filter(|(_, ok, _)| !ok).map(|(n, _, _)| n.as_str()).collect();
    println!("lab: logs in {}", workdir.display());
    drop(lab);
    if failed.is_empty() {
        println!("lab: all {} checks passed", checks.results.len());
        Ok(())
    } else {
        Err(format!("lab: {} check(s) failed: {}", failed.len(), failed.join(", ")))
    }
}

fn namespace_exists(ns: &str) -> bool {
    sh(&["ip", "netns", "list"])
        .map(|list| list.lines().any(|l| l.split_whitespace().next() == Some(ns)))
        .unwrap_or(false)
}

fn up(lab: &mut Lab, topology: &Topology, base: &Path, workdir: &Path) -> Result<(), String> {
    add_namespaces(lab, topology)?;
    add_links(lab, topology)?;
    add_neighbours(lab, topology)?;
    start_processes(lab, topology, base, workdir)?;
    // Up once the collector listens (the nodes: once the path carries a
    // ping, which the scenario waits for).
    let Some(collector) = &topology.collector else { return Ok(()) };
    let port = collector.listen.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
    wait_for("collector listening", || {
        alive(lab, workdir)?;
        states::listening(lab, &collector.host, "-u", port)
    })
}

/// Fails when a process of the lab has exited.
fn alive(lab: &mut Lab, workdir: &Path) -> Result<(), String> {
    for (name, child) in lab.children.iter_mut() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{name} exited early ({status}); see {}", workdir.display()));
        }
    }
    Ok(())
}

/// A namespace per host, refusing to touch one that exists already.
fn add_namespaces(lab: &mut Lab, topology: &Topology) -> Result<(), String> {
    for host in &topology.hosts {
        let ns = lab.ns(host);
        if namespace_exists(&ns) {
            return Err(format!("namespace {ns} exists already (an earlier run kept up?): `int-lab lab --down --topology ...` or `ip netns del {ns}`"));
        }
    }
    for host in &topology.hosts {
        let ns = lab.ns(host);
        sh(&["ip", "netns", "add", &ns])?;
        lab.namespaces.push(ns.clone());
        lab.exec(host, &["ip", "link", "set", "lo", "up"])?;
        // No IPv6 autoconfiguration chatter on the links: the loss check
        // counts every packet netem drops.
        lab.exec(host, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
        lab.exec(host, &["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])?;
    }
    println!("lab: namespaces {}", lab.namespaces.join(", "));
    Ok(())
}

/// The veth links, their MTUs, addresses and netem qdiscs.
fn add_links(lab: &Lab, topology: &Topology) -> Result<(), String> {
    for (i, link) in topology.links.iter().enumerate() {
        let (host_a, if_a) = split(&link.a)?;
        let (host_b, if_b) = split(&link.b)?;
        let (tmp_a, tmp_b) = (format!("{}l{i}a", topology.name), format!("{}l{i}b", topology.name));
        sh(&["ip", "link", "add", &tmp_a, "type", "veth", "peer", "name", &tmp_b])?;
        for (tmp, host, ifname, addr, addr6) in [
            (&tmp_a, host_a, if_a, &link.a_addr, &link.a_addr6),
            (&tmp_b, host_b, if_b, &link.b_addr, &link.b_addr6),
        ] {
            let ns = lab.ns(host);
            sh(&["ip", "link", "set", tmp, "netns", &ns, "name", ifname])?;
            let mtu = link.mtu.to_string();
            lab.exec(host, &["ip", "link", "set", ifname, "mtu", &mtu, "up"])?;
            // Checksums and segmentation done by the kernel in software: a
            // packet read by af_packet is a real, finished frame.
            lab.exec(
                host,
                &[
                    "ethtool", "-K", ifname, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro",
                    "off",
                ],
            )?;
            if let Some(addr) = addr {
                lab.exec(host, &["ip", "addr", "add", addr, "dev", ifname])?;
            }
            if let Some(addr) = addr6 {
                // New namespaces may start with IPv6 off; no router
                // solicitations, no duplicate address detection: the
                // address is usable at once.
                for setting in ["disable_ipv6=0", "accept_ra=0"] {
                    lab.exec(host, &["sysctl", "-qw", &format!("net.ipv6.conf.{ifname}.{setting}")])?;
                }
                lab.exec(host, &["ip", "-6", "addr", "add", addr, "dev", ifname, "nodad"])?;
            }
        }
        if let Some(netem) = &link.netem {
            let mut cmd = vec!["tc", "qdisc", "add", "dev", if_a, "root", "netem"];
            cmd.extend(netem.split_whitespace());
            lab.exec(host_a, &cmd)?;
        }
        println!("lab: link {} <-> {} (mtu {})", link.a, link.b, link.mtu);
    }
    Ok(())
}

/// Static neighbours between the addressed ends: no ARP or neighbour
/// discovery on the wire.
fn add_neighbours(lab: &Lab, topology: &Topology) -> Result<(), String> {
    let addressed: Vec<(&str, &str, String)> = topology
        .links
        .iter()
        .flat_map(|l| {
            [
                (l.a.as_str(), l.a_addr.clone()),
                (l.b.as_str(), l.b_addr.clone()),
                (l.a.as_str(), l.a_addr6.clone()),
                (l.b.as_str(), l.b_addr6.clone()),
            ]
        })
        .filter_map(|(end, addr)| {
            let (host, ifname) = end.split_once('/')?;
            Some((host, ifname, addr?.split('/').next()?.to_string()))
        })
        .collect();
    for (host, ifname, ip) in &addressed {
        for (peer_host, peer_if, peer_ip) in &addressed {
            if peer_host == host || ip.contains(':') != peer_ip.contains(':') {
                continue;
            }
            let mac = lab.exec(peer_host, &["cat", &format!("/sys/class/net/{peer_if}/address")])?;
            lab.exec(
                host,
                &["ip", "neigh", "replace", peer_ip, "lladdr", mac.trim(), "dev", ifname, "nud", "permanent"],
            )?;
        }
    }
    Ok(())
}

/// The collector and the nodes, each config checked first.
fn start_processes(lab: &mut Lab, topology: &Topology, base: &Path, workdir: &Path) -> Result<(), String> {
    let node_exe = sibling("int-node")?;
    if let Some(collector) = &topology.collector {
        let log = workdir.join("collector.jsonl");
        // The run's picture: latency over time and loss per flow.
        let plot = workdir.join("latency.png").to_string_lossy().into_owned();
        let tools = sibling("int-tools")?;
        let args =
            [&tools, "collect", "--listen", &collector.listen, "--json", "--interval", "0", "--plot", &plot];
        lab.spawn("collector", &collector.host, &args, &log)?;
    }
    for node in &topology.nodes {
        let config =
            fs::canonicalize(base.join(&node.config)).map_err(|e| format!("{}: {e}", node.config))?;
        let config = config.to_string_lossy().into_owned();
        sh(&[&node_exe, "check", "--config", &config])?;
        let log = workdir.join(format!("node-{}.log", node.host));
        let stats = workdir.join(format!("node-{}.json", node.host)).to_string_lossy().into_owned();
        lab.spawn(
            &format!("node-{}", node.host),
            &node.host,
            &[&node_exe, "run", "--config", &config, "--stats-json", &stats],
            &log,
        )?;
        println!("lab: node in {} runs {}", lab.ns(&node.host), node.config);
    }
    Ok(())
}

/// Reads the collector's JSON lines so far.
/// The collector's records, a Telemetry Report 2.0 record put in the terms
/// of its 0.5 counterpart: a latency record (`tr20`) with its flow's ports
/// and packet number as `flow_seq`, a loss record (`tr20-loss`) as a
/// Drop-Summary with `gap_count`.
fn reports(workdir: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(workdir.join("collector.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .map(as_tr05_terms)
        .collect()
}

fn as_tr05_terms(record: serde_json::Value) -> serde_json::Value {
    let kind = match record["type"].as_str() {
        Some("tr20") => "latency",
        Some("tr20-loss") => "drop-summary",
        _ => return record,
    };
    serde_json::json!({
        "type": kind,
        "src_port": record["flow"]["src_port"],
        "dst_port": record["flow"]["dst_port"],
        "flow_seq": record["sequence"],
        "latency_ns": record["latency_ns"],
        "gap_count": record["lost"],
    })
}

fn addr_of(lab: &Lab, endpoint: &str, topology: &Topology) -> Result<String, String> {
    address(endpoint, topology, |l| (&l.a_addr, &l.b_addr))
        .ok_or_else(|| format!("{endpoint} has no address in {}", lab.prefix))
}

fn addr6_of(lab: &Lab, endpoint: &str, topology: &Topology) -> Result<String, String> {
    address(endpoint, topology, |l| (&l.a_addr6, &l.b_addr6))
        .ok_or_else(|| format!("{endpoint} has no IPv6 address in {}", lab.prefix))
}

/// The address (without prefix length) `field` gives `endpoint`'s end of
/// its link.
fn address(
    endpoint: &str,
    topology: &Topology,
    field: impl Fn(&Link) -> (&Option<String>, &Option<String>),
) -> Option<String> {
    topology
        .links
        .iter()
        .find_map(|l| {
            let (a, b) = field(l);
            if l.a == endpoint {
                a.clone()
            } else if l.b == endpoint {
                b.clone()
            } else {
                None
            }
        })
        .and_then(|a| a.split('/').next().map(str::to_string))
}

/// The path of another of the workspace's programs, built beside this one.
fn sibling(program: &str) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe.with_file_name(program);
    if !path.is_file() {
        return Err(format!("{} not found: build the workspace (cargo build --workspace)", path.display()));
    }
    Ok(path.to_string_lossy().into_owned())
}

/// `int-lab send` in `host`: one flow of 200-byte UDP datagrams.
fn send_udp(lab: &Lab, host: &str, from: &str, to: &str, packets: u64, rate: f64) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?.to_string_lossy().into_owned();
    let (packets, rate) = (packets.to_string(), rate.to_string());
    let args = [
        exe.as_str(),
        "send",
        "--from",
        from,
        "--to",
        to,
        "--packets",
        &packets,
        "--rate",
        &rate,
        "--size",
        "200",
    ];
    lab.exec(host, &args).map(|_| ())
}

fn netem_dropped(lab: &Lab, host: &str, ifname: &str) -> Result<u64, String> {
    let text = lab.exec(host, &["tc", "-s", "qdisc", "show", "dev", ifname])?;
    text.split("dropped ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("no drop count in tc output: {text}"))
}

/// Loss and delay on the middle of the path: netem, or the impair node.
enum Impairment {
    Netem { host: String, ifname: String },
    Node { control: PathBuf, log: PathBuf },
}

impl Impairment {
    fn choose(lab: &Lab, scenario: &Scenario, workdir: &Path) -> Result<Option<Impairment>, String> {
        let netem = || -> Result<Option<Impairment>, String> {
            let Some(impaired) = &scenario.impaired else { return Ok(None) };
            let (host, ifname) = split(impaired)?;
            Ok(Some(Impairment::Netem { host: host.to_string(), ifname: ifname.to_string() }))
        };
        let node = || -> Result<Option<Impairment>, String> {
            let (Some(control), Some(host)) = (&scenario.impair_control, &scenario.impair_host) else {
                return Err("impairment by node needs impair_control and impair_host".into());
            };
            Ok(Some(Impairment::Node {
                control: workdir.join(control),
                log: workdir.join(format!("node-{host}.log")),
            }))
        };
        match scenario.impairment.as_str() {
            "netem" => netem(),
            "node" => node(),
            "auto" => {
                let probe = lab.namespaces.first().cloned().unwrap_or_default();
                let has_netem = sh(&[
                    "ip", "netns", "exec", &probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                    "delay", "1ms",
                ])
                .is_ok();
                if has_netem {
                    let _ = sh(&["ip", "netns", "exec", &probe, "tc", "qdisc", "del", "dev", "lo", "root"]);
                    println!("lab: impairments by netem");
                    netem()
                } else {
                    println!(
                        "lab: this kernel has no netem (sch_netem): impairments by the int-node impair node"
                    );
                    node()
                }
            }
            other => Err(format!("scenario.impairment {other:?}: auto, netem or node")),
        }
    }

    fn set(&self, lab: &Lab, loss_percent: f64, delay_ms: u64) -> Result<(), String> {
        match self {
            Impairment::Netem { host, ifname } => {
                if loss_percent == 0.0 && delay_ms == 0 {
                    return lab.exec(host, &["tc", "qdisc", "del", "dev", ifname, "root"]).map(|_| ());
                }
                let loss = format!("{loss_percent}%");
                let delay = format!("{delay_ms}ms");
                let mut cmd = vec!["tc", "qdisc", "replace", "dev", ifname.as_str(), "root", "netem"];
                if delay_ms > 0 {
                    cmd.extend(["delay", delay.as_str()]);
                }
                if loss_percent > 0.0 {
                    cmd.extend(["loss", loss.as_str()]);
                }
                lab.exec(host, &cmd).map(|_| ())
            }
            Impairment::Node { control, log } => {
                // The node logs each setting it takes from the file.
                let taken = states::count_in(log, "impair: ");
                fs::write(control, format!("loss_percent={loss_percent} delay_ms={delay_ms}\n"))
                    .map_err(|e| e.to_string())?;
                wait_for("the impair node taking its setting", || {
                    Ok(states::count_in(log, "impair: ") > taken)
                })
            }
        }
    }

    /// Packets dropped so far (by packets that have passed: the caller
    /// holds a [`barrier`] behind them).
    fn dropped(&self, lab: &Lab) -> Result<u64, String> {
        match self {
            Impairment::Netem { host, ifname } => netem_dropped(lab, host, ifname),
            // The node prints its counters every interval: the first line
            // printed from now on holds every drop so far.
            Impairment::Node { log, .. } => states::next_value(log, states::log_len(log), "impaired_dropped"),
        }
    }
}

/// The client and server of a scenario: their hosts and addresses.
struct Ends<'a> {
    client_host: &'a str,
    server_host: &'a str,
    client_ip: String,
    server_ip: String,
}

impl Ends<'_> {
    fn ipv6(&self) -> bool {
        self.server_ip.contains(':')
    }

    /// What a check's name says of the IP version.
    fn over(&self) -> &'static str {
        if self.ipv6() {
            " over ipv6"
        } else {
            ""
        }
    }

    /// `ip:port` for a socket address of either version.
    fn socket(ip: &str, port: u16) -> String {
        if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        }
    }
}

fn scenario(lab: &mut Lab, topology: &Topology, workdir: &Path) -> Result<Checks, String> {
    let mut checks = Checks { results: Vec::new() };
    let s = &topology.scenario;
    let (Some(client), Some(server)) = (&s.client, &s.server) else { return Ok(checks) };
    let ends = Ends {
        client_host: split(client)?.0,
        server_host: split(server)?.0,
        client_ip: addr_of(lab, client, topology)?,
        server_ip: addr_of(lab, server, topology)?,
    };
    let ends6 = Ends {
        client_ip: addr6_of(lab, client, topology).unwrap_or_default(),
        server_ip: addr6_of(lab, server, topology).unwrap_or_default(),
        ..ends
    };
    if (s.ipv6_transfer || s.ipv6_loss) && (ends6.client_ip.is_empty() || ends6.server_ip.is_empty()) {
        return Err(format!(
            "{client} and {server} need IPv6 addresses (a_addr6, b_addr6) for the IPv6 checks"
        ));
    }
    // The nodes are up once the path carries a ping.
    barrier(lab, ends.client_host, &ends.server_ip)?;
    if let Some(mb) = s.tcp_transfer_mb {
        check_tcp_transfer(lab, &ends, mb, workdir, &mut checks)?;
        if s.ipv6_transfer {
            check_tcp_transfer(lab, &ends6, mb, workdir, &mut checks)?;
        }
    }
    let impairment = Impairment::choose(lab, s, workdir)?;
    if let (Some(loss), Some(impairment)) = (s.loss_percent, &impairment) {
        check_loss(lab, &ends, s, loss, impairment, workdir, &mut checks)?;
        if s.ipv6_loss {
            check_loss(lab, &ends6, s, loss, impairment, workdir, &mut checks)?;
        }
    }
    if let (Some(delay), Some(impairment)) = (s.delay_ms, &impairment) {
        check_latency_change(lab, &ends, delay, impairment, workdir, &mut checks)?;
    }
    Ok(checks)
}

/// A TCP transfer client -> server with nc: the SHA-256 at the far end
/// must match (the sink restored packets the kernel accepts).
fn check_tcp_transfer(
    lab: &Lab,
    ends: &Ends<'_>,
    mb: u64,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(), String> {
    let Ends { client_host, server_host, server_ip, .. } = ends;
    let version = if ends.ipv6() { "6" } else { "4" };
    let send = workdir.join("transfer.bin");
    let recv = workdir.join(format!("received{version}.bin"));
    let mut file = fs::File::create(&send).map_err(|e| e.to_string())?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..mb {
        for chunk in block.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        file.write_all(&block).map_err(|e| e.to_string())?;
    }
    drop(file);
    let recv_file = fs::File::create(&recv).map_err(|e| e.to_string())?;
    let mut server_nc = Command::new("ip")
        .args(["netns", "exec", &lab.ns(server_host), "nc", &format!("-{version}"), "-l", "-N", "5001"])
        .stdout(Stdio::from(recv_file))
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    wait_for("nc listening", || states::listening(lab, server_host, "-t", 5001))?;
    let started = Instant::now();
    let sent = Command::new("ip")
        .args(["netns", "exec", &lab.ns(client_host), "nc", "-N", "-w", "30", server_ip, "5001"])
        .stdin(Stdio::from(fs::File::open(&send).map_err(|e| e.to_string())?))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while server_nc.try_wait().ok().flatten().is_none()
        && Instant::now() < deadline
        && !int_os::signals::stop_requested()
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    terminate(&mut server_nc);
    let seconds = started.elapsed().as_secs_f64();
    let hash = |p: &Path| {
        sh(&["sha256sum", &p.to_string_lossy()])
            .map(|o| o.split_whitespace().next().unwrap_or("").to_string())
    };
    let (a, b) = (hash(&send)?, hash(&recv)?);
    let size = fs::metadata(&recv).map(|m| m.len()).unwrap_or(0);
    checks.check(
        &format!("tcp transfer{}", ends.over()),
        sent.success() && a == b && !a.is_empty(),
        format!(
            "{mb} MB client -> server in {seconds:.1} s, {size} bytes received, sha256 {} {}",
            &a.get(..16).unwrap_or(""),
            if a == b { "matches" } else { "DIFFERS" }
        ),
    );
    Ok(())
}

/// Loss on the impaired link: the Drop-Summary gap counts for the flow
/// must equal what was dropped.
fn check_loss(
    lab: &Lab,
    ends: &Ends<'_>,
    s: &Scenario,
    loss: f64,
    impairment: &Impairment,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(), String> {
    let Ends { client_host, client_ip, server_ip, .. } = ends;
    let before = impairment.dropped(lab)?;
    impairment.set(lab, loss, 0)?;
    // Ports of their own for each IP version's flow.
    let (src_port, dst_port) = if ends.ipv6() { (40006, 5006) } else { (40000, 5002) };
    let from = Ends::socket(client_ip, src_port);
    let to = Ends::socket(server_ip, dst_port);
    send_udp(lab, client_host, &from, &to, s.udp_packets, s.udp_rate)?;
    // Loss off, then a ping behind the flow: every packet of it has met
    // the impairment, and the ping itself cannot be lost to it.
    impairment.set(lab, 0.0, 0)?;
    barrier(lab, client_host, server_ip)?;
    let dropped = impairment.dropped(lab)? - before;
    // A few packets after the loss: the last losses become visible.
    send_udp(lab, client_host, &from, &to, 20, 1000.0)?;
    let count = || {
        reports(workdir)
            .iter()
            .filter(|r| r["type"] == "drop-summary" && r["src_port"] == src_port && r["dst_port"] == dst_port)
            .fold((0u64, 0), |(gaps, n), r| (gaps + r["gap_count"].as_u64().unwrap_or(0), n + 1))
    };
    // Until the collector has heard of every loss (or of more, which the
    // check then shows).
    let _ = wait_for("the collector counting every loss", || Ok(count().0 >= dropped));
    let (gaps, drop_reports) = count();
    checks.check(
        &format!("loss counts{}", ends.over()),
        gaps == dropped && dropped > 0,
        format!(
            "{} dropped {dropped} of {} UDP packets at {loss}%; {drop_reports} loss reports (Drop-Summary or TR 2.0) count {gaps}",
            if matches!(impairment, Impairment::Netem { .. }) { "netem" } else { "the impair node" },
            s.udp_packets
        ),
    );
    Ok(())
}

/// A delay added mid-flow: a latency report must show it, judged against
/// the path's own noise measured in the same run (ping round trips, and
/// the flow's latency before the delay).
fn check_latency_change(
    lab: &Lab,
    ends: &Ends<'_>,
    delay: u64,
    impairment: &Impairment,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(), String> {
    let Ends { client_host, client_ip, server_ip, .. } = ends;
    let (from, to) = (format!("{client_ip}:40001"), format!("{server_ip}:5003"));
    // The path's noise: the spread of 20 round trips.
    let rtts: Vec<u64> = (0..20).map(|_| barrier(lab, client_host, server_ip)).collect::<Result<_, _>>()?;
    let noise_ns = (rtts.iter().max().unwrap_or(&0) - rtts.iter().min().unwrap_or(&0)) as i64;
    // Phase A, packets 1-1000 of the flow: no delay. Phase B, 1001-4000:
    // the delay on, set while no packet of the flow is on the way.
    send_paced(lab, client_host, &from, &to, 1000)?;
    barrier(lab, client_host, server_ip)?;
    impairment.set(lab, 0.0, delay)?;
    send_paced(lab, client_host, &from, &to, 3000)?;
    barrier(lab, client_host, server_ip)?;
    impairment.set(lab, 0.0, 0)?;
    let latencies = || -> BTreeMap<u64, i64> {
        reports(workdir)
            .iter()
            .filter(|r| r["type"] == "latency" && r["src_port"] == 40001)
            .filter_map(|r| Some((r["flow_seq"].as_u64()?, r["latency_ns"].as_i64()?)))
            .collect()
    };
    // The sink reports the first delayed packet (another bucket).
    let _ = wait_for("a report of the delayed packets", || Ok(latencies().keys().any(|seq| *seq > 1000)));
    let latencies = latencies();
    let phase =
        |delayed: bool| latencies.iter().filter(move |(seq, _)| (**seq > 1000) == delayed).map(|(_, l)| *l);
    let (before_min, before_max) = (phase(false).min(), phase(false).max());
    let after_min = phase(true).min();
    // Signed: one host clock serves every node, so no latency is below
    // zero (a margin allows for the readings of a burst) or near a second.
    let delay_ns = delay as i64 * 1_000_000;
    let sane = |l: i64| (-SKEW_TOLERANCE_NS..1_000_000_000).contains(&l);
    // The least latency of each phase, the least-disturbed: the step
    // between them is the delay, within the noise measured (round trips,
    // and the spread of the latencies before), plus a millisecond.
    let spread = before_max.zip(before_min).map_or(0, |(max, min)| max - min);
    let tolerance = noise_ns.max(spread) + 1_000_000;
    let step = after_min.zip(before_min).map(|(after, before)| after - before);
    let ok = before_max.is_some_and(|l| l < delay_ns / 2)
        && step.is_some_and(|step| (step - delay_ns).abs() <= tolerance)
        && latencies.values().all(|l| sane(*l));
    checks.check(
        "latency change",
        ok,
        format!(
            "step {} ms for a {delay} ms delay (tolerance {:.3} ms: round-trip spread {:.3} ms, latency spread before {:.3} ms); reports (flow seq -> one-way latency): {}",
            step.map_or("none".into(), |s| format!("{:.3}", s as f64 / 1e6)),
            tolerance as f64 / 1e6,
            noise_ns as f64 / 1e6,
            spread as f64 / 1e6,
            latencies
                .iter()
                .map(|(s, l)| format!("{s}: {:.3} ms", *l as f64 / 1e6))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    Ok(())
}

/// `packets` of 100 bytes from `from` to `to`, 1000 a second, waited for.
fn send_paced(lab: &Lab, host: &str, from: &str, to: &str, packets: u64) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?.to_string_lossy().into_owned();
    let packets = packets.to_string();
    let args =
        [&exe, "send", "--from", from, "--to", to, "--packets", &packets, "--rate", "1000", "--size", "100"];
    lab.exec(host, &args).map(|_| ())
}

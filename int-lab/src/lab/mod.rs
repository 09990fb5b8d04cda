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
//!    report must show the new one-way latency; with `delayed_link`, the
//!    delay must show on that link of the path alone (config/lab/multihop21.yaml).
//! 4. `path_switch`: a flow moved mid-run from one transit to another (a tc
//!    redirect in a namespace moved); the collector must show the path
//!    change, and an INT-MD sink must have reported it.
//! 5. `congestion`: steady flows and a flow bursting on a schedule through
//!    a Linux router's tbf bottleneck, its qdisc sampled; the collector's
//!    episodes of the router's queue must match the samples' (one a
//!    burst, start and end, culprit, victims, peak:
//!    config/lab/congestion.yaml).
//!
//! At exit, with `hop_latency`, every node of the collector's summary must
//! have hop latencies; with `ioam`, the decapsulating node must have found
//! every packet numbered and the traces must carry a Linux router's node
//! id (config/lab/ioam.yaml); with `scale_out`, an aggregator over NATS
//! must end with the summary of the lab's collector, fed the same reports
//! (config/lab/scaleout21.yaml).
//!
//! With `ifa`, an IFA 2.0 zone's reports must carry its paths' hops with
//! the headers its initiator and transits leave, the server's kernel must
//! have seen no IFA byte, and the initiator and terminator must have
//! counted what the mode says (config/lab/multihopifa.yaml).
//!
//! The same checks hold for an INT 2.1 domain (config/lab/int21.yaml): its
//! Telemetry Report 2.0 latency and loss records are read in the terms of
//! the 0.5 ones.

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args;

mod checks;
mod congestion;
mod figures;
mod ifa;
mod impairment;
mod links;
mod namespaces;
mod processes;
mod qdisc;
mod scale;
mod states;
mod switch;
mod topology;
mod traffic;
mod verdicts;
mod view;

use crate::error::{Error, Setup};
use namespaces::{add_links, add_namespaces, add_neighbours, namespace_exists, Lab};
use processes::start_processes;
use states::wait_for;
use topology::Topology;

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
    /// After the scenario, keep the lab running, its collector's web view
    /// with it, until Ctrl-C (then the checks at exit and the teardown).
    #[arg(long)]
    pub hold: bool,
}

pub fn run(args: &LabArgs) -> Result<(), Error> {
    if !int_os::signals::is_root() {
        return Err(Setup::NotRoot.into());
    }
    let text = fs::read_to_string(&args.topology).map_err(Error::io(args.topology.display()))?;
    let topology: Topology = serde_yaml_ng::from_str(&text)
        .map_err(|e| Setup::Topology { file: args.topology.clone(), message: e.to_string() })?;
    let base = args.topology.parent().unwrap_or(Path::new("."));
    int_os::signals::catch_stop_signals();
    let mut lab = Lab::new(&topology.name, args.keep);
    if args.down {
        lab.adopt(topology.hosts.iter().map(|h| lab.ns(h)).filter(|ns| namespace_exists(ns)).collect());
        return Ok(());
    }
    let workdir = args.workdir.join(&topology.name);
    fs::create_dir_all(&workdir).map_err(Error::io(workdir.display()))?;
    let workdir = fs::canonicalize(&workdir).map_err(Error::io(workdir.display()))?;
    if let Some(control) = &topology.scenario.impair_control {
        let file = workdir.join(control);
        fs::write(&file, "loss_percent=0 delay_ms=0\n").map_err(Error::io(file.display()))?;
    }
    let view = up(&mut lab, &topology, base, &workdir)?;
    let mut checks = checks::scenario(&mut lab, &topology, &workdir)?;
    if let Some(spec) = &topology.scenario.scale_out {
        scale::settle(&mut lab, &workdir, spec);
    }
    if let Some(address) = &view {
        view::check(&mut checks, address);
    }
    if args.hold {
        view::hold(view.as_deref());
    }
    // Stop nodes and collector so that their final words are in the logs.
    lab.stop_all();
    figures::at_exit(&topology.scenario, &workdir, &mut checks);
    if let Some(spec) = &topology.scenario.ifa {
        ifa::at_exit(&workdir, spec, &mut checks);
    }
    if let Some(spec) = &topology.scenario.scale_out {
        scale::check(&workdir, spec, &mut checks);
    }
    let failed = checks.failed();
    println!("lab: logs in {}", workdir.display());
    drop(lab);
    if failed.is_empty() {
        println!("lab: all {} checks passed", checks.count());
        Ok(())
    } else {
        Err(Error::Failed(failed))
    }
}

/// Namespaces, links, neighbours, then the processes; up once the
/// collector listens. The collector's web view's address, if it has one.
pub fn up(lab: &mut Lab, topology: &Topology, base: &Path, workdir: &Path) -> Result<Option<String>, Error> {
    add_namespaces(lab, topology)?;
    add_links(lab, topology)?;
    let view = view::add_link(lab, topology)?;
    switch::add_redirects(lab, topology)?;
    namespaces::run_setup(lab, topology, workdir)?;
    add_neighbours(lab, topology)?;
    start_processes(lab, topology, base, workdir, view.as_deref())?;
    // Up once the collector listens (the nodes: once the path carries a
    // ping, which the scenario waits for).
    let Some(collector) = &topology.collector else { return Ok(view) };
    let port = collector.listen.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
    wait_for("collector listening", || {
        alive(lab, workdir)?;
        states::listening(lab, &collector.host, "-u", port)
    })?;
    Ok(view)
}

/// Fails when a process of the lab has exited.
fn alive(lab: &mut Lab, workdir: &Path) -> Result<(), Error> {
    match lab.exited() {
        Some((name, status)) => Err(Error::Exited { name, status, logs: workdir.to_path_buf() }),
        None => Ok(()),
    }
}

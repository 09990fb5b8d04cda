//! Congestion with a ground truth (config/lab/congestion.yaml): steady
//! flows cross a Linux router whose egress is a tbf bottleneck, and one
//! known flow bursts on a schedule; the router's kernel writes its egress
//! qdisc's backlog into every IOAM trace, and the lab samples the same
//! backlog with `tc` (qdisc.rs). The collector's episodes of the router's
//! queue are then judged against the samples (judge.rs): one a burst,
//! starting and ending with the backlog's rise and fall, the bursting
//! flow first culprit, the steady flows the victims, the peak the
//! kernel's.

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

mod flows;
mod judge;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use flows::{steady_ports, BURST_PORT};

use super::namespaces::{sibling, terminate_all, Lab};
use super::qdisc::{self, Sample, Sampler, Watch};
use super::states::{barrier, wait_within};
use super::topology::{split, Congestion, Topology};
use super::verdicts::Checks;
use crate::error::Error;

/// The collector's hysteresis for the lab's queue (`--congestion-exit-
/// ratio`), and the samples' in the same terms.
pub const EXIT_RATIO: f64 = 0.5;
const DESTINATION_PORT: u16 = 5020;
/// Reports of each steady flow before the first burst: more than the 64
/// the collector takes for a flow's latency baseline.
const WARM_REPORTS: usize = 100;
/// How long a burst may take to fill the queue, or the queue to drain.
const BURST_DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(1);

/// The client's host and address, the server's address.
pub struct Ends<'a> {
    pub client_host: &'a str,
    pub client_ip: &'a str,
    pub server_ip: &'a str,
}

impl Ends<'_> {
    fn socket(ip: &str, port: u16) -> String {
        if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        }
    }
}

/// The bursts among the steady flows, the qdisc sampled throughout, then
/// the checks.
pub fn check(
    lab: &Lab,
    topology: &Topology,
    ends: &Ends<'_>,
    spec: &Congestion,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(), Error> {
    let (host, ifname) = split(&spec.bottleneck)?;
    let watch = Watch::new(u64::from(spec.threshold_bytes), EXIT_RATIO);
    let sampler = Sampler::start(lab, host, ifname, watch)?;
    let steady = start_steady(lab, ends, spec)?;
    let sent = warm_up(spec, workdir).and_then(|()| bursts(lab, ends, spec, &sampler));
    terminate_all(steady);
    let samples = sampler.finish()?;
    let sent = sent?;
    barrier(lab, ends.client_host, ends.server_ip)?;
    save(&samples, workdir)?;
    let kernel = qdisc::episodes(&samples, watch);
    // Each episode's record is written as it ends.
    let _ = wait_within("the collector's episodes", BURST_DEADLINE, POLL * 20, || {
        Ok(collected(workdir, spec.node).len() >= kernel.len())
    });
    let collected = collected(workdir, spec.node);
    let frame = frame_bytes(topology, &spec.bottleneck);
    let crossings = crossings(workdir, spec.node);
    let truth =
        judge::Truth { spec, sent: &sent, samples: &samples, kernel: &kernel, frame, crossings: &crossings };
    judge::judge(&truth, &collected, checks);
    Ok(())
}

/// The steady flows, each an `int-lab send` running until stopped.
fn start_steady(lab: &Lab, ends: &Ends<'_>, spec: &Congestion) -> Result<Vec<Child>, Error> {
    let exe = sibling("int-lab")?;
    let to = Ends::socket(ends.server_ip, DESTINATION_PORT);
    let rate = spec.steady_rate.to_string();
    steady_ports(spec)
        .into_iter()
        .map(|port| {
            let from = Ends::socket(ends.client_ip, port);
            Command::new("ip")
                .args(["netns", "exec", &lab.ns(ends.client_host), &exe, "send", "--from", &from])
                .args(["--to", &to, "--packets", "100000000", "--rate", &rate, "--size", "200"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(Error::io("int-lab send (a steady flow)"))
        })
        .collect()
}

/// Until the collector has a baseline of every steady flow's latency.
fn warm_up(spec: &Congestion, workdir: &Path) -> Result<(), Error> {
    let needles: Vec<String> = steady_ports(spec).iter().map(|p| format!("\"src_port\":{p}")).collect();
    super::states::wait_for("the steady flows' reports", || {
        let text = fs::read_to_string(workdir.join("collector.jsonl")).unwrap_or_default();
        Ok(needles.iter().all(|n| text.matches(n.as_str()).count() >= WARM_REPORTS))
    })
}

/// The schedule: each burst once the queue has fallen back and stayed
/// calm for the gap; returns when each was sent (ns since the epoch).
/// A burst that does not fill the queue is passed over (the checks count
/// it missing).
fn bursts(lab: &Lab, ends: &Ends<'_>, spec: &Congestion, sampler: &Sampler) -> Result<Vec<u64>, Error> {
    let exe = sibling("int-lab")?;
    let (from, to) =
        (Ends::socket(ends.client_ip, BURST_PORT), Ends::socket(ends.server_ip, DESTINATION_PORT));
    let (packets, rate, size) =
        (spec.burst_packets.to_string(), spec.burst_rate.to_string(), spec.burst_size.to_string());
    let args = [
        exe.as_str(),
        "send",
        "--from",
        &from,
        "--to",
        &to,
        "--packets",
        &packets,
        "--rate",
        &rate,
        "--size",
        &size,
    ];
    let calm = || sampler.falls.load(Ordering::Relaxed) >= sampler.rises.load(Ordering::Relaxed);
    let mut sent = Vec::new();
    for burst in 1..=spec.bursts {
        wait_within("the queue draining", BURST_DEADLINE, POLL, || Ok(calm()))?;
        std::thread::sleep(Duration::from_millis(spec.gap_ms));
        let rises = sampler.rises.load(Ordering::Relaxed);
        sent.push(qdisc::now_ns());
        lab.exec(ends.client_host, &args)?;
        let risen = || Ok(sampler.rises.load(Ordering::Relaxed) > rises);
        if wait_within(&format!("burst {burst} filling the queue"), BURST_DEADLINE, POLL, risen).is_err() {
            println!("lab: burst {burst} did not fill the queue");
        }
    }
    wait_within("the queue draining", BURST_DEADLINE, POLL, || Ok(calm()))?;
    Ok(sent)
}

/// The collector's episode records of `node`'s queue, as they ended.
fn collected(workdir: &Path, node: u32) -> Vec<judge::Collected> {
    let text = fs::read_to_string(workdir.join("collector.jsonl")).unwrap_or_default();
    let port = |part: &serde_json::Value| part["flow"]["src_port"].as_u64().map(|p| p as u16);
    text.lines()
        .filter(|l| l.contains("\"congestion\""))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["type"] == "congestion" && r["node"].as_u64() == Some(u64::from(node)))
        .filter_map(|r| {
            Some(judge::Collected {
                start_ns: r["start_ns"].as_u64()?,
                end_ns: r["end_ns"].as_u64(),
                peak: r["peak_occupancy"].as_u64(),
                culprit: r["culprits"].get(0).and_then(port),
                victims: r["victims"]
                    .as_array()
                    .map(|v| v.iter().filter_map(port).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// When packets crossed `node` (its timestamps in the reports' traces),
/// sorted.
fn crossings(workdir: &Path, node: u32) -> Vec<u64> {
    let text = fs::read_to_string(workdir.join("collector.jsonl")).unwrap_or_default();
    let mut times: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"tr20\""))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| {
            let hops = r["hop_metadata"].as_array()?;
            let hop = hops.iter().find(|h| h["node_id"].as_u64() == Some(u64::from(node)))?;
            hop["ingress_timestamp"].as_u64()
        })
        .collect();
    times.sort_unstable();
    times
}

/// The largest frame the bottleneck's qdisc holds: its link's MTU and
/// an Ethernet header.
fn frame_bytes(topology: &Topology, bottleneck: &str) -> u64 {
    let mtu = topology.links.iter().find(|l| l.a == bottleneck || l.b == bottleneck).map_or(1500, |l| l.mtu);
    u64::from(mtu) + 14
}

/// The samples, for a look afterwards: `qdisc.tsv` (asked and answered,
/// ns since the epoch; backlog, bytes; drops so far).
fn save(samples: &[Sample], workdir: &Path) -> Result<(), Error> {
    let path = workdir.join("qdisc.tsv");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).map_err(Error::io(path.display()))?);
    let mut write = || -> std::io::Result<()> {
        writeln!(out, "asked_ns\tread_ns\tbacklog\tdropped")?;
        for s in samples {
            writeln!(out, "{}\t{}\t{}\t{}", s.asked_ns, s.read_ns, s.backlog, s.dropped)?;
        }
        out.flush()
    };
    write().map_err(Error::io(path.display()))
}

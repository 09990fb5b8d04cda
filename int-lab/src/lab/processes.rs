//! The lab's processes: the collector, the topology's own processes (each
//! waited for where it listens) and the nodes, each config checked first.

use std::fs;
use std::path::Path;

use super::namespaces::{sh, sibling, Lab};
use super::states::{listening, wait_for};
use super::topology::Topology;
use crate::error::{Error, Setup};

/// The collector (its web view on `view`, if given) and the nodes, each
/// config checked first.
pub fn start_processes(
    lab: &mut Lab,
    topology: &Topology,
    base: &Path,
    workdir: &Path,
    view: Option<&str>,
) -> Result<(), Error> {
    let node_exe = sibling("int-node")?;
    if let Some(collector) = &topology.collector {
        let log = workdir.join("collector.jsonl");
        // The run's picture: latency over time and loss per flow.
        let plot = workdir.join("latency.png").to_string_lossy().into_owned();
        let tools = sibling("int-tools")?;
        let mut args = vec![
            tools.as_str(),
            "collect",
            "--listen",
            &collector.listen,
            "--json",
            "--interval",
            "0",
            "--plot",
            &plot,
        ];
        if let Some(view) = view {
            args.extend(["--http", view]);
        }
        // The congestion lab's queue: an absolute threshold for the
        // router's node, the lab's own hysteresis, no relative ones.
        let threshold =
            topology.scenario.congestion.as_ref().map(|c| format!("{}={}", c.node, c.threshold_bytes));
        let exit_ratio = super::congestion::EXIT_RATIO.to_string();
        if let Some(threshold) = &threshold {
            args.extend(["--congestion-relative", "0", "--congestion-node-occupancy", threshold]);
            args.extend(["--congestion-exit-ratio", &exit_ratio]);
        }
        lab.spawn("collector", &collector.host, &args, &log)?;
    }
    start_more(lab, topology, workdir)?;
    for node in &topology.nodes {
        // A copy in the run's folder: the config's relative paths (the
        // impair control file) resolve there, where the lab writes them.
        let copy = workdir.join(format!("node-{}.yaml", node.host));
        fs::copy(base.join(&node.config), &copy).map_err(Error::io(&node.config))?;
        let config = copy.to_string_lossy().into_owned();
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

/// The topology's `processes`, in order, each waited for where it
/// listens.
fn start_more(lab: &mut Lab, topology: &Topology, workdir: &Path) -> Result<(), Error> {
    let tools = sibling("int-tools")?;
    let folder = workdir.to_string_lossy();
    for process in &topology.processes {
        let args: Vec<String> =
            process.run.iter().map(|a| a.replace("{tools}", &tools).replace("{workdir}", &folder)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let log = workdir.join(format!("{}.log", process.name));
        lab.spawn(&process.name, &process.host, &args, &log)?;
        println!("lab: {} in {} runs {}", process.name, lab.ns(&process.host), args.join(" "));
        let Some(listens) = &process.listens else { continue };
        let (protocol, port) = listens.split_once('/').unwrap_or(("udp", listens));
        let port: u16 = port.parse().map_err(|_| Setup::Listens(listens.clone()))?;
        let flag = if protocol == "tcp" { "-t" } else { "-u" };
        wait_for(&format!("{} listening on {listens}", process.name), || {
            if let Some((name, status)) = lab.exited() {
                return Err(Error::Exited { name, status, logs: workdir.to_path_buf() });
            }
            listening(lab, &process.host, flag, port)
        })?;
    }
    Ok(())
}

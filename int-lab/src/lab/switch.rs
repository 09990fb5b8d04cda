//! The path switch: frames patched through a namespace by tc (a redirect
//! from one interface to another, as a cable would), the patch moved
//! mid-flow from one transit to the other. The collector must show the
//! flow's path change from the old transit to the new one.

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::fs;
use std::path::Path;

use super::namespaces::Lab;
use super::states::{barrier, wait_for};
use super::topology::{node_id, node_name, split, PathSwitch, Topology};
use super::verdicts::Checks;
use crate::error::Error;

/// The switched flow's UDP source port.
pub const SWITCH_PORT: u16 = 40002;

/// Packets of the switched flow before the switch, and again after it.
const PACKETS_EACH_SIDE: u64 = 500;

/// Every frame arriving on `from` (`host/interface`) leaves by `to`, an
/// interface of the same host; a second call for `from` replaces the first
/// at once (no frame reaches the host's stack between the two).
pub fn redirect(lab: &Lab, from: &str, to: &str) -> Result<(), Error> {
    let (host, ifname) = split(from)?;
    lab.exec(host, &["tc", "qdisc", "replace", "dev", ifname, "ingress"])?;
    let filter = [
        "tc", "filter", "replace", "dev", ifname, "ingress", "protocol", "all", "prio", "1", "handle",
        "800::1", "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", to,
    ];
    lab.exec(host, &filter).map(|_| ())
}

/// The topology's redirects, set before any node runs.
pub fn add_redirects(lab: &Lab, topology: &Topology) -> Result<(), Error> {
    for patch in &topology.redirects {
        redirect(lab, &patch.from, &patch.to)?;
        println!("lab: {} patched to {}", patch.from, patch.to);
    }
    Ok(())
}

/// The switched flow's packets on the old path, the switch, packets on the
/// new path; then the collector's path change from a path through `old`
/// to one through `new` is waited for and judged.
pub fn check_path_switch(
    lab: &Lab,
    client: (&str, &str),
    server_ip: &str,
    switch: &PathSwitch,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(), Error> {
    let (old, new) = (node_id(&switch.old)?, node_id(&switch.new)?);
    let (host, client_ip) = client;
    let (from, to) = (format!("{client_ip}:{SWITCH_PORT}"), format!("{server_ip}:5004"));
    super::traffic::send_paced(lab, host, &from, &to, PACKETS_EACH_SIDE)?;
    // Every packet of the first half past the switch point before it moves.
    barrier(lab, host, server_ip)?;
    redirect(lab, &switch.at, &switch.to)?;
    super::traffic::send_paced(lab, host, &from, &to, PACKETS_EACH_SIDE)?;
    barrier(lab, host, server_ip)?;
    let _ = wait_for("the collector's path change", || {
        if path_change(workdir, old, new).is_some() {
            return Ok(true);
        }
        // A packet more on the new path: a collector joining postcards
        // closes a packet's group once a postcard arrives past its join
        // window (the nodes send none for pings).
        super::traffic::send_paced(lab, host, &from, &to, 1)?;
        Ok(false)
    });
    let change = path_change(workdir, old, new);
    checks.check(
        "path change",
        change.is_some(),
        format!(
            "{} moved from {} to {}: the collector's path change {}",
            switch.at,
            switch.old,
            switch.new,
            change.map_or("none".into(), |(a, b)| format!("{} -> {}", names(&a), names(&b)))
        ),
    );
    Ok(())
}

/// A path as its nodes' names.
fn names(path: &[u64]) -> String {
    format!("[{}]", path.iter().map(|id| node_name(*id)).collect::<Vec<_>>().join(", "))
}

/// The switched flow's first path change from a path through `old` (and
/// not `new`) to one through `new` (and not `old`), as node ids.
fn path_change(workdir: &Path, old: u64, new: u64) -> Option<(Vec<u64>, Vec<u64>)> {
    let text = fs::read_to_string(workdir.join("collector.jsonl")).unwrap_or_default();
    let ids = |path: &serde_json::Value| -> Vec<u64> {
        path.as_array().map(|p| p.iter().filter_map(serde_json::Value::as_u64).collect()).unwrap_or_default()
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["type"] == "path-change" && r["flow"]["src_port"] == SWITCH_PORT)
        .map(|r| (ids(&r["old_path"]), ids(&r["new_path"])))
        .find(|(a, b)| a.contains(&old) && !a.contains(&new) && b.contains(&new) && !b.contains(&old))
}

//! Loss and delay in the middle of the path: netem on a link, or the
//! int-node impair node (for kernels without sch_netem).

use std::fs;
use std::path::{Path, PathBuf};

use super::namespaces::{sh, Lab};
use super::states::{self, wait_for};
use super::topology::{split, ImpairmentChoice, Scenario};
use crate::error::{Error, Setup};

/// Packets netem dropped on `host`'s `ifname`, from `tc -s qdisc`.
fn netem_dropped(lab: &Lab, host: &str, ifname: &str) -> Result<u64, Error> {
    let text = lab.exec(host, &["tc", "-s", "qdisc", "show", "dev", ifname])?;
    text.split("dropped ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Error::Missing { what: "drop count".into(), place: format!("tc output: {text}") })
}

/// Loss and delay on the middle of the path: netem, or the impair node.
pub enum Impairment {
    Netem { host: String, ifname: String },
    Node { control: PathBuf, log: PathBuf },
}

impl Impairment {
    pub fn choose(lab: &Lab, scenario: &Scenario, workdir: &Path) -> Result<Option<Impairment>, Error> {
        let netem = || -> Result<Option<Impairment>, Error> {
            let Some(impaired) = &scenario.impaired else { return Ok(None) };
            let (host, ifname) = split(impaired)?;
            Ok(Some(Impairment::Netem { host: host.to_string(), ifname: ifname.to_string() }))
        };
        let node = || -> Result<Option<Impairment>, Error> {
            let (Some(control), Some(host)) = (&scenario.impair_control, &scenario.impair_host) else {
                return Err(Setup::NodeImpairment.into());
            };
            Ok(Some(Impairment::Node {
                control: workdir.join(control),
                log: workdir.join(format!("node-{host}.log")),
            }))
        };
        match scenario.impairment {
            ImpairmentChoice::Netem => netem(),
            ImpairmentChoice::Node => node(),
            ImpairmentChoice::Auto => {
                let probe = lab.first_namespace().unwrap_or_default().to_string();
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
        }
    }

    pub fn set(&self, lab: &Lab, loss_percent: f64, delay_ms: u64) -> Result<(), Error> {
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
                    .map_err(Error::io(control.display()))?;
                wait_for("the impair node taking its setting", || {
                    Ok(states::count_in(log, "impair: ") > taken)
                })
            }
        }
    }

    /// Packets dropped so far (by packets that have passed: the caller
    /// holds a [`barrier`] behind them).
    pub fn dropped(&self, lab: &Lab) -> Result<u64, Error> {
        match self {
            Impairment::Netem { host, ifname } => netem_dropped(lab, host, ifname),
            // The node prints its counters every interval: the first line
            // printed from now on holds every drop so far.
            Impairment::Node { log, .. } => states::next_value(log, states::log_len(log), "impaired_dropped"),
        }
    }
}

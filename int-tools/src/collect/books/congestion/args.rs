//! The congestion bookkeeping's flags (docs/congestion.md): what makes a
//! queue congested, the units nodes write, how much is kept. Each value
//! goes through its own parser, so a config file's bad values are all
//! named at once with their keys (args/file.rs).

use std::collections::BTreeMap;

use clap::Args;

use super::figure::Unit;
use super::settings::{Settings, Thresholds};
use crate::collect::names::parse_node_id;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Congestion episodes")]
pub struct CongestionArgs {
    /// A queue whose occupancy reaches this (in its node's unit) is
    /// congested, on every node without its own; default: relative to the
    /// queue's baseline (--congestion-relative).
    #[arg(long, value_name = "N")]
    pub congestion_occupancy: Option<u32>,
    /// A queue whose hop latency reaches this many ns is congested, on
    /// every node without its own; default: relative to its baseline.
    #[arg(long, value_name = "NS")]
    pub congestion_latency_ns: Option<u32>,
    /// Per node: the occupancy that makes its queues congested
    /// (ID=N,ID=N; ids as numbers or dotted quads).
    #[arg(long, value_name = "ID=N", value_delimiter = ',', value_parser = node_figure)]
    pub congestion_node_occupancy: Vec<(u32, u32)>,
    /// Per node: the hop latency, ns, that makes its queues congested.
    #[arg(long, value_name = "ID=NS", value_delimiter = ',', value_parser = node_figure)]
    pub congestion_node_latency_ns: Vec<(u32, u32)>,
    /// Where no absolute threshold is given, a figure this many times the
    /// queue's own baseline (its mean while calm, from its 64th figure on)
    /// makes it congested; 0: never.
    #[arg(long, value_name = "X", default_value_t = 4.0, value_parser = relative)]
    pub congestion_relative: f64,
    /// An episode ends at the first figure with every measure under this
    /// share of the threshold it began at (hysteresis).
    #[arg(long, value_name = "SHARE", default_value_t = 0.5, value_parser = exit_ratio)]
    pub congestion_exit_ratio: f64,
    /// The unit each node writes its queue occupancy in (ID=UNIT,...; bytes,
    /// cells, packets or unknown): INT's is the node's own (unknown by
    /// default), IOAM's queue depth bytes by default (as Linux writes it).
    #[arg(long, value_name = "ID=UNIT", value_delimiter = ',', value_parser = node_unit)]
    pub congestion_unit: Vec<(u32, Unit)>,
    /// Queues followed at most (each up to 352 KiB of timeline); a new one
    /// takes the place of the one calm and silent the longest. 0: no
    /// congestion bookkeeping at all (no figure taken).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub congestion_queues: u32,
    /// A queue silent this long (by the reports' clock) ends its episode
    /// at its last figure.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub congestion_idle_ms: u64,
    /// A flow whose latency rose to this many times its baseline during an
    /// episode, on no more than a fair share of the queue, is a victim.
    #[arg(long, value_name = "X", default_value_t = 1.5, value_parser = victim_rise)]
    pub congestion_victim_rise: f64,
}

impl CongestionArgs {
    /// The bookkeeping's settings.
    pub fn settings(&self) -> Settings {
        let mut nodes: BTreeMap<u32, Thresholds> = BTreeMap::new();
        for (node, occupancy) in &self.congestion_node_occupancy {
            nodes.entry(*node).or_default().occupancy = Some(*occupancy);
        }
        for (node, latency) in &self.congestion_node_latency_ns {
            nodes.entry(*node).or_default().latency_ns = Some(*latency);
        }
        Settings {
            global: Thresholds {
                occupancy: self.congestion_occupancy,
                latency_ns: self.congestion_latency_ns,
            },
            nodes,
            relative: self.congestion_relative,
            exit_ratio: self.congestion_exit_ratio,
            units: self.congestion_unit.iter().copied().collect(),
            queues: self.congestion_queues as usize,
            idle_ns: self.congestion_idle_ms * 1_000_000,
            victim_rise: self.congestion_victim_rise,
        }
    }
}

/// A `--congestion-*` value refused, and what it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("{0:?}: give ID={1}, e.g. 10.0.0.1={2} or 7={2}")]
    NotAPair(String, &'static str, &'static str),
    #[error("{0:?}: a number, 0 to 4294967295")]
    NotANumber(String),
    #[error("{0:?}: bytes, cells, packets or unknown")]
    NotAUnit(String),
    #[error("{0}")]
    Node(String),
    #[error("{0:?}: {1}")]
    OutOfBounds(String, &'static str),
}

/// `ID=N`: a node and a figure.
fn node_figure(text: &str) -> Result<(u32, u32), ValueError> {
    let (node, figure) = text.split_once('=').ok_or(ValueError::NotAPair(text.into(), "N", "5000"))?;
    let figure = figure.trim().parse().map_err(|_| ValueError::NotANumber(figure.into()))?;
    Ok((parse_node_id(node.trim()).map_err(|error| ValueError::Node(error.to_string()))?, figure))
}

/// `ID=UNIT`.
fn node_unit(text: &str) -> Result<(u32, Unit), ValueError> {
    let (node, unit) = text.split_once('=').ok_or(ValueError::NotAPair(text.into(), "UNIT", "bytes"))?;
    let unit = Unit::parse(unit.trim()).ok_or(ValueError::NotAUnit(unit.into()))?;
    Ok((parse_node_id(node.trim()).map_err(|error| ValueError::Node(error.to_string()))?, unit))
}

fn ratio(text: &str, ok: impl Fn(f64) -> bool, bounds: &'static str) -> Result<f64, ValueError> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && ok(value) => Ok(value),
        _ => Err(ValueError::OutOfBounds(text.into(), bounds)),
    }
}

fn relative(text: &str) -> Result<f64, ValueError> {
    ratio(text, |x| x == 0.0 || (1.0..=1000.0).contains(&x), "0 (never), or 1 to 1000 times the baseline")
}

fn exit_ratio(text: &str) -> Result<f64, ValueError> {
    ratio(text, |x| x > 0.0 && x <= 1.0, "over 0, at most 1 (a share of the threshold)")
}

fn victim_rise(text: &str) -> Result<f64, ValueError> {
    ratio(text, |x| (1.0..=1000.0).contains(&x), "1 to 1000 times the flow's baseline")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_node_values_read_and_refuse_with_a_hint() {
        assert_eq!(node_figure("10.0.0.1=5000"), Ok((0x0a00_0001, 5000)));
        assert_eq!(node_figure("7 = 9"), Ok((7, 9)));
        assert!(node_figure("7").unwrap_err().to_string().contains("ID=N"));
        assert!(node_figure("7=lots").unwrap_err().to_string().contains("a number"));
        assert_eq!(node_unit("3=cells"), Ok((3, Unit::Cells)));
        assert!(node_unit("3=kb").unwrap_err().to_string().contains("bytes, cells"));
        assert!(relative("0.5").is_err() && relative("0").is_ok() && relative("NaN").is_err());
        assert!(exit_ratio("0").is_err() && exit_ratio("1").is_ok());
        assert!(victim_rise("0.9").is_err());
    }
}

//! When a queue is congested, and whose traffic it was: a queue's
//! episode opens at the first figure over its threshold (occupancy or hop
//! latency; absolute, per node or global, else relative to the queue's
//! own baseline) and closes at the first figure with every measure back
//! under `exit_ratio` times the threshold it opened against (hysteresis:
//! a queue hovering at its threshold is one episode, not a hundred), or
//! when the queue falls silent.
//!
//! While it is open, every report whose packet crossed the queue counts
//! for its flow: packets, bytes where the report carries the packet's IP
//! length, and the flow's latency. The culprits are the flows ranked by
//! their share of the episode's packets; the victims are the flows whose
//! own latency rose by `victim_rise` over their baseline while taking no
//! more than a fair share (1 / the flows seen) of the queue.

use std::collections::HashMap;

use foldhash::fast::RandomState;

use int_core::flow::FlowKey;

use super::figure::{Figure, Unit};
use super::settings::{Settings, Thresholds};

/// Flows one open episode follows; the packets of later ones count in
/// `other_packets`.
pub const EPISODE_FLOWS: usize = 4_096;
/// Culprits and victims an episode names.
pub const NAMED: usize = 5;
/// A baseline counts once it has taken this many figures.
pub const BASELINE_FIGURES: u32 = 64;
/// A baseline's weight of a new figure: 1/64.
const BASELINE_WEIGHT: f64 = 1.0 / 64.0;

/// A running mean of a figure while the queue (or the flow) is calm.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Baseline {
    pub mean: f64,
    pub figures: u32,
}

impl Baseline {
    pub fn take(&mut self, value: f64) {
        self.mean = match self.figures {
            0 => value,
            _ => self.mean + (value - self.mean) * BASELINE_WEIGHT,
        };
        self.figures = self.figures.saturating_add(1);
    }

    pub fn ready(&self) -> Option<f64> {
        (self.figures >= BASELINE_FIGURES && self.mean > 0.0).then_some(self.mean)
    }
}

/// What opened an episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Occupancy,
    HopLatency,
}

/// Why an episode closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// Every figure back under the exit threshold.
    Fell,
    /// No figure of the queue for `--congestion-idle-ms`: the end is its
    /// last figure's time.
    Silent,
}

/// A flow's part in an episode.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Part {
    pub flow: FlowKey,
    pub packets: u64,
    /// Bytes of its packets whose reports carry their IP length.
    pub bytes: u64,
    /// Its packets' share of the episode's packets.
    pub share: f64,
    /// Its latency before the episode (baseline) and the most while it
    /// lasted, ns; none where its reports carry no latency.
    pub latency_before_ns: Option<i64>,
    pub latency_max_ns: Option<i64>,
}

/// One congestion episode of one queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Episode {
    pub node: u32,
    pub queue: u8,
    pub unit: Unit,
    pub trigger: Trigger,
    /// The thresholds it opened against (in `unit`, ns).
    pub threshold_occupancy: Option<u32>,
    pub threshold_latency_ns: Option<u32>,
    pub start_ns: u64,
    /// None while it lasts.
    pub end_ns: Option<u64>,
    pub ended: Option<Ended>,
    pub peak_occupancy: Option<u32>,
    pub peak_latency_ns: Option<u32>,
    /// Reports whose packet crossed the queue while it lasted.
    pub packets: u64,
    /// Their bytes, where the report carries the packet's IP length.
    pub bytes: u64,
    pub flows: u64,
    /// Packets of flows beyond [`EPISODE_FLOWS`].
    pub other_packets: u64,
    /// Sinks' congested-queue flags (Q) on reports crossing it.
    pub queue_alerts: u64,
    pub culprits: Vec<Part>,
    pub victims: Vec<Part>,
}

impl Episode {
    pub fn duration_ns(&self) -> Option<u64> {
        self.end_ns.map(|end| end.saturating_sub(self.start_ns))
    }
}

/// A packet crossing the queue: its flow, bytes and latency.
#[derive(Debug, Clone, Copy)]
pub struct Crossing {
    pub flow: FlowKey,
    pub bytes: Option<u32>,
    /// The flow's latency baseline and its latest latency, ns.
    pub latency: Option<(Option<f64>, i64)>,
    pub queue_alert: bool,
}

/// A flow's figures while an episode lasts.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    packets: u64,
    bytes: u64,
    before: Option<f64>,
    most: Option<i64>,
}

/// An episode while it lasts.
#[derive(Debug, Clone)]
pub struct Open {
    pub episode: Episode,
    /// The figures that close it: each measure under these.
    exit: (Option<f64>, Option<f64>),
    tallies: HashMap<FlowKey, Tally, RandomState>,
    pub last_ns: u64,
}

/// One queue's state: its baselines and its open episode.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    pub occupancy: Baseline,
    pub latency: Baseline,
    pub open: Option<Box<Open>>,
}

impl Watch {
    /// A figure: opens, feeds or closes the queue's episode; returns the
    /// episode it closed. `crossing` (the packet's flow, looked up) is
    /// asked for only while the queue is congested.
    pub fn figure(
        &mut self,
        figure: &Figure,
        settings: &Settings,
        crossing: impl FnOnce() -> Option<Crossing>,
    ) -> Option<Episode> {
        let (occupancy, latency) = (figure.occupancy.map(f64::from), figure.hop_latency.map(f64::from));
        if let Some(open) = &mut self.open {
            if !open.over_exit(occupancy, latency) {
                let episode = self.close(figure.at_ns, Ended::Fell, settings.victim_rise);
                self.calm(occupancy, latency);
                return episode;
            }
            open.take(figure, crossing().as_ref());
            return None;
        }
        let thresholds = settings.thresholds(figure.node);
        let enter = self.enter(&thresholds, settings.relative);
        let trigger = match (occupancy, latency, enter) {
            (Some(o), _, (Some(t), _)) if o >= t => Trigger::Occupancy,
            (_, Some(l), (_, Some(t))) if l >= t => Trigger::HopLatency,
            _ => {
                self.calm(occupancy, latency);
                return None;
            }
        };
        let exit = (enter.0.map(|t| t * settings.exit_ratio), enter.1.map(|t| t * settings.exit_ratio));
        let episode = Episode {
            node: figure.node,
            queue: figure.queue,
            unit: figure.unit,
            trigger,
            threshold_occupancy: enter.0.map(|t| t.ceil() as u32),
            threshold_latency_ns: enter.1.map(|t| t.ceil() as u32),
            start_ns: figure.at_ns,
            end_ns: None,
            ended: None,
            peak_occupancy: None,
            peak_latency_ns: None,
            packets: 0,
            bytes: 0,
            flows: 0,
            other_packets: 0,
            queue_alerts: 0,
            culprits: Vec::new(),
            victims: Vec::new(),
        };
        let mut open = Box::new(Open { episode, exit, tallies: HashMap::default(), last_ns: figure.at_ns });
        open.take(figure, crossing().as_ref());
        self.open = Some(open);
        None
    }

    /// The thresholds a figure opens an episode at: the absolute ones
    /// where given, else `relative` times the baseline.
    fn enter(&self, thresholds: &Thresholds, relative: f64) -> (Option<f64>, Option<f64>) {
        let relative_to =
            |baseline: &Baseline| (relative > 0.0).then(|| baseline.ready()).flatten().map(|b| b * relative);
        let occupancy = thresholds.occupancy.map(f64::from).or_else(|| relative_to(&self.occupancy));
        let latency = thresholds.latency_ns.map(f64::from).or_else(|| relative_to(&self.latency));
        (occupancy, latency)
    }

    fn calm(&mut self, occupancy: Option<f64>, latency: Option<f64>) {
        occupancy.into_iter().for_each(|o| self.occupancy.take(o));
        latency.into_iter().for_each(|l| self.latency.take(l));
    }

    /// The open episode, closed at `end_ns` for `ended`, its flows ranked.
    pub fn close(&mut self, end_ns: u64, ended: Ended, victim_rise: f64) -> Option<Episode> {
        let open = self.open.take()?;
        Some(open.finish(end_ns, ended, victim_rise))
    }
}

impl Open {
    /// Whether any measure is still at or over its exit figure.
    fn over_exit(&self, occupancy: Option<f64>, latency: Option<f64>) -> bool {
        let over =
            |value: Option<f64>, exit: Option<f64>| matches!((value, exit), (Some(v), Some(e)) if v >= e);
        let (exit_occupancy, exit_latency) = self.exit;
        // A measure the report lacks leaves the queue as it was.
        let told = (occupancy.is_some() && exit_occupancy.is_some())
            || (latency.is_some() && exit_latency.is_some());
        !told || over(occupancy, exit_occupancy) || over(latency, exit_latency)
    }

    fn take(&mut self, figure: &Figure, crossing: Option<&Crossing>) {
        let episode = &mut self.episode;
        self.last_ns = self.last_ns.max(figure.at_ns);
        if let Some(o) = figure.occupancy {
            episode.peak_occupancy = Some(episode.peak_occupancy.map_or(o, |p| p.max(o)));
        }
        if let Some(l) = figure.hop_latency {
            episode.peak_latency_ns = Some(episode.peak_latency_ns.map_or(l, |p| p.max(l)));
        }
        let Some(crossing) = crossing else { return };
        episode.packets += 1;
        episode.bytes += u64::from(crossing.bytes.unwrap_or(0));
        episode.queue_alerts += u64::from(crossing.queue_alert);
        let known = self.tallies.contains_key(&crossing.flow);
        if !known && self.tallies.len() >= EPISODE_FLOWS {
            episode.other_packets += 1;
            return;
        }
        let tally = self.tallies.entry(crossing.flow).or_default();
        if !known {
            tally.before = crossing.latency.and_then(|(before, _)| before);
        }
        tally.packets += 1;
        tally.bytes += u64::from(crossing.bytes.unwrap_or(0));
        if let Some((_, ns)) = crossing.latency {
            tally.most = Some(tally.most.map_or(ns, |most| most.max(ns)));
        }
    }

    /// The episode with its flows ranked: culprits by packets (then
    /// bytes), victims by how far their latency rose.
    fn finish(self, end_ns: u64, ended: Ended, victim_rise: f64) -> Episode {
        let mut episode = self.episode;
        episode.end_ns = Some(end_ns.max(episode.start_ns));
        episode.ended = Some(ended);
        episode.flows = self.tallies.len() as u64;
        let total = episode.packets.max(1) as f64;
        let part = |(flow, tally): (&FlowKey, &Tally)| Part {
            flow: *flow,
            packets: tally.packets,
            bytes: tally.bytes,
            share: tally.packets as f64 / total,
            latency_before_ns: tally.before.map(|b| b.round() as i64),
            latency_max_ns: tally.most,
        };
        let mut parts: Vec<Part> = self.tallies.iter().map(part).collect();
        parts.sort_by(|a, b| (b.packets, b.bytes, a.flow).cmp(&(a.packets, a.bytes, b.flow)));
        let fair = 1.0 / self.tallies.len().max(1) as f64;
        let rise = |p: &Part| match (p.latency_before_ns, p.latency_max_ns) {
            (Some(before), Some(most)) if before > 0 => Some(most as f64 / before as f64),
            _ => None,
        };
        let mut victims: Vec<(f64, Part)> = parts
            .iter()
            .filter(|p| p.share <= fair)
            .filter_map(|p| rise(p).filter(|r| *r >= victim_rise).map(|r| (r, p.clone())))
            .collect();
        victims.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.flow.cmp(&b.1.flow)));
        episode.victims = victims.into_iter().take(NAMED).map(|(_, p)| p).collect();
        parts.truncate(NAMED);
        episode.culprits = parts;
        episode
    }
}

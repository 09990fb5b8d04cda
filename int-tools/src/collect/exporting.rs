//! The exporters beside standard output as they run: each started from
//! its group of flags, its handles given to every reader's books
//! (standard output first), swapped under each reader's lock when a
//! reload changes its group (the books themselves untouched), and
//! stopped at the end after writing what is queued.

use std::sync::{Arc, PoisonError};

use super::args::CollectArgs;
use super::books::export::{Datagrams, Exporter};
use super::counts::Counted;
use super::error::CollectError;
use super::exporters::stdout::{Print, Stdout};
use super::exporters::{self, influx, ipfix, Running};
use super::names::Naming;
use super::nats::args::NatsArgs;
use super::shared::Shared;

/// An exporter, in the order its handle has in a reader's books.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Influx,
    Nats,
    Ipfix,
}

const KINDS: [Kind; 3] = [Kind::Influx, Kind::Nats, Kind::Ipfix];

/// The exporters running, and the groups they were started from.
pub struct Exporting {
    args: CollectArgs,
    influx: Option<Running>,
    nats: Option<Running>,
    ipfix: Option<Running>,
    /// The stream's batch format: each reader's datagrams' handle.
    feeder: Option<exporters::nats::Feeder>,
    /// The counts of the parts that are no exporter (the consumer, the
    /// view, the state), listed after the exporters'.
    pub others: Vec<Arc<dyn Counted>>,
    /// What standard output and InfluxDB call each node.
    names: Naming,
    /// How standard output says each report in the books' handles now.
    print: Print,
}

impl Exporting {
    /// Every exporter the arguments ask for, started.
    pub fn start(args: &CollectArgs, names: &Naming) -> Result<Exporting, CollectError> {
        let mut exporting = Exporting {
            names: names.clone(),
            args: args.clone(),
            influx: None,
            nats: None,
            ipfix: None,
            feeder: None,
            others: Vec::new(),
            print: args.stdout.print(),
        };
        for kind in KINDS {
            exporting.start_one(kind, args)?;
        }
        Ok(exporting)
    }

    fn start_one(&mut self, kind: Kind, args: &CollectArgs) -> Result<(), CollectError> {
        match kind {
            Kind::Influx => {
                if let (Some(url), Some(settings)) = (&args.influx.influx, args.influx.settings()?) {
                    log::info!("collect: writing to InfluxDB at {url}, database {}", settings.database);
                    self.influx = Some(influx::start(settings, self.names.clone()));
                }
            }
            Kind::Nats => {
                if let (Some(url), Some(settings)) = (&args.nats.nats, args.nats.publish()?) {
                    log::info!("collect: publishing to NATS JetStream at {url}, stream {}", settings.stream);
                    let (publisher, feeder) = exporters::nats::start(settings)?;
                    (self.nats, self.feeder) = (Some(publisher), feeder);
                }
            }
            Kind::Ipfix => {
                let settings = args.ipfix.settings(args.books.max_flows)?;
                if let (Some(target), Some(settings)) = (&args.ipfix.ipfix, settings) {
                    log::info!(
                        "collect: exporting IPFIX to {target} every {} s",
                        settings.interval.as_secs_f64()
                    );
                    self.ipfix = Some(ipfix::start(settings));
                }
            }
        }
        Ok(())
    }

    fn slot(&mut self, kind: Kind) -> &mut Option<Running> {
        match kind {
            Kind::Influx => &mut self.influx,
            Kind::Nats => &mut self.nats,
            Kind::Ipfix => &mut self.ipfix,
        }
    }

    fn running(&self) -> impl Iterator<Item = (Kind, &Running)> {
        let slots = [(Kind::Influx, &self.influx), (Kind::Nats, &self.nats), (Kind::Ipfix, &self.ipfix)];
        slots.into_iter().filter_map(|(kind, slot)| Some((kind, slot.as_ref()?)))
    }

    /// A reader's handle of a running exporter.
    fn handle(running: &Running) -> Arc<dyn Exporter> {
        running.exporter.for_reader().unwrap_or_else(|| Arc::clone(&running.exporter))
    }

    /// What a new reader's books hand their findings to: standard output
    /// first (unless quiet), then every running exporter.
    pub fn handles(&self) -> Vec<Arc<dyn Exporter>> {
        self.stdout(self.print)
            .into_iter()
            .chain(self.running().map(|(_, running)| Self::handle(running)))
            .collect()
    }

    /// Standard output's handle; none when quiet, so that a quiet
    /// collector's books call no exporter per report for it.
    fn stdout(&self, print: Print) -> Option<Arc<dyn Exporter>> {
        (print != Print::Quiet)
            .then(|| Arc::new(Stdout { print, names: self.names.clone() }) as Arc<dyn Exporter>)
    }

    /// A new reader's handle for its datagrams (the stream's batch format).
    pub fn datagrams(&self) -> Option<Box<dyn Datagrams>> {
        self.feeder.as_ref().map(|feeder| Box::new(feeder.feed()) as Box<dyn Datagrams>)
    }

    /// Every part's counts: the exporters', then the others'.
    pub fn counted(&self) -> Vec<Arc<dyn Counted>> {
        let exporters = self.running().map(|(_, running)| Arc::clone(&running.counted));
        exporters.chain(self.others.iter().cloned()).collect()
    }

    /// `args`' exporters in place of the running ones, each restarted
    /// whose group changed (started, stopped, or both), standard output
    /// as `args` says; said per exporter. An exporter that does not start
    /// keeps the one before running.
    pub fn apply(&mut self, args: &CollectArgs, shared: &Shared) {
        let before: Vec<Kind> = self.running().map(|(kind, _)| kind).collect();
        let mut stopped = Vec::new();
        let mut changed = Vec::new();
        let differ: Vec<Kind> = KINDS.into_iter().filter(|kind| !same(*kind, &self.args, args)).collect();
        for kind in differ {
            let old = self.slot(kind).take();
            let old_feeder = if kind == Kind::Nats { self.feeder.take() } else { None };
            match self.start_one(kind, args) {
                Ok(()) => {
                    if let Some(became) = what_became(old.is_some(), self.slot(kind).is_some()) {
                        log::info!("collect: SIGHUP: {} {became}", name(kind));
                    }
                    stopped.extend(old);
                    changed.push(kind);
                }
                Err(error) => {
                    log::warn!("collect: SIGHUP: {error}; {} kept as it was", name(kind));
                    *self.slot(kind) = old;
                    if kind == Kind::Nats {
                        self.feeder = old_feeder;
                    }
                }
            }
        }
        self.swap(shared, &before, &changed, args.stdout.print());
        self.print = args.stdout.print();
        let mut counted = shared.counted.lock().unwrap_or_else(PoisonError::into_inner);
        *counted = self.counted();
        drop(counted);
        for kind in changed {
            self.keep_args(kind, args);
        }
        join(stopped);
    }

    /// Each reader's handles: standard output anew (none if quiet), the `changed`
    /// exporters' new (or none), the others' kept as they were.
    fn swap(&self, shared: &Shared, before: &[Kind], changed: &[Kind], print: Print) {
        for books in &shared.books {
            let mut books = books.lock().unwrap_or_else(PoisonError::into_inner);
            let said = usize::from(self.print != Print::Quiet);
            let mut old = std::mem::take(&mut books.exporters).into_iter().skip(said);
            let mut kept: Vec<(Kind, Arc<dyn Exporter>)> = before
                .iter()
                .copied()
                .zip(old.by_ref())
                .filter(|(kind, _)| !changed.contains(kind))
                .collect();
            books.exporters = self
                .stdout(print)
                .into_iter()
                .chain(self.running().filter_map(|(kind, running)| {
                    match kept.iter().position(|(k, _)| *k == kind) {
                        Some(at) => Some(kept.swap_remove(at).1),
                        None => changed.contains(&kind).then(|| Self::handle(running)),
                    }
                }))
                .collect();
            if changed.contains(&Kind::Nats) {
                if let Some(mut datagrams) = books.datagrams.take() {
                    datagrams.hand_over();
                }
                books.datagrams = self.datagrams();
            }
        }
    }

    fn keep_args(&mut self, kind: Kind, args: &CollectArgs) {
        match kind {
            Kind::Influx => self.args.influx = args.influx.clone(),
            Kind::Nats => self.args.nats = args.nats.clone(),
            Kind::Ipfix => {
                (self.args.ipfix, self.args.books.max_flows) = (args.ipfix.clone(), args.books.max_flows)
            }
        }
    }

    /// The exporters end, after writing what is queued, once the readers'
    /// handles are gone.
    pub fn stop(mut self, shared: &Shared) {
        for books in &shared.books {
            let mut books = books.lock().unwrap_or_else(PoisonError::into_inner);
            books.exporters.clear();
            if let Some(mut datagrams) = books.datagrams.take() {
                datagrams.hand_over();
            }
        }
        self.feeder = None;
        let running: Vec<Running> = KINDS.into_iter().filter_map(|kind| self.slot(kind).take()).collect();
        join(running);
    }
}

/// Whether `kind`'s group is the same in `before` and `after`. The
/// stream's consumer (`--from-nats`) is no exporter: only what the
/// publisher reads counts.
fn same(kind: Kind, before: &CollectArgs, after: &CollectArgs) -> bool {
    match kind {
        Kind::Influx => before.influx == after.influx,
        Kind::Nats => publishing(&before.nats) == publishing(&after.nats),
        Kind::Ipfix => before.ipfix == after.ipfix && before.books.max_flows == after.books.max_flows,
    }
}

fn publishing(nats: &NatsArgs) -> NatsArgs {
    NatsArgs { from_nats: None, nats_consumer: String::new(), ..nats.clone() }
}

fn name(kind: Kind) -> &'static str {
    match kind {
        Kind::Influx => "InfluxDB",
        Kind::Nats => "the NATS publisher",
        Kind::Ipfix => "IPFIX",
    }
}

fn what_became(was: bool, is: bool) -> Option<&'static str> {
    match (was, is) {
        (true, true) => Some("restarted with its new settings"),
        (false, true) => Some("started"),
        (true, false) => Some("stopped"),
        (false, false) => None,
    }
}

/// Each writer drains what is queued and ends: its handles are gone.
fn join(stopped: Vec<Running>) {
    for Running { exporter, thread, .. } in stopped {
        drop(exporter);
        let _ = thread.join();
    }
}

//! A pipeline's stage: the one enum over every protocol's roles and the
//! protocol-free stages, chosen once at start, and how a reload's update
//! reaches the role it is for.

use super::clones::Clones;
use super::ifa::Ifa;
#[cfg(feature = "lab")]
use super::impair;
use super::int05::Int05;
use super::int21::Int21;
use super::ioam::Ioam;
use super::reload::Update;
use super::{generate, reference};

/// A pipeline's stage: a role of a protocol's domain (the version named
/// where there is more than one), or one of the protocol-free stages.
pub enum Stage {
    Forward,
    Int05(Int05),
    Int21(Int21),
    Ioam(Ioam),
    Ifa(Ifa),
    #[cfg(feature = "lab")]
    Impair(Box<impair::ImpairStage>),
    Reference(Box<reference::ReferenceStage>),
    Generate(Box<generate::GenerateStage>),
}

impl Stage {
    /// A sink of any protocol: it sweeps its flows on every poll.
    pub fn is_sink(&self) -> bool {
        matches!(
            self,
            Stage::Int05(Int05::Sink(_))
                | Stage::Int21(Int21::Sink(_))
                | Stage::Ioam(Ioam::Sink(_))
                | Stage::Ifa(Ifa::Sink(_))
        )
    }

    /// A cloning source's copies: INT 2.1's clones, IFA's probes.
    pub fn clones(&self) -> Option<&Clones> {
        match self {
            Stage::Int21(Int21::Source(source)) => source.clones.as_ref(),
            Stage::Ifa(Ifa::Source(source)) => source.probes.as_ref(),
            _ => None,
        }
    }

    pub fn clones_mut(&mut self) -> Option<&mut Clones> {
        match self {
            Stage::Int21(Int21::Source(source)) => source.clones.as_mut(),
            Stage::Ifa(Ifa::Source(source)) => source.probes.as_mut(),
            _ => None,
        }
    }

    /// Copies `from..to` of this poll did not leave: their flows' counts
    /// go back ([`Clones::unsent`]).
    pub fn give_back(&mut self, from: usize, to: usize) {
        match self {
            Stage::Int21(Int21::Source(source)) => source.give_back_numbers(from, to),
            Stage::Ifa(Ifa::Source(source)) => source.give_back_counts(from, to),
            _ => {}
        }
    }

    /// Puts `update` in the stage (between bursts); returns what it
    /// replaced (or the update itself where the stage has no such
    /// setting).
    pub fn apply(&mut self, update: Update) -> Update {
        match (self, update) {
            (Stage::Int05(Int05::Source(source)), Update::Watchlist(rules)) => {
                Update::Watchlist(std::mem::replace(&mut source.watchlist, rules))
            }
            (Stage::Int21(Int21::Source(source)), Update::Watchlist(rules)) => {
                Update::Watchlist(std::mem::replace(&mut source.watchlist, rules))
            }
            (Stage::Ifa(Ifa::Source(source)), Update::Watchlist(rules)) => {
                Update::Watchlist(std::mem::replace(&mut source.watchlist, rules))
            }
            (Stage::Int05(Int05::Sink(sink)), Update::Reports(reports)) => {
                Update::Reports(sink.core.set_reports(reports))
            }
            (Stage::Int21(Int21::Sink(sink)), Update::Reports(reports)) => {
                Update::Reports(sink.core.set_reports(reports))
            }
            (Stage::Ioam(Ioam::Sink(decap)), Update::Reports(reports)) => {
                Update::Reports(decap.core.set_reports(reports))
            }
            (Stage::Ifa(Ifa::Sink(sink)), Update::Reports(reports)) => {
                Update::Reports(sink.core.set_reports(reports))
            }
            (_, update) => update,
        }
    }
}

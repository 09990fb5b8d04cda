//! collect's duration flags, read once by clap: a number of seconds (or
//! milliseconds) within the flag's bounds, or refused with the bounds and
//! what the flag is for (clap's message names the flag). Within them no
//! clock overflows (`Instant + Duration`) and no thread spins.

use std::time::Duration;

/// The unit a flag is given in.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Seconds,
    Milliseconds,
}

impl Unit {
    fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
        }
    }

    fn duration(self, value: f64) -> Duration {
        let seconds = match self {
            Unit::Seconds => value,
            Unit::Milliseconds => value / 1000.0,
        };
        Duration::try_from_secs_f64(seconds).unwrap_or_default()
    }
}

/// What a duration flag takes: `least..=most` in its unit, and 0 where it
/// means something of its own (said in the hint).
struct Bounds {
    unit: Unit,
    least: f64,
    most: f64,
    zero: bool,
    hint: &'static str,
}

/// A duration flag's value out of its bounds.
#[derive(Debug, thiserror::Error)]
#[error("{text} is {why}: give {range} ({hint})")]
pub struct DurationError {
    text: String,
    why: &'static str,
    range: String,
    hint: &'static str,
}

impl Bounds {
    fn parse(&self, text: &str) -> Result<Duration, DurationError> {
        let value = text.trim().parse::<f64>().ok();
        let why = match value {
            None => "not a number",
            Some(v) if v.is_nan() => "not a number",
            Some(v) if v == 0.0 && self.zero => return Ok(Duration::ZERO),
            Some(v) if v < 0.0 => "negative",
            Some(0.0) => "0",
            Some(v) if v < self.least => "too short",
            Some(v) if v > self.most => "too long",
            Some(v) => return Ok(self.unit.duration(v)),
        };
        let unit = self.unit.symbol();
        let zero = if self.zero { ", or 0" } else { "" };
        let range = format!("{} to {} {unit}{zero}", self.least, self.most);
        Err(DurationError { text: text.to_string(), why, range, hint: self.hint })
    }
}

/// A day: the longest period collect repeats anything at.
const DAY_S: f64 = 86_400.0;

/// `--duration`.
pub fn run_for(text: &str) -> Result<Duration, DurationError> {
    let hint = "at most a year; leave --duration out to run until stopped";
    Bounds { unit: Unit::Seconds, least: 0.001, most: 365.0 * DAY_S, zero: false, hint }.parse(text)
}

/// `--interval`.
pub fn summary_interval(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds between summaries; 0 prints one at exit only";
    Bounds { unit: Unit::Seconds, least: 0.1, most: DAY_S, zero: true, hint }.parse(text)
}

/// `--plot-interval`.
pub fn plot_interval(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds between redraws, each takes a while; 0 draws at exit only";
    Bounds { unit: Unit::Seconds, least: 1.0, most: DAY_S, zero: true, hint }.parse(text)
}

/// `--ipfix-interval`.
pub fn ipfix_interval(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds each IPFIX record covers; 60 is usual";
    Bounds { unit: Unit::Seconds, least: 0.1, most: DAY_S, zero: false, hint }.parse(text)
}

/// `--view-sample-ms`.
pub fn view_sample(text: &str) -> Result<Duration, DurationError> {
    let hint = "milliseconds between the web view's copies of the books";
    Bounds { unit: Unit::Milliseconds, least: 10.0, most: 60_000.0, zero: false, hint }.parse(text)
}

/// `--view-stale-s`.
pub fn view_stale(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds without a report before the web view shows a node stale";
    Bounds { unit: Unit::Seconds, least: 0.1, most: 7.0 * DAY_S, zero: false, hint }.parse(text)
}

/// `--http-idle-ms`.
pub fn http_idle(text: &str) -> Result<Duration, DurationError> {
    let hint = "milliseconds a web view connection may wait for its TLS handshake or a request";
    Bounds { unit: Unit::Milliseconds, least: 100.0, most: 3_600_000.0, zero: false, hint }.parse(text)
}

/// `--join-window-ms`.
pub fn join_window(text: &str) -> Result<Duration, DurationError> {
    let hint = "milliseconds a packet's postcards are waited for";
    Bounds { unit: Unit::Milliseconds, least: 1.0, most: 3_600_000.0, zero: false, hint }.parse(text)
}

/// `--nats-max-age-s`.
pub fn stream_max_age(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds the stream keeps a record, at most ten years; 0 keeps it until --nats-max-bytes";
    Bounds { unit: Unit::Seconds, least: 1.0, most: 3650.0 * DAY_S, zero: true, hint }.parse(text)
}

/// `--state-interval-s`.
pub fn state_interval(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds between writes of the state; it is written at exit too";
    Bounds { unit: Unit::Seconds, least: 0.1, most: DAY_S, zero: false, hint }.parse(text)
}

/// `--state-max-age-s`.
pub fn state_max_age(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds the state keeps the web view's events and points, at most ten years";
    Bounds { unit: Unit::Seconds, least: 1.0, most: 3650.0 * DAY_S, zero: false, hint }.parse(text)
}

/// `--nats-view-s`.
pub fn view_state(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds between an aggregator's published view states (--fleet-view merges them); 0: none";
    Bounds { unit: Unit::Seconds, least: 0.1, most: 600.0, zero: true, hint }.parse(text)
}

/// `--nats-checkpoint-s`.
pub fn checkpoint(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds between the checkpoints of a partition's books (a taker reads them); 0: none";
    Bounds { unit: Unit::Seconds, least: 0.1, most: 600.0, zero: true, hint }.parse(text)
}

/// `--nats-lease-s`.
pub fn lease(text: &str) -> Result<Duration, DurationError> {
    let hint = "seconds a partition's lease holds unrenewed: a dead aggregator's partitions move after it";
    Bounds { unit: Unit::Seconds, least: 0.3, most: 600.0, zero: false, hint }.parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within the bounds, the value in its unit; 0 only where it means
    /// something; every other value refused with its reason.
    #[test]
    fn values_within_the_bounds_and_refusals_that_say_why() {
        assert_eq!(summary_interval("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(summary_interval("0").unwrap(), Duration::ZERO);
        assert_eq!(join_window("600000").unwrap(), Duration::from_secs(600));
        assert_eq!(view_sample("10").unwrap(), Duration::from_millis(10));
        assert_eq!(http_idle("1500").unwrap(), Duration::from_millis(1500));
        for (text, why) in [("NaN", "not a number"), ("x", "not a number"), ("-1", "negative"), ("0", "0")] {
            assert!(ipfix_interval(text).unwrap_err().to_string().starts_with(&format!("{text} is {why}:")));
        }
        let long = ipfix_interval("1e19").unwrap_err().to_string();
        assert_eq!(
            long,
            "1e19 is too long: give 0.1 to 86400 s (seconds each IPFIX record covers; 60 is usual)"
        );
        assert!(ipfix_interval("inf").unwrap_err().to_string().starts_with("inf is too long"));
        assert!(ipfix_interval("1e-9").unwrap_err().to_string().starts_with("1e-9 is too short"));
    }
}

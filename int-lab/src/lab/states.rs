//! What the lab waits for: states of the lab (a path that carries a ping,
//! a socket that listens, a line a node logs), never a stretch of time.
//! Each wait has a deadline, which only bounds a hang.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use super::namespaces::Lab;
use crate::error::Error;

/// How long any state may take to come on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `ready` until it holds, or fails after [`DEADLINE`] naming `what`.
pub fn wait_for(what: &str, ready: impl FnMut() -> Result<bool, Error>) -> Result<(), Error> {
    wait_within(what, DEADLINE, Duration::from_millis(20), ready)
}

/// Polls `ready` every `poll` until it holds, or fails after `deadline`
/// naming `what`.
pub fn wait_within(
    what: &str,
    deadline: Duration,
    poll: Duration,
    mut ready: impl FnMut() -> Result<bool, Error>,
) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        if int_os::signals::stop_requested() {
            return Err(Error::Interrupted);
        }
        if ready()? {
            return Ok(());
        }
        if started.elapsed() > deadline {
            return Err(Error::Timeout { what: what.to_string(), seconds: deadline.as_secs() });
        }
        std::thread::sleep(poll);
    }
}

/// A ping from `host` to `address` answered: the path carries packets both
/// ways, and (its nodes being first in, first out) every packet `host` sent
/// before it on that path has passed. Returns the round trip, ns.
pub fn barrier(lab: &Lab, host: &str, address: &str) -> Result<u64, Error> {
    let mut rtt = 0;
    wait_for(&format!("ping answer from {address}"), || {
        // A ping lost to the lab's impairments is asked again.
        Ok(match lab.exec(host, &["ping", "-n", "-c", "1", "-W", "2", address]) {
            Ok(out) => {
                rtt = round_trip_ns(&out).unwrap_or(0);
                true
            }
            Err(_) => false,
        })
    })?;
    Ok(rtt)
}

/// `time=0.123 ms` in ping's output, ns.
fn round_trip_ns(out: &str) -> Option<u64> {
    let ms: f64 = out.split("time=").nth(1)?.split(' ').next()?.parse().ok()?;
    Some((ms * 1e6) as u64)
}

/// Whether a socket of `protocol` (`-t` or `-u`) listens on `port` in `host`.
pub fn listening(lab: &Lab, host: &str, protocol: &str, port: u16) -> Result<bool, Error> {
    let flags = format!("-ln{}", protocol.trim_start_matches('-'));
    let out = lab.exec(host, &["ss", &flags])?;
    let suffix = format!(":{port}");
    Ok(out.lines().any(|line| line.split_whitespace().nth(3).is_some_and(|local| local.ends_with(&suffix))))
}

/// Times `needle` occurs in the file at `log` (0 if it cannot be read).
pub fn count_in(log: &Path, needle: &str) -> usize {
    fs::read_to_string(log).map(|text| text.matches(needle).count()).unwrap_or(0)
}

/// Counter `name` as the first round of counter lines a node prints
/// after the first `from` bytes of its `log` says it (summed over its
/// pipelines; a counter at 0 is not printed). A round holds each
/// pipeline's ` Mpps ` line once, complete once the next round begins.
pub fn next_value(log: &Path, from: usize, name: &str) -> Result<u64, Error> {
    let key = format!("{name}=");
    let mut value = None;
    wait_for(&format!("counters in {}", log.display()), || {
        let text = fs::read(log).map_err(Error::io(log.display()))?;
        let fresh = String::from_utf8_lossy(text.get(from..).unwrap_or_default()).into_owned();
        // Each pipeline's line once: the round ends where a name repeats.
        let pipeline = |line: &str| line.split(" Mpps ").next().unwrap_or_default().to_string();
        let mut lines = fresh.lines().skip(1).filter(|line| line.contains(" Mpps "));
        let mut round: Vec<&str> = Vec::new();
        let complete = loop {
            let Some(line) = lines.next() else { break false };
            if round.iter().any(|seen| pipeline(seen) == pipeline(line)) {
                break true;
            }
            round.push(line);
        };
        if !complete {
            return Ok(false);
        }
        let counter = |line: &&str| -> u64 {
            line.split(&key)
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        value = Some(round.iter().map(counter).sum());
        Ok(true)
    })?;
    value.ok_or_else(|| Error::Missing { what: name.to_string(), place: log.display().to_string() })
}

/// Bytes of `log` so far.
pub fn log_len(log: &Path) -> usize {
    fs::metadata(log).map(|m| m.len() as usize).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pings_round_trip() {
        let out = "64 bytes from 10.10.0.2: icmp_seq=1 ttl=64 time=0.254 ms\n";
        assert_eq!(round_trip_ns(out), Some(254_000));
        assert_eq!(round_trip_ns("no answer"), None);
    }
}

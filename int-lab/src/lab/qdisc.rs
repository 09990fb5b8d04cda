//! The kernel's own word on a bottleneck: its root qdisc's backlog and
//! drops, sampled in a fast loop from one long-running `tc -s -batch -`
//! in the router's namespace (a command a sample, about 30 µs each on an
//! idle host, against a few milliseconds to start a `tc` a sample), each
//! sample stamped with the wall clock the kernel's IOAM timestamps use.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::namespaces::Lab;
use crate::error::Error;

/// A pause between samples: a few thousand samples a second, without
/// taking a whole CPU from the nodes on a two-CPU host.
const PAUSE: Duration = Duration::from_micros(200);

/// One reading of the qdisc: asked and answered (ns since the epoch; the
/// kernel read it in between), its backlog in bytes and its drops so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub asked_ns: u64,
    pub read_ns: u64,
    pub backlog: u64,
    pub dropped: u64,
}

/// A backlog over `threshold` bytes is congested until it falls under
/// `exit` (the collector's hysteresis, in the same terms).
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    pub threshold: u64,
    pub exit: u64,
    congested: bool,
}

impl Watch {
    pub fn new(threshold: u64, exit_ratio: f64) -> Watch {
        Watch { threshold, exit: (threshold as f64 * exit_ratio) as u64, congested: false }
    }

    /// Some(true) at a rise, Some(false) at a fall.
    pub fn take(&mut self, backlog: u64) -> Option<bool> {
        if !self.congested && backlog >= self.threshold {
            self.congested = true;
            return Some(true);
        }
        if self.congested && backlog < self.exit {
            self.congested = false;
            return Some(false);
        }
        None
    }
}

/// The sampling loop, running until stopped; `rises` and `falls` count
/// the watch's crossings so far, for the scenario to wait on.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    pub rises: Arc<AtomicU64>,
    pub falls: Arc<AtomicU64>,
    thread: JoinHandle<Result<Vec<Sample>, Error>>,
}

impl Sampler {
    pub fn start(lab: &Lab, host: &str, ifname: &str, watch: Watch) -> Result<Sampler, Error> {
        let mut tc = Command::new("ip")
            .args(["netns", "exec", &lab.ns(host), "stdbuf", "-oL", "tc", "-s", "-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(Error::io("tc -s -batch -"))?;
        let (Some(input), Some(output)) = (tc.stdin.take(), tc.stdout.take()) else {
            return Err(Error::Missing { what: "tc's pipes".into(), place: "the sampler".into() });
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (rises, falls) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let command = format!("qdisc show dev {ifname}\n");
        let looped = Loop { stop: stop.clone(), rises: rises.clone(), falls: falls.clone(), watch, command };
        let thread = std::thread::spawn(move || looped.run(tc, input, output));
        Ok(Sampler { stop, rises, falls, thread })
    }

    /// Every sample taken, once the loop has stopped.
    pub fn finish(self) -> Result<Vec<Sample>, Error> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_else(|_| {
            Err(Error::Missing { what: "samples".into(), place: "the sampler (it panicked)".into() })
        })
    }
}

struct Loop {
    stop: Arc<AtomicBool>,
    rises: Arc<AtomicU64>,
    falls: Arc<AtomicU64>,
    watch: Watch,
    command: String,
}

impl Loop {
    fn run(
        mut self,
        mut tc: Child,
        mut input: ChildStdin,
        output: ChildStdout,
    ) -> Result<Vec<Sample>, Error> {
        let mut lines = BufReader::new(output);
        let mut samples = Vec::with_capacity(1 << 16);
        let result = loop {
            if self.stop.load(Ordering::Relaxed) {
                break Ok(samples);
            }
            let asked_ns = now_ns();
            if let Err(e) = input.write_all(self.command.as_bytes()).and_then(|()| input.flush()) {
                break Err(Error::io("tc -s -batch -")(e));
            }
            let Some((backlog, dropped)) = read_answer(&mut lines) else {
                break Err(Error::Missing { what: "a backlog".into(), place: "tc's answer".into() });
            };
            samples.push(Sample { asked_ns, read_ns: now_ns(), backlog, dropped });
            match self.watch.take(backlog) {
                Some(true) => self.rises.fetch_add(1, Ordering::Relaxed),
                Some(false) => self.falls.fetch_add(1, Ordering::Relaxed),
                None => 0,
            };
            std::thread::sleep(PAUSE);
        };
        drop(input);
        let _ = tc.kill();
        let _ = tc.wait();
        result
    }
}

pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// One answer of `tc -s qdisc show`: its drops (`Sent ... (dropped N,`)
/// and its backlog, ending at the backlog line; None at the end of tc's
/// output.
fn read_answer(lines: &mut impl BufRead) -> Option<(u64, u64)> {
    let mut dropped = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(rest) = line.split("(dropped ").nth(1) {
            dropped = rest.split(',').next()?.trim().parse().ok()?;
        }
        if let Some(rest) = line.trim_start().strip_prefix("backlog ") {
            return Some((size(rest.split_whitespace().next()?)?, dropped));
        }
    }
}

/// tc's size: `1234b`, `15Kb`, `2Mb` (tc rounds to a Kb or Mb only
/// within 16 bytes of one), in bytes.
fn size(text: &str) -> Option<u64> {
    let number = text.strip_suffix('b')?;
    let (digits, scale) = match number.strip_suffix('K') {
        Some(k) => (k, 1024.0),
        None => match number.strip_suffix('M') {
            Some(m) => (m, 1024.0 * 1024.0),
            None => (number, 1.0),
        },
    };
    digits.parse::<f64>().ok().map(|n| (n * scale) as u64)
}

/// One congestion episode of the qdisc as its samples show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// The first sample at or over the threshold, and the one before.
    pub rise: Edge,
    /// The first sample under the exit threshold after it (None: it had
    /// not fallen when sampling stopped).
    pub fall: Option<Edge>,
    /// The most backlog sampled, bytes.
    pub peak: u64,
    /// The larger change from the peak's sample to the samples either
    /// side of it: how far the backlog can have moved unseen around the
    /// peak.
    pub step: u64,
    /// Packets the qdisc dropped meanwhile.
    pub dropped: u64,
}

/// Where the samples bound a crossing: after the sample before was asked
/// and before the crossing sample was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub after_ns: u64,
    pub before_ns: u64,
}

impl Edge {
    fn between(before: &Sample, crossing: &Sample) -> Edge {
        Edge { after_ns: before.asked_ns, before_ns: crossing.read_ns }
    }

    /// How far `t` is outside the bound, signed (0 inside).
    pub fn miss_ns(&self, t: u64) -> i64 {
        if t < self.after_ns {
            -((self.after_ns - t) as i64)
        } else if t > self.before_ns {
            (t - self.before_ns) as i64
        } else {
            0
        }
    }

    pub fn width_ns(&self) -> u64 {
        self.before_ns.saturating_sub(self.after_ns)
    }
}

/// The episodes `samples` show under `watch`.
pub fn episodes(samples: &[Sample], mut watch: Watch) -> Vec<Episode> {
    let mut found: Vec<Episode> = Vec::new();
    // Whether the sample before was the open episode's peak so far.
    let mut after_peak = false;
    for pair in samples.windows(2) {
        let [before, sample] = pair else { continue };
        let open = found.last_mut().filter(|e| e.fall.is_none());
        if let Some(episode) = open {
            let change = sample.backlog.abs_diff(before.backlog);
            if after_peak {
                episode.step = episode.step.max(change);
            }
            after_peak = sample.backlog > episode.peak;
            if after_peak {
                (episode.peak, episode.step) = (sample.backlog, change);
            }
            episode.dropped += sample.dropped.saturating_sub(before.dropped);
        }
        match watch.take(sample.backlog) {
            Some(true) => {
                after_peak = true;
                found.push(Episode {
                    rise: Edge::between(before, sample),
                    fall: None,
                    peak: sample.backlog,
                    step: sample.backlog.abs_diff(before.backlog),
                    dropped: sample.dropped.saturating_sub(before.dropped),
                });
            }
            Some(false) => {
                if let Some(episode) = found.last_mut() {
                    episode.fall = Some(Edge::between(before, sample));
                }
            }
            None => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tcs_answer() {
        let text = "qdisc tbf 8001: root refcnt 3 rate 10Mbit burst 4Kb lat 242ms \n Sent 1234 bytes 9 pkt (dropped 7, overlimits 2 requeues 0) \n backlog 15Kb 13p requeues 0\nqdisc tbf";
        assert_eq!(read_answer(&mut text.as_bytes()), Some((15 * 1024, 7)));
        assert_eq!(read_answer(&mut " backlog 1234b 1p requeues 0\n".as_bytes()), Some((1234, 0)));
        assert_eq!(read_answer(&mut "qdisc tbf\n".as_bytes()), None);
        assert_eq!(size("2Mb"), Some(2 << 20));
        assert_eq!(size("12"), None);
    }

    fn sample(at: u64, backlog: u64, dropped: u64) -> Sample {
        Sample { asked_ns: at, read_ns: at + 10, backlog, dropped }
    }

    #[test]
    fn finds_episodes_with_hysteresis() {
        let backlogs = [0, 500, 1200, 3000, 900, 1100, 400, 0, 2000, 1500];
        let samples: Vec<Sample> =
            backlogs.iter().enumerate().map(|(i, b)| sample(i as u64 * 100, *b, i as u64 / 3)).collect();
        let found = episodes(&samples, Watch::new(1000, 0.5));
        assert_eq!(found.len(), 2);
        let first = &found[0];
        assert_eq!(first.rise, Edge { after_ns: 100, before_ns: 210 });
        assert_eq!(first.fall, Some(Edge { after_ns: 500, before_ns: 610 }));
        // The peak's sample rose 1800 from the one before, fell 2100 to the next.
        assert_eq!((first.peak, first.step, first.dropped), (3000, 2100, 2));
        assert_eq!(found[1].fall, None);
        assert_eq!(first.rise.miss_ns(50), -50);
        assert_eq!(first.rise.miss_ns(150), 0);
        assert_eq!(first.rise.miss_ns(260), 50);
    }
}

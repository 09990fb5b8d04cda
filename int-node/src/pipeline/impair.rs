//! The impair stage (lab equipment, built with the `lab` feature): a WAN
//! emulator for labs on kernels without netem. Drops a share of packets and
//! holds the rest back for a fixed delay, as set live through a control
//! file that a thread of its own watches. Held packets live in a
//! fixed-capacity FIFO (allocated at start); a full FIFO drops and counts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::clock::Clock;
use crate::dpdk::mbuf::{Burst, HeldMbuf, BURST};
use crate::dpdk::port::{PortId, QueueId};
use crate::stats::{Counter, Counters};

/// Loss in parts per million (high 32 bits) and delay in microseconds (low
/// 32 bits), written by the main lcore, read once per burst.
#[derive(Default)]
pub struct ImpairControl(AtomicU64);

impl ImpairControl {
    pub fn set(&self, loss_ppm: u32, delay_us: u32) {
        self.0.store((u64::from(loss_ppm) << 32) | u64::from(delay_us), Ordering::Relaxed);
    }

    fn get(&self) -> (u32, u32) {
        let value = self.0.load(Ordering::Relaxed);
        ((value >> 32) as u32, value as u32)
    }

    /// Parses a control file's `loss_percent=2 delay_ms=20` (either may be
    /// left out: 0) into (loss ppm, delay us).
    pub fn parse(text: &str) -> Option<(u32, u32)> {
        let (mut loss_percent, mut delay_ms) = (0.0, 0.0);
        for field in text.split_whitespace() {
            let (key, value) = field.split_once('=')?;
            let value: f64 = value.parse().ok()?;
            match key {
                "loss_percent" => loss_percent = value,
                "delay_ms" => delay_ms = value,
                _ => return None,
            }
        }
        crate::config::impair_units(loss_percent, delay_ms)
    }
}

/// Reads `file` every 100 ms until `quit`, and sets `control` from it each
/// time it changes (`loss_percent=2 delay_ms=20`).
pub fn watch_control_file(file: String, control: Arc<ImpairControl>, quit: Arc<AtomicBool>) {
    let mut seen = None;
    while !quit.load(Ordering::Relaxed) {
        let modified = std::fs::metadata(&file).and_then(|m| m.modified()).ok();
        if modified.is_some() && modified != seen {
            seen = modified;
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(error) => {
                    log::warn!("impair: {file}: {error}; the settings stay");
                    continue;
                }
            };
            match ImpairControl::parse(&text) {
                Some((loss_ppm, delay_us)) => {
                    control.set(loss_ppm, delay_us);
                    log::info!("impair: {file}: loss {loss_ppm} ppm, delay {delay_us} us");
                }
                None => log::warn!("impair: {file}: expected `loss_percent=N delay_ms=N`, got {text:?}"),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

pub struct ImpairStage {
    pub control: Arc<ImpairControl>,
    pub tx: (PortId, QueueId),
    rng: u64,
    held: VecDeque<(u64, HeldMbuf)>,
    capacity: usize,
    release: Burst,
}

impl ImpairStage {
    pub fn new(control: Arc<ImpairControl>, tx: (PortId, QueueId), capacity: usize, seed: u64) -> Self {
        ImpairStage {
            control,
            tx,
            rng: seed | 1,
            held: VecDeque::with_capacity(capacity),
            capacity,
            release: Burst::default(),
        }
    }

    #[inline]
    fn random_ppm(&mut self) -> u32 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 1_000_000) as u32
    }

    /// Sends the held packets whose time has come.
    pub fn release_due(&mut self, clock: &mut Clock, counters: &mut Counters) {
        let now = clock.now_ns();
        while self.held.front().is_some_and(|(due, _)| *due <= now) {
            let Some((_, packet)) = self.held.pop_front() else { break };
            if let Err(packet) = self.release.push(packet) {
                self.flush(counters);
                let _ = self.release.push(packet);
            }
        }
        self.flush(counters);
    }

    fn flush(&mut self, counters: &mut Counters) {
        let (sent, dropped) = self.release.tx(self.tx.0, self.tx.1);
        counters.add(Counter::tx_packets, sent as u64);
        counters.add(Counter::tx_dropped, dropped as u64);
    }

    #[inline]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        self.release_due(clock, counters);
        let (loss_ppm, delay_us) = self.control.get();
        if loss_ppm == 0 && delay_us == 0 && self.held.is_empty() {
            return;
        }
        let mut lose = [false; BURST];
        for flag in lose.iter_mut().take(burst.len()) {
            *flag = loss_ppm > 0 && self.random_ppm() < loss_ppm;
        }
        let due = clock.now_ns() + u64::from(delay_us) * 1_000;
        // While older packets are held, newer ones queue behind them: the
        // order is kept when a delay is lifted.
        let hold_all = delay_us > 0 || !self.held.is_empty();
        let capacity = self.capacity;
        let held = &mut self.held;
        burst.take_where(
            |i| hold_all || lose.get(i) == Some(&true),
            |i, packet| {
                if lose.get(i) == Some(&true) {
                    counters.inc(Counter::impaired_dropped);
                    drop(packet);
                } else if held.len() < capacity {
                    counters.inc(Counter::impaired_delayed);
                    held.push_back((due, packet));
                } else {
                    counters.inc(Counter::impaired_overflow);
                    drop(packet);
                }
            },
        );
    }

    /// At shutdown: held packets are freed (not sent).
    pub fn finish(&mut self) {
        self.held.clear();
    }
}

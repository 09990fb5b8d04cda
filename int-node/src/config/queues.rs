//! Which pipeline polls and sends on which queue: an RX queue belongs to
//! one pipeline, a TX queue to one lcore (queues are not thread-safe).

use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub struct QueueUse {
    rx: BTreeSet<(usize, u16)>,
    tx: BTreeMap<(usize, u16), u32>,
}

impl QueueUse {
    /// Claims an RX queue for a pipeline: false if another one polls it.
    pub fn claim_rx(&mut self, port: usize, queue: u16) -> bool {
        self.rx.insert((port, queue))
    }

    /// Claims a TX queue for a pipeline on `lcore`: the lcore that claimed
    /// it before, if any.
    pub fn claim_tx(&mut self, port: usize, queue: u16, lcore: u32) -> Option<u32> {
        self.tx.insert((port, queue), lcore)
    }

    pub fn tx_used(&self, port: usize, queue: u16) -> bool {
        self.tx.contains_key(&(port, queue))
    }
}

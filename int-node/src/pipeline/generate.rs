//! The generator stage: writes int-core's [`Generator`] packets over every
//! mbuf its RX port hands out (a `net_null` port's blank mbufs, recycled
//! through the pool: a working set that does not grow with the flows) and
//! sends them on. For benchmarks and labs: a node fed by it over
//! `net_memif` sees flows in turn, each numbered as on a live link.

use int_core::generate::Generator;

use crate::clock::Clock;
use crate::dpdk::mbuf::Burst;
use crate::stats::{Counter, Counters};

pub struct GenerateStage {
    pub generator: Generator,
}

impl GenerateStage {
    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let time = clock.now_ns() as u32;
        let mut written = 0;
        for i in 0..burst.len() {
            let generator = &mut self.generator;
            written += u64::from(burst.with_frame(i, |f| generator.write(f, time)) == Some(true));
        }
        counters.add(Counter::generated, written);
        counters.add(Counter::not_common, burst.len() as u64 - written);
    }
}

//! The benchmark's reference stages (int-core's [`reference`]) on a burst:
//! the least work a source, transit hop or sink can do on the benchmark's
//! frames, run in the same node, on the same ports and clock, so that each
//! real stage's work per packet is measured against its reference's in the
//! same run. Frames of any other shape pass untouched, counted
//! `not_common`.

use int_core::int21::fast_source::HopTimes;
use int_core::reference;

use crate::dpdk::mbuf::{Burst, RxClock};
use crate::stats::{Counter, Counters};

pub struct ReferenceStage {
    pub role: Reference,
    /// The driver's RX timestamps, when the pipeline's clock is theirs
    /// (tests compare a reference with its stage byte for byte that way).
    pub rx_timestamps: Option<RxClock>,
}

/// The role a reference stage stands in for, the version named.
pub enum Reference {
    Source05(reference::Source),
    Transit05(reference::Transit),
    Sink05(reference::Sink),
    Source21(reference::Source21),
    Sink21(reference::Sink21),
}

impl ReferenceStage {
    /// One pass over the burst, one clock read (by the caller) for all of
    /// it. Out of line: the stage is its own symbol in a profile, as the
    /// real stages are.
    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, now_ns: u64, counters: &mut Counters) {
        let (mut taken, mut out_of_order) = (0u64, 0u64);
        let burst_ns = now_ns;
        for i in 0..burst.len() {
            burst.prefetch(i + 1);
            let now_ns = burst.arrival_ns(i, self.rx_timestamps, burst_ns);
            let now = now_ns as u32;
            let mut followed = |in_order: Option<bool>| {
                out_of_order += u64::from(in_order == Some(false));
                in_order.is_some()
            };
            let took = match &mut self.role {
                Reference::Source05(source) => burst.with_frame(i, |f| source.instrument(f, now)),
                Reference::Transit05(transit) => burst.with_frame(i, |f| transit.push(f, now, now)),
                Reference::Sink05(sink) => burst.with_frame(i, |f| followed(sink.strip(f, now))),
                Reference::Source21(source) => {
                    // As the INT 2.1 source: in at arrival, out at the burst's time.
                    let times = HopTimes { ingress_ns: now_ns, egress_ns: burst_ns };
                    burst.with_frame(i, |f| source.instrument(f, times))
                }
                Reference::Sink21(sink) => burst.with_frame(i, |f| followed(sink.strip(f, now_ns))),
            };
            taken += u64::from(took == Some(true));
        }
        let done = match self.role {
            Reference::Source05(_) | Reference::Source21(_) => Counter::instrumented,
            Reference::Transit05(_) => Counter::pushed,
            Reference::Sink05(_) | Reference::Sink21(_) => Counter::stripped,
        };
        counters.add(done, taken);
        counters.add(Counter::not_common, burst.len() as u64 - taken);
        counters.add(Counter::seq_out_of_order, out_of_order);
    }
}

//! Stages never rewrite an mbuf whose data has another owner: on real mbufs
//! in a real EAL (the one test of this process that starts it), a clone and
//! its original are left byte for byte as they came and counted, then
//! rewritten once the clone is gone.

use std::net::Ipv4Addr;

use int_core::craft::PacketSpec;
use int_core::int05::fast_source::FastSource;
use int_core::int05::source::{SourceConfig, Template};
use int_core::int05::Domain;

use super::int05::source::Source05Stage;
use super::int05::transit::Transit05Stage;
use super::setup::Hop;
use crate::clock::Clock;
use crate::config::{MarkedPolicy, Prefix, Rule};
use crate::dpdk::eal::Eal;
use crate::dpdk::mbuf::{alloc_into, clone_into, Burst};
use crate::dpdk::mempool::{data_room_for_mtu, Mempool};
use crate::flow_table::FlowTable;
use crate::stats::{Counter, Counters};

fn frames(burst: &Burst) -> Vec<Vec<u8>> {
    (0..burst.len()).map(|i| burst.data(i).unwrap().to_vec()).collect()
}

fn hop(node_id: u32) -> Hop {
    Hop { node_id, rx_int_port: 1, tx_int_port: 2, max_ip_len: 1500, rx_timestamps: None, rx_queue: None }
}

fn source_stage() -> Source05Stage {
    let config = SourceConfig::host_int(1500);
    let hop = Source05Stage::own_hop(&hop(1));
    let template = Template::new(&config, &hop).unwrap();
    Source05Stage {
        fast: FastSource::of(&config, &template),
        lanes: Box::default(),
        template,
        config,
        watchlist: vec![Rule {
            src: Prefix::ANY,
            dst: Prefix::ANY,
            protocol: None,
            src_ports: (0, u16::MAX),
            dst_ports: (0, u16::MAX),
        }],
        flows: FlowTable::new(1024),
        idle_timeout_ns: 1_000_000_000,
        rx_timestamps: None,
        last_sweep_ns: 0,
        marked: MarkedPolicy::Strip,
        own_reports_to: None,
        top: Default::default(),
    }
}

#[test]
fn shared_and_indirect_mbufs_are_never_rewritten() {
    let args: Vec<String> =
        ["int-node-unit-tests", "--no-huge", "-m", "64", "--no-pci", "--no-shconf", "-l", "0"]
            .iter()
            .chain(&["--log-level", "lib.eal:error", "--no-telemetry", "--file-prefix", "int-node-unit"])
            .map(|a| a.to_string())
            .collect();
    let _eal = Eal::init(&args).unwrap();
    let pool = Mempool::new("unit_pool", 1023, 0, data_room_for_mtu(1500), 0).unwrap();
    let frame =
        PacketSpec::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 1000, 2000, 100).build();
    let (mut clock, mut counters) = (Clock::new(), Counters::default());
    let mut burst = Burst::default();
    assert!(alloc_into(&mut burst, pool.as_ptr(), &frame));
    assert!(clone_into(&mut burst, 0, pool.as_ptr()), "an indirect clone, the original now shared");

    let mut source = source_stage();
    source.process(&mut burst, &mut clock, &mut counters);
    assert_eq!(frames(&burst), [frame.clone(), frame.clone()], "neither rewritten");
    assert_eq!(counters.get(Counter::shared_mbuf), 2);
    assert_eq!(counters.get(Counter::instrumented), 0);

    burst.retain(|i| i == 0);
    source.process(&mut burst, &mut clock, &mut counters);
    assert_eq!(counters.get(Counter::instrumented), 1, "alone again, the original is instrumented");
    let instrumented = frames(&burst).remove(0);
    assert_eq!(instrumented.len(), frame.len() + 36);

    assert!(clone_into(&mut burst, 0, pool.as_ptr()));
    let mut transit = Transit05Stage::new(Domain::default(), &hop(5));
    transit.process(&mut burst, &mut clock, &mut counters);
    assert_eq!(frames(&burst), [instrumented.clone(), instrumented.clone()]);
    assert_eq!(counters.get(Counter::shared_mbuf), 4);
    burst.retain(|i| i == 0);
    transit.process(&mut burst, &mut clock, &mut counters);
    assert_eq!(counters.get(Counter::pushed), 1);
    burst.free_all();
    assert_eq!(pool.in_use(), 0, "every mbuf back, the clone's too");
}

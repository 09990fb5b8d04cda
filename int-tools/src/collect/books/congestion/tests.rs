use super::episode::{Ended, Trigger};
use super::settings::Thresholds;
use super::*;

const MS: u64 = 1_000_000;
/// Report times start here: a full 64-bit clock.
const T0: u64 = 1_700_000_000_000_000_000;

fn flow(port: u16) -> FlowKey {
    FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, port, 5000)
}

fn hop(node: u32, queue: u8, occupancy: u32, latency: u32, at_ns: u64) -> Hop {
    Hop {
        node_id: Some(node),
        queue: Some((queue, occupancy)),
        hop_latency: Some(latency),
        egress_timestamp: Some(at_ns),
        ..Hop::default()
    }
}

fn absolute(occupancy: u32) -> Settings {
    Settings { global: Thresholds { occupancy: Some(occupancy), latency_ns: None }, ..Settings::default() }
}

fn packet(port: u16) -> Packet {
    Packet { flow: flow(port), bytes: Some(1000), queue_alert: false }
}

/// One figure of node 1's queue 2 at `ms` past T0.
fn feed(books: &mut Congestion, occupancy: u32, ms: u64, port: u16) {
    let at = T0 + ms * MS;
    let when = When { report_ns: Some(at), arrival_ns: 0 };
    books.hops(&[hop(1, 2, occupancy, 500, at)], Carrier::Int21, when, Some(&packet(port)));
}

/// Over the threshold opens; under it but over the exit figure (half)
/// stays; under the exit figure closes: one episode, its start the first
/// figure over, its end the first under, its peak the most.
#[test]
fn an_episode_has_hysteresis() {
    let mut books = Congestion::new(absolute(100));
    for (ms, occupancy) in
        [(0, 10), (1, 10), (2, 120), (3, 300), (4, 90), (5, 60), (6, 120), (7, 40), (8, 10)]
    {
        feed(&mut books, occupancy, ms, 1);
    }
    let closed = books.take_closed();
    assert_eq!(closed.len(), 1, "{closed:?}");
    let episode = &closed[0];
    assert_eq!((episode.node, episode.queue, episode.trigger), (1, 2, Trigger::Occupancy));
    assert_eq!((episode.start_ns, episode.end_ns), (T0 + 2 * MS, Some(T0 + 7 * MS)));
    assert_eq!((episode.peak_occupancy, episode.ended), (Some(300), Some(Ended::Fell)));
    assert_eq!((episode.packets, episode.bytes, episode.flows), (5, 5000, 1));
    assert_eq!(episode.threshold_occupancy, Some(100));
    assert!(books.take_closed().is_empty(), "handed on once");
    assert_eq!(books.counts.episodes, 1);
}

/// Without an absolute threshold, a queue is judged against its own
/// baseline once it has one: a rise to four times it opens an episode.
#[test]
fn a_relative_threshold_follows_the_queues_baseline() {
    let mut books = Congestion::default();
    for ms in 0..100 {
        feed(&mut books, 1000 + (ms % 3) as u32, ms, 1);
    }
    feed(&mut books, 3_000, 100, 1);
    assert!(books.view().queues[&(1, 2)].open.is_none(), "three times is no episode");
    feed(&mut books, 4_500, 101, 1);
    feed(&mut books, 1_000, 102, 1);
    let closed = books.take_closed();
    assert_eq!(closed.len(), 1);
    let threshold = closed[0].threshold_occupancy.unwrap();
    // The baseline took the calm 3,000 too (1/64 of it).
    assert!((4000..4200).contains(&threshold), "{threshold}");
}

/// Hop latency opens an episode as occupancy does; per node thresholds
/// override the global ones and a node's unit is said as configured.
#[test]
fn per_node_thresholds_and_units() {
    let mut settings = absolute(100);
    settings.nodes.insert(1, Thresholds { occupancy: Some(1_000), latency_ns: Some(5_000) });
    settings.units.insert(1, Unit::Packets);
    let mut books = Congestion::new(settings);
    let when = |ms: u64| When { report_ns: Some(T0 + ms * MS), arrival_ns: 0 };
    books.hops(&[hop(1, 0, 500, 100, T0)], Carrier::Int21, when(0), None);
    books.hops(&[hop(1, 0, 500, 9_000, T0 + MS)], Carrier::Int21, when(1), None);
    books.hops(&[hop(1, 0, 10, 100, T0 + 2 * MS)], Carrier::Int21, when(2), None);
    books.hops(&[hop(3, 0, 500, 100, T0 + 3 * MS)], Carrier::Int21, when(3), None);
    books.hops(&[hop(3, 0, 10, 100, T0 + 4 * MS)], Carrier::Int21, when(4), None);
    let closed = books.take_closed();
    let told: Vec<_> = closed.iter().map(|e| (e.node, e.trigger, e.unit)).collect();
    assert_eq!(told, [(1, Trigger::HopLatency, Unit::Packets), (3, Trigger::Occupancy, Unit::Unknown)]);
}

/// The bursting flow is the first culprit; the steady flows whose
/// latency rose are the victims, the culprit is none.
#[test]
fn culprits_by_share_victims_by_their_rise() {
    let mut books = Congestion::new(absolute(100));
    for ms in 0..100 {
        for port in [1, 2] {
            books.latency(&flow(port), 10_000);
            feed(&mut books, 5, ms, port);
        }
        books.latency(&flow(3), 10_000);
    }
    for ms in 100..110 {
        for _ in 0..8 {
            books.latency(&flow(3), 50_000);
            feed(&mut books, 500, ms, 3);
        }
        books.latency(&flow(1), 40_000);
        feed(&mut books, 500, ms, 1);
        books.latency(&flow(2), 11_000);
        feed(&mut books, 500, ms, 2);
    }
    feed(&mut books, 5, 110, 1);
    let closed = books.take_closed();
    assert_eq!(closed.len(), 1);
    let episode = &closed[0];
    let culprits: Vec<(u16, u64)> = episode.culprits.iter().map(|p| (p.flow.src_port, p.packets)).collect();
    assert_eq!(culprits, [(3, 80), (1, 10), (2, 10)]);
    assert!((episode.culprits[0].share - 0.8).abs() < 1e-9);
    let victims: Vec<(u16, Option<i64>, Option<i64>)> =
        episode.victims.iter().map(|p| (p.flow.src_port, p.latency_before_ns, p.latency_max_ns)).collect();
    assert_eq!(victims, [(1, Some(10_000), Some(40_000))], "flow 2 rose 10%: no victim");
}

/// A queue that falls silent ends its episode at its last figure, once
/// the reports' clock has gone `idle` past it.
#[test]
fn a_silent_queue_ends_its_episode() {
    let mut books = Congestion::new(absolute(100));
    feed(&mut books, 500, 0, 1);
    feed(&mut books, 500, 3, 1);
    let other = |ms: u64| {
        let at = T0 + ms * MS;
        (hop(9, 0, 1, 1, at), When { report_ns: Some(at), arrival_ns: 0 })
    };
    let (quiet, when) = other(500);
    books.hops(&[quiet], Carrier::Int21, when, None);
    assert!(books.take_closed().is_empty());
    let (quiet, when) = other(1_020);
    books.hops(&[quiet], Carrier::Int21, when, None);
    let closed = books.take_closed();
    assert_eq!(closed.len(), 1);
    assert_eq!((closed[0].end_ns, closed[0].ended), (Some(T0 + 3 * MS), Some(Ended::Silent)));
}

/// At most `queues` queues: a new one takes the place of the one silent
/// the longest that is calm, counted; when every queue is congested, it
/// is not followed, counted.
#[test]
fn queues_are_bounded_and_evicted_by_silence() {
    let mut books = Congestion::new(Settings { queues: 2, ..absolute(100) });
    let figure = |books: &mut Congestion, node: u32, occupancy: u32, ms: u64| {
        let at = T0 + ms * MS;
        books.hops(
            &[hop(node, 0, occupancy, 1, at)],
            Carrier::Int21,
            When { report_ns: Some(at), arrival_ns: 0 },
            None,
        );
    };
    figure(&mut books, 1, 5, 0);
    figure(&mut books, 2, 5, 1);
    figure(&mut books, 3, 5, 2);
    assert_eq!((books.queues(), books.counts.evicted_queues), (2, 1));
    assert!(books.timeline((1, 0)).is_none(), "node 1 was silent the longest");
    figure(&mut books, 2, 500, 3);
    figure(&mut books, 3, 500, 4);
    figure(&mut books, 4, 5, 5);
    assert_eq!((books.queues(), books.counts.untracked_queues), (2, 1));
}

/// Figures of one queue out of order: its clock only goes forward, the
/// late figure lands in the current millisecond.
#[test]
fn a_late_figure_does_not_turn_the_clock_back() {
    let mut books = Congestion::new(absolute(100));
    feed(&mut books, 500, 10, 1);
    feed(&mut books, 500, 8, 1);
    feed(&mut books, 5, 12, 1);
    let closed = books.take_closed();
    assert_eq!((closed[0].start_ns, closed[0].end_ns), (T0 + 10 * MS, Some(T0 + 12 * MS)));
}

/// Views merge: queues of two readers, their episodes in time order.
#[test]
fn views_merge() {
    let (mut a, mut b) = (Congestion::new(absolute(100)), Congestion::new(absolute(100)));
    feed(&mut a, 500, 5, 1);
    feed(&mut a, 5, 6, 1);
    feed(&mut b, 500, 1, 1);
    feed(&mut b, 5, 2, 1);
    feed(&mut b, 500, 3, 1);
    b.queue_alert(7);
    let mut view = a.view();
    view.merge(&b.view());
    let starts: Vec<u64> = view.recent.iter().map(|e| (e.start_ns - T0) / MS).collect();
    assert_eq!(starts, [1, 5]);
    assert_eq!(view.queues[&(1, 2)].episodes, 2);
    assert!(view.queues[&(1, 2)].open.is_some(), "b's third figure opened one");
    assert_eq!(view.counts.queue_alerts[&7], 1);
}

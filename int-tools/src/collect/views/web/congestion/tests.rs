use int_core::flow::FlowKey;
use int_core::hop::Hop;

use super::api;
use super::*;
use crate::collect::books::congestion::figure::Carrier;
use crate::collect::books::congestion::settings::{Settings, Thresholds};
use crate::collect::books::congestion::{Packet, When};
use crate::collect::views::web::board::Board;

const MS: u64 = 1_000_000;
/// Report times start here: a full 64-bit clock.
const T0: u64 = 1_700_000_000_000_000_000;

fn books(occupancy: u32) -> Congestion {
    let global = Thresholds { occupancy: Some(occupancy), latency_ns: None };
    Congestion::new(Settings { global, ..Settings::default() })
}

/// One figure of `node`'s `queue` at `ms` past T0, its packet of UDP
/// source port `port`.
fn feed(books: &mut Congestion, (node, queue): (u32, u8), occupancy: u32, ms: u64, port: u16) {
    let at = T0 + ms * MS;
    let hop = Hop {
        node_id: Some(node),
        queue: Some((queue, occupancy)),
        hop_latency: Some(500 + occupancy),
        egress_timestamp: Some(at),
        ..Hop::default()
    };
    let flow = FlowKey::v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, port, 5000);
    let packet = Packet { flow, bytes: Some(1000), queue_alert: false };
    books.hops(&[hop], Carrier::Int21, When { report_ns: Some(at), arrival_ns: 0 }, Some(&packet));
}

/// The board after one sample of `books`.
fn sampled(books: &Congestion, board: &mut Board) {
    let mut taken = Taken::default();
    taken.add(0, books, board.congestion.mark(0));
    board.congestion.apply(taken);
}

/// An episode seen under way keeps its number once it ends; its curve
/// covers it with its peak; the heatmap's row of its node shows the peak
/// in the columns of the burst, the calm node's row its calm figure.
#[test]
fn an_episode_keeps_its_number_and_its_curve() {
    let mut books = books(1000);
    let mut board = Board::new(10_000);
    for ms in 0..200 {
        let burst = (100..140).contains(&ms);
        feed(&mut books, (7, 2), if burst { 1000 + 50 * (ms - 100) as u32 } else { 40 }, ms, 9);
        feed(&mut books, (8, 0), 40, ms, 1);
        if ms == 120 {
            sampled(&books, &mut board);
        }
    }
    let under_way: Vec<u64> = board.congestion.rows.values().map(|row| row.id).collect();
    assert_eq!(under_way, [1]);
    assert!(board.congestion.rows[&1].episode.end_ns.is_none());
    sampled(&books, &mut board);
    let rows: Vec<&EpisodeRow> = board.congestion.rows.values().collect();
    assert_eq!(rows.len(), 1);
    let (episode, curve) = (&rows[0].episode, &rows[0].curve);
    assert_eq!((rows[0].id, episode.start_ns, episode.end_ns), (1, T0 + 100 * MS, Some(T0 + 140 * MS)));
    let peak = 1000 + 50 * 39;
    assert_eq!(episode.peak_occupancy, Some(peak));
    assert_eq!(curve.iter().map(|c| c.occupancy).max(), Some(peak));
    let (first, last) = (curve[0].at_ms, curve[curve.len() - 1].at_ms);
    assert!(first < 1_700_000_000_000 + 100 && last >= 1_700_000_000_000 + 140, "{first}..{last}");
    let one = api::episode(&board, 1).unwrap();
    assert_eq!(one["culprits"][0]["name"], "udp 10.0.0.1:9 -> 10.0.0.2:5000");
    assert_eq!(one["duration_ns"], 40 * MS);
    // 200 ms at 1 ms: two columns a ms... 120 columns of 2 ms.
    let heat = api::heatmap(&board, 240, None);
    assert_eq!((heat["resolution_ms"].as_u64(), heat["column_ms"].as_u64()), (Some(1), Some(2)));
    let row =
        |node: u32| heat["rows"].as_array().unwrap().iter().find(|r| r["node"] == node).unwrap().clone();
    assert_eq!((row(7)["peak"].as_u64(), row(8)["peak"].as_u64()), (Some(u64::from(peak)), Some(40)));
    assert_eq!(row(7)["threshold"], 1000.0);
    let from = heat["from_ms"].as_u64().unwrap();
    let hot: Vec<u64> = row(7)["cells"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, v)| v.as_u64().is_some_and(|v| v >= 1000))
        .map(|(at, _)| from + 2 * at as u64 - 1_700_000_000_000)
        .collect();
    assert_eq!((hot.first(), hot.last()), (Some(&100), Some(&138)), "{hot:?}");
}

/// The tier follows how far back the span reaches: 1 ms within two
/// minutes, 1 s within the hour before, 1 min beyond.
#[test]
fn the_resolution_follows_the_zoom() {
    let clock = 10 * 3_600_000;
    assert_eq!(api::resolution(clock - 10_000, clock), 1);
    assert_eq!(api::resolution(clock - 600_000, clock), 1_000);
    assert_eq!(api::resolution(clock - 2 * 3_600_000, clock), 60_000);
}

/// A fleet of 50 nodes with 20 queues each (1,000 queues), every queue
/// with an episode in the last minute: every answer stays small (the
/// timeline its newest 500 and at most 1,000; the heatmap 100 nodes of
/// 120 cells) and bounded whatever the span.
#[test]
fn answers_are_bounded_at_a_fleets_size() {
    let mut books = books(1000);
    let mut board = Board::new(10_000);
    let queues: Vec<(u32, u8)> = (1..=50).flat_map(|node| (0..20).map(move |queue| (node, queue))).collect();
    // A figure of every queue every 50 ms; at each, two queues burst
    // (each queue two or three times in the minute).
    for step in 0..1200u64 {
        let ms = step * 50;
        for (n, key) in queues.iter().enumerate() {
            let burst = n as u64 / 2 == step % 500;
            feed(&mut books, *key, if burst { 5000 } else { 40 + (ms % 7) as u32 }, ms, n as u16);
        }
        if step % 20 == 0 {
            sampled(&books, &mut board);
        }
    }
    sampled(&books, &mut board);
    assert_eq!(books.queues(), 1000);
    assert!(board.congestion.rows.len() >= 1000, "{}", board.congestion.rows.len());
    let size = |value: &serde_json::Value| serde_json::to_vec(value).unwrap().len();
    // The newest episodes on the queues of the newest, TIMELINE_ROWS
    // queues at most: every episode shown is drawn.
    let drawn = |timeline: &serde_json::Value| {
        let rows = timeline["queues"].as_array().unwrap();
        let bars: usize = rows.iter().map(|q| q["episodes"].as_array().unwrap().len()).sum();
        assert_eq!(timeline["shown"].as_u64(), Some(bars as u64));
        (rows.len(), bars)
    };
    let timeline = api::timeline(&board, 60_000, 500);
    assert_eq!(timeline["newest"].as_array().map(Vec::len), Some(api::NEWEST));
    let (rows, bars) = drawn(&timeline);
    assert!(rows == api::TIMELINE_ROWS && bars <= 500 && bars > 2 * rows, "{rows} rows, {bars} bars");
    let short = api::timeline(&board, 60_000, 100);
    assert_eq!(drawn(&short).1, 100);
    let most = api::timeline(&board, 3_600_000, 1_000_000);
    let (rows, bars) = drawn(&most);
    assert!(rows <= api::TIMELINE_ROWS && bars <= api::MAX_EPISODES, "{rows} rows, {bars} bars");
    assert!(most["in_span"].as_u64().unwrap() >= 2000);
    for span in [1_000, 60_000, 3_600_000, 86_400_000] {
        let heat = api::heatmap(&board, span, None);
        assert_eq!(heat["nodes"], 50);
        assert!(heat["rows"].as_array().unwrap().len() <= api::HEAT_ROWS);
        assert!(heat["columns"].as_u64().unwrap() <= api::HEAT_COLUMNS as u64, "{span}: {}", heat["columns"]);
        assert!(size(&heat) < 64 * 1024, "{span}: {} bytes", size(&heat));
    }
    let id = *board.congestion.rows.keys().next_back().unwrap();
    let sizes = (size(&timeline), size(&most), size(&api::episode(&board, id).unwrap()));
    eprintln!("timeline {} B, at most {} B, an episode {} B", sizes.0, sizes.1, sizes.2);
    assert!(sizes.0 < 128 * 1024 && sizes.1 < 192 * 1024 && sizes.2 < 16 * 1024, "{sizes:?}");
}

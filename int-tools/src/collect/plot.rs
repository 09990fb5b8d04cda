//! `collect --plot FILE.png`: one picture of a run. Above, one-way latency
//! over time: the mean over all flows between its minimum and maximum, and
//! the mean of the most reported flows, one point per timeline bucket (a
//! short run may have a single one). Then, where INT 2.1 reports told of
//! hops, the mean hop latency over time of the nodes with the most hops.
//! Below, the packets lost per flow, the most lossy first.

use std::path::Path;

use int_core::flow::FlowKey;
use plotters::prelude::*;

use super::ledger::FlowSummary;
use super::summary::Snapshot;
use super::timeline::Timeline;

/// Flows drawn one by one in each panel.
const TOP_FLOWS: usize = 5;
const LOSSY_FLOWS: usize = 10;
/// Debian's fonts-dejavu-core: plotters draws text with a font it is given.
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

type Failure = Box<dyn std::error::Error>;

pub fn draw(snapshot: &Snapshot, path: &Path) -> Result<(), Failure> {
    load_font()?;
    let hops =
        snapshot.hops.nodes.values().any(|n| n.timeline.as_ref().is_some_and(|t| !t.buckets().is_empty()));
    let height = if hops { 1380 } else { 900 };
    let root = BitMapBackend::new(path, (1200, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (upper, lower) = root.split_vertically(520);
    latency_over_time(snapshot, &upper)?;
    if hops {
        let (middle, lower) = lower.split_vertically(480);
        hop_latency_over_time(snapshot, &middle)?;
        loss_per_flow(snapshot, &lower)?;
    } else {
        loss_per_flow(snapshot, &lower)?;
    }
    root.present()?;
    Ok(())
}

/// Each of the nodes with the most hops: its mean hop latency over time.
fn hop_latency_over_time(
    snapshot: &Snapshot,
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
) -> Result<(), Failure> {
    let mut nodes: Vec<_> =
        snapshot.hops.nodes.iter().filter(|(_, n)| n.timeline.is_some() && n.latency.count() > 0).collect();
    nodes.sort_by(|a, b| b.1.hops.cmp(&a.1.hops).then(a.0.cmp(b.0)));
    nodes.truncate(TOP_FLOWS);
    let series: Vec<(u32, Vec<(f64, f64)>)> = nodes
        .iter()
        .map(|(id, node)| {
            (**id, points(node.timeline.as_ref().unwrap_or(&Timeline::default()), |b| b.mean()))
        })
        .collect();
    let seconds = series.iter().flat_map(|(_, s)| s.iter().map(|p| p.0)).fold(1.0, f64::max) * 1.05;
    let high = series.iter().flat_map(|(_, s)| s.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.05;
    let mut chart = ChartBuilder::on(area)
        .caption("Hop latency over time, the nodes with the most hops", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..seconds, 0.0..high)?;
    chart.configure_mesh().x_desc("seconds since the collector started").y_desc("hop latency, µs").draw()?;
    for (i, (id, points)) in series.into_iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points, colour).point_size(2))?
            .label(format!("node {}: mean", std::net::Ipv4Addr::from(id)))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
    Ok(())
}

fn load_font() -> Result<(), Failure> {
    let bytes =
        std::fs::read(FONT).map_err(|e| format!("{FONT}: {e} (install Debian's fonts-dejavu-core)"))?;
    // Registered once for the process's life, as plotters wants it.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{FONT}: not a font"))?;
    Ok(())
}

/// (seconds from the start, µs) of each bucket with reports.
fn points(timeline: &Timeline, value: impl Fn(&super::timeline::Bucket) -> Option<i64>) -> Vec<(f64, f64)> {
    let width_s = timeline.width_ms() as f64 / 1000.0;
    timeline
        .buckets()
        .iter()
        .enumerate()
        .filter_map(|(i, bucket)| value(bucket).map(|ns| ((i as f64 + 0.5) * width_s, ns as f64 / 1000.0)))
        .collect()
}

fn latency_over_time(
    snapshot: &Snapshot,
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
) -> Result<(), Failure> {
    let overall = &snapshot.ledger.overall;
    let timeline = overall.timeline.clone().unwrap_or_default();
    let minimum = points(&timeline, |b| (b.reports > 0).then_some(b.latency_min));
    let maximum = points(&timeline, |b| (b.reports > 0).then_some(b.latency_max));
    let mean = points(&timeline, |b| b.mean());
    let flows: Vec<(&FlowKey, &FlowSummary)> = snapshot
        .ledger
        .flows_by_reports()
        .into_iter()
        .filter(|(_, f)| f.timeline.is_some())
        .take(TOP_FLOWS)
        .collect();
    let seconds = (timeline.buckets().len() as f64 * timeline.width_ms() as f64 / 1000.0).max(1.0);
    let low = minimum.iter().map(|p| p.1).fold(f64::INFINITY, f64::min).min(0.0);
    let high = maximum.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.05;
    let caption = format!(
        "One-way latency over time ({} reports, {} flows)",
        overall.latency.count(),
        snapshot.ledger.flows.len()
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..seconds, low..high)?;
    chart.configure_mesh().x_desc("seconds since the collector started").y_desc("latency, µs").draw()?;
    let grey = RGBColor(170, 170, 170);
    chart
        .draw_series(LineSeries::new(minimum, grey))?
        .label("all flows: min and max")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    chart.draw_series(LineSeries::new(maximum, grey).point_size(2))?;
    chart
        .draw_series(LineSeries::new(mean, BLACK.stroke_width(2)).point_size(3))?
        .label("all flows: mean")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    for (i, (key, flow)) in flows.into_iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        let series = points(flow.timeline.as_ref().unwrap_or(&Timeline::default()), |b| b.mean());
        chart
            .draw_series(LineSeries::new(series, colour).point_size(2))?
            .label(format!("{key}: mean"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
    Ok(())
}

fn loss_per_flow(
    snapshot: &Snapshot,
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
) -> Result<(), Failure> {
    let mut lossy: Vec<(&FlowKey, u64)> =
        snapshot.ledger.flows.iter().filter(|(_, f)| f.lost > 0).map(|(k, f)| (k, f.lost)).collect();
    lossy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    lossy.truncate(LOSSY_FLOWS);
    let caption = format!("Packets lost per flow ({} in all)", snapshot.ledger.overall.lost);
    let most = lossy.first().map_or(1, |(_, lost)| *lost) as f64 * 1.1;
    let rows = lossy.len().max(1) as i32;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(330)
        .build_cartesian_2d(0.0..most, (0..rows - 1).into_segmented())?;
    let names: Vec<String> = lossy.iter().map(|(key, _)| key.to_string()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("packets lost")
        .y_labels(lossy.len().max(1))
        .y_label_formatter(&|row| match row {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    let red = RGBColor(200, 60, 50);
    chart.draw_series(lossy.iter().enumerate().map(|(i, (_, lost))| {
        let row = i as i32;
        Rectangle::new(
            [(0.0, SegmentValue::Exact(row)), (*lost as f64, SegmentValue::Exact(row + 1))],
            red.filled(),
        )
    }))?;
    if lossy.is_empty() {
        area.draw(&Text::new("no packet lost", (560, 180), ("sans-serif", 20)))?;
    }
    Ok(())
}

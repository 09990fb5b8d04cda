//! `collect --plot FILE.png`: one picture of a run. Above, one-way latency
//! over time: the mean over all flows between its minimum and maximum, and
//! the mean of the most reported flows. Then, where INT 2.1 reports told of
//! hops, the mean hop latency over time of the nodes with the most hops.
//! Below, the packets lost per flow, the most lossy first.
//!
//! Time runs from the first report, by the reports' own times where they
//! state them (a recorded link replayed fast keeps its pace); a stretch
//! without reports is a gap in the line. Legends sit beside the data.

use std::path::Path;

use int_core::flow::FlowKey;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::label::{self, Label};
use super::ledger::FlowSummary;
use super::summary::Snapshot;
use super::timeline::{Bucket, Timeline};

/// Flows drawn one by one in each panel.
const TOP_FLOWS: usize = 5;
const LOSSY_FLOWS: usize = 10;
/// Debian's fonts-dejavu-core: plotters draws text with a font it is given.
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const WIDTH: u32 = 1200;
/// The legend column at the right of the time panels.
const LEGEND: u32 = 330;
const TITLE: u32 = 40;

type Failure = Box<dyn std::error::Error>;
type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
type Axes = Cartesian2d<RangedCoordf64, RangedCoordf64>;
type Chart<'a> = ChartContext<'a, BitMapBackend<'a>, Axes>;
/// A series over time: runs of (seconds, µs), a gap between runs.
type Runs = Vec<Vec<(f64, f64)>>;

/// A line of the legend: its colour, width and words.
type Entry = (RGBColor, u32, String);

pub fn draw(snapshot: &Snapshot, path: &Path) -> Result<(), Failure> {
    load_font()?;
    let hops =
        snapshot.hops.nodes.values().any(|n| n.timeline.as_ref().is_some_and(|t| !t.buckets().is_empty()));
    let height = if hops { 1380 } else { 900 };
    let root = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
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

fn load_font() -> Result<(), Failure> {
    let bytes =
        std::fs::read(FONT).map_err(|e| format!("{FONT}: {e} (install Debian's fonts-dejavu-core)"))?;
    // Registered once for the process's life, as plotters wants it.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{FONT}: not a font"))?;
    label::set_font(bytes).map_err(|e| format!("{FONT}: {e}"))?;
    Ok(())
}

/// A panel's title strip, then the rest.
fn titled<'a>(area: &Area<'a>, title: &str) -> Result<Area<'a>, Failure> {
    let (strip, rest) = area.split_vertically(TITLE);
    let x = (area.dim_in_pixel().0 as i32 - label::width(title, 22.0)) / 2;
    strip.draw(&Label::new((x.max(0), 10), title, 22.0))?;
    Ok(rest)
}

/// The legend, line by line, in its column.
fn legend(area: &Area<'_>, entries: &[Entry]) -> Result<(), Failure> {
    for (i, (colour, width, words)) in entries.iter().enumerate() {
        let y = 20 + 22 * i as i32;
        area.draw(&PathElement::new(vec![(10, y + 7), (34, y + 7)], colour.stroke_width(*width)))?;
        area.draw(&Label { colour: BLACK, ..Label::new((42, y), words.as_str(), 13.0) })?;
    }
    Ok(())
}

/// Runs of (seconds, µs) over consecutive buckets that have a value, in
/// the timeline's drawing width: an empty bucket leaves a gap in the line.
fn runs(timeline: &Timeline, value: impl Fn(&Bucket) -> Option<i64>) -> Runs {
    let timeline = timeline.for_drawing();
    let width_s = timeline.width_ms() as f64 / 1000.0;
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (i, bucket) in timeline.buckets().iter().enumerate() {
        match value(bucket) {
            Some(ns) => runs
                .last_mut()
                .into_iter()
                .for_each(|run| run.push(((i as f64 + 0.5) * width_s, ns as f64 / 1000.0))),
            None if runs.last().is_some_and(|run| !run.is_empty()) => runs.push(Vec::new()),
            None => {}
        }
    }
    runs.retain(|run| !run.is_empty());
    runs
}

/// What the time axis is.
fn time_axis(snapshot: &Snapshot) -> &'static str {
    match snapshot.ledger.by_reports() {
        Some(true) => "seconds from the first report, by the reports' own times",
        _ => "seconds from the first report, by arrival",
    }
}

/// Draws each run of a series as a line of `style`.
fn draw_runs(chart: &mut Chart<'_>, runs: Runs, style: ShapeStyle, points: u32) -> Result<(), Failure> {
    for run in runs {
        chart.draw_series(LineSeries::new(run, style).point_size(points))?;
    }
    Ok(())
}

/// A time panel: its chart (left) and legend column (right).
fn time_chart<'a>(
    area: &Area<'a>,
    title: &str,
    x: (f64, &str),
    y: (f64, f64, &str),
) -> Result<(Chart<'a>, Area<'a>), Failure> {
    let rest = titled(area, title)?;
    let (data, column) = rest.split_horizontally(WIDTH - LEGEND);
    let mut chart = ChartBuilder::on(&data)
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x.0, y.0..y.1)?;
    let whole = y.1 - y.0 >= 10.0;
    chart
        .configure_mesh()
        .x_desc(x.1)
        .y_desc(y.2)
        .y_label_formatter(&|v| if whole { format!("{v:.0}") } else { format!("{v:.1}") })
        .draw()?;
    Ok((chart, column))
}

fn latency_over_time(snapshot: &Snapshot, area: &Area<'_>) -> Result<(), Failure> {
    let overall = &snapshot.ledger.overall;
    let timeline = overall.timeline.clone().unwrap_or_default();
    let minimum = runs(&timeline, |b| (b.reports > 0).then_some(b.latency_min));
    let maximum = runs(&timeline, |b| (b.reports > 0).then_some(b.latency_max));
    let flows: Vec<(&FlowKey, &FlowSummary)> = snapshot
        .ledger
        .flows_by_reports()
        .into_iter()
        .filter(|(_, f)| f.timeline.is_some())
        .take(TOP_FLOWS)
        .collect();
    // The span the reports cover (a capture of 50 ms is drawn over 50 ms).
    let seconds = (timeline.buckets().len() as f64 * timeline.width_ms() as f64 / 1000.0).max(0.001);
    let low = minimum.iter().flatten().map(|p| p.1).fold(f64::INFINITY, f64::min).min(0.0);
    let high = maximum.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.05;
    let title = format!(
        "One-way latency over time ({} reports, {} flows)",
        overall.latency.count(),
        snapshot.ledger.flows.len()
    );
    let (mut chart, column) =
        time_chart(area, &title, (seconds, time_axis(snapshot)), (low, high, "latency, µs"))?;
    let grey = RGBColor(170, 170, 170);
    draw_runs(&mut chart, minimum, grey.into(), 0)?;
    draw_runs(&mut chart, maximum, grey.into(), 0)?;
    draw_runs(&mut chart, runs(&timeline, Bucket::mean), BLACK.stroke_width(2), 3)?;
    let mut entries: Vec<Entry> =
        vec![(grey, 1, "all flows: min and max".into()), (BLACK, 2, "all flows: mean".into())];
    for (i, (key, flow)) in flows.into_iter().enumerate() {
        let colour = colour(i);
        let series = runs(flow.timeline.as_ref().unwrap_or(&Timeline::default()), Bucket::mean);
        draw_runs(&mut chart, series, colour.into(), 2)?;
        entries.push((colour, 1, format!("{key}")));
    }
    legend(&column, &entries)
}

/// Each of the nodes with the most hops: its mean hop latency over time.
fn hop_latency_over_time(snapshot: &Snapshot, area: &Area<'_>) -> Result<(), Failure> {
    let mut nodes: Vec<_> =
        snapshot.hops.nodes.iter().filter(|(_, n)| n.timeline.is_some() && n.latency.count() > 0).collect();
    nodes.sort_by(|a, b| b.1.hops.cmp(&a.1.hops).then(a.0.cmp(b.0)));
    nodes.truncate(TOP_FLOWS);
    let series: Vec<(u32, Runs)> = nodes
        .iter()
        .map(|(id, node)| (**id, runs(node.timeline.as_ref().unwrap_or(&Timeline::default()), Bucket::mean)))
        .collect();
    let all = || series.iter().flat_map(|(_, runs)| runs.iter().flatten());
    let seconds = all().map(|p| p.0).fold(0.001, f64::max) * 1.05;
    let high = all().map(|p| p.1).fold(1.0, f64::max) * 1.05;
    let title = "Hop latency over time, the nodes with the most hops";
    let (mut chart, column) =
        time_chart(area, title, (seconds, time_axis(snapshot)), (0.0, high, "mean hop latency, µs"))?;
    let mut entries = Vec::new();
    for (i, (id, runs)) in series.into_iter().enumerate() {
        draw_runs(&mut chart, runs, colour(i).into(), 2)?;
        entries.push((colour(i), 1, format!("node {id}")));
    }
    legend(&column, &entries)
}

/// Series colours that read on white (Palette99 without its pale ones).
fn colour(i: usize) -> RGBColor {
    const COLOURS: [RGBColor; 5] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
    ];
    COLOURS.get(i % COLOURS.len()).copied().unwrap_or(BLACK)
}

fn loss_per_flow(snapshot: &Snapshot, area: &Area<'_>) -> Result<(), Failure> {
    let mut lossy: Vec<(&FlowKey, u64)> =
        snapshot.ledger.flows.iter().filter(|(_, f)| f.lost > 0).map(|(k, f)| (k, f.lost)).collect();
    lossy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    lossy.truncate(LOSSY_FLOWS);
    let rest = titled(area, &format!("Packets lost per flow ({} in all)", snapshot.ledger.overall.lost))?;
    if lossy.is_empty() {
        rest.draw(&Label::new((520, 150), "no packet lost", 20.0))?;
        return Ok(());
    }
    let names: Vec<String> = lossy.iter().map(|(key, _)| key.to_string()).collect();
    let name_width = names.iter().map(|n| label::width(n, 13.0)).max().unwrap_or(0) + 20;
    // i32: a count axis of plotters' own integer type.
    let count = |lost: u64| i32::try_from(lost).unwrap_or(i32::MAX);
    let most = lossy.first().map_or(1, |(_, lost)| count(*lost));
    let rows = lossy.len() as i32;
    let mut chart = ChartBuilder::on(&rest)
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(name_width as u32)
        .build_cartesian_2d(0..most.saturating_add(most / 10 + 1), (0..rows - 1).into_segmented())?;
    // Whole packets: integer ticks, at most one per packet.
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("packets lost")
        .x_labels((most as usize).saturating_add(1).min(10))
        // The names are drawn beside the bars (Label), not by plotters.
        .y_labels(lossy.len())
        .y_label_formatter(&|_| String::new())
        .draw()?;
    let red = RGBColor(200, 60, 50);
    chart.draw_series(lossy.iter().enumerate().map(|(i, (_, lost))| {
        let row = i as i32;
        let mut bar = Rectangle::new(
            [(0, SegmentValue::Exact(row)), (count(*lost), SegmentValue::Exact(row + 1))],
            red.filled(),
        );
        bar.set_margin(6, 6, 0, 0);
        bar
    }))?;
    let base = rest.get_base_pixel();
    for (i, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(0, SegmentValue::CenterOf(i as i32)));
        let at = (x - base.0 - label::width(name, 13.0) - 8, y - base.1 - 8);
        rest.draw(&Label::new(at, name.as_str(), 13.0))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stretch without reports is a gap: a report a second, then none
    /// for 4 s, then a report a second again: two lines, each point within
    /// a bucket's width of its report.
    #[test]
    fn a_gap_splits_the_line() {
        let mut timeline = Timeline::default();
        for second in [0u64, 1, 2, 3, 8, 9, 10, 11] {
            timeline.add_latency(second * 1000, 5_000);
        }
        let lines = runs(&timeline, Bucket::mean);
        assert_eq!(lines.len(), 2, "{lines:?}");
        let width = timeline.for_drawing().width_ms() as f64 / 1000.0;
        assert!((0.5..=2.0).contains(&width), "{width}");
        assert!(lines[0].iter().all(|p| p.0 < 4.0 + width) && lines[1].iter().all(|p| p.0 > 8.0 - width));
        assert!(lines.iter().flatten().all(|p| p.1 == 5.0), "µs");
    }

    /// A capture of 60 ms, a report every 100 µs: a line of 1 ms points,
    /// not one point.
    #[test]
    fn a_short_capture_has_a_shape() {
        let mut timeline = Timeline::default();
        for i in 0..600u64 {
            timeline.add_latency(i / 10, 1_000 + i as i64);
        }
        let lines = runs(&timeline, Bucket::mean);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), 60);
        assert!(lines[0].first().unwrap().1 < lines[0].last().unwrap().1, "it rises");
    }
}

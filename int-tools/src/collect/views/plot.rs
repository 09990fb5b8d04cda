//! `collect --plot FILE.png`: one picture of a run, drawn at exit (and every
//! `--plot-interval` while collect runs). Above, one-way latency over time:
//! the mean over all flows between its minimum and maximum, and the mean of
//! the most reported flows. Then, where INT 2.1 reports told of hops, the
//! mean hop latency over time of the nodes with the most hops (by name),
//! and each link's latency (p50 and p99). Below, the packets lost per flow,
//! the most lossy first (no panel where none was lost: the title says so).
//!
//! Time runs from the first report, by the reports' own times where they
//! state them (a recorded link replayed fast keeps its pace); a stretch
//! without reports is a gap in the line. Path changes are marked where they
//! happened, losses along the time axis. Values are drawn in the unit that
//! suits them (ns, µs, ms, s). Legends sit beside the data, a long flow on
//! two lines.

pub mod args;
mod label;

use std::path::Path;

use int_core::flow::FlowKey;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::collect::books::ledger::FlowSummary;
use crate::collect::books::snapshot::Snapshot;
use crate::collect::books::timeline::{Bucket, Timeline};
use crate::collect::names::Naming;
use label::Label;

/// Flows drawn one by one in each panel.
const TOP_FLOWS: usize = 5;
const LOSSY_FLOWS: usize = 10;
const TOP_LINKS: usize = 10;
/// A bar panel's height: its title and axis, and each row.
const BAR_PANEL: u32 = 110;
const BAR_ROW: u32 = 34;
const TIME_PANEL: u32 = 500;
/// Debian's fonts-dejavu-core: plotters draws text with a font it is given.
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const WIDTH: u32 = 1200;
/// The legend column at the right of the time panels.
const LEGEND: u32 = 330;
const TITLE: u32 = 40;

pub type Failure = Box<dyn std::error::Error + Send + Sync>;
type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
type Axes = Cartesian2d<RangedCoordf64, RangedCoordf64>;
type Chart<'a> = ChartContext<'a, BitMapBackend<'a>, Axes>;
/// A series over time: runs of (seconds, µs), a gap between runs.
type Runs = Vec<Vec<(f64, f64)>>;

/// A line of the legend: its colour, width and words.
type Entry = (RGBColor, u32, String);

/// Draws the picture into `path`, whole: it is written beside and renamed
/// into place, so that a viewer never reads half a picture.
pub fn draw(snapshot: &Snapshot, path: &Path, names: &Naming) -> Result<(), Failure> {
    load_font()?;
    let hops =
        snapshot.hops.nodes.values().any(|n| n.timeline.as_ref().is_some_and(|t| !t.buckets().is_empty()));
    let links = top_links(snapshot, names);
    let lossy = lossy_flows(snapshot);
    let bars = |rows: usize| if rows == 0 { 0 } else { BAR_PANEL + BAR_ROW * rows as u32 };
    let height =
        TIME_PANEL + if hops { TIME_PANEL } else { 0 } + bars(links.len() * 2) + bars(lossy.len()).max(10);
    let drawing = path.with_extension("drawing.png");
    {
        let root = BitMapBackend::new(&drawing, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (upper, mut lower) = root.split_vertically(TIME_PANEL);
        latency_over_time(snapshot, &upper)?;
        if hops {
            let (middle, rest) = lower.split_vertically(TIME_PANEL);
            hop_latency_over_time(snapshot, &middle, names)?;
            lower = rest;
        }
        if !links.is_empty() {
            let (middle, rest) = lower.split_vertically(bars(links.len() * 2));
            link_latency(&links, &middle)?;
            lower = rest;
        }
        if !lossy.is_empty() {
            loss_per_flow(snapshot, &lossy, &lower)?;
        }
        root.present()?;
    }
    std::fs::rename(&drawing, path)?;
    Ok(())
}

/// Registers the font once for the process's life, as plotters wants it
/// (a plot redrawn every interval must not leak it again).
fn load_font() -> Result<(), Failure> {
    static LOADED: std::sync::OnceLock<Result<(), FontError>> = std::sync::OnceLock::new();
    LOADED.get_or_init(register_font).clone().map_err(Failure::from)
}

/// Why the plot has no font (kept: every later plot says the same).
#[derive(Debug, Clone, thiserror::Error)]
pub enum FontError {
    #[error("{FONT}: {0} (install Debian's fonts-dejavu-core)")]
    Read(std::sync::Arc<std::io::Error>),
    #[error("{FONT}: not a font")]
    NotAFont,
}

fn register_font() -> Result<(), FontError> {
    let bytes = std::fs::read(FONT).map_err(|e| FontError::Read(std::sync::Arc::new(e)))?;
    // Registered once for the process's life, as plotters wants it.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| FontError::NotAFont)?;
    label::set_font(bytes).map_err(|_| FontError::NotAFont)?;
    Ok(())
}

/// A panel's title strip, then the rest.
fn titled<'a>(area: &Area<'a>, title: &str) -> Result<Area<'a>, Failure> {
    let (strip, rest) = area.split_vertically(TITLE);
    let x = (area.dim_in_pixel().0 as i32 - label::width(title, 22.0)) / 2;
    strip.draw(&Label::new((x.max(0), 10), title, 22.0))?;
    Ok(rest)
}

/// The legend, entry by entry, in its column; an entry's words too wide
/// for the column go on a second line (an IPv6 flow).
fn legend(area: &Area<'_>, entries: &[Entry]) -> Result<(), Failure> {
    let room = LEGEND as i32 - 50;
    let mut y = 20;
    for (colour, width, words) in entries {
        area.draw(&PathElement::new(vec![(10, y + 7), (34, y + 7)], colour.stroke_width(*width)))?;
        for line in wrap(words, room, 13.0) {
            area.draw(&Label { colour: BLACK, ..Label::new((42, y), line, 13.0) })?;
            y += 17;
        }
        y += 5;
    }
    Ok(())
}

/// `words` in lines of at most `room` pixels, broken at " -> " or spaces.
fn wrap(words: &str, room: i32, size: f32) -> Vec<String> {
    if label::width(words, size) <= room {
        return vec![words.to_string()];
    }
    let (first, second) = match words.split_once(" -> ") {
        Some((from, to)) => (from.to_string(), format!("-> {to}")),
        None => match words.rsplit_once(' ') {
            Some((head, tail)) => (head.to_string(), tail.to_string()),
            None => (words.to_string(), String::new()),
        },
    };
    [first, second].into_iter().filter(|line| !line.is_empty()).collect()
}

/// The unit values given in µs read best in: its name and its size in µs.
fn unit_for(largest_us: f64) -> (&'static str, f64) {
    match largest_us.abs() {
        v if v < 1.0 => ("ns", 0.001),
        v if v < 1_000.0 => ("µs", 1.0),
        v if v < 1_000_000.0 => ("ms", 1_000.0),
        _ => ("s", 1_000_000.0),
    }
}

/// Series in µs, in `per` µs.
fn in_unit(series: Runs, per: f64) -> Runs {
    series.into_iter().map(|run| run.into_iter().map(|(t, v)| (t, v / per)).collect()).collect()
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
    let decimals = if y.1 - y.0 >= 10.0 {
        0
    } else if y.1 - y.0 >= 1.0 {
        1
    } else {
        2
    };
    let tick = |v: &f64| format!("{v:.decimals$}");
    // Room for the widest tick label and the axis' name beside it.
    let widest = [y.0, y.1].iter().map(|v| label::width(&tick(v), 14.0)).max().unwrap_or(0);
    let mut chart = ChartBuilder::on(&data)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(widest as u32 + 45)
        .build_cartesian_2d(0.0..x.0, y.0..y.1)?;
    chart.configure_mesh().x_desc(x.1).y_desc(y.2).y_label_formatter(&tick).draw()?;
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
    let low_us = minimum.iter().flatten().map(|p| p.1).fold(f64::INFINITY, f64::min).min(0.0);
    let high_us = maximum.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let (unit, per) = unit_for(high_us.max(-low_us));
    let lost = overall.lost;
    let title = format!(
        "One-way latency over time ({} latency reports, {} flows; {})",
        overall.latency.count(),
        snapshot.ledger.flows.len(),
        if lost == 0 { "no packet lost".to_string() } else { format!("{lost} packets lost") }
    );
    let y = (low_us / per, (high_us / per).max(1.0) * 1.05, &*format!("latency, {unit}"));
    let (mut chart, column) = time_chart(area, &title, (seconds, time_axis(snapshot)), y)?;
    let grey = RGBColor(170, 170, 170);
    draw_runs(&mut chart, in_unit(minimum, per), grey.into(), 0)?;
    draw_runs(&mut chart, in_unit(maximum, per), grey.into(), 0)?;
    draw_runs(&mut chart, in_unit(runs(&timeline, Bucket::mean), per), BLACK.stroke_width(2), 3)?;
    let mut entries: Vec<Entry> =
        vec![(grey, 1, "all flows: min and max".into()), (BLACK, 2, "all flows: mean".into())];
    for (i, (key, flow)) in flows.into_iter().enumerate() {
        let colour = colour(i);
        let series = runs(flow.timeline.as_ref().unwrap_or(&Timeline::default()), Bucket::mean);
        draw_runs(&mut chart, in_unit(series, per), colour.into(), 2)?;
        entries.push((colour, 1, format!("{key}")));
    }
    entries.extend(events(&mut chart, snapshot, &timeline)?);
    legend(&column, &entries)
}

/// Marks where flows changed path (a dashed line each) and where packets
/// were lost (a red tick on the time axis), within the chart's time.
fn events(chart: &mut Chart<'_>, snapshot: &Snapshot, timeline: &Timeline) -> Result<Vec<Entry>, Failure> {
    let (x, y) = (chart.x_range(), chart.y_range());
    let mut entries = Vec::new();
    let purple = RGBColor(120, 40, 160);
    let changes: Vec<f64> =
        snapshot.hops.recent.iter().map(|c| c.at_ms as f64 / 1000.0).filter(|t| x.contains(t)).collect();
    for t in &changes {
        chart.draw_series(DashedLineSeries::new(
            [(*t, y.start), (*t, y.end)],
            6,
            4,
            purple.stroke_width(2),
        ))?;
    }
    if !changes.is_empty() {
        entries.push((purple, 2, format!("path change ({})", changes.len())));
    }
    let drawing = timeline.for_drawing();
    let width_s = drawing.width_ms() as f64 / 1000.0;
    let tick = (y.end - y.start) * 0.04;
    let red = RGBColor(200, 60, 50);
    let losses: Vec<f64> = drawing
        .buckets()
        .iter()
        .enumerate()
        .filter(|(_, bucket)| bucket.lost > 0)
        .map(|(i, _)| (i as f64 + 0.5) * width_s)
        .collect();
    for t in &losses {
        chart.draw_series(LineSeries::new([(*t, y.start), (*t, y.start + tick)], red.stroke_width(3)))?;
    }
    if !losses.is_empty() {
        entries.push((red, 3, "packets lost (tick on the time axis)".into()));
    }
    Ok(entries)
}

/// Each of the nodes with the most hops: its mean hop latency over time.
fn hop_latency_over_time(snapshot: &Snapshot, area: &Area<'_>, names: &Naming) -> Result<(), Failure> {
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
    let high_us = all().map(|p| p.1).fold(0.0, f64::max);
    let (unit, per) = unit_for(high_us);
    let title = "Hop latency over time, the nodes with the most hops";
    let y = (0.0, (high_us / per).max(1.0) * 1.05, &*format!("mean hop latency, {unit}"));
    let (mut chart, column) = time_chart(area, title, (seconds, time_axis(snapshot)), y)?;
    let mut entries = Vec::new();
    for (i, (id, runs)) in series.into_iter().enumerate() {
        draw_runs(&mut chart, in_unit(runs, per), colour(i).into(), 2)?;
        entries.push((colour(i), 1, format!("node {}", names.describe(id))));
    }
    let timeline = snapshot.ledger.overall.timeline.clone().unwrap_or_default();
    entries.extend(events(&mut chart, snapshot, &timeline)?);
    legend(&column, &entries)
}

/// The links with the most observations, by name, with their p50 and p99
/// (ns).
fn top_links(snapshot: &Snapshot, names: &Naming) -> Vec<(String, i64, i64)> {
    let mut links: Vec<_> = snapshot.hops.links.iter().filter(|(_, l)| l.count() > 0).collect();
    links.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then(a.0.cmp(b.0)));
    links
        .into_iter()
        .take(TOP_LINKS)
        .filter_map(|((from, to), latency)| {
            let name = format!("{} > {}", names.label(*from), names.label(*to));
            Some((name, latency.quantile(0.5)?, latency.quantile(0.99)?))
        })
        .collect()
}

/// Each link's latency: p50 and p99 bars, in the unit that suits them.
fn link_latency(links: &[(String, i64, i64)], area: &Area<'_>) -> Result<(), Failure> {
    let high_us = links.iter().map(|l| l.2.max(l.1) as f64 / 1000.0).fold(0.0, f64::max);
    let (unit, per) = unit_for(high_us);
    let rows: Vec<(String, f64, RGBColor)> = links
        .iter()
        .flat_map(|(name, p50, p99)| {
            [
                (format!("{name}  p50"), *p50 as f64 / 1000.0 / per, RGBColor(31, 119, 180)),
                (format!("{name}  p99"), *p99 as f64 / 1000.0 / per, RGBColor(255, 127, 14)),
            ]
        })
        .collect();
    let title = "Link latency, one hop's egress to the next one's ingress (the links with the most hops)";
    bars(area, title, &rows, &format!("latency, {unit}"))
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

/// The flows that lost packets, the most lossy first.
fn lossy_flows(snapshot: &Snapshot) -> Vec<(&FlowKey, u64)> {
    let mut lossy: Vec<(&FlowKey, u64)> =
        snapshot.ledger.flows.iter().filter(|(_, f)| f.lost > 0).map(|(k, f)| (k, f.lost)).collect();
    lossy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    lossy.truncate(LOSSY_FLOWS);
    lossy
}

fn loss_per_flow(snapshot: &Snapshot, lossy: &[(&FlowKey, u64)], area: &Area<'_>) -> Result<(), Failure> {
    let red = RGBColor(200, 60, 50);
    let rows: Vec<(String, f64, RGBColor)> =
        lossy.iter().map(|(key, lost)| (key.to_string(), *lost as f64, red)).collect();
    let title = format!("Packets lost per flow ({} in all)", snapshot.ledger.overall.lost);
    bars(area, &title, &rows, "packets lost")
}

/// A panel of horizontal bars, one a row, each named at its left.
fn bars(area: &Area<'_>, title: &str, rows: &[(String, f64, RGBColor)], x_desc: &str) -> Result<(), Failure> {
    let rest = titled(area, title)?;
    let name_width = rows.iter().map(|r| label::width(&r.0, 13.0)).max().unwrap_or(0) + 20;
    let most = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1.0);
    let count = rows.len() as i32;
    let mut chart = ChartBuilder::on(&rest)
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(name_width as u32)
        .build_cartesian_2d(0.0..most * 1.1, (0..count - 1).into_segmented())?;
    let whole = most >= 10.0 || rows.iter().all(|r| r.1.fract() == 0.0);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .x_desc(x_desc)
        .x_labels(if whole { (most as usize).saturating_add(1).min(10) } else { 10 })
        .x_label_formatter(&|v| if whole { format!("{v:.0}") } else { format!("{v:.2}") })
        // The names are drawn beside the bars (Label), not by plotters.
        .y_labels(rows.len())
        .y_label_formatter(&|_| String::new())
        .draw()?;
    // The first row on top.
    let row_of = |i: usize| count - 1 - i as i32;
    chart.draw_series(rows.iter().enumerate().map(|(i, (_, value, colour))| {
        let row = row_of(i);
        let mut bar = Rectangle::new(
            [(0.0, SegmentValue::Exact(row)), (*value, SegmentValue::Exact(row + 1))],
            colour.filled(),
        );
        bar.set_margin(6, 6, 0, 0);
        bar
    }))?;
    let base = rest.get_base_pixel();
    for (i, (name, _, _)) in rows.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(0.0, SegmentValue::CenterOf(row_of(i))));
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

    /// Values in the unit that suits them (issue 45: "20000000 µs").
    #[test]
    fn units_follow_the_data() {
        assert_eq!(unit_for(0.25).0, "ns");
        assert_eq!(unit_for(250.0).0, "µs");
        assert_eq!(unit_for(2_500.0).0, "ms");
        assert_eq!(unit_for(20_000_000.0), ("s", 1_000_000.0));
        let series = in_unit(vec![vec![(0.0, 20_000_000.0)]], unit_for(20_000_000.0).1);
        assert_eq!(series, vec![vec![(0.0, 20.0)]]);
    }

    /// An IPv6 flow too wide for the legend goes on two lines, each within
    /// the column; an IPv4 one stays on one.
    #[test]
    fn long_legends_wrap() {
        load_font().unwrap();
        let room = LEGEND as i32 - 50;
        let v6 = "udp [2001:db8:aaaa:bbbb::1]:40000 -> [2001:db8:cccc:dddd::2]:5001";
        let lines = wrap(v6, room, 13.0);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines.iter().all(|line| label::width(line, 13.0) <= room), "{lines:?}");
        assert_eq!(wrap("udp 10.0.0.1:1 -> 10.0.0.2:2", room, 13.0).len(), 1);
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

//! The page's chart of cost per day: an SVG with its axis, and the same figures as a table
//! for screen readers.

use std::collections::BTreeMap;

use maud::Markup;

use hooks_core::*;

use hooks_shapes::text::count;

/// The last 30 days' cost and runs per day (UTC): an SVG bar chart with a y-axis and each
/// day's figures on hover, and the same figures as a table for screen readers.
pub fn chart(runs: &[RunRecord], now: stamp::Timestamp) -> Markup {
    let today = now.date();
    let mut days: BTreeMap<time::Date, (f64, usize)> = BTreeMap::new();
    for i in 0..30 {
        days.insert(today - time::Duration::days(i), (0.0, 0));
    }
    for r in runs.iter().filter(|r| r.started()) {
        if let Some(d) = days.get_mut(&r.started_at.to_offset(time::UtcOffset::UTC).date()) {
            d.0 += r.outcome.cost_usd.unwrap_or(0.0);
            d.1 += 1;
        }
    }
    let max = days.values().map(|d| d.0).fold(0.0_f64, f64::max);
    let total: f64 = days.values().map(|d| d.0).sum();
    let n: usize = days.values().map(|d| d.1).sum();
    // The axis goes to a round figure at or above the dearest day.
    let top = nice_ceiling(max);
    maud::html! {
        h2 { "Last 30 days" }
        p.muted { (count(n, "run", "runs")) ", " (hooks_shapes::text::usd(total)) " in all (UTC days)" }
        // Drawn twice: wide for a desk, and narrow and tall for a phone, each near the
        // size it is shown at, so its bars and labels are not scaled down to specks.
        (bars(&days, top, max, Shape { id: "chart", width: 600.0, height: 120.0 }))
        (bars(&days, top, max, Shape { id: "chart-phone", width: 360.0, height: 200.0 }))
        // Hidden from sight in a box of its own: a table grows to its rows whatever
        // height it is given, and would leave its 30 rows' height of empty scroll.
        div.sr {
            table #chart-table {
                caption { "Cost and runs per day, last 30 days" }
                tr { th { "day" } th { "cost" } th { "runs" } }
                @for (day, (cost, runs)) in days.iter().rev() {
                    tr { td { (day) } td { (hooks_shapes::text::usd(*cost)) } td { (runs) } }
                }
            }
        }
    }
}

/// One drawing of the chart: its element id (the page's style shows one of them by the
/// screen's width), and its size in the picture's units.
struct Shape {
    id: &'static str,
    width: f64,
    height: f64,
}

/// The bars of `days` on an axis up to `top`, with the axis labels and each day's figures
/// on hover, drawn at `shape`'s size.
fn bars(days: &BTreeMap<time::Date, (f64, usize)>, top: f64, max: f64, shape: Shape) -> Markup {
    let Shape {
        id,
        width: w,
        height: h,
    } = shape;
    // `pad` above the top line keeps its label inside the picture.
    let (left, pad) = (74.0, 8.0);
    let bw = (w - left) / days.len().max(1) as f64;
    let ticks = [0.0, top / 2.0, top];
    let first = days.keys().next().copied();
    let last = days.keys().next_back().copied();
    maud::html! {
        svg id=(id) viewBox={ "0 " (-pad) " " (w) " " (h + 16.0 + pad) } width="100%" role="img"
            aria-label={ "cost per day over the last 30 days, up to " (hooks_shapes::text::usd(max)) } {
            @for t in ticks {
                @let y = h - if top > 0.0 { t / top * h } else { 0.0 };
                line x1=(left) x2=(w) y1=(y) y2=(y) stroke="#e3e6ea" {}
                text x=(left - 4.0) y=(y + 3.0) text-anchor="end" { (hooks_shapes::text::usd(t)) }
            }
            @for (i, (day, (cost, runs))) in days.iter().enumerate() {
                @let bh = if top > 0.0 { cost / top * h } else { 0.0 };
                rect x=(format!("{:.1}", left + i as f64 * bw + 1.0)) y=(format!("{:.1}", h - bh))
                    width=(format!("{:.1}", (bw - 2.0).max(1.0))) height=(format!("{bh:.1}")) fill="#4a78c2" {
                    title { (day) ": " (hooks_shapes::text::usd(*cost)) " over " (count(*runs, "run", "runs")) }
                }
            }
            @if let (Some(first), Some(last)) = (first, last) {
                text x=(left) y=(h + 13.0) { (first) }
                text x=(w) y=(h + 13.0) text-anchor="end" { (last) }
            }
        }
    }
}

/// The smallest of 1, 2 or 5 times a power of ten at or above `x` (0 for 0).
pub fn nice_ceiling(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 0.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v >= x * 0.999_999)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod chart_tests {
    use super::*;

    #[test]
    fn the_axis_tops_at_a_round_figure_and_plurals_agree() {
        for (x, want) in [
            (0.0, 0.0),
            (0.01, 0.01),
            (0.011, 0.02),
            (0.42, 0.5),
            (3.0, 5.0),
            (7.5, 10.0),
        ] {
            assert!(
                (nice_ceiling(x) - want).abs() < 1e-9,
                "{x} → {}",
                nice_ceiling(x)
            );
        }
    }
}

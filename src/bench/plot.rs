//! `--plot`: the latency distributions of toolrt and its two floors as CDFs on a log-µs axis.

use std::path::Path;

use plotters::prelude::*;

use super::stats::Dist;

/// Points per curve: enough for a smooth CDF, few enough for a small SVG.
const POINTS: usize = 400;

/// Writes an SVG of the cumulative distributions of `series` (label, distribution) to `path`.
pub(super) fn cdf_svg(path: &Path, title: &str, series: &[(&str, &Dist)]) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let all = series
        .iter()
        .flat_map(|(_, d)| [d.percentile_us(0.0), d.percentile_us(99.9)]);
    let (lo, hi) = all.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !(lo.is_finite() && hi > 0.0) {
        return Err(format!("cannot draw {}: no samples", path.display()));
    }
    // The x axis is log10(µs) on a linear scale, labelled in µs: plotters' own log axis only
    // labels powers of ten and multiples of them, which leaves sub-10 µs floors unlabelled.
    let lo = (lo * 0.8).max(0.01).log10();
    let hi = (hi * 1.25).max(0.1).log10().max(lo + 1.0);

    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(lo..hi, 0.0..1.0)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("latency per call (µs, log scale)")
        .x_labels(12)
        .x_label_formatter(&|x| us_label(10f64.powf(*x)))
        .light_line_style(WHITE.mix(0.0))
        .y_desc("fraction of calls at or below")
        .draw()
        .map_err(|e| fail(&e))?;
    let colors = [
        RGBColor(0, 114, 178),
        RGBColor(0, 158, 115),
        RGBColor(213, 94, 0),
        RGBColor(204, 121, 167),
    ];
    for (i, (label, dist)) in series.iter().enumerate() {
        let color = colors[i % colors.len()];
        chart
            .draw_series(LineSeries::new(cdf_points(dist), color.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label(format!("{label} (p50 {:.1} µs)", dist.p50_us()))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

/// A µs value with two significant digits, as an axis label.
fn us_label(us: f64) -> String {
    if us >= 10.0 {
        format!("{:.0}", us)
    } else if us >= 1.0 {
        format!("{:.1}", us)
    } else {
        format!("{:.2}", us)
    }
}

/// (log10 of latency µs, cumulative fraction) at [`POINTS`] evenly spaced ranks, up to p99.9 so one
/// outlier does not flatten the axis.
pub(super) fn cdf_points(dist: &Dist) -> Vec<(f64, f64)> {
    (1..=POINTS)
        .map(|i| {
            let q = i as f64 / POINTS as f64 * 99.9;
            (dist.percentile_us(q).max(0.001).log10(), q / 100.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_rises_and_draws() {
        let dist = Dist::new((1..=1_000).map(|n| n * 1_000).collect());
        let points = cdf_points(&dist);
        assert_eq!(points.len(), POINTS);
        assert!(
            points
                .windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1)
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cdf.svg");
        cdf_svg(&path, "test", &[("a", &dist), ("b", &dist)]).expect("drawn");
        let svg = std::fs::read_to_string(&path).expect("written");
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        let missing = dir.path().join("no/such/dir/cdf.svg");
        assert!(cdf_svg(&missing, "test", &[("a", &dist)]).is_err());
    }
}

//! The timeline as a small hand-written SVG line chart: admitted, held and sold over
//! time, with axes, a few ticks and a legend.

use std::fmt::Write;

use super::{RunReport, TimelinePoint};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 40.0;
const TICKS: u32 = 5;

/// A drawn series: name, colour, and the value it plots.
type Series = (&'static str, &'static str, fn(&TimelinePoint) -> u64);

/// The series drawn.
const SERIES: [Series; 3] = [
    ("admitted", "#1565c0", |p| p.admitted),
    ("held", "#ef6c00", |p| p.held),
    ("sold", "#2e7d32", |p| p.sold),
];

/// Escapes text for SVG content and attributes.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round number >= `v` for the top of the y axis (1, 2 or 5 times a power of ten).
fn nice_ceiling(v: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= v {
                return step.saturating_mul(m).max(1);
            }
        }
        step = step.saturating_mul(10);
    }
}

impl RunReport {
    /// The timeline as an SVG document (720 × 360): x is seconds since the start, y
    /// is fans (admitted) or seats (held, sold).
    pub fn to_svg(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_svg(&mut out);
        out
    }

    fn write_svg(&self, out: &mut String) -> std::fmt::Result {
        let points = &self.timeline;
        let t_max = points.iter().map(|p| p.t_ms).max().unwrap_or(0).max(1) as f64;
        let y_top = nice_ceiling(
            points
                .iter()
                .flat_map(|p| SERIES.iter().map(move |(_, _, f)| f(p)))
                .max()
                .unwrap_or(0),
        ) as f64;
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let x = |t: u64| LEFT + t as f64 / t_max * plot_w;
        let y = |v: u64| TOP + plot_h - v as f64 / y_top * plot_h;

        writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">"#
        )?;
        writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#)?;
        writeln!(
            out,
            r#"<text x="{LEFT}" y="20" font-size="14">On-sale {}: admitted, held and sold</text>"#,
            escape(&self.venue_name)
        )?;
        for i in 0..=TICKS {
            let v = y_top * f64::from(i) / f64::from(TICKS);
            let py = TOP + plot_h - plot_h * f64::from(i) / f64::from(TICKS);
            writeln!(
                out,
                r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e0e0e0"/>"##,
                LEFT + plot_w
            )?;
            writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0}</text>"#,
                LEFT - 6.0,
                py + 4.0
            )?;
            let t = t_max * f64::from(i) / f64::from(TICKS);
            let px = LEFT + plot_w * f64::from(i) / f64::from(TICKS);
            writeln!(
                out,
                r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{:.0} s</text>"#,
                TOP + plot_h + 16.0,
                t / 1_000.0
            )?;
        }
        writeln!(
            out,
            r##"<polyline points="{LEFT},{TOP} {LEFT},{:.1} {:.1},{:.1}" fill="none" stroke="#424242"/>"##,
            TOP + plot_h,
            LEFT + plot_w,
            TOP + plot_h
        )?;
        writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds since the start</text>"#,
            LEFT + plot_w / 2.0,
            HEIGHT - 6.0
        )?;
        writeln!(
            out,
            r#"<text x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})">fans (admitted), seats (held, sold)</text>"#,
            TOP + plot_h / 2.0,
            TOP + plot_h / 2.0
        )?;
        for (i, (name, colour, value)) in SERIES.iter().enumerate() {
            let path: Vec<String> = points
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(p.t_ms), y(value(p))))
                .collect();
            writeln!(
                out,
                r#"<polyline class="{name}" points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                path.join(" ")
            )?;
            let lx = LEFT + 10.0 + 90.0 * i as f64;
            writeln!(
                out,
                r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="3" fill="{colour}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
                TOP + 6.0,
                lx + 16.0,
                TOP + 10.0
            )?;
        }
        writeln!(out, "</svg>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::synthetic;

    #[test]
    fn svg_draws_three_series_and_escapes_text() {
        let svg = synthetic().to_svg();
        assert!(svg.starts_with("<svg "));
        assert!(svg.trim_end().ends_with("</svg>"));
        for name in ["admitted", "held", "sold"] {
            assert!(svg.contains(&format!(r#"class="{name}""#)), "{name}");
        }
        assert!(svg.contains("Test &lt;Arena&gt; &amp; Co"));
        assert!(svg.contains("seconds since the start"));
        // 21 samples per line.
        let sold = svg.lines().find(|l| l.contains(r#"class="sold""#)).unwrap();
        assert_eq!(sold.matches(',').count(), 21);
    }

    #[test]
    fn an_empty_timeline_still_renders() {
        let mut report = synthetic();
        report.timeline.clear();
        let svg = report.to_svg();
        assert!(svg.contains("</svg>"));
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_ceiling(0), 1);
        assert_eq!(nice_ceiling(7), 10);
        assert_eq!(nice_ceiling(450), 500);
        assert_eq!(nice_ceiling(1_001), 2_000);
    }
}

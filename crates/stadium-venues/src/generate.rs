//! A generated stadium bowl for demos and benchmarks.
//!
//! Geometry, in metres with the centre spot at the origin: a 105 × 68 m pitch, a lower
//! and an upper tier of sections around it on ellipses that grow outward by 0.8 m per
//! row (seats 0.5 m wide, 10 % of each arc left for the aisles between sections). Rows
//! grow longer toward the back and are longer on the sides than behind the goals. Rows
//! are added ring by ring until the bowl holds at least the requested seats, then the
//! surplus is taken from the back rows, so the total is exact. Categories go by distance
//! to the centre spot: the nearest 10 % of seats are `Category 1`, the next 25 %
//! `Category 2`, the next 35 % `Category 3`, the rest `Category 4`.

use std::f64::consts::TAU;

use crate::error::{ImportError, Issues, Problem};
use crate::plan::{Category, PlanRow, PlanSeat, PlanSection, VenuePlan, focus};

/// Parameters of [`generate_stadium`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StadiumParams {
    /// Seats in the bowl, exactly; 1,000 to 500,000.
    pub total_seats: u32,
    /// Sections around the bowl (60 % lower tier, 40 % upper); 4 to 400.
    pub sections: u32,
}

impl Default for StadiumParams {
    /// A 50,000-seat bowl of 100 sections.
    fn default() -> Self {
        Self {
            total_seats: 50_000,
            sections: 100,
        }
    }
}

const SEAT_WIDTH: f64 = 0.5;
const ROW_DEPTH: f64 = 0.8;
const USABLE_ARC: f64 = 0.9;
const CATEGORY_SHARES: [f64; 3] = [0.10, 0.35, 0.70];
const COLORS: [&str; 4] = ["#b71c1c", "#e65100", "#1565c0", "#2e7d32"];

struct Wedge {
    tier: usize,
    start: f64,
    end: f64,
}

fn ellipse(offset: f64, angle: f64) -> (f64, f64) {
    let a = 52.5 + 10.0 + offset;
    let b = 34.0 + 10.0 + offset;
    (a * angle.cos(), b * angle.sin())
}

fn arc_length(offset: f64, start: f64, end: f64) -> f64 {
    const STEPS: usize = 32;
    let step = (end - start) / STEPS as f64;
    (0..STEPS)
        .map(|i| {
            let p = ellipse(offset, start + step * i as f64);
            let q = ellipse(offset, start + step * (i + 1) as f64);
            (p.0 - q.0).hypot(p.1 - q.1)
        })
        .sum()
}

/// Generates a stadium bowl (see the module documentation for the geometry).
///
/// Errors: [`ImportError::Invalid`] naming `total_seats` or `sections` when out of range.
pub fn generate_stadium(params: StadiumParams) -> Result<VenuePlan, ImportError> {
    let mut issues = Issues::default();
    if !(1_000..=500_000).contains(&params.total_seats) {
        issues.push(
            "total_seats",
            Problem::OutOfRange {
                min: 1_000,
                max: 500_000,
            },
        );
    }
    if !(4..=400).contains(&params.sections) {
        issues.push("sections", Problem::OutOfRange { min: 4, max: 400 });
    }
    issues.into_result(())?;
    let lower = ((f64::from(params.sections) * 0.6).round() as usize).max(2);
    let upper = params.sections as usize - lower;
    let mut wedges = Vec::new();
    for (tier, count) in [(0, lower), (1, upper)] {
        for k in 0..count {
            let width = TAU / count as f64;
            // Start half a wedge before the side line so section 1 of each tier faces the pitch centre.
            let start = -std::f64::consts::FRAC_PI_2 - width / 2.0 + width * k as f64;
            wedges.push(Wedge {
                tier,
                start,
                end: start + width,
            });
        }
    }
    let seats_in = |tier_rows: [usize; 2], tier: usize, row: usize, wedge: &Wedge| -> usize {
        let offset = if tier == 0 {
            row as f64 * ROW_DEPTH
        } else {
            (tier_rows[0] as f64 + 4.0 + row as f64) * ROW_DEPTH
        };
        ((arc_length(offset, wedge.start, wedge.end) * USABLE_ARC / SEAT_WIDTH).floor() as usize)
            .max(1)
    };
    let capacity = |tier_rows: [usize; 2]| -> usize {
        wedges
            .iter()
            .map(|w| {
                (0..tier_rows[w.tier])
                    .map(|r| seats_in(tier_rows, w.tier, r, w))
                    .sum::<usize>()
            })
            .sum()
    };
    let target = params.total_seats as usize;
    let mut tier_rows = [1usize, usize::from(upper > 0)];
    let mut turn = 0;
    while capacity(tier_rows) < target {
        if upper > 0 {
            tier_rows[turn] += 1;
            turn = 1 - turn;
        } else {
            tier_rows[0] += 1;
        }
    }
    // Seats per row per wedge, then the surplus off the back rows round-robin.
    let mut lengths: Vec<Vec<usize>> = wedges
        .iter()
        .map(|w| {
            (0..tier_rows[w.tier])
                .map(|r| seats_in(tier_rows, w.tier, r, w))
                .collect()
        })
        .collect();
    let mut surplus = capacity(tier_rows) - target;
    let mut k = 0;
    let wedge_count = lengths.len();
    while surplus > 0 {
        let rows = &mut lengths[k % wedge_count];
        if let Some(last) = rows.last_mut() {
            *last -= 1;
            surplus -= 1;
            if *last == 0 {
                rows.pop();
            }
        }
        k += 1;
    }
    let mut sections = Vec::with_capacity(wedges.len());
    let mut distances = Vec::with_capacity(target);
    for (w, wedge) in wedges.iter().enumerate() {
        let number = if wedge.tier == 0 {
            101 + w
        } else {
            201 + w - lower
        };
        let mut rows = Vec::new();
        for (r, &n) in lengths[w].iter().enumerate() {
            let offset = if wedge.tier == 0 {
                r as f64 * ROW_DEPTH
            } else {
                (tier_rows[0] as f64 + 4.0 + r as f64) * ROW_DEPTH
            };
            let margin = (wedge.end - wedge.start) * (1.0 - USABLE_ARC) / 2.0;
            let span = wedge.end - wedge.start - 2.0 * margin;
            let seats = (0..n)
                .map(|s| {
                    let angle = wedge.start + margin + span * (s as f64 + 0.5) / n as f64;
                    let (x, y) = ellipse(offset, angle);
                    distances.push(x.hypot(y));
                    PlanSeat {
                        label: (s + 1).to_string(),
                        seat_index: s as u32,
                        x,
                        y,
                        category: String::new(),
                        accessible: false,
                        source_guid: None,
                        source_place: format!("sections[{w}].rows[{r}].seats[{s}]"),
                    }
                })
                .collect();
            rows.push(PlanRow {
                label: (r + 1).to_string(),
                seats,
            });
        }
        let (focus_x, focus_y) = focus(&rows);
        let tier = if wedge.tier == 0 { "Lower" } else { "Upper" };
        sections.push(PlanSection {
            code: number.to_string(),
            name: format!("{tier} {number}"),
            focus_x,
            focus_y,
            rows,
        });
    }
    let mut sorted = distances.clone();
    sorted.sort_by(f64::total_cmp);
    let thresholds: Vec<f64> = CATEGORY_SHARES
        .iter()
        .map(|share| sorted[((sorted.len() as f64 * share) as usize).min(sorted.len() - 1)])
        .collect();
    for seat in sections
        .iter_mut()
        .flat_map(|s| &mut s.rows)
        .flat_map(|r| &mut r.seats)
    {
        let d = seat.x.hypot(seat.y);
        let level = thresholds.iter().filter(|t| d >= **t).count();
        seat.category = format!("Category {}", level + 1);
    }
    let categories = (0..4)
        .map(|i| Category {
            code: format!("Category {}", i + 1),
            name: format!("Category {}", i + 1),
            color: COLORS[i].to_owned(),
        })
        .collect();
    Ok(VenuePlan {
        name: format!("Generated stadium ({} seats)", params.total_seats),
        categories,
        sections,
        warnings: Vec::new(),
    })
}

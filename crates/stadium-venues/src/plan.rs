//! The in-memory venue plan every source produces, and the assembly step shared by the
//! parsers: splitting zones into sections, marking aisles, checking seat places.

use std::collections::HashMap;

use crate::error::{ImportError, Issues, Problem};

/// Where a plan came from (`catalog.venues.source_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// pretix seating-plan JSON.
    PretixJson,
    /// CSV manifest `section,row,seat,category[,x,y]`.
    CsvManifest,
    /// seats.io chart JSON (zones, sections, rows, seats).
    SeatsioJson,
    /// Made by [`crate::generate_stadium`].
    Generated,
}

impl SourceFormat {
    /// The database spelling: `pretix_json`, `csv_manifest`, `seatsio_json` or
    /// `generated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PretixJson => "pretix_json",
            Self::CsvManifest => "csv_manifest",
            Self::SeatsioJson => "seatsio_json",
            Self::Generated => "generated",
        }
    }

    /// Parses the database spelling; `None` for anything else.
    pub fn from_db(s: &str) -> Option<Self> {
        match s {
            "pretix_json" => Some(Self::PretixJson),
            "csv_manifest" => Some(Self::CsvManifest),
            "seatsio_json" => Some(Self::SeatsioJson),
            "generated" => Some(Self::Generated),
            _ => None,
        }
    }
}

/// A price category of the venue (prices are set per event by the box office).
#[derive(Debug, Clone, PartialEq)]
pub struct Category {
    /// Code seats refer to; the plan's category name, verbatim.
    pub code: String,
    /// Display name.
    pub name: String,
    /// Display colour, e.g. `#7f4a91`.
    pub color: String,
}

/// One seat of a row.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSeat {
    /// Seat label shown to fans.
    pub label: String,
    /// Order in the row from 0; consecutive seats differ by 1, by 2 across an aisle (a
    /// step more than 1.5 times the row's median seat spacing).
    pub seat_index: u32,
    /// Absolute position on the plan, plan units.
    pub x: f64,
    /// Absolute position on the plan, plan units.
    pub y: f64,
    /// Category code.
    pub category: String,
    /// Fit for a wheelchair user (seats.io `accessible`, on the seat or its category).
    pub accessible: bool,
    /// The plan's own seat id (pretix `seat_guid`, seats.io `uuid`); not unique in real
    /// plans.
    pub source_guid: Option<String>,
    /// Where the seat came from: JSON path or CSV line.
    pub source_place: String,
}

/// One row of a section, seats in plan order.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRow {
    /// Row label shown to fans.
    pub label: String,
    /// Seats in order.
    pub seats: Vec<PlanSeat>,
}

/// A section: the unit of claiming and of availability.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSection {
    /// Code unique within the venue, 1 to 100 characters.
    pub code: String,
    /// Display name.
    pub name: String,
    /// Best-view point: the centre of the row a third of the way back (plan units).
    pub focus_x: f64,
    /// Best-view point, plan units.
    pub focus_y: f64,
    /// Rows front to back.
    pub rows: Vec<PlanRow>,
}

impl PlanSection {
    /// Seats in the section.
    pub fn seat_count(&self) -> usize {
        self.rows.iter().map(|r| r.seats.len()).sum()
    }
}

/// Something accepted but worth a look, e.g. a repeated `seat_guid`.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportWarning {
    /// The first place concerned.
    pub place: String,
    /// What was noticed and what the import did about it.
    pub message: String,
}

/// A venue ready to store: sections in order, each with rows and seats in order.
#[derive(Debug, Clone, PartialEq)]
pub struct VenuePlan {
    /// The plan's own name (the import may store another).
    pub name: String,
    /// Categories in plan order.
    pub categories: Vec<Category>,
    /// Sections in plan order.
    pub sections: Vec<PlanSection>,
    /// Warnings found while reading.
    pub warnings: Vec<ImportWarning>,
}

impl VenuePlan {
    /// Seats in the plan.
    pub fn seat_count(&self) -> usize {
        self.sections.iter().map(PlanSection::seat_count).sum()
    }
}

pub(crate) const MAX_LABEL: usize = 100;

pub(crate) struct RawSeat {
    pub place: String,
    pub label: String,
    pub guid: Option<String>,
    pub x: f64,
    pub y: f64,
    pub category: String,
    pub accessible: bool,
}

pub(crate) struct RawRow {
    pub label: String,
    pub origin: (f64, f64),
    pub seats: Vec<RawSeat>,
}

/// A zone (pretix), a named section (CSV), or a section or the loose rows of one
/// `sectionLabel` (seats.io).
pub(crate) struct RawGroup {
    pub code: String,
    pub name: String,
    pub rows: Vec<RawRow>,
    /// Whether to split the rows into blocks (zones may hold several stands).
    pub split: bool,
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

fn dist(a: (f64, f64), b: (f64, f64)) -> f64 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

fn blocks(rows: Vec<RawRow>) -> Vec<Vec<RawRow>> {
    let spacing = median(
        rows.windows(2)
            .map(|w| dist(w[0].origin, w[1].origin))
            .collect(),
    );
    let mut out: Vec<Vec<RawRow>> = Vec::new();
    for row in rows {
        let start_new = match out.last() {
            None => true,
            Some(block) => {
                let previous = &block[block.len() - 1];
                block.iter().any(|r| r.label == row.label)
                    || spacing
                        .is_some_and(|s| s > 0.0 && dist(previous.origin, row.origin) > 2.0 * s)
            }
        };
        if start_new {
            out.push(Vec::new());
        }
        if let Some(block) = out.last_mut() {
            block.push(row);
        }
    }
    out
}

fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

fn row_seats(raw: Vec<RawSeat>) -> Vec<PlanSeat> {
    let spacing = median(
        raw.windows(2)
            .map(|w| dist((w[0].x, w[0].y), (w[1].x, w[1].y)))
            .collect(),
    );
    let mut index = 0u32;
    let mut out: Vec<PlanSeat> = Vec::with_capacity(raw.len());
    for seat in raw {
        if let Some(prev) = out.last() {
            let aisle = spacing
                .is_some_and(|s| s > 0.0 && dist((prev.x, prev.y), (seat.x, seat.y)) > 1.5 * s);
            index += if aisle { 2 } else { 1 };
        }
        out.push(PlanSeat {
            label: seat.label,
            seat_index: index,
            x: seat.x,
            y: seat.y,
            category: seat.category,
            accessible: seat.accessible,
            source_guid: seat.guid,
            source_place: seat.place,
        });
    }
    out
}

pub(crate) fn focus(rows: &[PlanRow]) -> (f64, f64) {
    let row = &rows[rows.len() / 3];
    let n = row.seats.len().max(1) as f64;
    let (sx, sy) = row
        .seats
        .iter()
        .fold((0.0, 0.0), |(x, y), s| (x + s.x, y + s.y));
    (sx / n, sy / n)
}

/// Turns parsed groups into sections, checks seat places, and reports repeated guids
/// (`guid_field` names the source's field, e.g. `seat_guid`).
pub(crate) fn assemble(
    name: String,
    categories: Vec<Category>,
    groups: Vec<RawGroup>,
    mut issues: Issues,
    guid_field: &str,
) -> Result<VenuePlan, ImportError> {
    let mut sections: Vec<PlanSection> = Vec::new();
    let mut codes: HashMap<String, usize> = HashMap::new();
    for group in groups {
        let rows: Vec<RawRow> = group
            .rows
            .into_iter()
            .filter(|r| !r.seats.is_empty())
            .collect();
        let parts = if group.split {
            blocks(rows)
        } else {
            vec![rows]
        };
        let numbered = parts.len() > 1;
        for (n, part) in parts.into_iter().enumerate() {
            if part.is_empty() {
                continue;
            }
            let (mut code, name) = if numbered {
                (
                    format!("{} {}", group.code, n + 1),
                    format!("{} {}", group.name, n + 1),
                )
            } else {
                (group.code.clone(), group.name.clone())
            };
            code = truncate(&code, MAX_LABEL);
            // Two zones may share a name; the catalog needs distinct codes per venue.
            let seen = codes.entry(code.clone()).or_insert(0);
            *seen += 1;
            if *seen > 1 {
                code = format!("{} ({})", truncate(&code, MAX_LABEL - 8), seen);
            }
            let rows: Vec<PlanRow> = part
                .into_iter()
                .map(|r| PlanRow {
                    label: r.label,
                    seats: row_seats(r.seats),
                })
                .collect();
            let (focus_x, focus_y) = focus(&rows);
            sections.push(PlanSection {
                code,
                name,
                focus_x,
                focus_y,
                rows,
            });
        }
    }
    for section in &sections {
        let mut places: HashMap<(&str, &str), &str> = HashMap::new();
        for row in &section.rows {
            for seat in &row.seats {
                if let Some(first) = places.insert((&row.label, &seat.label), &seat.source_place) {
                    issues.push(
                        seat.source_place.clone(),
                        Problem::RepeatedSeat {
                            section: section.code.clone(),
                            row: row.label.clone(),
                            seat: seat.label.clone(),
                            first: first.to_owned(),
                        },
                    );
                    places.insert((&row.label, &seat.label), first);
                }
            }
        }
    }
    if sections.is_empty() && issues.0.is_empty() {
        issues.push("plan", Problem::NoSeats);
    }
    let warnings = repeated_guids(&sections, guid_field);
    issues.into_result(VenuePlan {
        name,
        categories,
        sections,
        warnings,
    })
}

fn repeated_guids(sections: &[PlanSection], guid_field: &str) -> Vec<ImportWarning> {
    let mut order: Vec<&str> = Vec::new();
    let mut places: HashMap<&str, Vec<&str>> = HashMap::new();
    for seat in sections.iter().flat_map(|s| &s.rows).flat_map(|r| &r.seats) {
        if let Some(guid) = &seat.source_guid {
            let entry = places.entry(guid).or_default();
            if entry.is_empty() {
                order.push(guid);
            }
            entry.push(&seat.source_place);
        }
    }
    order
        .into_iter()
        .filter_map(|guid| {
            let at = &places[guid];
            (at.len() > 1).then(|| ImportWarning {
                place: at[0].to_owned(),
                message: format!(
                    "{guid_field} {guid:?} is used by {} seats ({}); each is imported as its own seat",
                    at.len(),
                    at.join(", ")
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::SourceFormat;

    #[test]
    fn source_formats_round_trip() {
        for f in [
            SourceFormat::PretixJson,
            SourceFormat::CsvManifest,
            SourceFormat::SeatsioJson,
            SourceFormat::Generated,
        ] {
            assert_eq!(SourceFormat::from_db(f.as_str()), Some(f));
        }
        assert_eq!(SourceFormat::from_db("json"), None);
    }
}

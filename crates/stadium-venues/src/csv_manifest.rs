//! CSV manifest: a header `section,row,seat,category` optionally followed by `,x,y`,
//! then one seat per line. Sections, rows and categories appear in order of first
//! appearance; seats keep file order. Without `x,y` each seat is placed on a grid (seat
//! ordinal across, row ordinal down, in seat widths) so distances still rank seats.

use std::collections::HashMap;

use crate::error::{ImportError, Issues, Problem};
use crate::plan::{Category, MAX_LABEL, RawGroup, RawRow, RawSeat, VenuePlan, assemble};

/// Colours given to CSV categories in order of first appearance (a CSV has none).
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

const FIELDS: [&str; 6] = ["section", "row", "seat", "category", "x", "y"];

/// Parses a CSV manifest named `name`.
///
/// Errors: [`ImportError::Syntax`] when the bytes are not UTF-8 CSV;
/// [`ImportError::Invalid`] listing each issue by line and field (bad header, wrong
/// field count, empty label, bad coordinate, repeated seat, no seats).
pub fn parse_csv(name: &str, bytes: &[u8]) -> Result<VenuePlan, ImportError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let syntax = |e: csv::Error| {
        let line = e.position().map_or(0, |p| p.line() as usize);
        ImportError::Syntax {
            line,
            column: 0,
            message: e.to_string(),
        }
    };
    let header = reader.headers().map_err(syntax)?.clone();
    let mut issues = Issues::default();
    let names: Vec<String> = header.iter().map(|h| h.to_ascii_lowercase()).collect();
    let with_xy = if names == FIELDS[..4] {
        false
    } else if names == FIELDS[..] {
        true
    } else {
        issues.push(
            "line 1",
            Problem::BadHeader {
                found: header.iter().collect::<Vec<_>>().join(","),
            },
        );
        return Err(ImportError::Invalid { issues: issues.0 });
    };
    let expected = if with_xy { 6 } else { 4 };

    let mut groups: Vec<RawGroup> = Vec::new();
    let mut group_at: HashMap<String, usize> = HashMap::new();
    let mut row_at: HashMap<(usize, String), usize> = HashMap::new();
    let mut categories: Vec<Category> = Vec::new();
    let mut category_at: HashMap<String, ()> = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(syntax)?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != expected {
            issues.push(
                format!("line {line}"),
                Problem::FieldCount {
                    expected,
                    found: record.len(),
                },
            );
            continue;
        }
        let mut labels = [""; 4];
        let mut ok = true;
        for (i, label) in labels.iter_mut().enumerate() {
            *label = &record[i];
            if label.is_empty() || label.chars().count() > MAX_LABEL {
                issues.push(
                    format!("line {line}, field {}", FIELDS[i]),
                    Problem::BadLength { max: MAX_LABEL },
                );
                ok = false;
            }
        }
        let mut xy = [None, None];
        if with_xy {
            for (i, slot) in xy.iter_mut().enumerate() {
                let place = format!("line {line}, field {}", FIELDS[4 + i]);
                match record[4 + i].parse::<f64>() {
                    Ok(v) if v.is_finite() => *slot = Some(v),
                    Ok(_) => {
                        issues.push(place, Problem::NotFinite);
                        ok = false;
                    }
                    Err(_) => {
                        issues.push(
                            place,
                            Problem::WrongType {
                                expected: "a number",
                            },
                        );
                        ok = false;
                    }
                }
            }
        }
        if !ok {
            continue;
        }
        let [section, row, seat, category] = labels;
        if category_at.insert(category.to_owned(), ()).is_none() {
            categories.push(Category {
                code: category.to_owned(),
                name: category.to_owned(),
                color: PALETTE[categories.len() % PALETTE.len()].to_owned(),
            });
        }
        let g = *group_at.entry(section.to_owned()).or_insert_with(|| {
            groups.push(RawGroup {
                code: section.to_owned(),
                name: section.to_owned(),
                rows: Vec::new(),
                split: false,
            });
            groups.len() - 1
        });
        let rows = &mut groups[g].rows;
        let r = *row_at.entry((g, row.to_owned())).or_insert_with(|| {
            rows.push(RawRow {
                label: row.to_owned(),
                origin: (0.0, rows.len() as f64),
                seats: Vec::new(),
            });
            rows.len() - 1
        });
        let target = &mut rows[r];
        let (x, y) = match xy {
            [Some(x), Some(y)] => (x, y),
            _ => (target.seats.len() as f64, r as f64),
        };
        target.seats.push(RawSeat {
            place: format!("line {line}"),
            label: seat.to_owned(),
            guid: None,
            x,
            y,
            category: category.to_owned(),
            accessible: false,
        });
    }
    assemble(name.to_owned(), categories, groups, issues, "guid")
}

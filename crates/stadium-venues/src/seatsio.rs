//! seats.io chart JSON (the chart drawing as the seats.io designer saves it):
//! `{name, categories: {list: [{key, label, color, accessible}]}, zones: {list: [{key,
//! label}]}, subChart: {sections: [{label, zone, categoryKey, topLeft, subChart: {rows}}],
//! rows: [{label, sectionLabel, seats: [{label, x, y, categoryKey, accessible, uuid}]}],
//! tables, booths, generalAdmissionAreas}}`.
//!
//! What becomes of each element:
//! - A category becomes a venue category coded by its `key` (seats.io's stable id; the
//!   `label` is the display name, `color` the colour). Repeated keys are refused.
//! - A section becomes one section coded by its `label`; its zone's label, when it has a
//!   zone, is added to the name (`Goal Stand 4 (Finish Line)`); a zone key the chart does
//!   not define is refused. Zones themselves are not stored: the venue model has no level
//!   above sections.
//! - Rows and seats keep their labels and order. Seat positions in a section's subChart
//!   are relative to the section's `topLeft` and are stored absolute.
//! - A seat's category is the first of: the seat's, its row's, its section's
//!   (`categoryKey`, else `categoryLabel`). A seat without one is refused.
//! - A seat is accessible when it says so (`accessible`) or its category does; seats.io's
//!   other seat flags (companion, semi-ambulatory, restricted view) are not kept.
//! - Rows drawn outside any section (charts without sections) are grouped by their
//!   `sectionLabel`, one section each; rows without one form the section `Main`, split
//!   into blocks of rows like a pretix zone (see the crate documentation).
//! - Tables, booths and general admission areas are skipped with an [`ImportWarning`]
//!   naming their path and count: the venue model sells numbered seats in rows. Texts,
//!   shapes, icons and images are decoration and ignored.
//!
//! Problems are reported by JSON path from the root `$`, e.g.
//! `$.subChart.sections[2].subChart.rows[5].seats[3].label`.

mod categories;

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::{ImportError, Issues, Problem};
use crate::json::{self, array, flag, label, list, number, object, required};
use crate::plan::{ImportWarning, RawGroup, RawRow, RawSeat, VenuePlan, assemble};
use categories::Categories;

/// Parses a seats.io chart: sections, rows and seats with absolute positions,
/// categories by key, accessible seats; tables, booths and general admission areas are
/// skipped with a warning (the full mapping is documented at the top of `src/seatsio.rs`).
///
/// Errors: [`ImportError::Syntax`] for malformed JSON; [`ImportError::Invalid`] listing
/// every issue (up to 100) with its JSON path from `$`, in document order: missing or
/// mistyped field, unknown or repeated category, unknown zone, seat without a category,
/// repeated seat place, no seats.
pub fn parse_seatsio(bytes: &[u8]) -> Result<VenuePlan, ImportError> {
    let root = json::document(bytes)?;
    let mut issues = Issues::default();
    let Some(root) = object(&root, "$", &mut issues) else {
        return Err(ImportError::Invalid { issues: issues.0 });
    };
    let name = match root.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        _ => String::from("Unnamed chart"),
    };
    let categories = Categories::read(root, &mut issues);
    let zones = zones(root, &mut issues);
    let mut warnings = Vec::new();
    let mut groups = Vec::new();
    if let Some(chart) = required(root, "subChart", "$", &mut issues)
        .and_then(|v| object(v, "$.subChart", &mut issues))
    {
        let reader = Reader {
            categories: &categories,
        };
        skipped(chart, "$.subChart", &mut warnings, &mut issues);
        for (i, value) in list(chart, "sections", "$.subChart", &mut issues)
            .iter()
            .enumerate()
        {
            let place = format!("$.subChart.sections[{i}]");
            if let Some(group) = reader.section(value, &place, &zones, &mut warnings, &mut issues) {
                groups.push(group);
            }
        }
        let rows = list(chart, "rows", "$.subChart", &mut issues);
        groups.extend(reader.loose_rows(rows, &mut issues));
    }
    let mut plan = assemble(name, categories.list, groups, issues, "uuid")?;
    warnings.append(&mut plan.warnings);
    plan.warnings = warnings;
    Ok(plan)
}

/// Zone key → label (`zones` is optional: charts without zones have none).
fn zones(root: &Map<String, Value>, issues: &mut Issues) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Some(zones) = root.get("zones").filter(|v| !v.is_null()) else {
        return out;
    };
    let Some(zones) = object(zones, "$.zones", issues) else {
        return out;
    };
    for (i, value) in list(zones, "list", "$.zones", issues).iter().enumerate() {
        let place = format!("$.zones.list[{i}]");
        let Some(obj) = object(value, &place, issues) else {
            continue;
        };
        let Some(key) = required(obj, "key", &place, issues)
            .and_then(|v| label(v, &format!("{place}.key"), issues))
        else {
            continue;
        };
        let name = match obj.get("label") {
            None | Some(Value::Null) => Some(key.clone()),
            Some(v) => label(v, &format!("{place}.label"), issues),
        };
        if let Some(name) = name {
            out.entry(key).or_insert(name);
        }
    }
    out
}

/// Records a warning for each non-empty list of objects the venue model cannot hold.
fn skipped(
    chart: &Map<String, Value>,
    place: &str,
    warnings: &mut Vec<ImportWarning>,
    issues: &mut Issues,
) {
    for (key, what) in [
        ("tables", "tables"),
        ("booths", "booths"),
        ("generalAdmissionAreas", "general admission areas"),
    ] {
        let found = list(chart, key, place, issues);
        if found.is_empty() {
            continue;
        }
        let seats: usize = found
            .iter()
            .filter_map(|t| t.get("seats").and_then(Value::as_array))
            .map(Vec::len)
            .sum();
        let with_seats = if seats > 0 {
            format!(" with {seats} seats")
        } else {
            String::new()
        };
        warnings.push(ImportWarning {
            place: format!("{place}.{key}"),
            message: format!(
                "{} {what}{with_seats} not imported: the venue sells numbered seats in rows only",
                found.len()
            ),
        });
    }
}

struct Reader<'a> {
    categories: &'a Categories,
}

impl Reader<'_> {
    fn section(
        &self,
        value: &Value,
        place: &str,
        zones: &HashMap<String, String>,
        warnings: &mut Vec<ImportWarning>,
        issues: &mut Issues,
    ) -> Option<RawGroup> {
        let obj = object(value, place, issues)?;
        let code = required(obj, "label", place, issues)
            .and_then(|v| label(v, &format!("{place}.label"), issues));
        let zone = match obj.get("zone") {
            None | Some(Value::Null) => Some(None),
            Some(v) => label(v, &format!("{place}.zone"), issues).and_then(|key| {
                let name = zones.get(&key).cloned();
                if name.is_none() {
                    issues.push(format!("{place}.zone"), Problem::UnknownZone { key });
                }
                name.map(Some)
            }),
        };
        let category = self.categories.named(obj, place, issues);
        let top_left = required(obj, "topLeft", place, issues).and_then(|v| {
            let at = format!("{place}.topLeft");
            let point = object(v, &at, issues)?;
            let x = number(point, "x", &at, issues);
            let y = number(point, "y", &at, issues);
            Some((x?, y?))
        });
        let chart_place = format!("{place}.subChart");
        let chart =
            required(obj, "subChart", place, issues).and_then(|v| object(v, &chart_place, issues));
        let (code, zone, top_left, chart) = (code?, zone?, top_left?, chart?);
        skipped(chart, &chart_place, warnings, issues);
        let rows = list(chart, "rows", &chart_place, issues)
            .iter()
            .enumerate()
            .filter_map(|(r, row)| {
                let at = format!("{chart_place}.rows[{r}]");
                self.row(row, &at, top_left, category.as_ref(), issues)
            })
            .collect();
        let name = match zone {
            Some(zone) => format!("{code} ({zone})"),
            None => code.clone(),
        };
        Some(RawGroup {
            code,
            name,
            rows,
            split: false,
        })
    }

    /// Rows outside any section, grouped by `sectionLabel` in order of first appearance.
    fn loose_rows(&self, rows: &[Value], issues: &mut Issues) -> Vec<RawGroup> {
        let mut groups: Vec<RawGroup> = Vec::new();
        for (r, value) in rows.iter().enumerate() {
            let place = format!("$.subChart.rows[{r}]");
            let section = match value.get("sectionLabel") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(v) => match label(v, &format!("{place}.sectionLabel"), issues) {
                    Some(s) => Some(s),
                    None => continue,
                },
            };
            let Some(row) = self.row(value, &place, (0.0, 0.0), Some(&None), issues) else {
                continue;
            };
            let code = section.clone().unwrap_or_else(|| String::from("Main"));
            let at = match groups.iter().position(|g| g.code == code) {
                Some(at) => at,
                None => {
                    groups.push(RawGroup {
                        code: code.clone(),
                        name: code,
                        rows: Vec::new(),
                        split: section.is_none(),
                    });
                    groups.len() - 1
                }
            };
            groups[at].rows.push(row);
        }
        groups
    }

    /// A row with its seats placed at `offset`; `inherited` is the enclosing section's
    /// category reference (`None` when that one is wrong).
    fn row(
        &self,
        value: &Value,
        place: &str,
        offset: (f64, f64),
        inherited: Option<&Option<String>>,
        issues: &mut Issues,
    ) -> Option<RawRow> {
        let obj = object(value, place, issues)?;
        let row_label = required(obj, "label", place, issues)
            .and_then(|v| label(v, &format!("{place}.label"), issues));
        let category = match self.categories.named(obj, place, issues) {
            Some(None) => inherited.cloned(),
            own => own,
        };
        let mut seats = Vec::new();
        let values = required(obj, "seats", place, issues)
            .and_then(|v| array(v, &format!("{place}.seats"), issues))
            .map_or(&[][..], Vec::as_slice);
        for (s, value) in values.iter().enumerate() {
            let at = format!("{place}.seats[{s}]");
            if let Some(seat) = self.seat(value, at, offset, category.as_ref(), issues) {
                seats.push(seat);
            }
        }
        let origin = seats.first().map_or(offset, |s| (s.x, s.y));
        Some(RawRow {
            label: row_label?,
            origin,
            seats,
        })
    }

    fn seat(
        &self,
        value: &Value,
        place: String,
        offset: (f64, f64),
        inherited: Option<&Option<String>>,
        issues: &mut Issues,
    ) -> Option<RawSeat> {
        let obj = object(value, &place, issues)?;
        let seat_label = required(obj, "label", &place, issues)
            .and_then(|v| label(v, &format!("{place}.label"), issues));
        let x = number(obj, "x", &place, issues);
        let y = number(obj, "y", &place, issues);
        let guid = match obj.get("uuid") {
            None | Some(Value::Null) => Some(None),
            Some(v) => label(v, &format!("{place}.uuid"), issues).map(Some),
        };
        let category = match self.categories.named(obj, &place, issues) {
            Some(None) => match inherited {
                Some(Some(code)) => Some(code.clone()),
                Some(None) => {
                    issues.push(place.clone(), Problem::NoCategory);
                    None
                }
                None => None,
            },
            own => own.flatten(),
        };
        let accessible = flag(obj, "accessible", &place, issues);
        let category = category?;
        let by_category = self.categories.accessible.get(&category).copied();
        let accessible = accessible? || by_category.unwrap_or(false);
        Some(RawSeat {
            label: seat_label?,
            guid: guid?,
            x: offset.0 + x?,
            y: offset.1 + y?,
            category,
            accessible,
            place,
        })
    }
}

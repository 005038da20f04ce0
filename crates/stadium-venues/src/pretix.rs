//! pretix seating-plan JSON: `{name, categories: [{name, color}], zones: [{name,
//! position, rows: [{row_number, position, seats: [{seat_guid, seat_number, position,
//! category}]}]}]}`. A seat's absolute position is zone + row + seat position.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::{ImportError, Issues, Problem};
use crate::json::{self, array, label, number, object, required};
use crate::plan::{Category, RawGroup, RawRow, RawSeat, VenuePlan, assemble};

/// `position: {x, y}`; absent means the origin when `optional`.
fn position(
    obj: &Map<String, Value>,
    place: &str,
    optional: bool,
    issues: &mut Issues,
) -> Option<(f64, f64)> {
    let place_pos = format!("{place}.position");
    let value = if optional {
        match obj.get("position") {
            None | Some(Value::Null) => return Some((0.0, 0.0)),
            Some(v) => v,
        }
    } else {
        required(obj, "position", place, issues)?
    };
    let pos = object(value, &place_pos, issues)?;
    let x = number(pos, "x", &place_pos, issues);
    let y = number(pos, "y", &place_pos, issues);
    Some((x?, y?))
}

/// Parses a pretix seating plan. Sections come from zones, split into blocks of rows as
/// the crate documentation describes.
///
/// Errors: [`ImportError::Syntax`] for malformed JSON; [`ImportError::Invalid`] listing
/// every issue with its JSON path (missing or mistyped field, unknown or repeated
/// category, repeated seat place, no seats).
pub fn parse_pretix(bytes: &[u8]) -> Result<VenuePlan, ImportError> {
    let root = json::document(bytes)?;
    let mut issues = Issues::default();
    let Some(root) = object(&root, "plan", &mut issues) else {
        return Err(ImportError::Invalid { issues: issues.0 });
    };
    let name = match root.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        _ => String::from("Unnamed plan"),
    };

    let mut categories = Vec::new();
    let mut known: HashMap<String, String> = HashMap::new();
    if let Some(list) = required(root, "categories", "plan", &mut issues)
        .and_then(|v| array(v, "categories", &mut issues))
    {
        for (i, value) in list.iter().enumerate() {
            let place = format!("categories[{i}]");
            let Some(obj) = object(value, &place, &mut issues) else {
                continue;
            };
            let Some(name) = required(obj, "name", &place, &mut issues)
                .and_then(|v| label(v, &format!("{place}.name"), &mut issues))
            else {
                continue;
            };
            let color = match obj.get("color") {
                Some(Value::String(c)) if !c.is_empty() => c.clone(),
                None | Some(Value::Null) => String::from("#888888"),
                Some(_) => {
                    issues.push(
                        format!("{place}.color"),
                        Problem::WrongType {
                            expected: "a string",
                        },
                    );
                    continue;
                }
            };
            if let Some(first) = known.get(&name) {
                issues.push(
                    format!("{place}.name"),
                    Problem::RepeatedCategory {
                        name,
                        first: first.clone(),
                    },
                );
                continue;
            }
            known.insert(name.clone(), place);
            categories.push(Category {
                code: name.clone(),
                name,
                color,
            });
        }
    }

    let mut groups = Vec::new();
    if let Some(zones) =
        required(root, "zones", "plan", &mut issues).and_then(|v| array(v, "zones", &mut issues))
    {
        for (z, zone) in zones.iter().enumerate() {
            let zplace = format!("zones[{z}]");
            let Some(zone) = object(zone, &zplace, &mut issues) else {
                continue;
            };
            let zname = match zone.get("name") {
                None | Some(Value::Null) => format!("Zone {}", z + 1),
                Some(v) => label(v, &format!("{zplace}.name"), &mut issues).unwrap_or_default(),
            };
            let zpos = position(zone, &zplace, true, &mut issues).unwrap_or_default();
            let mut rows = Vec::new();
            let Some(zrows) = required(zone, "rows", &zplace, &mut issues)
                .and_then(|v| array(v, &format!("{zplace}.rows"), &mut issues))
            else {
                continue;
            };
            for (r, row) in zrows.iter().enumerate() {
                let rplace = format!("{zplace}.rows[{r}]");
                let Some(row) = object(row, &rplace, &mut issues) else {
                    continue;
                };
                let rlabel = required(row, "row_number", &rplace, &mut issues)
                    .and_then(|v| label(v, &format!("{rplace}.row_number"), &mut issues));
                let rpos = position(row, &rplace, true, &mut issues).unwrap_or_default();
                let origin = (zpos.0 + rpos.0, zpos.1 + rpos.1);
                let Some(rseats) = required(row, "seats", &rplace, &mut issues)
                    .and_then(|v| array(v, &format!("{rplace}.seats"), &mut issues))
                else {
                    continue;
                };
                let mut seats = Vec::with_capacity(rseats.len());
                for (s, seat) in rseats.iter().enumerate() {
                    let splace = format!("{rplace}.seats[{s}]");
                    let Some(seat) = object(seat, &splace, &mut issues) else {
                        continue;
                    };
                    let slabel = required(seat, "seat_number", &splace, &mut issues)
                        .and_then(|v| label(v, &format!("{splace}.seat_number"), &mut issues));
                    let guid = match seat.get("seat_guid") {
                        None | Some(Value::Null) => None,
                        Some(v) => label(v, &format!("{splace}.seat_guid"), &mut issues),
                    };
                    let spos = position(seat, &splace, false, &mut issues);
                    let category = required(seat, "category", &splace, &mut issues).and_then(|v| {
                        match v.as_str() {
                            Some(name) if known.contains_key(name.trim()) => {
                                Some(name.trim().to_owned())
                            }
                            Some(name) => {
                                issues.push(
                                    format!("{splace}.category"),
                                    Problem::UnknownCategory {
                                        name: name.to_owned(),
                                    },
                                );
                                None
                            }
                            None => {
                                issues.push(
                                    format!("{splace}.category"),
                                    Problem::WrongType {
                                        expected: "a string",
                                    },
                                );
                                None
                            }
                        }
                    });
                    if let (Some(label), Some((x, y)), Some(category)) = (slabel, spos, category) {
                        seats.push(RawSeat {
                            place: splace,
                            label,
                            guid,
                            x: origin.0 + x,
                            y: origin.1 + y,
                            category,
                            accessible: false,
                        });
                    }
                }
                if let Some(label) = rlabel {
                    rows.push(RawRow {
                        label,
                        origin,
                        seats,
                    });
                }
            }
            let code = match zone.get("zone_id") {
                Some(Value::String(id)) if !id.trim().is_empty() => id.trim().to_owned(),
                _ => zname.clone(),
            };
            groups.push(RawGroup {
                code,
                name: zname,
                rows,
                split: true,
            });
        }
    }
    assemble(name, categories, groups, issues, "seat_guid")
}

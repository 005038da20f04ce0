//! Wire ↔ domain conversion for the seat-map contract.

use stadium_proto::common::v1::Money;
use stadium_proto::seat_map::v1 as pb;
use stadium_proto::seat_map::v1::suggest_seats_request::Scope as WireScope;
use stadium_seating::{Point, Suggestion};

use crate::domain::{EventLayout, Snapshot};
use crate::error::Error;
use crate::service::{Scope, SuggestQuery, Want, age_ms};

/// Suggestions returned when the request's `limit` is 0.
pub const DEFAULT_LIMIT: usize = 3;
/// Most suggestions one request may ask for.
pub const MAX_LIMIT: usize = 20;

fn point(p: Point) -> pb::Point {
    pb::Point { x: p.x, y: p.y }
}

/// The event's layout on the wire.
pub fn layout(layout: &EventLayout) -> pb::Layout {
    let sections = layout
        .sections
        .iter()
        .map(|section| {
            let seats = section.layout.seats();
            let first = section.layout.first_seat_id();
            pb::Section {
                section_id: section.section_id(),
                code: section.code.clone(),
                name: section.name.clone(),
                rows: section
                    .layout
                    .rows()
                    .iter()
                    .map(|row| pb::Row {
                        label: row.label.clone(),
                        seats: row
                            .offsets()
                            .iter()
                            .map(|&o| {
                                let seat = &seats[o as usize];
                                pb::Seat {
                                    seat_id: first + u64::from(o),
                                    label: seat.seat_label.clone(),
                                    position: Some(point(seat.position)),
                                    category_code: section.categories[o as usize].clone(),
                                    accessible: section.is_accessible(o),
                                }
                            })
                            .collect(),
                    })
                    .collect(),
                first_seat_id: first,
                seat_count: section.layout.seat_count(),
                focus: Some(point(section.layout.focus())),
            }
        })
        .collect();
    pb::Layout {
        event_id: layout.event_id.get().to_string(),
        venue_id: layout.venue_id.to_string(),
        venue_name: layout.venue_name.clone(),
        sections,
        categories: layout
            .categories
            .iter()
            .map(|c| pb::Category {
                code: c.code.clone(),
                name: c.name.clone(),
                price: c.price_minor.map(|amount_minor| Money {
                    amount_minor,
                    currency: c.currency.clone(),
                }),
                color: c.color.clone(),
            })
            .collect(),
        version: layout.version.clone(),
    }
}

/// One section's availability on the wire, with its age now.
pub fn section_availability(section_id: u64, snapshot: &Snapshot) -> pb::SectionAvailability {
    let a = &snapshot.availability;
    pb::SectionAvailability {
        section_id,
        first_seat_id: a.first_seat_id(),
        seat_count: a.seat_count(),
        available_bitmap: a.bitmap().to_vec(),
        available: a.available(),
        as_of: Some(prost_types::Timestamp::from(snapshot.as_of)),
        age_ms: age_ms(snapshot),
    }
}

/// A suggestion on the wire.
pub fn suggestion(s: &Suggestion) -> pb::Suggestion {
    pb::Suggestion {
        section_id: s.section_id,
        row_label: s.row_label.clone(),
        seat_ids: s.seat_ids.clone(),
        score: s.score,
    }
}

/// Validates a `SuggestSeats` request (all but the event id).
///
/// Errors: [`Error::InvalidField`] naming `quantity`, `section_id`, `category_code`,
/// `point`, `near_seat_id` or `preference`.
pub fn suggest_query(request: &pb::SuggestSeatsRequest) -> Result<SuggestQuery, Error> {
    if request.quantity == 0 {
        return Err(Error::invalid("quantity", "must be at least 1"));
    }
    let scope = match &request.scope {
        None => Scope::All,
        Some(WireScope::SectionId(0)) => {
            return Err(Error::invalid("section_id", "must not be zero"));
        }
        Some(WireScope::SectionId(id)) => Scope::Section(*id),
        Some(WireScope::CategoryCode(code)) if code.trim().is_empty() => {
            return Err(Error::invalid("category_code", "must not be empty"));
        }
        Some(WireScope::CategoryCode(code)) => Scope::Category(code.clone()),
    };
    let want = match pb::Preference::try_from(request.preference) {
        Ok(pb::Preference::Unspecified | pb::Preference::BestView) => Want::BestView,
        Ok(pb::Preference::NearPoint) => match &request.point {
            Some(p) if p.x.is_finite() && p.y.is_finite() => Want::Point(Point { x: p.x, y: p.y }),
            Some(_) => return Err(Error::invalid("point", "coordinates must be finite")),
            None => {
                return Err(Error::invalid(
                    "point",
                    "required with PREFERENCE_NEAR_POINT",
                ));
            }
        },
        Ok(pb::Preference::NearSeat) if request.near_seat_id == 0 => {
            return Err(Error::invalid(
                "near_seat_id",
                "required with PREFERENCE_NEAR_SEAT",
            ));
        }
        Ok(pb::Preference::NearSeat) => Want::NearSeat(request.near_seat_id),
        Err(_) => {
            return Err(Error::invalid(
                "preference",
                format!("unknown value {}", request.preference),
            ));
        }
    };
    let limit = match request.limit as usize {
        0 => DEFAULT_LIMIT,
        n => n.min(MAX_LIMIT),
    };
    Ok(SuggestQuery {
        quantity: request.quantity,
        scope,
        want,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> pb::SuggestSeatsRequest {
        pb::SuggestSeatsRequest {
            event_id: "1".into(),
            quantity: 2,
            ..Default::default()
        }
    }

    #[test]
    fn suggest_requests_are_validated_field_by_field() {
        let q = suggest_query(&request()).unwrap();
        assert_eq!(
            (q.scope.clone(), q.want, q.limit),
            (Scope::All, Want::BestView, DEFAULT_LIMIT)
        );
        let field = |r: pb::SuggestSeatsRequest| match suggest_query(&r) {
            Err(Error::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(pb::SuggestSeatsRequest {
                quantity: 0,
                ..request()
            }),
            "quantity"
        );
        assert_eq!(
            field(pb::SuggestSeatsRequest {
                scope: Some(WireScope::SectionId(0)),
                ..request()
            }),
            "section_id"
        );
        assert_eq!(
            field(pb::SuggestSeatsRequest {
                scope: Some(WireScope::CategoryCode(" ".into())),
                ..request()
            }),
            "category_code"
        );
        assert_eq!(
            field(pb::SuggestSeatsRequest {
                preference: 2,
                ..request()
            }),
            "point"
        );
        assert_eq!(
            field(pb::SuggestSeatsRequest {
                preference: 2,
                point: Some(pb::Point {
                    x: f64::NAN,
                    y: 0.0
                }),
                ..request()
            }),
            "point"
        );
        assert_eq!(
            field(pb::SuggestSeatsRequest {
                preference: 3,
                ..request()
            }),
            "near_seat_id"
        );
        assert_eq!(
            field(pb::SuggestSeatsRequest {
                preference: 99,
                ..request()
            }),
            "preference"
        );
        let q = suggest_query(&pb::SuggestSeatsRequest {
            limit: 1000,
            preference: 3,
            near_seat_id: 5,
            ..request()
        })
        .unwrap();
        assert_eq!((q.limit, q.want), (MAX_LIMIT, Want::NearSeat(5)));
    }
}

//! Setting an on-sale up through the box office: import (or find) the venue, create
//! the event with a price for every category its seats use, open the sale a few
//! seconds ahead so the pre-queue fills first.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use stadium_proto::box_office::v1::{
    CreateEventRequest, EventSettings, GetVenueRequest, ImportVenueRequest, OpenSaleRequest,
    PriceCategory, PushOutcome, StartPresaleRequest, Venue,
};
use stadium_proto::common::v1::Money;

use crate::credentials::{Credentials, authed};
use crate::error::{LoadtestError, Result};
use crate::options::EventOptions;
use crate::targets::Targets;
use crate::venue::VenueSource;

/// How far ahead of the on-sale the event starts (a concert a month later).
const EVENT_STARTS_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);

/// A price category of the event set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PricedCategory {
    /// Category code the venue's seats use.
    pub code: String,
    /// Price in minor units of [`EventSetup::currency`].
    pub price_minor: i64,
}

/// The event an on-sale runs against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventSetup {
    /// The event's id.
    pub event_id: String,
    /// Its venue's id.
    pub venue_id: String,
    /// The venue's name.
    pub venue_name: String,
    /// Seats in the venue.
    pub seats: u64,
    /// Sections in the venue.
    pub sections: u32,
    /// Prices, best category first.
    pub categories: Vec<PricedCategory>,
    /// ISO 4217 currency of the prices.
    pub currency: String,
    /// When admission starts (the pre-queue is shuffled then).
    pub onsale_at: SystemTime,
    /// Hold lifetime the event gives every claim, milliseconds.
    pub hold_ttl_ms: u64,
    /// Seats one claim may take.
    pub max_seats_per_claim: u32,
    /// Admission rate, fans per minute.
    pub admission_rate_per_min: u32,
    /// What became of telling the waiting room about the opening, e.g. `DELIVERED`.
    pub waiting_room_push: String,
    /// The box office's import warnings, if the venue was imported.
    pub import_warnings: Vec<String>,
}

/// Imports or finds the venue, creates the event with prices for each of the venue's
/// categories, and opens its sale (or, with `settings.presale`, starts its presale) with
/// `onsale_at = now + settings.onsale_lead`.
///
/// Errors: [`LoadtestError::Rpc`] naming the box office RPC that failed (e.g.
/// `PLAN_INVALID` on import); [`LoadtestError::MissingField`] for a response without
/// its venue or event; [`LoadtestError::Venue`] for a venue without seats;
/// [`LoadtestError::Token`].
pub async fn setup_event(
    targets: &Targets,
    creds: &Credentials,
    venue: VenueSource,
    settings: &EventOptions,
) -> Result<EventSetup> {
    let mut office = targets.clients()?.box_office;
    let mut import_warnings = Vec::new();
    let venue: Venue = match venue {
        VenueSource::Import {
            name,
            format,
            content,
        } => {
            let request = ImportVenueRequest {
                name,
                format: format.to_proto() as i32,
                content,
            };
            let response = office
                .import_venue(authed(request, &creds.admin_token()?))
                .await
                .map_err(|s| LoadtestError::rpc("BoxOffice/ImportVenue", &s))?
                .into_inner();
            import_warnings = response.warnings;
            response.venue.ok_or(LoadtestError::MissingField {
                rpc: "BoxOffice/ImportVenue",
                field: "venue",
            })?
        }
        VenueSource::Existing { venue_id } => office
            .get_venue(authed(GetVenueRequest { venue_id }, &creds.admin_token()?))
            .await
            .map_err(|s| LoadtestError::rpc("BoxOffice/GetVenue", &s))?
            .into_inner()
            .venue
            .ok_or(LoadtestError::MissingField {
                rpc: "BoxOffice/GetVenue",
                field: "venue",
            })?,
    };
    if venue.seat_count == 0 {
        return Err(LoadtestError::Venue(format!(
            "venue {} has no seats",
            venue.venue_id
        )));
    }

    let codes = category_codes(&venue);
    let categories: Vec<PricedCategory> = codes
        .iter()
        .enumerate()
        .map(|(i, code)| PricedCategory {
            code: code.clone(),
            price_minor: settings.price_minor(i),
        })
        .collect();
    let now = SystemTime::now();
    let onsale_at = now + settings.onsale_lead;
    let event_settings = EventSettings {
        name: settings.name.clone(),
        starts_at: Some((now + EVENT_STARTS_AFTER).into()),
        onsale_at: Some(onsale_at.into()),
        hold_ttl_ms: millis(settings.hold_ttl),
        max_hold_lifetime_ms: 0,
        max_seats_per_claim: settings.max_seats_per_claim,
        max_seats_per_fan: settings.max_seats_per_fan,
        admission_rate_per_min: settings.admission_rate_per_min,
        active_fan_cap: settings.active_fan_cap,
        admission_ttl_ms: millis(settings.admission_ttl),
        admission_no_show_ms: millis(settings.admission_no_show),
        waiting_list_offer_ms: 0,
        currency: settings.currency.clone(),
    };
    let request = CreateEventRequest {
        venue_id: venue.venue_id.clone(),
        settings: Some(event_settings),
        price_categories: categories
            .iter()
            .map(|c| PriceCategory {
                code: c.code.clone(),
                name: c.code.clone(),
                price: Some(Money {
                    amount_minor: c.price_minor,
                    currency: settings.currency.clone(),
                }),
            })
            .collect(),
    };
    let event = office
        .create_event(authed(request, &creds.admin_token()?))
        .await
        .map_err(|s| LoadtestError::rpc("BoxOffice/CreateEvent", &s))?
        .into_inner()
        .event
        .ok_or(LoadtestError::MissingField {
            rpc: "BoxOffice/CreateEvent",
            field: "event",
        })?;
    let event_id = event.event_id.clone();
    let push = if settings.presale {
        office
            .start_presale(authed(
                StartPresaleRequest { event_id },
                &creds.admin_token()?,
            ))
            .await
            .map_err(|s| LoadtestError::rpc("BoxOffice/StartPresale", &s))?
            .into_inner()
            .waiting_room
    } else {
        office
            .open_sale(authed(OpenSaleRequest { event_id }, &creds.admin_token()?))
            .await
            .map_err(|s| LoadtestError::rpc("BoxOffice/OpenSale", &s))?
            .into_inner()
            .waiting_room
    };
    let waiting_room_push = match push {
        Some(push) => {
            let outcome = PushOutcome::try_from(push.outcome)
                .map(|o| {
                    o.as_str_name()
                        .trim_start_matches("PUSH_OUTCOME_")
                        .to_owned()
                })
                .unwrap_or_else(|_| format!("UNKNOWN({})", push.outcome));
            if push.detail.is_empty() {
                outcome
            } else {
                format!("{outcome}: {}", push.detail)
            }
        }
        None => "UNREPORTED".into(),
    };
    Ok(EventSetup {
        event_id: event.event_id,
        venue_id: venue.venue_id,
        venue_name: venue.name,
        seats: u64::from(venue.seat_count),
        sections: venue.section_count,
        categories,
        currency: settings.currency.clone(),
        onsale_at,
        hold_ttl_ms: millis(settings.hold_ttl),
        max_seats_per_claim: settings.max_seats_per_claim,
        admission_rate_per_min: settings.admission_rate_per_min,
        waiting_room_push,
        import_warnings,
    })
}

/// Whole milliseconds of `d`, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Every category code the venue's seats use, best first: shorter codes first, then
/// alphabetical, so `Category 2` comes before `Category 10`.
pub(crate) fn category_codes(venue: &Venue) -> Vec<String> {
    let codes: BTreeSet<(usize, String)> = venue
        .sections
        .iter()
        .flat_map(|s| s.seats_by_category.keys())
        .map(|c| (c.len(), c.clone()))
        .collect();
    codes.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use stadium_proto::box_office::v1::SectionSummary;

    use super::*;

    #[test]
    fn category_codes_are_unique_and_ordered() {
        let section = |cats: &[&str]| SectionSummary {
            seats_by_category: cats.iter().map(|c| ((*c).to_owned(), 1)).collect(),
            ..SectionSummary::default()
        };
        let venue = Venue {
            sections: vec![
                section(&["Category 10", "Category 2"]),
                section(&["Category 1", "Category 2"]),
            ],
            ..Venue::default()
        };
        assert_eq!(
            category_codes(&venue),
            vec!["Category 1", "Category 2", "Category 10"]
        );
    }
}

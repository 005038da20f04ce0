//! Wire ↔ domain. Every request field is checked here and a refusal names the field by
//! its proto path (`settings.hold_ttl_ms`, `price_categories[2].price.currency`).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use prost_types::Timestamp;
use stadium_proto::box_office::v1 as pb;
use stadium_proto::common::v1::{Money, PageRequest};
use stadium_venues::SourceFormat;

use crate::clients::push::PushReport;
use crate::domain::{
    self, DEFAULT_ADMISSION_TTL_MS, DEFAULT_WAITING_LIST_OFFER_MS, Event, EventSettings,
    EventStatus, MAX_ADMISSION_RATE, MAX_ADMISSION_TTL_MS, MAX_HOLD_LIFETIME_MS, MAX_HOLD_TTL_MS,
    MAX_SEATS_PER_CLAIM, MAX_SEATS_PER_FAN, PriceCategory,
};
use crate::error::{Error, Result};
use crate::store::venues::VenueSummary;

/// Default page size of list calls.
pub const DEFAULT_PAGE_SIZE: u32 = 50;
/// Largest page size of list calls.
pub const MAX_PAGE_SIZE: u32 = 500;

/// A positive decimal id (`event_id`, `venue_id`).
///
/// # Errors
/// [`Error::InvalidField`] naming `field`.
pub fn id(field: &str, value: &str) -> Result<i64> {
    if value.is_empty() {
        return Err(Error::invalid(field, "is required"));
    }
    match value.parse::<i64>() {
        Ok(id) if id > 0 => Ok(id),
        _ => Err(Error::invalid(field, "must be a positive decimal id")),
    }
}

/// A page request as (size, id after which to continue).
///
/// # Errors
/// [`Error::InvalidField`] for a page token that is not one this service handed out.
pub fn page(page: Option<&PageRequest>) -> Result<(i64, i64)> {
    let size = match page.map_or(0, |p| p.page_size) {
        0 => DEFAULT_PAGE_SIZE,
        n => n.min(MAX_PAGE_SIZE),
    };
    let after = match page.map(|p| p.page_token.as_str()).unwrap_or_default() {
        "" => 0,
        token => token
            .parse::<i64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| Error::invalid("page.page_token", "not a token from a previous page"))?,
    };
    Ok((i64::from(size), after))
}

/// The next page token after a page of `len` items whose last id is `last`.
pub fn next_token(len: usize, size: i64, last: Option<i64>) -> String {
    match last {
        Some(last) if i64::try_from(len).unwrap_or(i64::MAX) >= size => last.to_string(),
        _ => String::new(),
    }
}

/// A protobuf timestamp as a UTC instant.
///
/// # Errors
/// [`Error::InvalidField`] when absent or out of range.
pub fn instant(field: &str, ts: Option<&Timestamp>) -> Result<DateTime<Utc>> {
    let ts = ts.ok_or_else(|| Error::invalid(field, "is required"))?;
    let nanos = u32::try_from(ts.nanos)
        .ok()
        .filter(|n| *n < 1_000_000_000)
        .ok_or_else(|| Error::invalid(field, "nanos must be 0 to 999999999"))?;
    DateTime::from_timestamp(ts.seconds, nanos)
        .filter(|t| t.timestamp() > 0 && t.timestamp() < 253_402_300_800)
        .ok_or_else(|| Error::invalid(field, "must lie between 1970 and 9999"))
}

/// A UTC instant as a protobuf timestamp.
pub fn timestamp(t: DateTime<Utc>) -> Timestamp {
    Timestamp {
        seconds: t.timestamp(),
        nanos: i32::try_from(t.timestamp_subsec_nanos()).unwrap_or(0),
    }
}

fn within(field: &str, value: u64, min: u64, max: u64) -> Result<u32> {
    if value < min || value > max {
        return Err(Error::invalid(
            field,
            format!("must be {min} to {max}, got {value}"),
        ));
    }
    u32::try_from(value).map_err(|_| Error::invalid(field, "too large"))
}

/// A cap on active admitted fans (0 = none) as the catalog stores it, in `field`.
///
/// # Errors
/// [`Error::InvalidField`] naming `field` above `i32::MAX`.
pub fn active_fan_cap(field: &str, cap: u32) -> Result<u32> {
    within(field, cap.into(), 0, i32::MAX as u64)
}

/// Checks an event's settings; the currency may come from the price categories.
///
/// # Errors
/// [`Error::InvalidField`] naming the first bad field.
pub fn settings(
    s: Option<&pb::EventSettings>,
    categories: &[pb::PriceCategory],
) -> Result<EventSettings> {
    let s = s.ok_or_else(|| Error::invalid("settings", "is required"))?;
    let name = s.name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(Error::invalid(
            "settings.name",
            "must be 1 to 200 characters",
        ));
    }
    let starts_at = instant("settings.starts_at", s.starts_at.as_ref())?;
    let onsale_at = instant("settings.onsale_at", s.onsale_at.as_ref())?;
    if onsale_at > starts_at {
        return Err(Error::invalid(
            "settings.onsale_at",
            "must not be after starts_at",
        ));
    }
    let hold_ttl_ms = within("settings.hold_ttl_ms", s.hold_ttl_ms, 1, MAX_HOLD_TTL_MS)?;
    let max_hold_lifetime_ms = match s.max_hold_lifetime_ms {
        0 => None,
        ms => Some(within(
            "settings.max_hold_lifetime_ms",
            ms,
            hold_ttl_ms.into(),
            MAX_HOLD_LIFETIME_MS,
        )?),
    };
    let max_seats_per_claim = within(
        "settings.max_seats_per_claim",
        s.max_seats_per_claim.into(),
        1,
        MAX_SEATS_PER_CLAIM.into(),
    )?;
    let max_seats_per_fan = within(
        "settings.max_seats_per_fan",
        s.max_seats_per_fan.into(),
        max_seats_per_claim.into(),
        MAX_SEATS_PER_FAN.into(),
    )?;
    let admission_rate_per_min = within(
        "settings.admission_rate_per_min",
        s.admission_rate_per_min.into(),
        1,
        MAX_ADMISSION_RATE.into(),
    )?;
    let active_fan_cap = active_fan_cap("settings.active_fan_cap", s.active_fan_cap)?;
    let admission_ttl_ms = match s.admission_ttl_ms {
        0 => DEFAULT_ADMISSION_TTL_MS,
        ms => ms,
    };
    let admission_ttl_ms = within(
        "settings.admission_ttl_ms",
        admission_ttl_ms,
        1000,
        MAX_ADMISSION_TTL_MS,
    )?;
    let admission_no_show_ms = within(
        "settings.admission_no_show_ms",
        s.admission_no_show_ms,
        0,
        MAX_ADMISSION_TTL_MS,
    )?;
    let waiting_list_offer_ms = match s.waiting_list_offer_ms {
        0 => DEFAULT_WAITING_LIST_OFFER_MS,
        ms => ms,
    };
    let waiting_list_offer_ms = within(
        "settings.waiting_list_offer_ms",
        waiting_list_offer_ms,
        1000,
        MAX_ADMISSION_TTL_MS,
    )?;
    let currency = if s.currency.is_empty() {
        match categories.first().and_then(|c| c.price.as_ref()) {
            Some(price) => price.currency.clone(),
            None => {
                return Err(Error::invalid(
                    "settings.currency",
                    "is required when no price category gives one",
                ));
            }
        }
    } else if domain::is_currency(&s.currency) {
        s.currency.clone()
    } else {
        return Err(Error::invalid(
            "settings.currency",
            "must be an ISO 4217 code of three upper-case letters",
        ));
    };
    Ok(EventSettings {
        name: name.to_owned(),
        starts_at,
        onsale_at,
        hold_ttl_ms,
        max_hold_lifetime_ms,
        max_seats_per_claim,
        max_seats_per_fan,
        admission_rate_per_min,
        active_fan_cap,
        admission_ttl_ms,
        admission_no_show_ms,
        waiting_list_offer_ms,
        currency,
    })
}

/// Checks price categories against the event currency and the venue's category codes.
///
/// # Errors
/// [`Error::InvalidField`] naming the first bad field (`price_categories[i]…`).
pub fn price_categories(
    categories: &[pb::PriceCategory],
    currency: &str,
    known_codes: &[String],
) -> Result<Vec<PriceCategory>> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(categories.len());
    for (i, c) in categories.iter().enumerate() {
        let field = |f: &str| format!("price_categories[{i}].{f}");
        if c.code.is_empty() {
            return Err(Error::invalid(field("code"), "is required"));
        }
        if !known_codes.iter().any(|k| k == &c.code) {
            return Err(Error::invalid(
                field("code"),
                format!(
                    "unknown category {:?}; the venue has {}",
                    c.code,
                    known_codes.join(", ")
                ),
            ));
        }
        if !seen.insert(c.code.as_str()) {
            return Err(Error::invalid(
                field("code"),
                format!("{:?} is given twice", c.code),
            ));
        }
        let name = c.name.trim();
        if name.chars().count() > 200 {
            return Err(Error::invalid(
                field("name"),
                "must be at most 200 characters",
            ));
        }
        let price = c
            .price
            .as_ref()
            .ok_or_else(|| Error::invalid(field("price"), "is required"))?;
        if price.amount_minor < 0 {
            return Err(Error::invalid(
                field("price.amount_minor"),
                "must not be negative",
            ));
        }
        if !domain::is_currency(&price.currency) {
            return Err(Error::invalid(
                field("price.currency"),
                "must be an ISO 4217 code of three upper-case letters",
            ));
        }
        if price.currency != currency {
            return Err(Error::invalid(
                field("price.currency"),
                format!("must be the event currency {currency}"),
            ));
        }
        out.push(PriceCategory {
            code: c.code.clone(),
            name: if name.is_empty() {
                c.code.clone()
            } else {
                name.to_owned()
            },
            price_minor: price.amount_minor,
            currency: price.currency.clone(),
        });
    }
    Ok(out)
}

/// The wire status of a domain status.
pub fn status(s: EventStatus) -> pb::EventStatus {
    match s {
        EventStatus::Draft => pb::EventStatus::Draft,
        EventStatus::Presale => pb::EventStatus::Presale,
        EventStatus::OnSale => pb::EventStatus::OnSale,
        EventStatus::Paused => pb::EventStatus::Paused,
        EventStatus::Closed => pb::EventStatus::Closed,
        EventStatus::Cancelled => pb::EventStatus::Cancelled,
    }
}

/// The wire enum of a plan's format (a generated plan is never imported over the wire,
/// so it has none: `UNSPECIFIED`).
pub fn plan_format(f: SourceFormat) -> pb::PlanFormat {
    match f {
        SourceFormat::PretixJson => pb::PlanFormat::PretixJson,
        SourceFormat::CsvManifest => pb::PlanFormat::CsvManifest,
        SourceFormat::SeatsioJson => pb::PlanFormat::SeatsioJson,
        SourceFormat::Generated => pb::PlanFormat::Unspecified,
    }
}

/// Money in `currency`.
pub fn money(amount_minor: i64, currency: &str) -> Money {
    Money {
        amount_minor,
        currency: currency.to_owned(),
    }
}

/// The wire form of an event.
pub fn event(e: &Event) -> pb::Event {
    let s = &e.settings;
    pb::Event {
        event_id: e.event_id.to_string(),
        venue_id: e.venue_id.to_string(),
        status: status(e.status) as i32,
        settings: Some(pb::EventSettings {
            name: s.name.clone(),
            starts_at: Some(timestamp(s.starts_at)),
            onsale_at: Some(timestamp(s.onsale_at)),
            hold_ttl_ms: s.hold_ttl_ms.into(),
            max_hold_lifetime_ms: s.max_hold_lifetime_ms.map_or(0, u64::from),
            max_seats_per_claim: s.max_seats_per_claim,
            max_seats_per_fan: s.max_seats_per_fan,
            admission_rate_per_min: s.admission_rate_per_min,
            active_fan_cap: s.active_fan_cap,
            admission_ttl_ms: s.admission_ttl_ms.into(),
            admission_no_show_ms: s.admission_no_show_ms.into(),
            waiting_list_offer_ms: s.waiting_list_offer_ms.into(),
            currency: s.currency.clone(),
        }),
        price_categories: e
            .price_categories
            .iter()
            .map(|c| pb::PriceCategory {
                code: c.code.clone(),
                name: c.name.clone(),
                price: Some(money(c.price_minor, &c.currency)),
            })
            .collect(),
        created_at: Some(timestamp(e.created_at)),
        paused_from: e.paused_from.map_or(pb::EventStatus::Unspecified, status) as i32,
        presale_started_at: e.presale_started_at.map(timestamp),
    }
}

/// The wire form of a venue.
pub fn venue(v: &VenueSummary) -> pb::Venue {
    pb::Venue {
        venue_id: v.venue_id.to_string(),
        name: v.name.clone(),
        section_count: v.section_count,
        seat_count: v.seat_count,
        sections: v
            .sections
            .iter()
            .map(|s| pb::SectionSummary {
                section_id: u64::try_from(s.section_id).unwrap_or_default(),
                code: s.code.clone(),
                name: s.name.clone(),
                row_count: s.row_count,
                seat_count: s.seat_count,
                seats_by_category: s.seats_by_category.clone().into_iter().collect(),
            })
            .collect(),
        source_digest: v.source_digest.clone(),
        created_at: Some(timestamp(v.created_at)),
    }
}

/// The wire form of a push report.
pub fn push(report: &PushReport) -> pb::WaitingRoomPush {
    pb::WaitingRoomPush {
        outcome: report.outcome as i32,
        detail: report.detail.clone(),
        attempts: report.attempts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(seconds: i64) -> Option<Timestamp> {
        Some(Timestamp { seconds, nanos: 0 })
    }

    fn good() -> pb::EventSettings {
        pb::EventSettings {
            name: "Final".into(),
            starts_at: ts(2_000_000_000),
            onsale_at: ts(1_900_000_000),
            hold_ttl_ms: 300_000,
            max_hold_lifetime_ms: 0,
            max_seats_per_claim: 4,
            max_seats_per_fan: 8,
            admission_rate_per_min: 600,
            active_fan_cap: 0,
            admission_ttl_ms: 0,
            admission_no_show_ms: 0,
            waiting_list_offer_ms: 0,
            currency: "EUR".into(),
        }
    }

    fn field_of(result: Result<EventSettings>) -> String {
        match result {
            Err(Error::InvalidField { field, .. }) => field,
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn good_settings_pass_with_defaults() {
        let s = settings(Some(&good()), &[]).unwrap();
        assert_eq!(s.admission_ttl_ms, 600_000);
        assert_eq!(s.currency, "EUR");
    }

    #[test]
    fn each_bad_setting_names_its_field() {
        type Edit = fn(&mut pb::EventSettings);
        let cases: [(&str, Edit); 13] = [
            ("settings.name", |s| s.name = "  ".into()),
            ("settings.starts_at", |s| s.starts_at = None),
            ("settings.onsale_at", |s| s.onsale_at = ts(2_100_000_000)),
            ("settings.hold_ttl_ms", |s| s.hold_ttl_ms = 0),
            ("settings.max_hold_lifetime_ms", |s| {
                s.max_hold_lifetime_ms = 1
            }),
            ("settings.max_hold_lifetime_ms", |s| {
                s.max_hold_lifetime_ms = MAX_HOLD_LIFETIME_MS + 1
            }),
            ("settings.max_seats_per_claim", |s| {
                s.max_seats_per_claim = 0
            }),
            ("settings.max_seats_per_fan", |s| s.max_seats_per_fan = 3),
            ("settings.admission_rate_per_min", |s| {
                s.admission_rate_per_min = 0
            }),
            ("settings.admission_ttl_ms", |s| s.admission_ttl_ms = 10),
            ("settings.admission_no_show_ms", |s| {
                s.admission_no_show_ms = MAX_ADMISSION_TTL_MS + 1
            }),
            ("settings.waiting_list_offer_ms", |s| {
                s.waiting_list_offer_ms = 999
            }),
            ("settings.currency", |s| s.currency = "eur".into()),
        ];
        for (field, edit) in cases {
            let mut s = good();
            edit(&mut s);
            assert_eq!(field_of(settings(Some(&s), &[])), field);
        }
        assert_eq!(field_of(settings(None, &[])), "settings");
    }

    #[test]
    fn categories_are_checked_against_the_venue_and_currency() {
        let codes = vec!["A".to_owned(), "B".to_owned()];
        let cat = |code: &str, amount: i64, currency: &str| pb::PriceCategory {
            code: code.into(),
            name: String::new(),
            price: Some(money(amount, currency)),
        };
        let ok = price_categories(&[cat("A", 100, "EUR")], "EUR", &codes).unwrap();
        assert_eq!(ok[0].name, "A");
        let field = |cats: &[pb::PriceCategory]| match price_categories(cats, "EUR", &codes) {
            Err(Error::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(&[cat("Z", 1, "EUR")]), "price_categories[0].code");
        assert_eq!(
            field(&[cat("A", 1, "EUR"), cat("A", 2, "EUR")]),
            "price_categories[1].code"
        );
        assert_eq!(
            field(&[cat("A", -1, "EUR")]),
            "price_categories[0].price.amount_minor"
        );
        assert_eq!(
            field(&[cat("A", 1, "USD")]),
            "price_categories[0].price.currency"
        );
        assert_eq!(
            field(&[cat("A", 1, "E$R")]),
            "price_categories[0].price.currency"
        );
    }

    #[test]
    fn ids_and_pages() {
        assert_eq!(id("event_id", "42").unwrap(), 42);
        for bad in ["", "0", "-3", "x", "1.5"] {
            assert!(id("event_id", bad).is_err(), "{bad}");
        }
        assert_eq!(page(None).unwrap(), (50, 0));
        let req = PageRequest {
            page_size: 9999,
            page_token: "17".into(),
        };
        assert_eq!(page(Some(&req)).unwrap(), (500, 17));
        let bad = PageRequest {
            page_size: 1,
            page_token: "abc".into(),
        };
        assert!(page(Some(&bad)).is_err());
        assert_eq!(next_token(2, 2, Some(9)), "9");
        assert_eq!(next_token(1, 2, Some(9)), "");
    }
}

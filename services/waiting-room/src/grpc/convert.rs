//! Wire ↔ domain conversion: request fields into checked values (naming the field on
//! failure), snapshots into proto messages.

use std::time::Duration;

use prost_types::Timestamp;
use stadium_proto::waiting_room::v1 as pb;

use crate::domain::{EventId, Inventory, QueueSnapshot, SaleState, Standing};
use crate::error::Error;
use crate::service::FanStatus;
use crate::store::{EventSettings, QueueFloor, RequestedState};

/// Highest accepted admission rate, fans per minute: keeps the credit arithmetic in
/// Redis (Lua doubles) exact.
pub const MAX_FANS_PER_MINUTE: u32 = 10_000_000;

/// Longest accepted admission token lifetime: one day.
pub const MAX_ADMISSION_TTL: Duration = Duration::from_secs(24 * 3600);

/// Parses the `event_id` field.
pub fn event_id(raw: &str) -> Result<EventId, Error> {
    EventId::parse(raw).map_err(|problem| Error::invalid("event_id", problem))
}

/// Parses an optional `event_id` field (empty: none).
pub fn optional_event_id(raw: &str) -> Result<Option<EventId>, Error> {
    if raw.is_empty() {
        return Ok(None);
    }
    event_id(raw).map(Some)
}

/// The wire state of a standing.
pub fn queue_state(standing: Standing) -> pb::QueueState {
    match standing {
        Standing::PreQueue => pb::QueueState::PreQueue,
        Standing::Waiting { .. } => pb::QueueState::Waiting,
        Standing::Paused { .. } => pb::QueueState::Paused,
        Standing::Admitted => pb::QueueState::Admitted,
        Standing::Closed => pb::QueueState::Closed,
        Standing::Cancelled => pb::QueueState::Cancelled,
        Standing::SoldOut { .. } => pb::QueueState::SoldOut,
    }
}

/// A fan's status as the wire says it.
pub fn fan_status(status: FanStatus) -> pb::QueueStatus {
    let (admission_token, admission_expires_in_ms) = status
        .admission
        .map(|a| (a.token, a.expires_in_ms))
        .unwrap_or_default();
    pb::QueueStatus {
        event_id: status.event.to_string(),
        state: queue_state(status.standing) as i32,
        queue_number: status.queue_number,
        position: status.position,
        estimated_wait_ms: status.estimated_wait_ms,
        queue_ticket: status.queue_ticket,
        admission_token,
        admission_expires_in_ms,
        as_of: Some(timestamp(status.as_of_ms)),
        poll_after_ms: status.poll_after_ms,
    }
}

/// Parses a `fans_per_minute` field (1 to [`MAX_FANS_PER_MINUTE`]).
pub fn fans_per_minute(raw: u32) -> Result<u32, Error> {
    if raw == 0 || raw > MAX_FANS_PER_MINUTE {
        return Err(Error::invalid(
            "fans_per_minute",
            format!("must be 1 to {MAX_FANS_PER_MINUTE}"),
        ));
    }
    Ok(raw)
}

/// Unix milliseconds of a timestamp at or after the epoch.
fn timestamp_ms(field: &'static str, ts: &Timestamp) -> Result<u64, Error> {
    if ts.seconds < 0 || !(0..1_000_000_000).contains(&ts.nanos) {
        return Err(Error::invalid(field, "must be a valid instant after 1970"));
    }
    let secs = u64::try_from(ts.seconds).map_err(|_| Error::invalid(field, "out of range"))?;
    secs.checked_mul(1000)
        .and_then(|ms| ms.checked_add(u64::from(ts.nanos.unsigned_abs()) / 1_000_000))
        .filter(|ms| *ms < (1 << 50))
        .ok_or_else(|| Error::invalid(field, "out of range"))
}

/// A timestamp for Unix milliseconds.
pub fn timestamp(ms: u64) -> Timestamp {
    Timestamp {
        seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
    }
}

/// Checks a `ConfigureEventRequest`; `default_ttl` fills `admission_ttl_ms = 0`.
pub fn settings(
    req: &pb::ConfigureEventRequest,
    default_ttl: Duration,
) -> Result<(EventId, EventSettings), Error> {
    let event = event_id(&req.event_id)?;
    let state = match pb::SaleState::try_from(req.state) {
        Ok(pb::SaleState::Scheduled) => RequestedState::Scheduled,
        Ok(pb::SaleState::Open) => RequestedState::Open,
        Ok(pb::SaleState::Paused) => RequestedState::Paused,
        Ok(pb::SaleState::Closed) => RequestedState::Closed,
        Ok(pb::SaleState::Cancelled) => RequestedState::Cancelled,
        Ok(pb::SaleState::Unspecified) | Err(_) => {
            return Err(Error::invalid(
                "state",
                "must be SCHEDULED, OPEN, PAUSED or CLOSED",
            ));
        }
    };
    let onsale_ms = req
        .onsale_at
        .as_ref()
        .map(|ts| timestamp_ms("onsale_at", ts))
        .transpose()?;
    if state == RequestedState::Scheduled && onsale_ms.is_none() {
        return Err(Error::invalid(
            "onsale_at",
            "is required to schedule a sale",
        ));
    }
    let fans_per_minute = fans_per_minute(req.fans_per_minute)?;
    let ttl = match req.admission_ttl_ms {
        0 => default_ttl,
        ms => Duration::from_millis(ms),
    };
    if ttl < Duration::from_secs(1) || ttl > MAX_ADMISSION_TTL {
        return Err(Error::invalid(
            "admission_ttl_ms",
            "must be 0 (default) or 1000 to 86400000",
        ));
    }
    Ok((
        event,
        EventSettings {
            state,
            onsale_ms,
            fans_per_minute,
            active_fan_cap: req.active_fan_cap,
            admission_ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            no_show_ms: no_show_ms(req.admission_no_show_ms)?,
            waiting_list_offer_ms: waiting_list_offer_ms(req.waiting_list_offer_ms)?,
            floor: QueueFloor {
                admitted: queue_floor("admitted_floor", req.admitted_floor)?,
                numbered: queue_floor("numbered_floor", req.numbered_floor)?
                    .max(req.admitted_floor),
            },
        },
    ))
}

/// Checks `admission_no_show_ms`: 0 (off) up to [`MAX_ADMISSION_TTL`].
fn no_show_ms(value: u64) -> Result<u64, Error> {
    if u128::from(value) > MAX_ADMISSION_TTL.as_millis() {
        return Err(Error::invalid(
            "admission_no_show_ms",
            "must be 0 (off) to 86400000",
        ));
    }
    Ok(value)
}

/// The offer window when an event sets none: 10 minutes.
pub const DEFAULT_WAITING_LIST_OFFER_MS: u64 = 600_000;

/// Checks `waiting_list_offer_ms`: 0 (the default) or 1,000 up to
/// [`MAX_ADMISSION_TTL`].
fn waiting_list_offer_ms(value: u64) -> Result<u64, Error> {
    match value {
        0 => Ok(DEFAULT_WAITING_LIST_OFFER_MS),
        ms if ms >= 1000 && u128::from(ms) <= MAX_ADMISSION_TTL.as_millis() => Ok(ms),
        _ => Err(Error::invalid(
            "waiting_list_offer_ms",
            "must be 0 (default) or 1000 to 86400000",
        )),
    }
}

/// Highest queue number a floor may name: far above any queue, low enough that the
/// credit (number × 60,000 in Lua doubles) stays exact.
pub const MAX_QUEUE_FLOOR: u64 = 10_000_000_000;

/// Checks a `ConfigureEventRequest` floor.
fn queue_floor(field: &'static str, value: u64) -> Result<u64, Error> {
    if value > MAX_QUEUE_FLOOR {
        return Err(Error::invalid(
            field,
            format!("must be at most {MAX_QUEUE_FLOOR}"),
        ));
    }
    Ok(value)
}

/// Most seats an inventory report may count (per figure): far above any venue, low
/// enough that the cap's arithmetic in Redis (Lua doubles) stays exact.
pub const MAX_REPORTED_SEATS: u64 = 100_000_000;

/// How far ahead of this replica's clock a report's `as_of` may be. A report from
/// the future would make every later, true report look older and be ignored.
pub const MAX_REPORT_LEAD: Duration = Duration::from_secs(60);

/// Checks a `ReportInventoryRequest` received at `now_ms` (Unix ms).
pub fn inventory(
    req: &pb::ReportInventoryRequest,
    now_ms: u64,
) -> Result<(EventId, Inventory), Error> {
    let event = event_id(&req.event_id)?;
    let report = req
        .inventory
        .as_ref()
        .ok_or_else(|| Error::invalid("inventory", "is required"))?;
    for (field, value) in [
        ("inventory.free_seats", report.free_seats),
        ("inventory.held_seats", report.held_seats),
    ] {
        if value > MAX_REPORTED_SEATS {
            return Err(Error::invalid(
                field,
                format!("must be at most {MAX_REPORTED_SEATS}"),
            ));
        }
    }
    if report.holds > report.held_seats {
        return Err(Error::invalid(
            "inventory.holds",
            "must not exceed inventory.held_seats (every hold has a seat)",
        ));
    }
    let as_of = report
        .as_of
        .as_ref()
        .ok_or_else(|| Error::invalid("inventory.as_of", "is required"))?;
    let as_of_ms = timestamp_ms("inventory.as_of", as_of)?;
    let lead_ms = u64::try_from(MAX_REPORT_LEAD.as_millis()).unwrap_or(u64::MAX);
    if as_of_ms > now_ms.saturating_add(lead_ms) {
        return Err(Error::invalid(
            "inventory.as_of",
            format!(
                "is more than {} s ahead of the server's clock",
                MAX_REPORT_LEAD.as_secs()
            ),
        ));
    }
    Ok((
        event,
        Inventory {
            free_seats: report.free_seats,
            held_seats: report.held_seats,
            holds: report.holds,
            seats_per_fan_at_first: u64::from(report.max_seats_per_claim.max(1)),
            as_of_ms,
            covered_seats: 0,
        },
    ))
}

/// The `SaleState` shown for a snapshot (an open, paused sale shows `PAUSED`).
pub fn sale_state(snap: &QueueSnapshot) -> pb::SaleState {
    match snap.state {
        SaleState::Scheduled => pb::SaleState::Scheduled,
        SaleState::Open if snap.paused => pb::SaleState::Paused,
        SaleState::Open => pb::SaleState::Open,
        SaleState::Closed => pb::SaleState::Closed,
    }
}

/// Queue counters of a snapshot.
pub fn stats(event: &EventId, snap: &QueueSnapshot) -> pb::GetQueueStatsResponse {
    pb::GetQueueStatsResponse {
        event_id: event.to_string(),
        state: sale_state(snap) as i32,
        joined: snap.joined,
        admitted: snap.frontier,
        waiting: snap.waiting(),
        numbered: snap.numbered,
        revoked: snap.revocations,
        no_shows: snap.no_shows,
        fans_per_minute: snap.fans_per_minute,
        active_admitted: snap.active,
        active_fan_cap: snap.active_fan_cap,
        paused: snap.paused,
        as_of: Some(timestamp(snap.as_of_ms)),
        inventory: snap.inventory.map(|i| pb::InventoryReport {
            free_seats: i.free_seats,
            held_seats: i.held_seats,
            holds: i.holds,
            as_of: Some(timestamp(i.as_of_ms)),
            max_seats_per_claim: u32::try_from(i.seats_per_fan_at_first).unwrap_or(u32::MAX),
        }),
        inventory_fan_cap: snap.inventory.map_or(0, |i| i.fan_cap()),
        sold_out: snap.sold_out(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_past_any_queue_is_refused_naming_its_field() {
        for field in ["admitted_floor", "numbered_floor"] {
            let mut r = request();
            r.state = pb::SaleState::Open as i32;
            match field {
                "admitted_floor" => r.admitted_floor = MAX_QUEUE_FLOOR + 1,
                _ => r.numbered_floor = u64::MAX,
            }
            let error = settings(&r, Duration::from_secs(600)).unwrap_err();
            assert!(format!("{error:?}").contains(field), "{error:?}");
        }
        let mut r = request();
        r.admitted_floor = MAX_QUEUE_FLOOR;
        r.numbered_floor = 5;
        let (_, checked) = settings(&r, Duration::from_secs(600)).unwrap();
        assert_eq!(
            checked.floor.numbered, MAX_QUEUE_FLOOR,
            "never below admitted"
        );
    }

    fn request() -> pb::ConfigureEventRequest {
        pb::ConfigureEventRequest {
            event_id: "12".into(),
            state: pb::SaleState::Scheduled as i32,
            onsale_at: Some(timestamp(1_700_000_000_123)),
            fans_per_minute: 600,
            active_fan_cap: 0,
            admission_ttl_ms: 0,
            ..Default::default()
        }
    }

    #[test]
    fn settings_are_checked_field_by_field() {
        let (event, s) = settings(&request(), Duration::from_secs(600)).unwrap();
        assert_eq!(event.as_str(), "12");
        assert_eq!(s.onsale_ms, Some(1_700_000_000_123));
        assert_eq!(s.admission_ttl_ms, 600_000);
        type Spoil = fn(&mut pb::ConfigureEventRequest);
        assert_eq!(s.waiting_list_offer_ms, DEFAULT_WAITING_LIST_OFFER_MS);
        let cases: [(&str, Spoil); 9] = [
            ("event_id", |r| r.event_id = "x".into()),
            ("state", |r| r.state = 0),
            ("onsale_at", |r| r.onsale_at = None),
            ("onsale_at", |r| {
                r.onsale_at = Some(Timestamp {
                    seconds: -1,
                    nanos: 0,
                })
            }),
            ("fans_per_minute", |r| r.fans_per_minute = 0),
            ("admission_ttl_ms", |r| r.admission_ttl_ms = 999),
            ("admission_no_show_ms", |r| {
                r.admission_no_show_ms = 86_400_001
            }),
            ("waiting_list_offer_ms", |r| r.waiting_list_offer_ms = 999),
            ("waiting_list_offer_ms", |r| {
                r.waiting_list_offer_ms = 86_400_001
            }),
        ];
        for (field, spoil) in cases {
            let mut r = request();
            spoil(&mut r);
            match settings(&r, Duration::from_secs(600)) {
                Err(Error::InvalidField { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}

//! How `stadiumctl` shows answers: aligned tables for people, JSON for scripts.

use prost_types::Timestamp;
use serde_json::{Value, json};
use stadium_proto::box_office::v1 as pb;
use stadium_proto::common::v1::Money;

/// Columns padded to their widest cell, two spaces apart, a header line first.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned()
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// A timestamp as RFC 3339 UTC (empty when absent).
pub fn time(ts: Option<&Timestamp>) -> String {
    ts.and_then(|t| {
        chrono::DateTime::from_timestamp(t.seconds, u32::try_from(t.nanos).unwrap_or(0))
    })
    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    .unwrap_or_default()
}

/// Money as `12.50 EUR`-like text with the minor units shown as they are (`1250 EUR`).
pub fn money(m: Option<&Money>) -> String {
    m.map(|m| format!("{} {}", m.amount_minor, m.currency))
        .unwrap_or_default()
}

/// Money as JSON (`null` when absent).
pub fn money_json(m: Option<&Money>) -> Value {
    m.map_or(
        Value::Null,
        |m| json!({ "amount_minor": m.amount_minor, "currency": m.currency }),
    )
}

/// The status name without its prefix, lower case (`on_sale`).
pub fn status(s: i32) -> String {
    pb::EventStatus::try_from(s)
        .map(|s| {
            s.as_str_name()
                .trim_start_matches("EVENT_STATUS_")
                .to_ascii_lowercase()
        })
        .unwrap_or_else(|_| s.to_string())
}

/// A venue as JSON.
pub fn venue_json(v: &pb::Venue) -> Value {
    json!({
        "venue_id": v.venue_id,
        "name": v.name,
        "section_count": v.section_count,
        "seat_count": v.seat_count,
        "source_digest": v.source_digest,
        "created_at": time(v.created_at.as_ref()),
        "sections": v.sections.iter().map(|s| json!({
            "section_id": s.section_id,
            "code": s.code,
            "name": s.name,
            "row_count": s.row_count,
            "seat_count": s.seat_count,
            "seats_by_category": s.seats_by_category,
        })).collect::<Vec<_>>(),
    })
}

/// Venues as a table.
pub fn venues_table(venues: &[pb::Venue]) -> String {
    let rows: Vec<Vec<String>> = venues
        .iter()
        .map(|v| {
            vec![
                v.venue_id.clone(),
                v.name.clone(),
                v.section_count.to_string(),
                v.seat_count.to_string(),
                time(v.created_at.as_ref()),
            ]
        })
        .collect();
    table(&["VENUE", "NAME", "SECTIONS", "SEATS", "CREATED"], &rows)
}

/// One venue with its sections as tables.
pub fn venue_table(v: &pb::Venue) -> String {
    let mut out = venues_table(std::slice::from_ref(v));
    out.push('\n');
    let rows: Vec<Vec<String>> = v
        .sections
        .iter()
        .map(|s| {
            let mut cats: Vec<String> = s
                .seats_by_category
                .iter()
                .map(|(k, n)| format!("{k}={n}"))
                .collect();
            cats.sort();
            vec![
                s.section_id.to_string(),
                s.code.clone(),
                s.row_count.to_string(),
                s.seat_count.to_string(),
                cats.join(" "),
            ]
        })
        .collect();
    out.push_str(&table(
        &["SECTION", "CODE", "ROWS", "SEATS", "CATEGORIES"],
        &rows,
    ));
    out
}

/// An event's status as staff read it: `paused (from presale)` says what resuming
/// resumes.
pub fn event_status(e: &pb::Event) -> String {
    if e.paused_from == pb::EventStatus::Unspecified as i32 {
        status(e.status)
    } else {
        format!("{} (from {})", status(e.status), status(e.paused_from))
    }
}

/// An event as JSON.
pub fn event_json(e: &pb::Event) -> Value {
    let s = e.settings.clone().unwrap_or_default();
    json!({
        "event_id": e.event_id,
        "venue_id": e.venue_id,
        "status": status(e.status),
        "paused_from": (e.paused_from != pb::EventStatus::Unspecified as i32)
            .then(|| status(e.paused_from)),
        "presale_started_at": e.presale_started_at.as_ref().map(|t| time(Some(t))),
        "name": s.name,
        "starts_at": time(s.starts_at.as_ref()),
        "onsale_at": time(s.onsale_at.as_ref()),
        "hold_ttl_ms": s.hold_ttl_ms,
        "max_hold_lifetime_ms": s.max_hold_lifetime_ms,
        "max_seats_per_claim": s.max_seats_per_claim,
        "max_seats_per_fan": s.max_seats_per_fan,
        "admission_rate_per_min": s.admission_rate_per_min,
        "active_fan_cap": s.active_fan_cap,
        "admission_ttl_ms": s.admission_ttl_ms,
        "currency": s.currency,
        "price_categories": e.price_categories.iter().map(|c| json!({
            "code": c.code, "name": c.name, "price": money_json(c.price.as_ref()),
        })).collect::<Vec<_>>(),
        "created_at": time(e.created_at.as_ref()),
    })
}

/// Events as a table.
pub fn events_table(events: &[pb::Event]) -> String {
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let s = e.settings.clone().unwrap_or_default();
            vec![
                e.event_id.clone(),
                e.venue_id.clone(),
                event_status(e),
                s.name,
                time(s.onsale_at.as_ref()),
                time(s.starts_at.as_ref()),
                s.admission_rate_per_min.to_string(),
            ]
        })
        .collect();
    table(
        &[
            "EVENT", "VENUE", "STATUS", "NAME", "ONSALE", "STARTS", "RATE/MIN",
        ],
        &rows,
    )
}

/// One event with its prices as tables.
pub fn event_table(e: &pb::Event) -> String {
    let mut out = events_table(std::slice::from_ref(e));
    out.push('\n');
    let rows: Vec<Vec<String>> = e
        .price_categories
        .iter()
        .map(|c| vec![c.code.clone(), c.name.clone(), money(c.price.as_ref())])
        .collect();
    out.push_str(&table(&["CATEGORY", "NAME", "PRICE (MINOR UNITS)"], &rows));
    out
}

/// A push report as JSON.
pub fn push_json(p: Option<&pb::WaitingRoomPush>) -> Value {
    p.map_or(Value::Null, |p| {
        json!({
            "outcome": pb::PushOutcome::try_from(p.outcome)
                .map(|o| o.as_str_name().trim_start_matches("PUSH_OUTCOME_").to_ascii_lowercase())
                .unwrap_or_default(),
            "detail": p.detail,
            "attempts": p.attempts,
        })
    })
}

/// A push report as one line.
pub fn push_line(p: Option<&pb::WaitingRoomPush>) -> String {
    let v = push_json(p);
    let detail = v["detail"].as_str().unwrap_or_default();
    format!(
        "waiting room: {}{}",
        v["outcome"].as_str().unwrap_or("unknown"),
        if detail.is_empty() {
            String::new()
        } else {
            format!(" ({detail})")
        }
    )
}

/// A report row as JSON.
pub fn report_row_json(r: &pb::ReportRow) -> Value {
    json!({
        "key": r.key, "seats": r.seats, "available": r.available, "held": r.held,
        "sold": r.sold, "blocked": r.blocked, "comps": r.comps,
        "waiting_list_sold": r.waiting_list_sold,
        "revenue": money_json(r.revenue.as_ref()), "refunds": r.refunds,
        "refunded": money_json(r.refunded.as_ref()),
    })
}

/// A sales report as a table with the total last.
pub fn report_table(rows: &[pb::ReportRow], total: Option<&pb::ReportRow>) -> String {
    let cells = |r: &pb::ReportRow| {
        vec![
            r.key.clone(),
            r.seats.to_string(),
            r.available.to_string(),
            r.held.to_string(),
            r.sold.to_string(),
            r.blocked.to_string(),
            r.comps.to_string(),
            r.waiting_list_sold.to_string(),
            money(r.revenue.as_ref()),
            r.refunds.to_string(),
            money(r.refunded.as_ref()),
        ]
    };
    let lines: Vec<Vec<String>> = rows.iter().chain(total).map(cells).collect();
    table(
        &[
            "KEY",
            "SEATS",
            "AVAILABLE",
            "HELD",
            "SOLD",
            "BLOCKED",
            "COMPS",
            "WAITLIST",
            "REVENUE",
            "REFUNDS",
            "REFUNDED",
        ],
        &lines,
    )
}

/// Violations as JSON.
pub fn violations_json(r: &pb::CheckInvariantsResponse) -> Value {
    json!({
        "event_id": r.event_id,
        "checked_at": time(r.checked_at.as_ref()),
        "violations": r.violations.iter().map(|v| json!({
            "invariant": v.invariant, "description": v.description, "rows": v.rows,
        })).collect::<Vec<_>>(),
    })
}

/// Violations for people: one block per broken invariant.
pub fn violations_text(r: &pb::CheckInvariantsResponse) -> String {
    if r.violations.is_empty() {
        return format!("event {}: every invariant holds\n", r.event_id);
    }
    let mut out = format!(
        "event {}: {} invariant(s) violated\n",
        r.event_id,
        r.violations.len()
    );
    for v in &r.violations {
        out.push_str(&format!("\n{} — {}\n", v.invariant, v.description));
        for row in &v.rows {
            out.push_str(&format!("  {row}\n"));
        }
    }
    out
}

/// An event's waiting list as a table of figures.
pub fn waiting_list_text(w: &pb::GetWaitingListResponse) -> String {
    table(
        &[
            "waiting",
            "open offers",
            "made",
            "used (sales)",
            "lapsed",
            "seats/offer",
            "offer window",
        ],
        &[vec![
            w.waiting.to_string(),
            w.open_offers.to_string(),
            w.offers_made.to_string(),
            w.offers_used.to_string(),
            w.offers_lapsed.to_string(),
            w.seats_per_offer.to_string(),
            format!("{} s", w.offer_ms / 1000),
        ]],
    )
}

/// An event's waiting list as JSON, field names as in the proto.
pub fn waiting_list_json(w: &pb::GetWaitingListResponse) -> Value {
    json!({
        "event_id": w.event_id,
        "waiting": w.waiting,
        "open_offers": w.open_offers,
        "offers_made": w.offers_made,
        "offers_used": w.offers_used,
        "offers_lapsed": w.offers_lapsed,
        "seats_per_offer": w.seats_per_offer,
        "offer_ms": w.offer_ms,
        "as_of": time(w.as_of.as_ref()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let t = table(&["A", "LONG"], &[vec!["wide cell".into(), "x".into()]]);
        assert_eq!(t, "A          LONG\nwide cell  x\n");
    }

    #[test]
    fn statuses_and_times_read_well() {
        assert_eq!(status(pb::EventStatus::OnSale as i32), "on_sale");
        assert_eq!(status(pb::EventStatus::Presale as i32), "presale");
        let paused = pb::Event {
            status: pb::EventStatus::Paused as i32,
            paused_from: pb::EventStatus::Presale as i32,
            ..Default::default()
        };
        assert_eq!(event_status(&paused), "paused (from presale)");
        assert_eq!(event_json(&paused)["paused_from"], "presale");
        let on_sale = pb::Event {
            status: pb::EventStatus::OnSale as i32,
            ..Default::default()
        };
        assert_eq!(event_status(&on_sale), "on_sale");
        assert!(event_json(&on_sale)["paused_from"].is_null());
        assert_eq!(
            time(Some(&Timestamp {
                seconds: 0,
                nanos: 0
            })),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(time(None), "");
    }
}

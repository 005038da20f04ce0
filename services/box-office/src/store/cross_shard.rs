//! The invariants of an event whose seats are on several databases (issue 16), checked
//! by reading each database and joining here: the same four invariants, in the same
//! words, as `catalog.invariant_violations` checks on one database (see
//! [`invariants`](super::invariants)), each offending row naming the shard its claim is
//! on. A seat active on two shards at once breaks `two_active_claims` like a seat
//! claimed twice on one.
//!
//! There is no snapshot across databases: each is read once, the main database last,
//! and the grace that spares half-done bookings on one database (seats booked a moment
//! before their payment is captured) spares them here too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use stadium_db::Shards;

use super::invariants::{INVARIANTS, Violation};
use crate::error::Result;

/// One active claim row (held, booked or blocked) of the event on one database.
#[derive(Debug, sqlx::FromRow)]
struct Claim {
    seat_id: i64,
    /// The section the claim names.
    section_id: i64,
    hold_key: uuid::Uuid,
    status: String,
    kind: String,
    /// A held row past its expiry (still active for the unique index, free for counts).
    lapsed: bool,
    /// Changed before the grace.
    settled: bool,
}

/// One payment of the event (main database).
#[derive(Debug, sqlx::FromRow)]
struct Payment {
    payment_id: uuid::Uuid,
    hold_key: uuid::Uuid,
    status: String,
    amount_minor: i64,
    currency: String,
    settled: bool,
}

/// Every violation of event `event_id` over the databases of `shards`, rows changed
/// within `grace` left out of the payment checks.
///
/// # Errors
/// [`crate::error::Error::Database`] from any database.
pub async fn check(shards: &Shards, event_id: i64, grace: Duration) -> Result<Vec<Violation>> {
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let mut claims: Vec<(String, Claim)> = Vec::new();
    for (shard, pool) in shards.all() {
        let rows: Vec<Claim> = sqlx::query_as(
            "SELECT seat_id, section_id, hold_key, status, kind, \
                    status = 'held' AND expires_at <= now() AS lapsed, \
                    updated_at < now() - make_interval(secs => $2 / 1000.0) AS settled \
               FROM holds.seat_holds \
              WHERE event_id = $1 AND status IN ('held', 'booked', 'blocked') \
              ORDER BY seat_id",
        )
        .bind(event_id)
        .bind(grace_ms)
        .fetch_all(pool)
        .await?;
        claims.extend(rows.into_iter().map(|c| (shard.to_owned(), c)));
    }
    let main = shards.main();
    let payments: Vec<Payment> = sqlx::query_as(
        "SELECT payment_id, hold_key, status, amount_minor, currency::text AS currency, \
                updated_at < now() - make_interval(secs => $2 / 1000.0) AS settled \
           FROM payments.payments WHERE event_id = $1 ORDER BY created_at, payment_id",
    )
    .bind(event_id)
    .bind(grace_ms)
    .fetch_all(main)
    .await?;
    let tickets: Vec<(i64, uuid::Uuid, uuid::Uuid)> = sqlx::query_as(
        "SELECT t.seat_id, t.ticket_id, p.hold_key \
           FROM payments.tickets t JOIN payments.payments p ON p.payment_id = t.payment_id \
          WHERE t.event_id = $1 AND t.status = 'valid' ORDER BY t.seat_id",
    )
    .bind(event_id)
    .fetch_all(main)
    .await?;
    let sections: Vec<(i64, String, i64)> = sqlx::query_as(
        "SELECT sc.section_id, sc.code, count(*) \
           FROM catalog.events e \
           JOIN catalog.sections sc ON sc.venue_id = e.venue_id \
           JOIN catalog.seats s ON s.section_id = sc.section_id \
          WHERE e.event_id = $1 GROUP BY sc.section_id, sc.code ORDER BY sc.section_id",
    )
    .bind(event_id)
    .fetch_all(main)
    .await?;

    // The section each claimed seat is in, by the main database's catalog.
    let mut seat_ids: Vec<i64> = claims.iter().map(|(_, c)| c.seat_id).collect();
    seat_ids.sort_unstable();
    seat_ids.dedup();
    let seat_sections: HashMap<i64, i64> =
        sqlx::query_as("SELECT seat_id, section_id FROM catalog.seats WHERE seat_id = ANY($1)")
            .bind(&seat_ids)
            .fetch_all(main)
            .await?
            .into_iter()
            .collect();

    let lines = [
        two_active_claims(&claims, &tickets),
        booked_without_payment(&claims, &payments),
        payment_without_seats(&claims, &payments),
        counts_do_not_add_up(&claims, &seat_sections, &sections),
    ];
    Ok(INVARIANTS
        .into_iter()
        .zip(lines)
        .filter(|(_, rows)| !rows.is_empty())
        .map(|((invariant, description), rows)| Violation {
            invariant,
            description,
            rows,
        })
        .collect())
}

/// Seats with more than one active claim, on one shard or several; valid tickets
/// whose seat is claimed under another hold.
fn two_active_claims(
    claims: &[(String, Claim)],
    tickets: &[(i64, uuid::Uuid, uuid::Uuid)],
) -> Vec<String> {
    let mut by_seat: BTreeMap<i64, Vec<&(String, Claim)>> = BTreeMap::new();
    for claim in claims {
        by_seat.entry(claim.1.seat_id).or_default().push(claim);
    }
    let mut lines: Vec<String> = by_seat
        .iter()
        .filter(|(_, claims)| claims.len() > 1)
        .map(|(seat, claims)| {
            let list: Vec<String> = claims
                .iter()
                .map(|(shard, c)| format!("{} {} shard={shard}", c.hold_key, c.status))
                .collect();
            format!("seat_id={seat} claims=[{}]", list.join(", "))
        })
        .collect();
    for (seat, ticket, order) in tickets {
        for (shard, claim) in by_seat.get(seat).into_iter().flatten() {
            if claim.hold_key != *order {
                lines.push(format!(
                    "seat_id={seat} ticket={ticket} order_hold_key={order} claim_hold_key={} \
                     claim_status={} shard={shard}",
                    claim.hold_key, claim.status
                ));
            }
        }
    }
    lines.sort();
    lines
}

/// Booked seats, settled, whose hold has no captured payment, comp or refund under way.
fn booked_without_payment(claims: &[(String, Claim)], payments: &[Payment]) -> Vec<String> {
    let mut by_hold: HashMap<uuid::Uuid, &Payment> = HashMap::new();
    for payment in payments {
        by_hold.entry(payment.hold_key).or_insert(payment);
    }
    claims
        .iter()
        .filter(|(_, c)| c.status == "booked" && c.settled)
        .filter_map(|(shard, c)| {
            let payment = by_hold.get(&c.hold_key);
            let paid = payment.is_some_and(|p| {
                matches!(p.status.as_str(), "captured" | "comp" | "refund_pending")
            });
            (!paid).then(|| {
                let payment = payment.map_or_else(
                    || "none".to_owned(),
                    |p| format!("{} {}", p.payment_id, p.status),
                );
                format!(
                    "seat_id={} hold_key={} kind={} payment={payment} shard={shard}",
                    c.seat_id, c.hold_key, c.kind
                )
            })
        })
        .collect()
}

/// Captured payments and comps, settled, with no booked seat on any shard.
fn payment_without_seats(claims: &[(String, Claim)], payments: &[Payment]) -> Vec<String> {
    let booked: HashSet<uuid::Uuid> = claims
        .iter()
        .filter(|(_, c)| c.status == "booked")
        .map(|(_, c)| c.hold_key)
        .collect();
    payments
        .iter()
        .filter(|p| matches!(p.status.as_str(), "captured" | "comp") && p.settled)
        .filter(|p| !booked.contains(&p.hold_key))
        .map(|p| {
            format!(
                "payment_id={} hold_key={} status={} amount={} {}",
                p.payment_id, p.hold_key, p.status, p.amount_minor, p.currency
            )
        })
        .collect()
}

/// Per section, sold + held + blocked + available = seats, counting every shard's
/// unexpired claims by the section they name and the seats taken by the section the
/// catalog puts them in (a seat unavailable on two shards, or claimed under another
/// section, breaks it).
fn counts_do_not_add_up(
    claims: &[(String, Claim)],
    seat_sections: &HashMap<i64, i64>,
    sections: &[(i64, String, i64)],
) -> Vec<String> {
    #[derive(Default)]
    struct Counted {
        sold: i64,
        held: i64,
        blocked: i64,
        taken: HashSet<i64>,
    }
    let mut counted: BTreeMap<i64, Counted> = BTreeMap::new();
    for (_, c) in claims.iter().filter(|(_, c)| !c.lapsed) {
        let named = counted.entry(c.section_id).or_default();
        match c.status.as_str() {
            "booked" => named.sold += 1,
            "held" => named.held += 1,
            _ => named.blocked += 1,
        }
        // A seat the catalog does not know counts against the section it is claimed in.
        let actual = seat_sections
            .get(&c.seat_id)
            .copied()
            .unwrap_or(c.section_id);
        counted.entry(actual).or_default().taken.insert(c.seat_id);
    }
    let mut lines = Vec::new();
    let known: HashSet<i64> = sections.iter().map(|(id, _, _)| *id).collect();
    let unknown = counted
        .keys()
        .filter(|id| !known.contains(id))
        .map(|id| (*id, "?".to_owned(), 0));
    for (id, code, seats) in sections.iter().cloned().chain(unknown.collect::<Vec<_>>()) {
        let c = counted.remove(&id).unwrap_or_default();
        let available = seats - i64::try_from(c.taken.len()).unwrap_or(i64::MAX);
        if seats != c.sold + c.held + c.blocked + available {
            lines.push(format!(
                "section_id={id} code={code} seats={seats} sold={} held={} blocked={} available={available}",
                c.sold, c.held, c.blocked
            ));
        }
    }
    lines
}

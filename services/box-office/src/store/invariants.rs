//! The invariant queries (docs/architecture.md, "Invariants"), for one event. Each returns the offending rows
//! rendered as text; an empty answer means the invariant holds.
//!
//! 1. `two_active_claims`: at most one active claim per seat. The partial unique index
//!    already forbids two active `seat_holds` rows, and this checks that still holds;
//!    it also finds a seat whose valid ticket belongs to one order while an active
//!    claim of another hold sits on it (a refund that released the seat without
//!    voiding the ticket).
//! 2. `booked_without_payment`: every booked seat has a captured payment (or a comp,
//!    or a refund under way) under its hold key.
//! 3. `payment_without_seats`: every captured payment (or comp) has booked seats.
//! 4. `counts_do_not_add_up`: per section, sold + held + blocked + available = seats.
//!
//! Checks 2 and 3 skip rows changed within `grace`: seats are booked a moment before
//! their payment is captured, and a comp is booked a moment before it is recorded.

use std::time::Duration;

use sqlx::PgConnection;

use crate::error::Result;

/// One broken invariant with its rows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// `two_active_claims`, `booked_without_payment`, `payment_without_seats` or
    /// `counts_do_not_add_up`.
    pub invariant: &'static str,
    /// What the invariant says.
    pub description: &'static str,
    /// The offending rows, one line each.
    pub rows: Vec<String>,
}

async fn rows(
    conn: &mut PgConnection,
    sql: &str,
    event_id: i64,
    grace_ms: Option<i64>,
) -> Result<Vec<String>> {
    let mut query = sqlx::query_scalar(sql).bind(event_id);
    if let Some(grace_ms) = grace_ms {
        query = query.bind(grace_ms);
    }
    Ok(query.fetch_all(conn).await?)
}

const TWO_ACTIVE_CLAIMS: &str = "
    SELECT format('seat_id=%s claims=[%s]', seat_id,
                  string_agg(format('%s %s', hold_key, status), ', ' ORDER BY seat_hold_id))
    FROM holds.seat_holds
    WHERE event_id = $1 AND status IN ('held', 'booked', 'blocked')
    GROUP BY seat_id HAVING count(*) > 1
    UNION ALL
    SELECT format('seat_id=%s ticket=%s order_hold_key=%s claim_hold_key=%s claim_status=%s',
                  t.seat_id, t.ticket_id, p.hold_key, h.hold_key, h.status)
    FROM payments.tickets t
    JOIN payments.payments p ON p.payment_id = t.payment_id
    JOIN holds.seat_holds h
      ON h.event_id = t.event_id AND h.seat_id = t.seat_id
     AND h.status IN ('held', 'booked', 'blocked') AND h.hold_key <> p.hold_key
    WHERE t.event_id = $1 AND t.status = 'valid'
    ORDER BY 1";

const BOOKED_WITHOUT_PAYMENT: &str = "
    SELECT format('seat_id=%s hold_key=%s kind=%s payment=%s', h.seat_id, h.hold_key, h.kind,
                  coalesce(p.payment_id::text || ' ' || p.status, 'none'))
    FROM holds.seat_holds h
    LEFT JOIN payments.payments p ON p.hold_key = h.hold_key
    WHERE h.event_id = $1 AND h.status = 'booked'
      AND h.updated_at < now() - make_interval(secs => $2 / 1000.0)
      AND (p.payment_id IS NULL OR p.status NOT IN ('captured', 'comp', 'refund_pending'))
    ORDER BY h.seat_id";

const PAYMENT_WITHOUT_SEATS: &str = "
    SELECT format('payment_id=%s hold_key=%s status=%s amount=%s %s', p.payment_id, p.hold_key,
                  p.status, p.amount_minor, p.currency)
    FROM payments.payments p
    WHERE p.event_id = $1 AND p.status IN ('captured', 'comp')
      AND p.updated_at < now() - make_interval(secs => $2 / 1000.0)
      -- The status sits in a FILTER, not the WHERE, so only the hold-key index serves
      -- this lookup: without statistics the planner would otherwise AND in a partial
      -- status index and scan all of the event's claims once per payment.
      AND (SELECT count(*) FILTER (WHERE h.status = 'booked')
           FROM holds.seat_holds h WHERE h.hold_key = p.hold_key) = 0
    ORDER BY p.created_at, p.payment_id";

// Seats come from the catalog, claims are counted twice: by the section each claim
// row names, and by the section its seat really is in (distinct seats). A claim naming
// the wrong section, a seat outside the venue or two claims on one seat make the two
// counts disagree. Claims are joined to seats by primary key only, so the plan stays
// cheap without statistics (see the sales report).
const COUNTS_DO_NOT_ADD_UP: &str = "
    WITH secs AS (
        SELECT sc.section_id, sc.code, count(*) AS seats
        FROM catalog.events e
        JOIN catalog.sections sc ON sc.venue_id = e.venue_id
        JOIN catalog.seats s ON s.section_id = sc.section_id
        WHERE e.event_id = $1
        GROUP BY sc.section_id, sc.code),
    claims AS (
        SELECT section_id,
               count(*) FILTER (WHERE status = 'held') AS held,
               count(*) FILTER (WHERE status = 'booked') AS sold,
               count(*) FILTER (WHERE status = 'blocked') AS blocked
        FROM holds.unavailable_seats WHERE event_id = $1
        GROUP BY section_id),
    taken AS (
        SELECT s.section_id, count(DISTINCT u.seat_id) AS taken
        FROM holds.unavailable_seats u
        JOIN catalog.seats s ON s.seat_id = u.seat_id
        JOIN catalog.events e ON e.event_id = u.event_id AND e.venue_id = s.venue_id
        WHERE u.event_id = $1
        GROUP BY s.section_id),
    counted AS (
        SELECT section_id, code, coalesce(seats, 0) AS seats, coalesce(sold, 0) AS sold,
               coalesce(held, 0) AS held, coalesce(blocked, 0) AS blocked,
               coalesce(seats, 0) - coalesce(taken, 0) AS available
        FROM secs FULL JOIN claims USING (section_id) FULL JOIN taken USING (section_id))
    SELECT format('section_id=%s code=%s seats=%s sold=%s held=%s blocked=%s available=%s',
                  section_id, coalesce(code, '?'), seats, sold, held, blocked, available)
    FROM counted
    WHERE seats <> sold + held + blocked + available
    ORDER BY section_id";

/// One invariant query.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// The invariant's name.
    pub invariant: &'static str,
    /// What it says.
    pub description: &'static str,
    /// The query: `$1` the event id and, when `graced`, `$2` the grace in milliseconds;
    /// one text column, one row per offence.
    pub sql: &'static str,
    /// Whether the query skips rows changed within the grace period.
    pub graced: bool,
}

/// The four invariant queries, in report order.
pub const CHECKS: [Check; 4] = [
    Check {
        invariant: "two_active_claims",
        description: "a seat has at most one active claim (held, booked or blocked), and a valid ticket only under its own hold",
        sql: TWO_ACTIVE_CLAIMS,
        graced: false,
    },
    Check {
        invariant: "booked_without_payment",
        description: "every booked seat has a captured payment or a comp under its hold key",
        sql: BOOKED_WITHOUT_PAYMENT,
        graced: true,
    },
    Check {
        invariant: "payment_without_seats",
        description: "every captured payment or comp has booked seats",
        sql: PAYMENT_WITHOUT_SEATS,
        graced: true,
    },
    Check {
        invariant: "counts_do_not_add_up",
        description: "per section, sold + held + blocked + available = seats",
        sql: COUNTS_DO_NOT_ADD_UP,
        graced: false,
    },
];

/// Every violation of event `event_id` (which the caller has checked exists).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn check(
    conn: &mut PgConnection,
    event_id: i64,
    grace: Duration,
) -> Result<Vec<Violation>> {
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let mut violations = Vec::new();
    for check in &CHECKS {
        let found = rows(
            &mut *conn,
            check.sql,
            event_id,
            check.graced.then_some(grace_ms),
        )
        .await?;
        if !found.is_empty() {
            violations.push(Violation {
                invariant: check.invariant,
                description: check.description,
                rows: found,
            });
        }
    }
    Ok(violations)
}

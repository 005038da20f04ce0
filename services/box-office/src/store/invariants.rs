//! The invariant queries of the design, for one event. Each returns the offending rows
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
//! Checks 2 and 3 skip rows changed within `grace`: a payment is captured a moment
//! before its seats are booked, and a comp is booked a moment before it is recorded.

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
      AND NOT EXISTS (SELECT 1 FROM holds.seat_holds h
                      WHERE h.hold_key = p.hold_key AND h.status = 'booked')
    ORDER BY p.created_at, p.payment_id";

// Seats and availability come from the catalog; claims are counted by the section the
// claim row names. A claim naming the wrong section, or a seat outside the venue,
// makes the two sides disagree.
const COUNTS_DO_NOT_ADD_UP: &str = "
    WITH secs AS (
        SELECT sc.section_id, sc.code, count(*) AS seats,
               count(*) FILTER (WHERE NOT EXISTS (
                   SELECT 1 FROM holds.unavailable_seats u
                   WHERE u.event_id = $1 AND u.seat_id = s.seat_id)) AS available
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
        GROUP BY section_id)
    SELECT format('section_id=%s code=%s seats=%s sold=%s held=%s blocked=%s available=%s',
                  section_id, coalesce(code, '?'), coalesce(seats, 0), coalesce(sold, 0),
                  coalesce(held, 0), coalesce(blocked, 0), coalesce(available, 0))
    FROM secs FULL JOIN claims USING (section_id)
    WHERE coalesce(seats, 0)
          <> coalesce(sold, 0) + coalesce(held, 0) + coalesce(blocked, 0) + coalesce(available, 0)
    ORDER BY section_id";

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
    let checks = [
        (
            "two_active_claims",
            "a seat has at most one active claim (held, booked or blocked), and a valid ticket only under its own hold",
            TWO_ACTIVE_CLAIMS,
            false,
        ),
        (
            "booked_without_payment",
            "every booked seat has a captured payment or a comp under its hold key",
            BOOKED_WITHOUT_PAYMENT,
            true,
        ),
        (
            "payment_without_seats",
            "every captured payment or comp has booked seats",
            PAYMENT_WITHOUT_SEATS,
            true,
        ),
        (
            "counts_do_not_add_up",
            "per section, sold + held + blocked + available = seats",
            COUNTS_DO_NOT_ADD_UP,
            false,
        ),
    ];
    let mut violations = Vec::new();
    for (invariant, description, sql, graced) in checks {
        let found = rows(&mut *conn, sql, event_id, graced.then_some(grace_ms)).await?;
        if !found.is_empty() {
            violations.push(Violation {
                invariant,
                description,
                rows: found,
            });
        }
    }
    Ok(violations)
}

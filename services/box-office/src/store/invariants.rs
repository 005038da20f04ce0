//! The invariants (docs/architecture.md, "Invariants") of one event, checked by the
//! database function `catalog.invariant_violations` (migrations `20261202010000`,
//! `20261202010001`), one invariant per statement: the one copy the canary, the
//! on-sale's check and the tests share.
//!
//! 1. `two_active_claims`: at most one active claim per seat, and a valid ticket only
//!    under its own hold (a refund that released the seat without voiding the ticket
//!    shows here).
//! 2. `booked_without_payment`: every booked seat has a captured payment (or a comp,
//!    or a refund under way) under its hold key.
//! 3. `payment_without_seats`: every captured payment (or comp) has booked seats.
//! 4. `counts_do_not_add_up`: per section, sold + held + blocked + available = seats.
//!
//! Checks 2 and 3 skip rows changed within the grace: seats are booked a moment before
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

/// The invariants, in report order: name and what it says.
pub const INVARIANTS: [(&str, &str); 4] = [
    (
        "two_active_claims",
        "a seat has at most one active claim (held, booked or blocked), and a valid ticket only under its own hold",
    ),
    (
        "booked_without_payment",
        "every booked seat has a captured payment or a comp under its hold key",
    ),
    (
        "payment_without_seats",
        "every captured payment or comp has booked seats",
    ),
    (
        "counts_do_not_add_up",
        "per section, sold + held + blocked + available = seats",
    ),
];

/// Every violation of event `event_id` (which the caller has checked exists), rows
/// changed within `grace` left out of checks 2 and 3. Each invariant is its own
/// statement, so each gets the whole statement timeout.
///
/// # Errors
/// [`Error::Database`].
pub async fn check(
    conn: &mut PgConnection,
    event_id: i64,
    grace: Duration,
) -> Result<Vec<Violation>> {
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let mut violations = Vec::new();
    for (invariant, description) in INVARIANTS {
        // Each row is one line describing an offending row, never NULL.
        let rows = sqlx::query_scalar!(
            r#"SELECT catalog.invariant_violations($1, $2, $3) AS "line!""#,
            event_id,
            grace_ms,
            invariant
        )
        .fetch_all(&mut *conn)
        .await?;
        if !rows.is_empty() {
            violations.push(Violation {
                invariant,
                description,
                rows,
            });
        }
    }
    Ok(violations)
}

//! Sales reports read from the catalog, the holds' availability view and payments.
//!
//! Money is attributed to seats: each order's kept money (captured minus refunded) and
//! refunded money are split evenly over the seats of its hold, the remainder going to
//! the lowest seat id, so per-section and per-category sums add up to the order totals
//! exactly.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::error::Result;

/// How report rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// By section code, in plan order.
    Section,
    /// By price category code.
    Category,
}

/// One report row; counts are seats, money is minor units of the event's currency.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct ReportLine {
    /// Section code or category code.
    pub key: String,
    /// Seats.
    pub seats: i64,
    /// Seats with no active claim.
    pub available: i64,
    /// Held by fans, not lapsed.
    pub held: i64,
    /// Booked, comps included.
    pub sold: i64,
    /// Blocked by the box office.
    pub blocked: i64,
    /// Booked as comps.
    pub comps: i64,
    /// Money kept (captured minus refunded).
    pub revenue_minor: i64,
    /// Seats of refunded orders.
    pub refunds: i64,
    /// Money refunded.
    pub refunded_minor: i64,
}

impl ReportLine {
    /// Adds `other`'s counts and money to this line.
    pub fn add(&mut self, other: &ReportLine) {
        self.seats += other.seats;
        self.available += other.available;
        self.held += other.held;
        self.sold += other.sold;
        self.blocked += other.blocked;
        self.comps += other.comps;
        self.revenue_minor += other.revenue_minor;
        self.refunds += other.refunds;
        self.refunded_minor += other.refunded_minor;
    }
}

/// The per-group lines of event `event_id` (which the caller has checked exists).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn sales(
    conn: &mut PgConnection,
    event_id: i64,
    grouping: Grouping,
) -> Result<Vec<ReportLine>> {
    Ok(sqlx::query_as(&sales_sql(grouping))
        .bind(event_id)
        .fetch_all(conn)
        .await?)
}

/// The SQL of [`sales`] for `grouping` (one parameter, the event id).
pub fn sales_sql(grouping: Grouping) -> String {
    // The key expressions come from this enum, never from the request.
    let (key, order) = match grouping {
        Grouping::Section => ("sc.code", "k.sort_order, k.key"),
        Grouping::Category => ("s.category_code", "k.key"),
    };
    // Claims and money are grouped on their own and joined to the seats only through
    // primary-key lookups, so the plan stays cheap even when the planner has no
    // statistics for a table filled minutes ago (a sale's first minutes): a join of
    // every seat with every claim degenerates into seats x claims comparisons.
    format!(
        "WITH ev AS (SELECT venue_id FROM catalog.events WHERE event_id = $1),
         seats AS (
             SELECT {key} AS key, min(sc.sort_order) AS sort_order, count(*) AS seats
             FROM ev JOIN catalog.seats s ON s.venue_id = ev.venue_id
             JOIN catalog.sections sc ON sc.section_id = s.section_id
             GROUP BY {key}),
         claims AS (
             SELECT {key} AS key,
                    count(*) FILTER (WHERE a.status = 'held') AS held,
                    count(*) FILTER (WHERE a.status = 'booked') AS sold,
                    count(*) FILTER (WHERE a.status = 'blocked') AS blocked,
                    count(*) FILTER (WHERE a.status = 'booked' AND a.kind = 'comp') AS comps
             FROM holds.unavailable_seats a
             JOIN catalog.seats s ON s.seat_id = a.seat_id
             JOIN catalog.sections sc ON sc.section_id = s.section_id
             WHERE a.event_id = $1
             GROUP BY {key}),
         orders AS (
             SELECT p.hold_key, p.amount_minor - p.refunded_minor AS kept, p.refunded_minor
             FROM payments.payments p
             WHERE p.event_id = $1 AND p.status IN ('captured', 'refund_pending', 'refunded')),
         order_seats AS (
             SELECT h.seat_id, o.kept, o.refunded_minor,
                    row_number() OVER (PARTITION BY o.hold_key ORDER BY h.seat_id) AS rn,
                    count(*) OVER (PARTITION BY o.hold_key) AS n
             FROM orders o JOIN holds.seat_holds h ON h.hold_key = o.hold_key),
         money AS (
             SELECT {key} AS key,
                    sum(m.kept / m.n + CASE WHEN m.rn = 1 THEN m.kept % m.n ELSE 0 END)::bigint AS kept,
                    sum(m.refunded_minor / m.n
                        + CASE WHEN m.rn = 1 THEN m.refunded_minor % m.n ELSE 0 END)::bigint AS refunded,
                    count(*) FILTER (WHERE m.refunded_minor > 0) AS refunds
             FROM order_seats m
             JOIN catalog.seats s ON s.seat_id = m.seat_id
             JOIN catalog.sections sc ON sc.section_id = s.section_id
             GROUP BY {key})
         SELECT k.key,
                k.seats,
                k.seats - coalesce(c.held + c.sold + c.blocked, 0) AS available,
                coalesce(c.held, 0) AS held,
                coalesce(c.sold, 0) AS sold,
                coalesce(c.blocked, 0) AS blocked,
                coalesce(c.comps, 0) AS comps,
                coalesce(m.kept, 0)::bigint AS revenue_minor,
                coalesce(m.refunds, 0)::bigint AS refunds,
                coalesce(m.refunded, 0)::bigint AS refunded_minor
         FROM seats k
         LEFT JOIN claims c ON c.key = k.key
         LEFT JOIN money m ON m.key = k.key
         ORDER BY {order}"
    )
}

/// One bucket of the sales timeline.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct TimelineBucket {
    /// Start of the bucket.
    pub bucket_start: DateTime<Utc>,
    /// Tickets issued in the bucket (comps included).
    pub sold: i64,
    /// Tickets of orders refunded in the bucket.
    pub refunded: i64,
    /// Money captured by orders sold in the bucket, minor units.
    pub revenue_minor: i64,
}

/// Sales of event `event_id` per `bucket_ms`-wide bucket (aligned to the Unix epoch),
/// oldest first; buckets without activity are left out.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn timeline(
    conn: &mut PgConnection,
    event_id: i64,
    bucket_ms: i64,
) -> Result<Vec<TimelineBucket>> {
    Ok(sqlx::query_as(
        "WITH ticks AS (
             SELECT t.payment_id, t.issued_at, p.status, p.amount_minor, p.updated_at
             FROM payments.tickets t JOIN payments.payments p ON p.payment_id = t.payment_id
             WHERE t.event_id = $1),
         events AS (
             SELECT issued_at AS at, 1 AS sold, 0 AS refunded, 0::bigint AS revenue FROM ticks
             UNION ALL
             SELECT updated_at, 0, 1, 0 FROM ticks WHERE status = 'refunded'
             UNION ALL
             SELECT min(issued_at), 0, 0, min(amount_minor) FROM ticks
             WHERE status IN ('captured', 'refund_pending', 'refunded')
             GROUP BY payment_id)
         SELECT to_timestamp((floor(extract(epoch FROM at) * 1000 / $2) * $2) / 1000.0) AS bucket_start,
                sum(sold)::bigint AS sold, sum(refunded)::bigint AS refunded,
                sum(revenue)::bigint AS revenue_minor
         FROM events GROUP BY 1 ORDER BY 1",
    )
    .bind(event_id)
    .bind(bucket_ms)
    .fetch_all(conn)
    .await?)
}

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
    // The key expressions come from this enum, never from the request.
    let (key, order) = match grouping {
        Grouping::Section => ("s.section_code", "min(s.sort_order)"),
        Grouping::Category => ("s.category_code", "s.category_code"),
    };
    let sql = format!(
        "WITH seats AS (
             SELECT s.seat_id, sc.code AS section_code, sc.sort_order, s.category_code
             FROM catalog.events e
             JOIN catalog.seats s ON s.venue_id = e.venue_id
             JOIN catalog.sections sc ON sc.section_id = s.section_id
             WHERE e.event_id = $1),
         active AS (
             SELECT seat_id, status, kind FROM holds.unavailable_seats WHERE event_id = $1),
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
             SELECT seat_id,
                    sum(kept / n + CASE WHEN rn = 1 THEN kept % n ELSE 0 END)::bigint AS kept,
                    sum(refunded_minor / n + CASE WHEN rn = 1 THEN refunded_minor % n ELSE 0 END)::bigint AS refunded,
                    count(*) FILTER (WHERE refunded_minor > 0) AS refunds
             FROM order_seats GROUP BY seat_id)
         SELECT {key} AS key,
                count(*) AS seats,
                count(*) FILTER (WHERE a.status IS NULL) AS available,
                count(*) FILTER (WHERE a.status = 'held') AS held,
                count(*) FILTER (WHERE a.status = 'booked') AS sold,
                count(*) FILTER (WHERE a.status = 'blocked') AS blocked,
                count(*) FILTER (WHERE a.status = 'booked' AND a.kind = 'comp') AS comps,
                coalesce(sum(m.kept), 0)::bigint AS revenue_minor,
                coalesce(sum(m.refunds), 0)::bigint AS refunds,
                coalesce(sum(m.refunded), 0)::bigint AS refunded_minor
         FROM seats s
         LEFT JOIN active a ON a.seat_id = s.seat_id
         LEFT JOIN money m ON m.seat_id = s.seat_id
         GROUP BY {key}
         ORDER BY {order}"
    );
    Ok(sqlx::query_as(&sql).bind(event_id).fetch_all(conn).await?)
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

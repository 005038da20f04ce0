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
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
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
    /// Booked with a waiting-list offer's admission (sales through the list).
    pub waiting_list_sold: i64,
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
        self.waiting_list_sold += other.waiting_list_sold;
        self.revenue_minor += other.revenue_minor;
        self.refunds += other.refunds;
        self.refunded_minor += other.refunded_minor;
    }
}

/// The per-group lines of event `event_id` (which the caller has checked exists) with
/// their seats only, every seat available: one line per section code in plan order, or
/// per price category code in code order (`sql/sales_seats.sql`). The claims and money
/// of each database are merged in by `sales_claims`.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn seats(
    conn: &mut PgConnection,
    event_id: i64,
    grouping: Grouping,
) -> Result<Vec<ReportLine>> {
    let by_category = grouping == Grouping::Category;
    let rows = sqlx::query_file!("src/store/sql/sales_seats.sql", event_id, by_category)
        .fetch_all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| ReportLine {
            key: r.key,
            seats: r.seats,
            available: r.seats,
            ..ReportLine::default()
        })
        .collect())
}

/// One bucket of the sales timeline.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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
    // Every column is NOT NULL: `at` comes from NOT NULL columns (and min() of a
    // non-empty group), the sums are of non-empty groups.
    Ok(sqlx::query_as!(
        TimelineBucket,
        r#"WITH ticks AS (
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
         SELECT to_timestamp((floor(extract(epoch FROM at) * 1000 / $2::bigint) * $2::bigint) / 1000.0)
                  AS "bucket_start!",
                sum(sold)::bigint AS "sold!", sum(refunded)::bigint AS "refunded!",
                sum(revenue)::bigint AS "revenue_minor!"
         FROM events GROUP BY 1 ORDER BY 1"#,
        event_id,
        bucket_ms
    )
    .fetch_all(conn)
    .await?)
}

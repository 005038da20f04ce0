//! The sales report's part that lives on the shards (issue 16): the claims of the
//! sections placed on each shard and the money of the orders whose holds are there,
//! grouped as `sql/sales.sql` groups them on the main database, so the main database's
//! lines plus each shard's add up to the report of one database.
//!
//! A shard's line has no seats of its own (the catalog's seats are counted once, on the
//! main database) and takes its claims off the main line's `available`.

use sqlx::PgPool;

use super::reports::{Grouping, ReportLine};
use crate::error::Result;

/// The claims and money of `event_id` on the shard `shard`, per group, for the orders
/// `orders` (hold key, money kept, money refunded; minor units) read from the main
/// database.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn lines(
    shard: &PgPool,
    event_id: i64,
    grouping: Grouping,
    orders: &Orders,
) -> Result<Vec<ReportLine>> {
    let by_category = grouping == Grouping::Category;
    let rows: Vec<ShardLine> = sqlx::query_as(
        "WITH claims AS (
             SELECT CASE WHEN $2::boolean THEN s.category_code ELSE sc.code END AS key,
                    count(*) FILTER (WHERE a.status = 'held') AS held,
                    count(*) FILTER (WHERE a.status = 'booked') AS sold,
                    count(*) FILTER (WHERE a.status = 'blocked') AS blocked,
                    count(*) FILTER (WHERE a.status = 'booked' AND a.kind = 'comp') AS comps
             FROM holds.unavailable_seats a
             JOIN catalog.seats s ON s.seat_id = a.seat_id
             JOIN catalog.sections sc ON sc.section_id = s.section_id
             WHERE a.event_id = $1
             GROUP BY 1),
         orders AS (
             SELECT * FROM unnest($3::uuid[], $4::bigint[], $5::bigint[])
                 AS o(hold_key, kept, refunded_minor)),
         order_seats AS (
             SELECT h.seat_id, o.kept, o.refunded_minor,
                    row_number() OVER (PARTITION BY o.hold_key ORDER BY h.seat_id) AS rn,
                    count(*) OVER (PARTITION BY o.hold_key) AS n
             FROM orders o JOIN holds.seat_holds h ON h.hold_key = o.hold_key),
         money AS (
             SELECT CASE WHEN $2::boolean THEN s.category_code ELSE sc.code END AS key,
                    sum(m.kept / m.n + CASE WHEN m.rn = 1 THEN m.kept % m.n ELSE 0 END)::bigint AS kept,
                    sum(m.refunded_minor / m.n
                        + CASE WHEN m.rn = 1 THEN m.refunded_minor % m.n ELSE 0 END)::bigint AS refunded,
                    count(*) FILTER (WHERE m.refunded_minor > 0) AS refunds
             FROM order_seats m
             JOIN catalog.seats s ON s.seat_id = m.seat_id
             JOIN catalog.sections sc ON sc.section_id = s.section_id
             GROUP BY 1)
         SELECT coalesce(c.key, m.key) AS key,
                coalesce(c.held, 0) AS held, coalesce(c.sold, 0) AS sold,
                coalesce(c.blocked, 0) AS blocked, coalesce(c.comps, 0) AS comps,
                coalesce(m.kept, 0)::bigint AS revenue_minor,
                coalesce(m.refunds, 0)::bigint AS refunds,
                coalesce(m.refunded, 0)::bigint AS refunded_minor
         FROM claims c FULL JOIN money m ON m.key = c.key",
    )
    .bind(event_id)
    .bind(by_category)
    .bind(&orders.hold_keys)
    .bind(&orders.kept)
    .bind(&orders.refunded)
    .fetch_all(shard)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| ReportLine {
            key: r.key,
            seats: 0,
            available: -(r.held + r.sold + r.blocked),
            held: r.held,
            sold: r.sold,
            blocked: r.blocked,
            comps: r.comps,
            revenue_minor: r.revenue_minor,
            refunds: r.refunds,
            refunded_minor: r.refunded_minor,
        })
        .collect())
}

/// One group's claims and money on a shard.
#[derive(Debug, sqlx::FromRow)]
struct ShardLine {
    key: String,
    held: i64,
    sold: i64,
    blocked: i64,
    comps: i64,
    revenue_minor: i64,
    refunds: i64,
    refunded_minor: i64,
}

/// The event's orders that count in a report (captured, refund pending, refunded), as
/// three columns.
#[derive(Debug, Default)]
pub struct Orders {
    hold_keys: Vec<uuid::Uuid>,
    kept: Vec<i64>,
    refunded: Vec<i64>,
}

/// The orders of `event_id`, read from the main database over `conn`.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn orders(conn: &mut sqlx::PgConnection, event_id: i64) -> Result<Orders> {
    let rows: Vec<(uuid::Uuid, i64, i64)> = sqlx::query_as(
        "SELECT hold_key, amount_minor - refunded_minor, refunded_minor FROM payments.payments \
         WHERE event_id = $1 AND status IN ('captured', 'refund_pending', 'refunded')",
    )
    .bind(event_id)
    .fetch_all(conn)
    .await?;
    let mut orders = Orders::default();
    for (key, kept, refunded) in rows {
        orders.hold_keys.push(key);
        orders.kept.push(kept);
        orders.refunded.push(refunded);
    }
    Ok(orders)
}

/// Adds each of `shard_lines` to the line of `lines` with its key.
pub fn merge(lines: &mut [ReportLine], shard_lines: &[ReportLine]) {
    for extra in shard_lines {
        if let Some(line) = lines.iter_mut().find(|line| line.key == extra.key) {
            line.add(extra);
        }
    }
}

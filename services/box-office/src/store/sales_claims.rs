//! The sales report's claims and money, run on every database (issue 16): the claims
//! of the sections on it and the money of the orders whose holds are there
//! (`sql/sales_claims.sql`), so the main database's lines plus each shard's add up to
//! the report of one database. The seats are counted once, from the main database's
//! catalog (`reports::seats`); each database's claims come off `available`.

use sqlx::PgExecutor;

use super::reports::{Grouping, ReportLine};
use crate::error::Result;

/// The claims and money of `event_id` on the database of `on`, per group (in no
/// particular order; only groups with claims or money), for the orders `orders` read
/// from the main database. Each line has no seats of its own and takes its claims off
/// `available`.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn lines<'e>(
    on: impl PgExecutor<'e>,
    event_id: i64,
    grouping: Grouping,
    orders: &Orders,
) -> Result<Vec<ReportLine>> {
    let by_category = grouping == Grouping::Category;
    let rows = sqlx::query_file_as!(
        ClaimsLine,
        "src/store/sql/sales_claims.sql",
        event_id,
        by_category,
        &orders.hold_keys,
        &orders.kept,
        &orders.refunded,
        &format!("{}%", stadium_tokens::OFFER_JTI_PREFIX),
    )
    .fetch_all(on)
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
            waiting_list_sold: r.waiting_list_sold,
            revenue_minor: r.revenue_minor,
            refunds: r.refunds,
            refunded_minor: r.refunded_minor,
        })
        .collect())
}

/// One group's claims and money on a database.
#[derive(Debug)]
struct ClaimsLine {
    key: String,
    held: i64,
    sold: i64,
    blocked: i64,
    comps: i64,
    waiting_list_sold: i64,
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

/// Adds each of `claims` to the line of `lines` with its key.
pub fn merge(lines: &mut [ReportLine], claims: &[ReportLine]) {
    for extra in claims {
        if let Some(line) = lines.iter_mut().find(|line| line.key == extra.key) {
            line.add(extra);
        }
    }
}

//! The on-sale's floor: `pgbench` running as many claim-and-book transactions as the
//! on-sale made orders ([`super::booking::claim_and_book`]: `holds.claim`, then the
//! five statements of a first confirm, each its own transaction), on the on-sale's own
//! database server right after it, in a database of its own (created, migrated, seeded
//! and dropped again, so the sale's database gains nothing). The time it takes is how
//! fast the database alone could have sold the same orders; the on-sale's sell-out time
//! is compared with it.

use std::time::{Duration, Instant};

use super::FloorResult;
use super::booking;
use super::pgbench::{self, Length};
use super::seed::{self, Shape};

/// Rows per section of the floor's venue.
const ROWS: u64 = 50;
/// Seats per row of the floor's venue (500 blocks of 4 per section).
const SEATS_PER_ROW: u64 = 40;

/// How the floor is run.
#[derive(Debug, Clone)]
pub struct SelloutFloorOptions {
    /// The `pgbench` program.
    pub pgbench: String,
    /// Concurrent `pgbench` clients (and threads, at most 2).
    pub clients: usize,
    /// The payments service's payment window, ms (`holds.start_payment`'s argument).
    pub window_ms: u64,
    /// The payments service's lease, ms (the intent's `lease_until`).
    pub lease_ms: u64,
}

/// What the floor measured.
#[derive(Debug, Clone, Copy)]
pub struct SelloutFloor {
    /// Claim-and-book transactions run (one per order of the on-sale), each a 4-seat
    /// claim and its first confirm.
    pub orders: u64,
    /// `pgbench` clients.
    pub clients: usize,
    /// From starting `pgbench` to its exit, connections included.
    pub elapsed: Duration,
}

impl SelloutFloor {
    /// Orders booked per second.
    pub fn per_second(&self) -> f64 {
        self.orders as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

/// Creates a database beside the one at `database_url` (same server, same role: it
/// needs CREATEDB), seeds a venue and event for `orders` 4-seat orders there, runs
/// [`booking::claim_and_book`] for exactly `orders` transactions, checks that as many
/// payments were captured, and drops the database again, whatever happened.
///
/// # Errors
/// The database or `pgbench` failed, or fewer payments were captured than run.
pub async fn sellout_floor(
    database_url: &str,
    orders: u64,
    options: &SelloutFloorOptions,
) -> FloorResult<SelloutFloor> {
    let clients = options.clients.max(1);
    let orders = orders.max(1);
    let db = seed::open(None, database_url, "stadium_onsale_floor").await?;
    let measured = measure(&db, orders, clients, options).await;
    seed::close(db, false).await?;
    measured
}

/// [`sellout_floor`] in the database `db`.
async fn measure(
    db: &seed::Database,
    orders: u64,
    clients: usize,
    options: &SelloutFloorOptions,
) -> FloorResult<SelloutFloor> {
    let shape = Shape {
        sections: orders.div_ceil(ROWS * SEATS_PER_ROW / seed::SEATS_PER_CLAIM),
        rows: ROWS,
        seats_per_row: SEATS_PER_ROW,
    };
    let seeded = seed::seed(&db.pool, shape).await?;
    let defines = booking::defines(
        &seeded,
        clients,
        0,
        orders,
        options.window_ms,
        options.lease_ms,
    );
    let started = Instant::now();
    pgbench::run(
        &options.pgbench,
        &db.url,
        &booking::claim_and_book(),
        &defines,
        clients,
        2,
        Length::Transactions(orders.div_ceil(clients as u64)),
    )
    .await?;
    let elapsed = started.elapsed();
    let captured = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM payments.payments
           WHERE event_id = $1 AND status = 'captured'"#,
        seeded.event,
    )
    .fetch_one(&db.pool)
    .await?;
    if captured != orders as i64 {
        return Err(format!("the floor captured {captured} payments of {orders} run").into());
    }
    Ok(SelloutFloor {
        orders,
        clients,
        elapsed,
    })
}

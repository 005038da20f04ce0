//! The stored side of a phase: the holds claimed before the clock, and the checks on
//! what the phase left in the database.

use rand::seq::SliceRandom;
use sqlx::PgPool;

use super::FloorResult;
use super::pgbench::PgbenchResult;
use super::seed::{self, SEAT_PRICE_MINOR, SEATS_PER_CLAIM, Seeded};

/// Holds claimed per statement: each takes its fan's advisory lock until the statement
/// commits, and a batch must stay well inside the server's lock table.
const BATCH: usize = 500;

/// A hold to confirm: its fan and key.
#[derive(Debug, Clone)]
pub struct Hold {
    /// The fan who claimed it (the session `sub` of its confirm).
    pub fan: String,
    /// Its key, `md5(fan)` as a UUID.
    pub key: String,
}

/// Claims one 4-seat hold for each fan `{prefix}{n}`, `n` in `0..count`, on distinct
/// blocks of the venue in a random order: `holds.claim` called in SQL as the holds
/// service calls it, with the key `md5(fan)::uuid` so `pgbench` can compute it too.
/// Returns the holds by `n`.
///
/// # Errors
/// More holds than blocks; a claim that did not answer `held`; the database.
pub async fn create_holds(
    pool: &PgPool,
    seeded: &Seeded,
    prefix: &str,
    count: usize,
) -> FloorResult<Vec<Hold>> {
    let mut blocks: Vec<u64> = (0..seeded.shape.blocks()).collect();
    if count > blocks.len() {
        return Err(format!("{count} holds asked for a venue of {} blocks", blocks.len()).into());
    }
    blocks.shuffle(&mut rand::thread_rng());
    let mut holds = Vec::with_capacity(count);
    for start in (0..count).step_by(BATCH) {
        let n = start..(start + BATCH).min(count);
        let fans: Vec<String> = n.clone().map(|i| format!("{prefix}{i}")).collect();
        let (sections, first_seats): (Vec<i64>, Vec<i64>) = n
            .map(|i| {
                let (section, seats) = seeded.block(blocks[i]);
                (section as i64, seats[0] as i64)
            })
            .unzip();
        // `fan` and `key` come from the bound fans (never NULL); `holds.claim` always
        // answers an outcome.
        let rows = sqlx::query!(
            r#"SELECT u.fan AS "fan!", md5(u.fan)::uuid::text AS "key!", c.outcome AS "outcome!"
               FROM unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY
                   AS u(fan, section_id, s0, i)
               CROSS JOIN LATERAL holds.claim(md5(u.fan)::uuid, $1, u.section_id,
                   ARRAY[u.s0, u.s0 + 1, u.s0 + 2, u.s0 + 3], u.fan, u.fan || '-jti', 'fan',
                   NULL) AS c
               ORDER BY u.i"#,
            seeded.event,
            &fans,
            &sections,
            &first_seats,
        )
        .fetch_all(pool)
        .await?;
        for row in rows {
            if row.outcome != "held" {
                return Err(format!("claiming a hold for {}: {}", row.fan, row.outcome).into());
            }
            holds.push(Hold {
                fan: row.fan,
                key: row.key,
            });
        }
    }
    sqlx::query!("VACUUM ANALYZE holds.seat_holds")
        .execute(pool)
        .await?;
    Ok(holds)
}

/// What a `pgbench` floor did, read from its summary and the stored payments.
#[derive(Debug, Clone, Copy)]
pub struct Floor {
    /// The summary.
    pub run: PgbenchResult,
    /// Payments captured: the confirms done.
    pub captured: u64,
}

impl Floor {
    /// Confirms per second over `pgbench`'s own measured time (its transactions per
    /// its tps); equal to its tps unless the holds ran out.
    pub fn per_second(&self) -> f64 {
        if self.run.transactions == 0 {
            return 0.0;
        }
        self.captured as f64 * self.run.tps / self.run.transactions as f64
    }

    /// Whether some clients ran past the last hold (their runs only slept).
    pub fn ran_out(&self) -> bool {
        self.captured < self.run.transactions
    }
}

/// Checks what a phase left, which claimed `claimed` holds before it and saw
/// `confirmed` confirms succeed (`None`: as many as were captured, for `pgbench`,
/// whose summary only bounds them): that many payments captured at four seats' price
/// and nothing else; one valid ticket per booked seat of each; no other seat booked;
/// every other claimed hold still held; no seat with two active rows. Returns the
/// captured payments.
///
/// # Errors
/// A message naming every count that is off; the database.
pub async fn check(
    pool: &PgPool,
    event: i64,
    claimed: u64,
    confirmed: Option<u64>,
) -> FloorResult<u64> {
    // Each column is one scalar subquery answering one row: a count, or a sum with
    // COALESCE; never NULL.
    let row = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM payments.payments WHERE event_id = $1 AND status = 'captured')
                 AS "captured!",
             (SELECT count(*) FROM payments.payments WHERE event_id = $1 AND status <> 'captured')
                 AS "others!",
             (SELECT COALESCE(sum(amount_minor), 0)::bigint FROM payments.payments
                 WHERE event_id = $1 AND status = 'captured') AS "amount!",
             (SELECT count(*) FROM payments.tickets WHERE event_id = $1 AND status = 'valid')
                 AS "tickets!",
             (SELECT count(*) FROM payments.tickets t JOIN payments.payments p USING (payment_id)
                 WHERE t.event_id = $1 AND NOT EXISTS (SELECT 1 FROM holds.seat_holds h
                   WHERE h.hold_key = p.hold_key AND h.seat_id = t.seat_id
                     AND h.status = 'booked')) AS "unbooked!",
             (SELECT count(*) FROM holds.seat_holds WHERE event_id = $1 AND status = 'booked')
                 AS "booked!",
             (SELECT count(*) FROM catalog.invariant_violations($1, 0, 'two_active_claims'))
                 AS "doubled!""#,
        event,
    )
    .fetch_one(pool)
    .await?;
    let (captured, others, amount, tickets, unbooked, booked, doubled) = (
        row.captured,
        row.others,
        row.amount,
        row.tickets,
        row.unbooked,
        row.booked,
        row.doubled,
    );
    let held = seed::held_rows(pool, event).await?;
    let captured = u64::try_from(captured)?;
    let seats = captured * SEATS_PER_CLAIM;
    let mut off = Vec::new();
    let mut expect = |what: &str, got: i64, want: u64| {
        if u64::try_from(got).ok() != Some(want) {
            off.push(format!("{what} {got} (expected {want})"));
        }
    };
    expect(
        "captured payments",
        captured as i64,
        confirmed.unwrap_or(captured),
    );
    expect("other payments", others, 0);
    expect(
        "captured minor units",
        amount,
        seats * SEAT_PRICE_MINOR as u64,
    );
    expect("valid tickets", tickets, seats);
    expect("tickets of seats not booked by their hold", unbooked, 0);
    expect("booked seats", booked, seats);
    expect(
        "held seats",
        held,
        claimed.saturating_sub(captured) * SEATS_PER_CLAIM,
    );
    expect("seats with two active rows", doubled, 0);
    if off.is_empty() {
        Ok(captured)
    } else {
        Err(format!("stored rows after the phase: {}", off.join("; ")).into())
    }
}

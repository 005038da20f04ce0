//! The on-sale against a running [`Deployment`]: set the event up through the box office,
//! let simulated fans buy through the other four services, then hold the report up
//! against the database itself.

use stadium_db::Shards;

use crate::shards::ShardSeats;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use loadtest::floor::sellout::{SelloutFloor, SelloutFloorOptions, sellout_floor};
use loadtest::{
    Credentials, EventOptions, MemoryReport, OnSaleOptions, ProcessMemory, RunReport, VenueSource,
};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::Deployment;
use crate::faults::{self, Disruption, Fault, Notices, Plan, ledger};
use crate::memory::peak_rss;
use crate::replicas::ProcessStack;

/// What to sell and to how many fans.
#[derive(Debug, Clone)]
pub struct OnSaleConfig {
    /// A pretix seating plan, seats.io chart or CSV manifest (told from the content);
    /// `None` generates a stadium bowl of `seats` seats in `sections` sections.
    pub venue: Option<PathBuf>,
    /// Seats of the generated stadium.
    pub seats: u32,
    /// Sections of the generated stadium.
    pub sections: u32,
    /// Fans to simulate; 0: 75 % of the venue's seats.
    pub fans: u32,
    /// Admission rate, fans per minute.
    pub admission_rate: u32,
    /// Hold TTL.
    pub hold_ttl: Duration,
    /// Time between setting the event up and its opening, so the pre-queue fills.
    pub onsale_lead: Duration,
    /// Compression of the fans' think times (10 = ten times faster than life).
    pub time_scale: f64,
    /// Share of claims made with "best available", 0 to 1.
    pub best_available_share: f64,
    /// Seed of every random choice of the fans.
    pub seed: u64,
    /// Progress bars on stderr.
    pub progress: bool,
    /// The floor to measure after the sale, on the same database server; `None`: none.
    pub floor: Option<FloorConfig>,
}

/// The `pgbench` floor run after the on-sale (see [`loadtest::floor::sellout`]).
#[derive(Debug, Clone)]
pub struct FloorConfig {
    /// The `pgbench` program.
    pub pgbench: String,
    /// Concurrent `pgbench` clients.
    pub clients: usize,
}

/// The floor beside the on-sale: as many claim-and-book transactions as it made
/// orders, by `pgbench` on the same database server in the same run.
#[derive(Debug, Clone)]
pub enum FloorOutcome {
    /// Not asked for.
    NotRun,
    /// Measured.
    Measured(SelloutFloor),
    /// It could not run (no `pgbench` on the machine, or it failed): why. The sale's
    /// own result stands.
    Failed(String),
}

impl FloorOutcome {
    /// A few readable lines for the terminal, the floor beside the sale's sell-out time
    /// (seconds, when it sold out).
    pub fn to_text(&self, sold_out_after_s: Option<f64>) -> String {
        let mut out = "Floor (pgbench on the same database server, same run)\n".to_owned();
        match self {
            Self::NotRun => out.push_str("  not run\n"),
            Self::Failed(why) => out.push_str(&format!("  FLOOR NOT MEASURED: {why}\n")),
            Self::Measured(floor) => {
                out.push_str(&format!(
                    "  {} claim-and-book transactions (holds.claim, then a first confirm's \
                     five statements), {} clients: {:.1} s ({:.0} orders/s)\n",
                    floor.orders,
                    floor.clients,
                    floor.elapsed.as_secs_f64(),
                    floor.per_second()
                ));
                if let Some(sold_out) = sold_out_after_s {
                    out.push_str(&format!(
                        "  the on-sale sold the same orders out in {sold_out:.1} s: {:.1}× the floor's time\n",
                        sold_out / floor.elapsed.as_secs_f64().max(f64::EPSILON)
                    ));
                }
            }
        }
        out
    }
}

/// What the database says about the event after the run, and where it disagrees
/// with the report.
#[derive(Debug, Clone, Default)]
pub struct DatabaseCheck {
    /// Seats of the venue.
    pub seats: i64,
    /// Seats with more than one active claim (invariant 1: must be 0).
    pub seats_claimed_twice: i64,
    /// Seats booked by fans.
    pub sold: i64,
    /// Seats held and not yet expired.
    pub held: i64,
    /// Seats blocked.
    pub blocked: i64,
    /// Seats free right now.
    pub available: i64,
    /// Valid tickets.
    pub tickets: i64,
    /// Payments refunded because the hold had expired.
    pub hold_expired_refunds: i64,
    /// Payments charged more than once (invariant 4: must be 0).
    pub payments_per_hold_over_one: i64,
    /// Each database's seats, the main one first (empty with one database).
    pub shards: Vec<ShardSeats>,
    /// Every way the report and the database disagree, in words.
    pub disagreements: Vec<String>,
}

impl DatabaseCheck {
    /// True when the database keeps every invariant and agrees with the report.
    pub fn is_ok(&self) -> bool {
        self.disagreements.is_empty()
    }

    /// A few readable lines for the terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Database check\n  seats {} = sold {} + held {} + blocked {} + available {}\n  \
             valid tickets {}; refunds for expired holds {}; seats claimed twice {}\n",
            self.seats,
            self.sold,
            self.held,
            self.blocked,
            self.available,
            self.tickets,
            self.hold_expired_refunds,
            self.seats_claimed_twice
        );
        for shard in &self.shards {
            out.push_str(&format!(
                "  shard {}: sold {}, held {}, blocked {}, seats claimed twice {}\n",
                shard.shard, shard.sold, shard.held, shard.blocked, shard.claimed_twice
            ));
        }
        if self.disagreements.is_empty() {
            out.push_str("  result: the database agrees with the report\n");
        }
        for d in &self.disagreements {
            out.push_str(&format!("  DISAGREEMENT {d}\n"));
        }
        out
    }
}

/// Runs the on-sale against `deployment`, checks the result against its database, then
/// measures the floor when `config` asks for it. With `disrupt`, the plan's faults are
/// injected into the stack's processes as the seats sell (see [`crate::faults`]), and
/// after the sale the provider's ledger is held up against ours.
///
/// # Errors
/// Setting the event up, the run itself, or the database check failed to run (a
/// violated invariant is not an error: it is in the returned check and report).
pub async fn run(
    deployment: &Deployment,
    config: &OnSaleConfig,
    disrupt: Option<(&mut ProcessStack, &Plan)>,
) -> anyhow::Result<(RunReport, DatabaseCheck, FloorOutcome, Option<Disruption>)> {
    let targets = deployment.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&deployment.issuer));
    let venue = match &config.venue {
        Some(path) => VenueSource::from_file(path)?,
        None => VenueSource::generated(config.seats, config.sections)?,
    };
    let event_options = EventOptions {
        hold_ttl: config.hold_ttl,
        onsale_lead: config.onsale_lead,
        admission_rate_per_min: config.admission_rate,
        ..EventOptions::default()
    };
    let options = OnSaleOptions {
        fans: config.fans,
        seed: config.seed,
        time_scale: config.time_scale,
        best_available_share: config.best_available_share,
        redis_url: Some(deployment.redis_url.clone()),
        ..OnSaleOptions::default()
    };
    let pool = stadium_db::connect(&deployment.database_url, &Default::default()).await?;
    let events_before: i64 =
        sqlx::query_scalar("SELECT coalesce(max(event_id), 0)::bigint FROM catalog.events")
            .fetch_one(&pool)
            .await
            .context("read the last event id")?;
    let sale_over = CancellationToken::new();
    let sale = async {
        let report = loadtest::run_scenario(
            &targets,
            &creds,
            venue,
            &event_options,
            &options,
            config.progress,
        )
        .await;
        sale_over.cancel();
        report
    };
    let mut notices = match &disrupt {
        Some((stack, _)) => Some(Notices::new(stack)?),
        None => None,
    };
    let late_notices = disrupt.as_ref().is_some_and(|(_, plan)| {
        plan.faults
            .iter()
            .any(|f| matches!(f, Fault::Notices { .. }))
    });
    let disruption = async {
        match (disrupt, notices.as_mut()) {
            (Some((stack, plan)), Some(notices)) => {
                Some(faults::disrupt(stack, plan, &pool, events_before, &sale_over, notices).await)
            }
            _ => None,
        }
    };
    let page = name_page_event(deployment, &pool, events_before, &sale_over);
    let shards = Shards::connect(pool.clone(), &deployment.shards, &Default::default()).await?;
    let spread = crate::shards::spread(&shards, events_before, &sale_over);
    let (report, mut disruption, (), placed) = tokio::join!(sale, disruption, page, spread);
    let mut report = report?;
    let placed = placed?;
    if !placed.is_empty() {
        let list: Vec<String> = placed.iter().map(|(s, n)| format!("{s} {n}")).collect();
        println!("sections per shard: {}", list.join(", "));
    }
    report.memory = Some(MemoryReport {
        processes: peak_rss("self")
            .map(|bytes| ProcessMemory {
                name: "stadium (this process)".into(),
                peak_rss_bytes: bytes,
            })
            .into_iter()
            .collect(),
    });
    let pool = if disruption.is_some() {
        // The faults may have restarted the database under the pool's connections.
        pool.close().await;
        stadium_db::connect(&deployment.database_url, &Default::default()).await?
    } else {
        pool
    };
    if let (Some(disruption), Some(notices)) = (disruption.as_mut(), notices.as_mut()) {
        let event: i64 = report.event_id.parse().context("the report's event id")?;
        // Compared before the late notices, so that payments' own recovery must have
        // settled every payment (a notice would settle what the reconciler missed),
        // and again after them, which must change nothing.
        let mut check = ledger::check(&pool, &mut notices.provider, event).await?;
        if late_notices {
            match notices.deliver_all_late().await {
                Ok(_) => {
                    let after = ledger::check(&pool, &mut notices.provider, event).await?;
                    check.compare_after_late_notices(&after);
                }
                Err(e) => disruption.failure = Some(format!("late notices: {e:#}")),
            }
        }
        disruption.ledger = Some(check);
    }
    let shards = Shards::connect(pool.clone(), &deployment.shards, &Default::default()).await?;
    let check = check_database(&shards, &report).await?;
    pool.close().await;
    let floor = match &config.floor {
        None => FloorOutcome::NotRun,
        Some(floor) => {
            let options = SelloutFloorOptions {
                pgbench: floor.pgbench.clone(),
                clients: floor.clients,
                window_ms: deployment.payment_timing.window_ms,
                lease_ms: deployment.payment_timing.lease_ms,
            };
            match sellout_floor(&deployment.database_url, report.orders_paid, &options).await {
                Ok(measured) => FloorOutcome::Measured(measured),
                Err(e) => FloorOutcome::Failed(e.to_string()),
            }
        }
    };
    Ok((report, check, floor, disruption))
}

/// Points the fan's page of an in-process stack at the sale's event once the box
/// office has created it (the first event after `events_before`), so a person can
/// queue and buy beside the simulated fans.
async fn name_page_event(
    deployment: &Deployment,
    pool: &PgPool,
    events_before: i64,
    sale_over: &CancellationToken,
) {
    let Some(page) = &deployment.page else {
        return;
    };
    while !sale_over.is_cancelled() {
        let latest: Option<i64> = sqlx::query_scalar("SELECT max(event_id) FROM catalog.events")
            .fetch_one(pool)
            .await
            .ok()
            .flatten();
        if let Some(event) = latest.filter(|&e| e > events_before) {
            page.set_event(Some(event.to_string()));
            println!("fan's page sells event {event}");
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
            () = sale_over.cancelled() => {}
        }
    }
}

/// Counts the event's seats by state in the database and compares them with the
/// report: seats sold, refunds for expired holds, and the invariants that need no
/// report at all (one active claim per seat, one payment per hold, counts add up).
///
/// # Errors
/// A query failed.
pub async fn check_database(shards: &Shards, report: &RunReport) -> anyhow::Result<DatabaseCheck> {
    let pool = shards.main();
    let event: i64 = report
        .event_id
        .parse()
        .with_context(|| format!("event id {:?}", report.event_id))?;
    // One statement, so every count comes from the same snapshot. Nested loops priced
    // out: right after a sale autovacuum may not have analysed the tables yet, and a
    // plan that takes them for one row compares every seat with every claim (see
    // migrations/20261206000000_invariant_checks_plans_independent_of_statistics.sql).
    let mut tx = pool.begin().await.context("database check")?;
    sqlx::query("SET LOCAL enable_nestloop = off")
        .execute(&mut *tx)
        .await
        .context("database check")?;
    let counts = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM catalog.event_seats WHERE event_id = $1) AS "seats!",
             (SELECT count(*) FROM catalog.invariant_violations($1, 0, 'two_active_claims'))
                 AS "seats_claimed_twice!",
             (SELECT count(*) FROM holds.seat_holds
               WHERE event_id = $1 AND status = 'booked' AND kind = 'fan') AS "sold!",
             (SELECT count(*) FROM holds.seat_holds
               WHERE event_id = $1 AND status = 'held' AND expires_at > now()) AS "held!",
             (SELECT count(*) FROM holds.seat_holds
               WHERE event_id = $1
                 AND (status = 'blocked' OR (status = 'booked' AND kind <> 'fan')))
                 AS "blocked!",
             (SELECT count(*) FROM catalog.event_seats s WHERE s.event_id = $1
                 AND NOT EXISTS (SELECT 1 FROM holds.unavailable_seats u
                                  WHERE u.event_id = s.event_id AND u.seat_id = s.seat_id))
                 AS "available!",
             (SELECT count(*) FROM payments.tickets WHERE event_id = $1 AND status = 'valid')
                 AS "tickets!",
             (SELECT count(*) FROM payments.payments
               WHERE event_id = $1 AND status = 'refunded' AND refund_reason = 'hold_expired')
                 AS "hold_expired_refunds!",
             (SELECT count(*) FROM (SELECT hold_key FROM payments.payments WHERE event_id = $1
               GROUP BY hold_key HAVING count(*) > 1) AS twice) AS "payments_per_hold_over_one!""#,
        event,
    )
    .fetch_one(&mut *tx)
    .await
    .context("database check")?;
    tx.commit().await.context("database check")?;
    let mut c = DatabaseCheck {
        seats: counts.seats,
        seats_claimed_twice: counts.seats_claimed_twice,
        sold: counts.sold,
        held: counts.held,
        blocked: counts.blocked,
        available: counts.available,
        tickets: counts.tickets,
        hold_expired_refunds: counts.hold_expired_refunds,
        payments_per_hold_over_one: counts.payments_per_hold_over_one,
        shards: Vec::new(),
        disagreements: Vec::new(),
    };
    if !shards.is_single() {
        // Every database's seats, then the counts over all of them: a seat active on
        // two shards is claimed twice, and taken once.
        for (name, shard) in shards.all() {
            c.shards
                .push(crate::shards::seats_on(shard, name, event).await?);
        }
        let sum = |f: fn(&ShardSeats) -> i64| c.shards.iter().map(f).sum::<i64>();
        c.sold = sum(|s| s.sold);
        c.held = sum(|s| s.held);
        c.blocked = sum(|s| s.blocked);
        c.seats_claimed_twice = sum(|s| s.claimed_twice) + crate::shards::active_on_two(&c.shards);
        c.available = c.seats - crate::shards::unavailable_anywhere(&c.shards);
    }
    let d = &mut c.disagreements;
    if c.seats_claimed_twice != 0 {
        d.push(format!(
            "{} seats have two active claims",
            c.seats_claimed_twice
        ));
    }
    if c.payments_per_hold_over_one != 0 {
        d.push(format!(
            "{} holds have more than one payment",
            c.payments_per_hold_over_one
        ));
    }
    if c.sold + c.held + c.blocked + c.available != c.seats {
        d.push(format!(
            "sold {} + held {} + blocked {} + available {} != seats {}",
            c.sold, c.held, c.blocked, c.available, c.seats
        ));
    }
    if c.tickets != c.sold {
        d.push(format!(
            "{} valid tickets for {} sold seats",
            c.tickets, c.sold
        ));
    }
    if c.sold != report.seats_sold as i64 {
        d.push(format!(
            "seats sold: report {}, database {}",
            report.seats_sold, c.sold
        ));
    }
    let refunds = (report.late.refunded + report.unexpected_refunds) as i64;
    if c.hold_expired_refunds != refunds {
        d.push(format!(
            "refunds for expired holds: report {refunds}, database {}",
            c.hold_expired_refunds
        ));
    }
    Ok(c)
}

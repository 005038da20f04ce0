//! The cancellation worker: carries out the refunds of cancelled events. Every replica
//! runs one; a cancellation is worked by one replica at a time, the one holding its
//! lease (`catalog.event_cancellations`, [`cancellations::LEASE_MS`]). A pass walks the
//! event's orders still to do in order id order — captured payments, refunds under way,
//! comps with a valid ticket — and asks payments to refund each (`RefundOrder`, reason
//! EVENT_CANCELLED) as the box office's service identity, starting at most the
//! cancellation's `refunds_per_second`, a few at once. Payments decides each refund
//! with a conditional update and calls the provider under the order's refund
//! idempotency key, so a pass repeated after a crash (the lease lapses, another replica
//! carries on) refunds nothing twice. The cancellation is finished once the payments ledger shows nothing
//! left to refund, void or wait for, and no database holding seats has a hold being
//! paid for.

use std::time::Duration;

use stadium_kit::outbound::{Bearer, as_service};
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::payments::v1::{RefundOrderRequest, RefundReason};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::store::cancellations::{self, CancellationRecord};

/// Orders read per step of a pass.
const BATCH: i64 = 100;
/// Refund calls under way at once (each waits on the provider, so one at a time would
/// cap a pass at one refund per provider round trip whatever the rate asked).
const IN_FLIGHT: usize = 8;

/// Calls answered and failed in a pass.
#[derive(Debug, Default)]
struct Tally {
    answered: u32,
    failed: u32,
}
/// How long payments may take to refund one order (it waits on the provider, itself
/// bounded at 10 s by payments).
const REFUND_DEADLINE: Duration = Duration::from_secs(15);

/// Refunds the orders of cancelled events through payments.
#[derive(Clone)]
pub struct Worker {
    /// The main database.
    pool: sqlx::PgPool,
    /// Every database holding seats, for the holds being paid for.
    shards: stadium_db::Shards,
    payments: PaymentsClient<Channel>,
    token: Option<Bearer>,
    owner: String,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// What one call of [`Worker::step`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// No cancellation to work on (none unfinished, or another replica has it).
    Idle,
    /// A pass over an event's orders ran; more may be left.
    Worked {
        /// The event.
        event_id: i64,
        /// Orders payments refunded or voided in this pass (new or already done).
        answered: u32,
        /// Orders payments refused or did not answer (retried next pass).
        failed: u32,
    },
    /// An event's cancellation was found complete and marked finished.
    Finished {
        /// The event.
        event_id: i64,
    },
}

impl Worker {
    /// A worker over `shards` (the main database and those holding seats) calling
    /// payments on `channel` with `token` (an admin token with role `service`,
    /// development only; `None` when the client certificate names the box office).
    /// Its lease owner name is unique to this process.
    pub fn new(shards: stadium_db::Shards, channel: Channel, token: Option<Bearer>) -> Self {
        Self {
            pool: shards.main().clone(),
            shards,
            payments: PaymentsClient::new(channel),
            token,
            owner: format!("box-office-{}", Uuid::new_v4()),
        }
    }

    /// Takes a cancellation (if one is free) and runs one pass over its orders, or
    /// marks it finished when nothing is left; stops early when `stop` is cancelled.
    ///
    /// # Errors
    /// [`Error::Database`]. A refund payments refuses is recorded on the
    /// cancellation (`last_error`) and retried on the next pass, not returned.
    pub async fn step(&self, stop: &CancellationToken) -> Result<Step> {
        let mut conn = self.pool.acquire().await?;
        let Some(cancellation) = cancellations::take(&mut conn, &self.owner).await? else {
            return Ok(Step::Idle);
        };
        let event_id = cancellation.event_id;
        let first = cancellations::work(&mut conn, event_id, Uuid::nil(), BATCH).await?;
        if first.is_empty() {
            let counts = cancellations::counts(&mut conn, &self.shards, event_id).await?;
            if counts.is_done() {
                cancellations::finish(&mut conn, event_id).await?;
                tracing::info!(
                    event_id,
                    refunded = counts.refunded,
                    refunded_minor = counts.refunded_minor,
                    comps_voided = counts.comps_voided,
                    "event cancellation finished"
                );
                return Ok(Step::Finished { event_id });
            }
        }
        drop(conn);
        let (answered, failed) = self.pass(&cancellation, first, stop).await?;
        Ok(Step::Worked {
            event_id,
            answered,
            failed,
        })
    }

    /// Refunds `first` and the orders after them, starting one every `1 / rate` s with
    /// at most [`IN_FLIGHT`] under way, renewing the lease after each batch; stops when
    /// the lease is lost or `stop` is cancelled (calls under way are dropped: payments
    /// finishes a refund it started by itself, and the next pass asks again).
    async fn pass(
        &self,
        cancellation: &CancellationRecord,
        first: Vec<Uuid>,
        stop: &CancellationToken,
    ) -> Result<(u32, u32)> {
        let event_id = cancellation.event_id;
        let rate = u64::try_from(cancellation.refunds_per_second.max(1)).unwrap_or(1);
        let mut pace = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut tally = Tally::default();
        let mut under_way: JoinSet<(Uuid, Result<()>)> = JoinSet::new();
        let mut batch = first;
        while !batch.is_empty() {
            for &order in &batch {
                while under_way.len() >= IN_FLIGHT {
                    let done = under_way.join_next().await;
                    self.count(event_id, done, &mut tally).await?;
                }
                tokio::select! {
                    () = stop.cancelled() => return Ok((tally.answered, tally.failed)),
                    _ = pace.tick() => {}
                }
                let worker = self.clone();
                under_way.spawn(async move { (order, worker.refund(event_id, order).await) });
            }
            while let Some(done) = under_way.join_next().await {
                self.count(event_id, Some(done), &mut tally).await?;
            }
            let after = *batch.last().unwrap_or(&Uuid::nil());
            let mut conn = self.pool.acquire().await?;
            if !cancellations::renew(&mut conn, event_id, &self.owner).await? {
                tracing::warn!(
                    event_id,
                    "cancellation lease lost; another replica carries on"
                );
                break;
            }
            batch = cancellations::work(&mut conn, event_id, after, BATCH).await?;
        }
        Ok((tally.answered, tally.failed))
    }

    /// Counts one finished refund call; a failure is recorded on the cancellation.
    async fn count(
        &self,
        event_id: i64,
        done: Option<std::result::Result<(Uuid, Result<()>), tokio::task::JoinError>>,
        tally: &mut Tally,
    ) -> Result<()> {
        let failure = match done {
            None => return Ok(()),
            Some(Ok((_, Ok(())))) => {
                tally.answered += 1;
                return Ok(());
            }
            Some(Ok((order, Err(error)))) => format!("order {order}: {error}"),
            Some(Err(join)) => format!("refund task: {join}"),
        };
        tally.failed += 1;
        tracing::warn!(event_id, %failure, "cancellation refund failed; retried next pass");
        let mut conn = self.pool.acquire().await?;
        cancellations::record_error(&mut conn, event_id, &failure).await
    }

    /// Gives back the leases this worker holds (see [`cancellations::release`]).
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn release(&self) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        cancellations::release(&mut conn, &self.owner).await
    }

    async fn refund(&self, event_id: i64, order: Uuid) -> Result<()> {
        let request = RefundOrderRequest {
            order_id: order.to_string(),
            reason: format!("event {event_id} cancelled"),
            refund_reason: RefundReason::EventCancelled as i32,
        };
        let request = as_service(request, self.token.as_ref(), Some(REFUND_DEADLINE));
        self.payments
            .clone()
            .refund_order(request)
            .await
            .map_err(|status| Error::Upstream {
                service: "payments",
                status,
            })?;
        Ok(())
    }
}

/// Runs the worker until `shutdown` is cancelled: step after step while there is work,
/// otherwise every `interval`; a pass that leaves orders waiting (payments still being
/// charged, refunds that failed) is followed by the next after `interval` too. On
/// shutdown it gives its lease back, so another replica carries on at once.
pub fn spawn(worker: Worker, interval: Duration, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let pause = match worker.step(&shutdown).await {
                Ok(Step::Finished { .. }) => Duration::ZERO,
                Ok(Step::Worked {
                    answered, failed, ..
                }) if answered > 0 && failed == 0 => Duration::ZERO,
                Ok(_) => interval,
                Err(error) => {
                    tracing::warn!(%error, "cancellation worker step failed");
                    interval
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(pause) => {}
            }
        }
        if let Err(error) = worker.release().await {
            tracing::warn!(%error, "giving back the cancellation lease; it lapses by itself");
        }
    })
}

//! Fans' claims coalesced into batches, one transaction each (`store::claim_many`).
//!
//! Claims wait in one queue; a dispatcher takes a batch (every claim queued, up to a
//! number of claims and of seats) as soon as one of `concurrent` slots is free and runs
//! it on its own connection. Under light load a batch is one claim, run as
//! `store::claim` exactly as before; under load the claims that queued while the slots
//! were busy share one commit and one round trip. Correctness stays in the database:
//! each claim is all or nothing inside the batch, and the batch's lock order rules out
//! deadlocks (migration `20261202020000`); the queue only decides who shares a commit.

use std::sync::Arc;

use sqlx::PgPool;
use stadium_db::{RetryPolicy, retry_transient};
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::unshared;
use crate::domain::Claim;
use crate::error::Error;
use crate::metrics::Metrics;
use crate::store::{self, Batched, Claimed};

/// Claims that may wait for a batch before `claim` itself waits for room.
const QUEUE_CAPACITY: usize = 4_096;

/// How fans' claims are coalesced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    /// Batches in flight at once, each on its own connection (at least 1).
    pub concurrent: usize,
    /// Most claims in one batch (1: every claim alone).
    pub max_claims: usize,
    /// Most seats in one batch: each takes an advisory lock until its batch commits,
    /// and PostgreSQL's lock table is shared (`max_locks_per_transaction`).
    pub max_seats: usize,
    /// Best-available claim calls in flight at once (at least 1); they are not
    /// batched, so without a bound they would take every connection of a pool.
    pub best_available: usize,
}

/// A claim waiting for its batch.
struct Pending {
    claim: Claim,
    reply: oneshot::Sender<Result<Claimed, Error>>,
}

/// The queue of fans' claims; cheap to clone. The dispatcher ends when the last clone
/// is dropped.
#[derive(Debug, Clone)]
pub(super) struct Coalescer {
    queue: mpsc::Sender<Pending>,
}

/// What a batch runs with.
#[derive(Debug, Clone)]
struct Runner {
    pool: PgPool,
    retry: RetryPolicy,
    metrics: Arc<Metrics>,
}

impl Coalescer {
    /// Starts the dispatcher on the current Tokio runtime.
    pub(super) fn start(
        pool: PgPool,
        retry: RetryPolicy,
        metrics: Arc<Metrics>,
        batching: Batching,
    ) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE_CAPACITY);
        let runner = Runner {
            pool,
            retry,
            metrics,
        };
        tokio::spawn(dispatch(waiting, runner, batching));
        Self { queue }
    }

    /// Claims `claim` (a fan's) in the next batch; answers as `store::claim` would.
    ///
    /// # Errors
    /// As `store::claim`; [`Error::Database`] (pool closed) when the dispatcher has
    /// stopped (the runtime is shutting down).
    pub(super) async fn claim(&self, claim: Claim) -> Result<Claimed, Error> {
        let (reply, answer) = oneshot::channel();
        let stopped = || Error::Database(sqlx::Error::PoolClosed);
        self.queue
            .send(Pending { claim, reply })
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// Takes batches off `waiting` while a slot is free and runs each on its own task.
async fn dispatch(mut waiting: mpsc::Receiver<Pending>, runner: Runner, batching: Batching) {
    let slots = Arc::new(Semaphore::new(batching.concurrent.max(1)));
    let mut carried: Option<Pending> = None;
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let first = match carried.take() {
            Some(pending) => pending,
            None => match waiting.recv().await {
                Some(pending) => pending,
                None => return,
            },
        };
        let mut seats = first.claim.seats.len();
        let mut batch = vec![first];
        while batch.len() < batching.max_claims {
            let Ok(next) = waiting.try_recv() else { break };
            if seats + next.claim.seats.len() > batching.max_seats {
                carried = Some(next);
                break;
            }
            seats += next.claim.seats.len();
            batch.push(next);
        }
        let runner = runner.clone();
        tokio::spawn(async move {
            runner.run(batch).await;
            drop(slot);
        });
    }
}

impl Runner {
    /// Runs `batch` and answers each claim; claims whose caller has gone are dropped
    /// first, so no seats are held for nobody. A claim the batch found busy (a seat's
    /// lock held by another transaction) runs alone on its own task, waiting its turn.
    async fn run(&self, mut batch: Vec<Pending>) {
        batch.retain(|pending| !pending.reply.is_closed());
        if batch.len() < 2 {
            for pending in batch {
                self.metrics.claim_batch(1);
                self.alone(pending).await;
            }
            return;
        }
        self.metrics.claim_batch(batch.len());
        let claims: Vec<&Claim> = batch.iter().map(|pending| &pending.claim).collect();
        let answers = retry_transient(
            self.retry,
            |failure| self.metrics.retry(failure),
            || store::claim_many(&self.pool, &claims),
        )
        .await;
        match answers {
            Ok(answers) => {
                for (pending, answer) in batch.into_iter().zip(answers) {
                    match answer {
                        Batched::Answered(answer) => {
                            let _gone = pending.reply.send(answer);
                        }
                        Batched::Busy => {
                            let runner = self.clone();
                            tokio::spawn(async move { runner.alone(pending).await });
                        }
                    }
                }
            }
            // A section of the batch is fenced or gone from this shard: the statement
            // names one section and wrote nothing, so each claim runs alone, and only
            // that section's claims are refused (with their own reason).
            Err(error) if error.is_stale_route() && batch.len() > 1 => {
                for pending in batch {
                    let runner = self.clone();
                    tokio::spawn(async move { runner.alone(pending).await });
                }
            }
            Err(error) => {
                let shared = Arc::new(error);
                for pending in batch {
                    let _gone = pending.reply.send(Err(unshared(Arc::clone(&shared))));
                }
            }
        }
    }

    /// Runs one claim in its own transaction (`store::claim`) and answers it.
    async fn alone(&self, pending: Pending) {
        let answer = retry_transient(
            self.retry,
            |failure| self.metrics.retry(failure),
            || store::claim(&self.pool, &pending.claim),
        )
        .await;
        let _gone = pending.reply.send(answer);
    }
}

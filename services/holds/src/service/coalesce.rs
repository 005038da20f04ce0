//! Fans' claims coalesced into batches, one transaction each (`store::claim_many`).
//!
//! Claims wait in one queue; a dispatcher takes a batch (every claim queued, up to a
//! number of claims and of seats) as soon as one of `concurrent` slots is free and runs
//! it on its own connection. Under light load a batch is one claim, run as
//! `store::claim` exactly as before; under load the claims that queued while the slots
//! were busy share one commit and one round trip. Correctness stays in the database:
//! each claim is all or nothing inside the batch, and the batch's lock order rules out
//! deadlocks (migration `20261202020000`); the queue only decides who shares a commit.
//! A claim that waited longer than `Batching::wait` for its batch is answered
//! `Error::Overloaded` instead of run, and one that leaves its batch to run alone
//! passes the claims gate (`gate`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use stadium_db::{RetryPolicy, retry_transient};
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::gate::Door;
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
    /// Fans' claim calls that run alone, in flight at once per database (at least 1):
    /// best available, presale codes, and a batched claim that found a seat busy (see
    /// `gate`); without a bound they would take every connection of a pool.
    pub alone: usize,
    /// Longest a fan's claim waits for a batch or a place at the gate before it is
    /// answered `Error::Overloaded` (see `gate`).
    pub wait: Duration,
}

/// A claim waiting for its batch.
struct Pending {
    claim: Claim,
    reply: oneshot::Sender<Result<Claimed, Error>>,
    /// When it joined the queue.
    queued: Instant,
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
    /// The database's claims gate, which a claim running alone passes.
    door: Door,
}

impl Coalescer {
    /// Starts the dispatcher on the current Tokio runtime; claims that run alone pass
    /// `door`, the database's claims gate.
    pub(super) fn start(
        pool: PgPool,
        retry: RetryPolicy,
        metrics: Arc<Metrics>,
        batching: Batching,
        door: Door,
    ) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE_CAPACITY);
        let runner = Runner {
            pool,
            retry,
            metrics,
            door,
        };
        tokio::spawn(dispatch(waiting, runner, batching));
        Self { queue }
    }

    /// Claims `claim` (a fan's) in the next batch; answers as `store::claim` would.
    ///
    /// # Errors
    /// As `store::claim`; [`Error::Overloaded`] when its batch did not start within
    /// `Batching::wait`, or it found a seat busy and no place at the gate came free in
    /// time (nothing written either way); [`Error::Database`] (pool closed) when the
    /// dispatcher has stopped (the runtime is shutting down).
    pub(super) async fn claim(&self, claim: Claim) -> Result<Claimed, Error> {
        let (reply, answer) = oneshot::channel();
        let stopped = || Error::Database(sqlx::Error::PoolClosed);
        let pending = Pending {
            claim,
            reply,
            queued: Instant::now(),
        };
        self.queue.send(pending).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// Takes batches off `waiting` while a slot is free and runs each on its own task. The
/// oldest claim waits for a slot until its wait runs out, then is answered
/// [`Error::Overloaded`] and the next one waits: while every batch is stuck (on locks,
/// on a slow database), the queue still answers within the wait.
async fn dispatch(mut waiting: mpsc::Receiver<Pending>, runner: Runner, batching: Batching) {
    let slots = Arc::new(Semaphore::new(batching.concurrent.max(1)));
    let mut carried: Option<Pending> = None;
    loop {
        let first = match carried.take() {
            Some(pending) => pending,
            None => match waiting.recv().await {
                Some(pending) => pending,
                None => return,
            },
        };
        let Some(first) = in_time(first, &runner.door, batching.wait) else {
            continue;
        };
        let until = tokio::time::Instant::from_std(first.queued + batching.wait);
        let slot = match tokio::time::timeout_at(until, Arc::clone(&slots).acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            Ok(Err(_closed)) => return,
            Err(_late) => {
                let _gone = first.reply.send(Err(runner.door.overloaded()));
                continue;
            }
        };
        let mut seats = first.claim.seats.len();
        let mut batch = vec![first];
        while batch.len() < batching.max_claims {
            let Ok(next) = waiting.try_recv() else { break };
            let Some(next) = in_time(next, &runner.door, batching.wait) else {
                continue;
            };
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

/// `pending` if it has waited at most `wait` for its batch; otherwise it is answered
/// `door`'s [`Error::Overloaded`] (its fan comes back later) and `None`.
fn in_time(pending: Pending, door: &Door, wait: Duration) -> Option<Pending> {
    if pending.queued.elapsed() <= wait {
        return Some(pending);
    }
    let _gone = pending.reply.send(Err(door.overloaded()));
    None
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
                            tokio::spawn(async move { runner.alone_at_gate(pending).await });
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
                    tokio::spawn(async move { runner.alone_at_gate(pending).await });
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
        let answer = self.claim_alone(&pending.claim).await;
        let _gone = pending.reply.send(answer);
    }

    /// As [`Self::alone`], for a claim that left its batch (and the batch's slot): it
    /// runs within the claims gate.
    async fn alone_at_gate(&self, pending: Pending) {
        let answer = match self.door.enter().await {
            Ok(_place) => self.claim_alone(&pending.claim).await,
            Err(overloaded) => Err(overloaded),
        };
        let _gone = pending.reply.send(answer);
    }

    async fn claim_alone(&self, claim: &Claim) -> Result<Claimed, Error> {
        retry_transient(
            self.retry,
            |failure| self.metrics.retry(failure),
            || store::claim(&self.pool, claim),
        )
        .await
    }
}

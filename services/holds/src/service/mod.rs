//! The holds operations as transactions: a claim, best available, StartPayment,
//! ExtendHold and ConfirmHold are one statement each on the pool (its own transaction);
//! release, the box office's operations and the sweep open one short transaction, run
//! the `store` steps on it and commit. Each is retried whole on 40001/40P01 (counted). Nothing here touches the
//! network but the database; callers verify tokens before.

mod best;
mod channel_best;
mod channels;
mod coalesce;
mod fan_limits;
mod gate;
mod hold_checks;
mod repeated;
mod request_family;
mod returns;
mod similar;
mod unread;

pub use coalesce::Batching;
pub use returns::{Admission, BestAnswer, ServedReturns};

use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use stadium_db::{RetryPolicy, retry_transient};

use self::fan_limits::Claimer;
use crate::domain::alternatives::SectionSeat;
use crate::domain::refusal::refusal;
use crate::domain::{Claim, Claimant, EventId, Hold, HoldKey, PresaleCode, SectionId};
use crate::error::Error;
use crate::metrics::{Metrics, Place};
use crate::shards::{self, Shards};
use crate::store;

/// Default rows per sweep batch.
pub const DEFAULT_SWEEP_BATCH: u32 = 500;

/// Sections whose seats are kept for refusals.
const SECTION_CACHE_CAPACITY: u64 = 2_000;
/// How long a section's seats are kept (they are fixed once the event exists; the
/// bound only lets memory go).
const SECTION_CACHE_TTL: Duration = Duration::from_secs(600);

/// The seats of a section, as kept for refusals.
type SectionSeats = Arc<Vec<SectionSeat>>;

/// The holds operations over the main database and the shards.
#[derive(Debug, Clone)]
pub struct HoldsService {
    shards: Arc<Shards>,
    metrics: Arc<Metrics>,
    retry: RetryPolicy,
    /// Seats of (event, section), read once per section for `SEAT_TAKEN` answers.
    sections: moka::future::Cache<(EventId, SectionId), SectionSeats>,
    /// Layouts and availability hints for best available.
    best: Arc<best::BestState>,
    /// Fans' claims, coalesced into batches, one coalescer per database by shard name.
    coalescers: BTreeMap<String, coalesce::Coalescer>,
    /// The bound on fans' claims that run alone, per database.
    gate: gate::ClaimGate,
    /// Shards a probe found up within [`unread::UP_MEMO`] (`unread`).
    up_probes: moka::future::Cache<String, ()>,
}

/// Runs `$body` (an expression using `$conn: &mut PgConnection`) in a transaction on
/// `$pool`, committing on success and rolling back on error, retried on 40001/40P01.
macro_rules! in_tx {
    ($self:ident, $pool:expr, |$conn:ident| $body:expr) => {
        retry_transient(
            $self.retry,
            |failure| $self.metrics.retry(failure),
            || async {
                let mut tx = $pool.begin().await?;
                let $conn: &mut sqlx::PgConnection = &mut tx;
                match $body.await {
                    Ok(value) => {
                        tx.commit().await?;
                        Ok(value)
                    }
                    Err(error) => {
                        tx.rollback().await?;
                        Err(error)
                    }
                }
            },
        )
        .await
    };
}

impl HoldsService {
    /// Operations on `shards`, recording into `metrics`, retrying per `retry`, fans'
    /// claims coalesced per `batching` on each database. Starts the coalescers'
    /// dispatchers on the current Tokio runtime.
    pub fn new(
        shards: Arc<Shards>,
        metrics: Arc<Metrics>,
        retry: RetryPolicy,
        batching: Batching,
    ) -> Self {
        let mut gate = gate::ClaimGate::default();
        let coalescers = shards
            .all()
            .map(|(name, pool)| {
                let coalescer = coalesce::Coalescer::start(
                    pool.clone(),
                    retry,
                    Arc::clone(&metrics),
                    batching,
                    gate.open(name, batching.alone, batching.wait),
                );
                (name.to_owned(), coalescer)
            })
            .collect();
        Self {
            coalescers,
            gate,
            shards,
            metrics,
            retry,
            sections: moka::future::Cache::builder()
                .max_capacity(SECTION_CACHE_CAPACITY)
                .time_to_live(SECTION_CACHE_TTL)
                .build(),
            best: Arc::new(best::BestState::new()),
            up_probes: moka::future::Cache::builder()
                .max_capacity(1_000)
                .time_to_live(unread::UP_MEMO)
                .build(),
        }
    }

    /// The main database and the shards.
    pub fn shards(&self) -> &Arc<Shards> {
        &self.shards
    }

    /// The metrics this service records into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Claims seats (see `store::claim`), all or nothing, in one statement on the pool
    /// (its own transaction), retried on 40001/40P01; a fan's claim may share that
    /// transaction with other fans' claims (see `coalesce`).
    ///
    /// # Errors
    /// As `store::claim`; [`Error::SeatTaken`] names the taken seats and offers
    /// alternatives, from the unavailable seats the refused call returned and the
    /// section's seats (cached).
    #[tracing::instrument(skip_all, fields(event_id = %claim.event, section_id = %claim.section, seats = claim.seats.len()))]
    pub async fn claim(&self, claim: &Claim) -> Result<Hold, Error> {
        self.claim_opened_by(claim, None).await
    }

    /// A fan's claim of channel seats with a presale code or channel key: one statement
    /// (`store::channels::claim_with_code`), never coalesced with other fans' claims.
    ///
    /// # Errors
    /// As [`Self::claim`], and those of `store::channels::claim_with_code`.
    #[tracing::instrument(skip_all, fields(event_id = %claim.event, section_id = %claim.section, seats = claim.seats.len()))]
    pub async fn claim_with_code(&self, claim: &Claim, code: &PresaleCode) -> Result<Hold, Error> {
        self.claim_opened_by(claim, Some(code)).await
    }

    async fn claim_opened_by(
        &self,
        claim: &Claim,
        code: Option<&PresaleCode>,
    ) -> Result<Hold, Error> {
        let started = Instant::now();
        let result = self.claim_checked(claim, code).await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let place = self.place(claim.event, Some(claim.section)).await;
        match result {
            Ok(store::Claimed::Held(outcome)) => {
                self.metrics
                    .expired_by_claim(outcome.expired_on_the_way, &place);
                self.metrics.claim("held", elapsed_ms, &place);
                tracing::debug!(hold_key = %outcome.hold.key, "claimed");
                Ok(outcome.hold)
            }
            Ok(store::Claimed::Taken { unavailable }) => {
                self.metrics.claim("seat_taken", elapsed_ms, &place);
                let seats = self.section_seats(claim.event, claim.section).await?;
                let (taken, alternatives) =
                    refusal(claim.section, &claim.seats, &seats, &unavailable);
                Err(Error::SeatTaken {
                    taken,
                    alternatives,
                })
            }
            Ok(store::Claimed::Repeated(key)) => {
                self.metrics.claim("error", elapsed_ms, &place);
                Err(Error::CorruptRow(format!(
                    "hold key {key} repeated by a claim that is not a fan's"
                )))
            }
            Err(error @ Error::Database(_)) => {
                self.metrics.claim("error", elapsed_ms, &place);
                Err(error)
            }
            Err(error @ Error::Overloaded { .. }) => {
                self.metrics.claim("shed", elapsed_ms, &place);
                Err(error)
            }
            Err(error) => {
                self.metrics.claim("refused", elapsed_ms, &place);
                Err(error)
            }
        }
    }

    /// The metrics' place of a claim of `section` (if known) of `event`.
    pub(super) async fn place(&self, event: EventId, section: Option<SectionId>) -> Place {
        let shard = match section {
            Some(section) => self
                .shards
                .shard_of(event.get(), section.get())
                .await
                .unwrap_or_else(|_| "unknown".to_owned()),
            None => "unknown".to_owned(),
        };
        Place {
            event: event.get(),
            section: section.map(SectionId::get),
            shard,
        }
    }

    /// Runs the claim on its section's database: a fan's claim coalesced with others
    /// there, one with a presale code (the code and its channel copied there) or of
    /// staff alone.
    async fn claim_on_shard(
        &self,
        claim: &Claim,
        code: Option<&PresaleCode>,
    ) -> Result<store::Claimed, Error> {
        let shard = self
            .shards
            .shard_of(claim.event.get(), claim.section.get())
            .await?;
        let pool = self.shards.named(&shard)?;
        match (&claim.claimant, code) {
            (Claimant::Fan { .. }, Some(code)) => {
                let _place = self.gate.door(&shard)?.enter().await?;
                retry_transient(
                    self.retry,
                    |failure| self.metrics.retry(failure),
                    || store::channels::claim_with_code(pool, claim, code),
                )
                .await
            }
            (Claimant::Fan { .. }, None) => match self.coalescers.get(&shard) {
                Some(coalescer) => coalescer.claim(claim.clone()).await,
                // `named` above found the shard, so it has a coalescer.
                None => Err(Error::CorruptRow(format!("no coalescer for shard {shard}"))),
            },
            (Claimant::Block { .. } | Claimant::Comp { .. }, _) => {
                retry_transient(
                    self.retry,
                    |failure| self.metrics.retry(failure),
                    || store::claim(pool, claim),
                )
                .await
            }
        }
    }

    /// The seats of `section` of `event`, from the cache, read from the database on a
    /// miss by one request while the others that missed wait for it (they are fixed
    /// once the event exists).
    ///
    /// # Errors
    /// [`Error::Database`].
    async fn section_seats(
        &self,
        event: EventId,
        section: SectionId,
    ) -> Result<SectionSeats, Error> {
        self.sections
            .try_get_with((event, section), async {
                let mut conn = self.shards.main().acquire().await?;
                Ok::<_, Error>(Arc::new(
                    store::section_seats(&mut conn, event, section).await?,
                ))
            })
            .await
            .map_err(unshared)
    }

    /// The hold `key` of `fan`.
    ///
    /// # Errors
    /// As `store::get`.
    pub async fn get(&self, key: HoldKey, fan: &str) -> Result<Hold, Error> {
        let pool = shards::for_key(&self.shards, key).await?;
        let mut conn = pool.acquire().await?;
        let found = store::get(&mut conn, key, fan).await;
        shards::moved_or(&self.shards, pool, key, found).await
    }

    /// `fan`'s live holds of `event` on every database, by hold key (see
    /// `store::live_holds`).
    ///
    /// # Errors
    /// As `store::live_holds`.
    pub async fn live_holds(&self, event: EventId, fan: &str) -> Result<Vec<Hold>, Error> {
        let mut holds = Vec::new();
        for (_, pool) in self.shards.all() {
            let mut conn = pool.acquire().await?;
            holds.extend(store::live_holds(&mut conn, event, fan, None).await?);
        }
        Ok(holds)
    }

    /// Releases the hold `key` of `fan`.
    ///
    /// # Errors
    /// As `store::release`.
    #[tracing::instrument(skip_all, fields(hold_key = %key))]
    pub async fn release(&self, key: HoldKey, fan: &str) -> Result<Hold, Error> {
        let pool = shards::for_key(&self.shards, key).await?;
        let released = in_tx!(self, pool, |conn| store::release(conn, key, fan));
        shards::moved_or(&self.shards, pool, key, released).await
    }

    /// Books the hold `key` of `fan`: one statement on the pool (its own transaction).
    ///
    /// # Errors
    /// As `store::confirm`.
    #[tracing::instrument(skip_all, fields(hold_key = %key))]
    pub async fn confirm(&self, key: HoldKey, fan: &str) -> Result<Hold, Error> {
        let pool = shards::for_key(&self.shards, key).await?;
        let booked = retry_transient(
            self.retry,
            |failure| self.metrics.retry(failure),
            || store::confirm(pool, key, fan),
        )
        .await;
        shards::moved_or(&self.shards, pool, key, booked).await
    }

    /// Moves the hold `key` of `fan` into its payment window of `window_ms`: one
    /// statement on the pool.
    ///
    /// # Errors
    /// As `store::start_payment`.
    #[tracing::instrument(skip_all, fields(hold_key = %key))]
    pub async fn start_payment(
        &self,
        key: HoldKey,
        fan: &str,
        window_ms: u32,
    ) -> Result<store::PaymentStarted, Error> {
        let pool = shards::for_key(&self.shards, key).await?;
        let started = retry_transient(
            self.retry,
            |failure| self.metrics.retry(failure),
            || store::start_payment(pool, key, fan, window_ms),
        )
        .await;
        shards::moved_or(&self.shards, pool, key, started).await
    }

    /// Extends the hold `key` of `fan` within its absolute lifetime: one statement on
    /// the pool.
    ///
    /// # Errors
    /// As `store::extend`.
    #[tracing::instrument(skip_all, fields(hold_key = %key))]
    pub async fn extend(&self, key: HoldKey, fan: &str) -> Result<store::Extended, Error> {
        let pool = shards::for_key(&self.shards, key).await?;
        let extended = retry_transient(
            self.retry,
            |failure| self.metrics.retry(failure),
            || store::extend(pool, key, fan),
        )
        .await;
        shards::moved_or(&self.shards, pool, key, extended).await
    }

    /// Ends the hold `key` whoever owns it (box office, service); `actor` goes into the
    /// seat history.
    ///
    /// # Errors
    /// As `store::admin_release`.
    #[tracing::instrument(skip_all, fields(hold_key = %key))]
    pub async fn admin_release(
        &self,
        key: HoldKey,
        scope: store::ReleaseScope,
        actor: &str,
    ) -> Result<Hold, Error> {
        let pool = shards::for_key(&self.shards, key).await?;
        let released = in_tx!(self, pool, |conn| store::admin_release(
            conn, key, scope, actor
        ));
        shards::moved_or(&self.shards, pool, key, released).await
    }

    /// The claim as [`Self::claim_settled`] settles it; with a fan's claim and shards,
    /// run detached: once the claim may commit, the caller going away cannot stop its
    /// checks across shards. Without shards nothing runs after the commit, so the claim
    /// stays on the caller's task.
    ///
    /// # Errors
    /// As [`Self::claim`].
    async fn claim_checked(
        &self,
        claim: &Claim,
        code: Option<&PresaleCode>,
    ) -> Result<store::Claimed, Error> {
        if self.shards.others().next().is_none() || !matches!(claim.claimant, Claimant::Fan { .. })
        {
            return self.claim_settled(claim, code).await;
        }
        let (this, claim, code) = (self.clone(), claim.clone(), code.cloned());
        fan_limits::detached(async move { this.claim_settled(&claim, code.as_ref()).await }).await
    }

    /// The claim on its section's database, and a fan's answer settled: a new hold
    /// checked against the per-fan limits across shards (`fan_limits`) and its request
    /// id's other holds (`request_family`), a retry answered by the hold its request id
    /// made (checked again while held), a `holds_per_admission` refusal answered by the
    /// admission's hold when it is what was asked (`repeated`).
    ///
    /// # Errors
    /// As [`Self::claim`].
    async fn claim_settled(
        &self,
        claim: &Claim,
        code: Option<&PresaleCode>,
    ) -> Result<store::Claimed, Error> {
        let asked =
            |hold: &Hold| hold.section == claim.section && hold.seats == claim.seats.as_slice();
        let held = |hold, expired_on_the_way| {
            store::Claimed::Held(store::ClaimOutcome {
                hold,
                expired_on_the_way,
            })
        };
        if let Claimant::Fan { fan, admission_jti } = &claim.claimant
            && let Some(made) = self
                .made_for_request(claim.event, fan, claim.request.as_ref())
                .await?
        {
            let claimer = Claimer {
                fan,
                admission_jti,
                code: code.map(PresaleCode::sha256),
            };
            let hold = self.answer_repeated(made, claimer, asked);
            return Ok(held(hold.await?, 0));
        }
        let result = self.claim_on_shard(claim, code).await;
        if let Err(error) = &result
            && error.is_stale_route()
        {
            self.shards.forget(claim.event.get()).await;
        }
        let Claimant::Fan { fan, admission_jti } = &claim.claimant else {
            return result;
        };
        let claimer = Claimer {
            fan,
            admission_jti,
            code: code.map(PresaleCode::sha256),
        };
        match result {
            Ok(store::Claimed::Held(outcome)) => {
                let with_request = claim.request.is_some();
                let hold = self.only_hold_of_request(outcome.hold, with_request);
                let hold = self.within_fan_limits(hold.await?, claimer);
                Ok(held(hold.await?, outcome.expired_on_the_way))
            }
            Ok(store::Claimed::Repeated(key)) => {
                let hold = self.answer_repeated(key, claimer, asked);
                Ok(held(hold.await?, 0))
            }
            Err(refused @ Error::LimitExceeded { .. }) => {
                let hold =
                    self.answered_before(refused, claim.event, fan.as_str(), admission_jti, asked);
                Ok(held(hold.await?, 0))
            }
            other => other,
        }
    }

    /// Withdraws the fan hold `key`, which the service refuses after its claim committed
    /// (`store::withdraw`, by `actor`).
    ///
    /// # Errors
    /// [`Error::Database`]; as `shards::for_key`.
    async fn withdraw(&self, key: HoldKey, actor: &str) -> Result<store::Withdrawal, Error> {
        let pool = shards::for_key(&self.shards, key).await?;
        in_tx!(self, pool, |conn| store::withdraw(conn, key, actor))
    }

    /// Marks lapsed holds expired on every database in batches of `batch` rows, one
    /// short transaction per batch, until a batch comes back short; returns the rows
    /// marked.
    ///
    /// # Errors
    /// [`Error::Database`] (rows of batches already committed stay marked).
    pub async fn sweep(&self, batch: u32) -> Result<u64, Error> {
        let batch = batch.max(1);
        let mut total = 0;
        for (shard, pool) in self.shards.all() {
            loop {
                let mut conn = pool.acquire().await?;
                let swept = store::sweep_expired(&mut conn, batch).await?;
                drop(conn);
                let mut done = 0;
                for each in swept {
                    let place = Place {
                        event: each.event,
                        section: Some(each.section),
                        shard: shard.to_owned(),
                    };
                    self.metrics.expired_by_sweeper(each.rows, &place);
                    done += each.rows;
                }
                total += done;
                if done < u64::from(batch) {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// Deletes seat-history rows older than `keep` on every database in batches of `batch` rows, one
    /// short transaction per batch, until a batch comes back short; returns the rows
    /// deleted.
    ///
    /// # Errors
    /// [`Error::Database`] (batches already committed stay deleted).
    pub async fn trim_history(&self, keep: Duration, batch: u32) -> Result<u64, Error> {
        let batch = batch.max(1);
        let mut total = 0;
        for (_, pool) in self.shards.all() {
            loop {
                let mut conn = pool.acquire().await?;
                let done = store::trim_seat_history(&mut conn, keep, batch).await?;
                total += done;
                if done < u64::from(batch) {
                    break;
                }
            }
        }
        Ok(total)
    }
}

/// A cache loader's error as a request that waited on it sees it: whole for the last
/// holder; else a copy (a database failure as its text, still `Unavailable`).
pub(super) fn unshared(error: Arc<Error>) -> Error {
    Arc::try_unwrap(error).unwrap_or_else(|shared| match &*shared {
        Error::EventNotFound => Error::EventNotFound,
        Error::CorruptRow(text) => Error::CorruptRow(text.clone()),
        other => Error::Database(sqlx::Error::Protocol(other.to_string())),
    })
}

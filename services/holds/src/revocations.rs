//! Revoked admission tokens: a per-event copy of the waiting room's revocation set
//! (`ListRevokedAdmissions`), so a token given back, taken back by staff or lost as a
//! no-show is refused here.
//!
//! The bound: a claim checks its event's copy inside the request; a copy older than
//! `max_age` (1 s) is refreshed first, one fetch per event at a time (the claims of
//! that event wait for it, each at most `fetch_timeout`), so each holds replica asks
//! the waiting room at most about once per event per second, however many claims
//! arrive. A token revoked at `t` is refused by every claim that starts after
//! `t + max_age` plus one fetch.
//!
//! When the waiting room does not answer: open for a while, then closed. The copy
//! keeps serving until `stale_limit` (10 s) after its last successful refresh, so a
//! waiting-room blip does not stop a sale (a token revoked during the blip is refused
//! once it ends); past that, claims of the event fail with
//! `UNAVAILABLE`/`REVOCATIONS_UNAVAILABLE` until the waiting room answers, so a long
//! outage cannot leave revocations unenforced. Claims never touch the database for
//! this: the check costs no round trip of the claim's own.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::RwLock;

use crate::domain::Queue;
use crate::error::Error;

/// One answer of the waiting room's `ListRevokedAdmissions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RevokedPage {
    /// The queue's life; versions restart when it changes.
    pub epoch: String,
    /// The version this page brings the copy to.
    pub version: u64,
    /// The page lists everything: replace the copy.
    pub full: bool,
    /// More follow from `version`.
    pub more: bool,
    /// `(jti, exp in Unix seconds)` of each revoked token.
    pub revoked: Vec<(String, u64)>,
}

/// A boxed future of one page.
pub type PageFuture<'a> = Pin<Box<dyn Future<Output = Result<RevokedPage, String>> + Send + 'a>>;

/// Where revocations come from.
pub trait RevocationSource: Send + Sync + 'static {
    /// The revocations of `queue` after `since` in `epoch` (everything when the epoch
    /// is not the queue's), or why not.
    fn fetch(&self, queue: Queue, epoch: &str, since: u64) -> PageFuture<'_>;
}

/// No waiting room to ask (local runs with a fixed admission JWKS): nothing revoked.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRevocations;

impl RevocationSource for NoRevocations {
    fn fetch(&self, _: Queue, _: &str, _: u64) -> PageFuture<'_> {
        Box::pin(async {
            Ok(RevokedPage {
                full: true,
                ..RevokedPage::default()
            })
        })
    }
}

/// How fresh the copies are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    /// A copy older than this is refreshed before it is trusted (1 s).
    pub max_age: Duration,
    /// Longest wait for one refresh (500 ms).
    pub fetch_timeout: Duration,
    /// How long after its last successful refresh a copy still serves when the
    /// waiting room does not answer (10 s); past it, claims fail closed.
    pub stale_limit: Duration,
}

impl Default for Freshness {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(1),
            fetch_timeout: Duration::from_millis(500),
            stale_limit: Duration::from_secs(10),
        }
    }
}

/// Most pages one refresh reads (10,000 revocations each).
const MAX_PAGES: usize = 100;

/// One event's copy of the revocation set.
#[derive(Debug, Default)]
struct EventCopy {
    epoch: String,
    version: u64,
    /// jti → exp, Unix seconds.
    revoked: HashMap<String, u64>,
    /// Last successful refresh.
    fresh_at: Option<Instant>,
    /// Last attempt, successful or not (a failing waiting room is asked at most once
    /// per `max_age` too).
    tried_at: Option<Instant>,
}

/// The per-event copies of this replica.
pub struct Revocations {
    source: Arc<dyn RevocationSource>,
    freshness: Freshness,
    events: moka::sync::Cache<Queue, Arc<RwLock<EventCopy>>>,
    fetches: AtomicU64,
}

impl std::fmt::Debug for Revocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Revocations")
            .field("freshness", &self.freshness)
            .field("fetches", &self.fetches.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Revocations {
    /// Copies fetched from `source`, kept as `freshness` says.
    pub fn new(source: Arc<dyn RevocationSource>, freshness: Freshness) -> Self {
        Self {
            source,
            freshness,
            // An event nobody claims for in an hour is forgotten and fetched afresh.
            events: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_idle(Duration::from_secs(3600))
                .build(),
            fetches: AtomicU64::new(0),
        }
    }

    /// How many times revocations were fetched.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Refuses `jti` if `queue`'s revocation set holds it, refreshing the copy first
    /// when it is older than `max_age`.
    ///
    /// # Errors
    /// [`Error::AdmissionRevoked`]; [`Error::RevocationsUnavailable`] when the copy
    /// could not be refreshed and is past `stale_limit` (or was never fetched).
    pub async fn check(&self, queue: Queue, jti: &str) -> Result<(), Error> {
        let copy = self.events.get_with(queue, Arc::default);
        {
            let read = copy.read().await;
            if self.is_fresh(read.tried_at) {
                return self.answer(queue, &read, jti);
            }
        }
        let mut write = copy.write().await;
        // Another claim may have refreshed while this one waited for the lock.
        if !self.is_fresh(write.tried_at) {
            write.tried_at = Some(Instant::now());
            let refreshed = tokio::time::timeout(
                self.freshness.fetch_timeout,
                self.refresh(queue, &mut write),
            )
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no answer within {:?}",
                    self.freshness.fetch_timeout
                ))
            });
            if let Err(detail) = refreshed {
                tracing::warn!(queue = %queue, %detail, "revoked admissions not refreshed");
            }
        }
        self.answer(queue, &write, jti)
    }

    fn is_fresh(&self, at: Option<Instant>) -> bool {
        at.is_some_and(|at| at.elapsed() < self.freshness.max_age)
    }

    fn answer(&self, queue: Queue, copy: &EventCopy, jti: &str) -> Result<(), Error> {
        let trusted = copy
            .fresh_at
            .is_some_and(|at| at.elapsed() < self.freshness.stale_limit);
        if !trusted {
            return Err(Error::RevocationsUnavailable {
                event_id: queue.event.get(),
                detail: "no recent answer from the waiting room".into(),
            });
        }
        if copy.revoked.contains_key(jti) {
            return Err(Error::AdmissionRevoked);
        }
        Ok(())
    }

    async fn refresh(&self, queue: Queue, copy: &mut EventCopy) -> Result<(), String> {
        for _ in 0..MAX_PAGES {
            self.fetches.fetch_add(1, Ordering::Relaxed);
            let page = self.source.fetch(queue, &copy.epoch, copy.version).await?;
            if page.full {
                copy.revoked.clear();
            }
            copy.revoked.extend(page.revoked);
            copy.epoch = page.epoch;
            copy.version = page.version;
            if !page.more {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                // A token past its expiry is refused for that reason already.
                copy.revoked.retain(|_, exp| *exp >= now);
                copy.fresh_at = Some(Instant::now());
                return Ok(());
            }
        }
        Err(format!("more than {MAX_PAGES} pages of revocations"))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Serves a list that the test changes, or fails while `down`.
    #[derive(Default)]
    struct Scripted {
        revoked: Mutex<Vec<String>>,
        down: Mutex<bool>,
        calls: AtomicU64,
        /// The queues asked for, by the waiting room's names.
        asked: Mutex<Vec<String>>,
    }

    impl RevocationSource for Scripted {
        fn fetch(&self, queue: Queue, _: &str, _: u64) -> PageFuture<'_> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.asked.lock().unwrap().push(queue.to_string());
            let answer = if *self.down.lock().unwrap() {
                Err("down".to_owned())
            } else {
                let far = u64::MAX / 2;
                Ok(RevokedPage {
                    full: true,
                    revoked: self
                        .revoked
                        .lock()
                        .unwrap()
                        .iter()
                        .map(|j| (j.clone(), far))
                        .collect(),
                    ..RevokedPage::default()
                })
            };
            Box::pin(async move { answer })
        }
    }

    fn event() -> Queue {
        queue("7")
    }

    fn queue(name: &str) -> Queue {
        Queue::of_admission(crate::domain::EventId::try_from("7").unwrap(), name)
            .or_else(|| Queue::of_admission(crate::domain::EventId::try_from("8").unwrap(), name))
            .unwrap()
    }

    fn freshness(max_age_ms: u64, stale_ms: u64) -> Freshness {
        Freshness {
            max_age: Duration::from_millis(max_age_ms),
            fetch_timeout: Duration::from_millis(200),
            stale_limit: Duration::from_millis(stale_ms),
        }
    }

    #[tokio::test]
    async fn many_claims_cost_one_fetch_per_max_age() {
        let source = Arc::new(Scripted::default());
        let revocations = Revocations::new(source.clone(), freshness(60_000, 120_000));
        for _ in 0..100 {
            revocations.check(event(), "a").await.unwrap();
        }
        assert_eq!(source.calls.load(Ordering::Relaxed), 1);
        // The event's presale queue has a revocation set, and a copy, of its own.
        for _ in 0..100 {
            revocations.check(queue("7-presale"), "a").await.unwrap();
        }
        assert_eq!(*source.asked.lock().unwrap(), ["7", "7-presale"]);
    }

    #[tokio::test]
    async fn a_revocation_is_refused_after_the_copy_ages_out() {
        let source = Arc::new(Scripted::default());
        let revocations = Revocations::new(source.clone(), freshness(50, 10_000));
        revocations.check(event(), "a").await.unwrap();
        source.revoked.lock().unwrap().push("a".into());
        tokio::time::sleep(Duration::from_millis(60)).await;
        let err = revocations.check(event(), "a").await.unwrap_err();
        assert!(matches!(err, Error::AdmissionRevoked), "{err:?}");
        revocations.check(event(), "b").await.unwrap();
    }

    #[tokio::test]
    async fn an_unreachable_waiting_room_fails_open_then_closed() {
        let source = Arc::new(Scripted::default());
        let revocations = Revocations::new(source.clone(), freshness(20, 150));
        revocations.check(event(), "a").await.unwrap();
        *source.down.lock().unwrap() = true;
        tokio::time::sleep(Duration::from_millis(30)).await;
        // Within the stale limit the last copy serves.
        revocations.check(event(), "a").await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        let err = revocations.check(event(), "a").await.unwrap_err();
        assert!(
            matches!(err, Error::RevocationsUnavailable { .. }),
            "{err:?}"
        );
        // Never fetched: closed from the start.
        let other = queue("8");
        let err = revocations.check(other, "a").await.unwrap_err();
        assert!(
            matches!(err, Error::RevocationsUnavailable { .. }),
            "{err:?}"
        );
        *source.down.lock().unwrap() = false;
        tokio::time::sleep(Duration::from_millis(30)).await;
        revocations.check(event(), "a").await.unwrap();
    }
}

//! The resync: every `--waiting-room-resync-ms` (5 s) the box office sends the waiting
//! room the whole configuration of every event in presale, on sale or paused (a sale
//! whose on-sale time is ahead is scheduled there; an event that has had a presale
//! also its presale queue's), read from the database as each push does.
//!
//! The same settings again change nothing in the waiting room. What it is for: when
//! the waiting room's Redis loses its data (restarted without persistence) it no
//! longer knows the event, and answers fans QUEUE_RESTORING until this sends the event
//! again, open since its on-sale time, so admissions resume within one interval; and
//! a sale change whose push never got through is made good. The database is the
//! truth: a change made on the waiting room directly (an SRE's `SetAdmissionRate` or
//! `PauseAdmission` there) lasts until the next round.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clients::push::{Pusher, Resynced};
use crate::error::Result;
use crate::service::BoxOfficeService;

/// Sends every live event's configuration to the waiting room.
#[derive(Debug, Clone)]
pub struct Resync {
    office: BoxOfficeService,
    pusher: Pusher,
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// Events whose configuration the waiting room has, as the database says.
    pub sent: Vec<i64>,
    /// Of those, the events the waiting room did not know (it created them again).
    pub created: Vec<i64>,
    /// Events whose configuration did not get through, with why.
    pub failed: Vec<(i64, String)>,
}

impl Resync {
    /// A resync listing events through `office` and sending them with `pusher`.
    pub fn new(office: BoxOfficeService, pusher: Pusher) -> Self {
        Self { office, pusher }
    }

    /// Sends the configuration of every event in presale, on sale or paused (with its
    /// presale queue's), each on its own: one that fails does not stop the others (the
    /// next round retries it).
    ///
    /// # Errors
    /// [`crate::error::Error::Database`] when the events cannot be listed.
    pub async fn round(&self) -> Result<Round> {
        let mut round = Round::default();
        for event_id in self.office.live_events().await? {
            match self.pusher.resync(event_id).await {
                Ok(Resynced::Sent { created }) => {
                    round.sent.push(event_id);
                    if created {
                        round.created.push(event_id);
                    }
                }
                Ok(Resynced::Skipped) => {}
                Err(why) => round.failed.push((event_id, why)),
            }
        }
        Ok(round)
    }
}

/// Runs a round at once, then every `interval`, until `shutdown` is cancelled (a round
/// in flight is dropped: every send is idempotent). An event the waiting room did not
/// know is logged at WARN (its Redis lost its data); failures at WARN once, until a
/// round gets everything through again.
pub fn spawn(resync: Resync, interval: Duration, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = ticks.tick() => {}
            }
            let result = tokio::select! {
                () = shutdown.cancelled() => break,
                result = resync.round() => result,
            };
            let failures = match result {
                Ok(round) => {
                    for event_id in &round.created {
                        tracing::warn!(
                            event_id,
                            "the waiting room did not know a live event; it has it again"
                        );
                    }
                    round.failed
                }
                Err(error) => vec![(0, error.to_string())],
            };
            match failures.first() {
                None if failing => {
                    tracing::info!("the waiting room is in step with the database again");
                    failing = false;
                }
                Some((event_id, why)) if !failing => {
                    tracing::warn!(
                        event_id,
                        why,
                        failed = failures.len(),
                        "resyncing the waiting room failed; retrying every round"
                    );
                    failing = true;
                }
                _ => {}
            }
        }
    })
}

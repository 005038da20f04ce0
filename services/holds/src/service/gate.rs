//! The fans' claims gate: one bound, per database, on the fans' claim calls that take
//! a connection of their own — best available, presale codes, and a batched claim that
//! found a seat busy and runs alone — besides the coalescer's batches
//! (`Batching::concurrent`). Batches and gate together leave
//! [`crate::config::KEPT_FROM_CLAIMS`] connections of every pool to the payment step
//! (StartPayment, ConfirmHold), reads and the sweeper, whatever fans do.
//!
//! A claim that cannot pass within the wait (`Batching::wait`) is answered at once
//! [`Error::Overloaded`] (`RESOURCE_EXHAUSTED`/`OVERLOADED` with `retry_after_ms`),
//! before its deadline runs out and having written nothing, as the server's own load
//! shedding answers (`stadium_kit::shed`): in an on-sale's opening burst a fan is told
//! when to come back instead of waiting until `DEADLINE_EXCEEDED`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::Error;

/// One database's gate; cheap to clone (the permits are shared).
#[derive(Debug, Clone)]
pub(super) struct Door {
    permits: Arc<Semaphore>,
    wait: Duration,
}

impl Door {
    /// At most `permits` calls through at once (at least 1), each waiting at most `wait`.
    pub(super) fn new(permits: usize, wait: Duration) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(permits.max(1))),
            wait,
        }
    }

    /// Waits at most the door's wait for a place; the place is held until the returned
    /// permit is dropped.
    ///
    /// # Errors
    /// [`Error::Overloaded`] (retry after the wait) when no place came free in time.
    pub(super) async fn enter(&self) -> Result<OwnedSemaphorePermit, Error> {
        let mut waited = Duration::ZERO;
        self.enter_after(&mut waited).await
    }

    /// As [`Self::enter`] for a request that has already waited `waited` at doors
    /// (updated with this wait): it waits at most what is left of one wait, so a
    /// request whose rounds move between databases (a price category's sections on
    /// several shards) waits no longer in all than a request on one database, and is
    /// told to come back before its deadline. With nothing left, a free place is still
    /// taken at once.
    ///
    /// # Errors
    /// As [`Self::enter`].
    pub(super) async fn enter_after(
        &self,
        waited: &mut Duration,
    ) -> Result<OwnedSemaphorePermit, Error> {
        let left = self.wait.saturating_sub(*waited);
        let started = tokio::time::Instant::now();
        let entered = tokio::time::timeout(left, Arc::clone(&self.permits).acquire_owned()).await;
        *waited += started.elapsed();
        match entered {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; a closed one would be a stopping process.
            Ok(Err(_)) => Err(Error::Database(sqlx::Error::PoolClosed)),
            Err(_) => Err(self.overloaded()),
        }
    }

    /// The answer to a fan's claim that found no place in time.
    pub(super) fn overloaded(&self) -> Error {
        Error::Overloaded {
            retry_after_ms: u64::try_from(self.wait.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// The doors of every database, by shard name.
#[derive(Debug, Clone, Default)]
pub(super) struct ClaimGate {
    doors: BTreeMap<String, Door>,
}

impl ClaimGate {
    /// Gives the database named `shard` a door of `permits` places and waits of at most
    /// `wait` (replacing any it had), and returns it.
    pub(super) fn open(&mut self, shard: &str, permits: usize, wait: Duration) -> Door {
        let door = Door::new(permits, wait);
        self.doors.insert(shard.to_owned(), door.clone());
        door
    }

    /// The door of the database named `shard`.
    ///
    /// # Errors
    /// [`Error::CorruptRow`] for a shard the service was not started with (a route to
    /// an unknown shard is refused earlier, by `Shards::named`).
    pub(super) fn door(&self, shard: &str) -> Result<&Door, Error> {
        self.doors
            .get(shard)
            .ok_or_else(|| Error::CorruptRow(format!("no claim gate for shard {shard}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_door_answers_overloaded_with_its_wait_as_the_hint() {
        let door = Door::new(1, Duration::from_millis(20));
        let inside = door.enter().await.unwrap();
        let refused = door.enter().await.unwrap_err();
        assert!(
            matches!(refused, Error::Overloaded { retry_after_ms: 20 }),
            "{refused:?}"
        );
        drop(inside);
        let _again = door.enter().await.unwrap();
    }

    /// On the runtime's paused clock, which moves only to the next timer: the waits
    /// are counted exactly.
    #[tokio::test(start_paused = true)]
    async fn a_request_moving_between_doors_waits_one_wait_in_all() {
        let wait = Duration::from_millis(30);
        let (east, west) = (Door::new(1, wait), Door::new(1, wait));
        let _east_taken = east.enter().await.unwrap();
        let _west_taken = west.enter().await.unwrap();
        let mut waited = Duration::ZERO;
        assert!(matches!(
            east.enter_after(&mut waited).await,
            Err(Error::Overloaded { .. })
        ));
        assert_eq!(waited, wait);
        // Nothing of the wait is left: the next full door refuses without waiting,
        // and a door with room still lets the request in.
        assert!(matches!(
            west.enter_after(&mut waited).await,
            Err(Error::Overloaded { .. })
        ));
        assert_eq!(waited, wait);
        let free = Door::new(1, wait);
        assert!(free.enter_after(&mut waited).await.is_ok());
    }

    #[test]
    fn an_unknown_shard_has_no_door() {
        let mut gate = ClaimGate::default();
        gate.open("main", 2, Duration::from_millis(5));
        assert!(gate.door("main").is_ok());
        assert!(matches!(gate.door("s1"), Err(Error::CorruptRow(_))));
    }
}

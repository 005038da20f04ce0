//! The service's notion of "now", injectable so tests can simulate minutes of queueing
//! without sleeping.
//!
//! In production ([`SystemClock`]) the admission frontier is computed inside Redis from
//! Redis `TIME`, so every replica agrees on it whatever its own clock says; a
//! [`ManualClock`] instead passes its time to every script, so a test moves the frontier
//! by moving the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of time for the waiting room.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current instant, used to sign and verify tokens and to age caches.
    fn now(&self) -> SystemTime;

    /// The instant (Unix milliseconds) scripts must use as "now", or `None` to let each
    /// script read Redis `TIME` (the one clock all replicas share).
    fn script_now_ms(&self) -> Option<u64>;

    /// [`Clock::now`] as Unix milliseconds (0 before the epoch).
    fn now_ms(&self) -> u64 {
        unix_ms(self.now())
    }
}

/// Unix milliseconds of `t` (0 before the epoch, saturating far in the future).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The machine's clock; scripts use Redis `TIME`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn script_now_ms(&self) -> Option<u64> {
        None
    }
}

/// A clock that only moves when told to; clones share the same time, so several
/// service instances in one test agree on it.
#[derive(Debug, Clone)]
pub struct ManualClock {
    ms: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: SystemTime) -> Self {
        Self {
            ms: Arc::new(AtomicU64::new(unix_ms(start))),
        }
    }

    /// A clock standing at the machine's current time (whole milliseconds).
    pub fn starting_now() -> Self {
        Self::new(SystemTime::now())
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.ms.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.ms.load(Ordering::SeqCst))
    }

    fn script_now_ms(&self) -> Option<u64> {
        Some(self.ms.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_is_shared_by_clones() {
        let a = ManualClock::new(UNIX_EPOCH + Duration::from_secs(10));
        let b = a.clone();
        a.advance(Duration::from_millis(1500));
        assert_eq!(b.now_ms(), 11_500);
        assert_eq!(b.script_now_ms(), Some(11_500));
        assert_eq!(SystemClock.script_now_ms(), None);
    }
}

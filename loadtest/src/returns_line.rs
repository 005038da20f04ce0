//! A fan's place in holds' returns queue, as the simulation counts it: while a fan's
//! claim waits there, holds may serve it a hold at any moment, before the fan has
//! seen it. The seat map then shows those seats taken and no fan counts them as held,
//! so nobody may call the event sold out while any fan is in the line: the seats of a
//! served hold the fan then lets lapse come back to fans still looking. When nothing
//! else is left, the fans in the line leave it (taking what it served them), and the
//! call can be made.

use std::sync::atomic::AtomicU64;

use crate::stats::{inc, sub};

/// One fan's place in the returns queue, counted in a gauge of fans in the line from
/// the first `Waiting` answer until the fan leaves the line or is done claiming
/// (dropped).
#[derive(Debug)]
pub(crate) struct ReturnsLine<'a> {
    in_line: &'a AtomicU64,
    queued: bool,
}

impl<'a> ReturnsLine<'a> {
    /// Not in the line yet; counted in `in_line` once it [`enter`s](Self::enter).
    pub(crate) fn new(in_line: &'a AtomicU64) -> Self {
        Self {
            in_line,
            queued: false,
        }
    }

    /// A claim of the fan waits in the line (counted once, however often it is asked
    /// again).
    pub(crate) fn enter(&mut self) {
        if !self.queued {
            self.queued = true;
            inc(self.in_line);
        }
    }

    /// The fan has left the line (`LeaveReturnsQueue` answered): no longer counted.
    pub(crate) fn leave(&mut self) {
        if self.queued {
            self.queued = false;
            sub(self.in_line, 1);
        }
    }

    /// Whether a claim of the fan waited in the line (it may still be there, or have
    /// been served).
    pub(crate) fn queued(&self) -> bool {
        self.queued
    }
}

impl Drop for ReturnsLine<'_> {
    fn drop(&mut self) {
        if self.queued {
            sub(self.in_line, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::get;

    #[test]
    fn a_fan_counts_once_while_in_line_and_leaves_the_count_on_leaving_or_when_done() {
        let in_line = AtomicU64::new(0);
        {
            let mut one = ReturnsLine::new(&in_line);
            let mut two = ReturnsLine::new(&in_line);
            let never = ReturnsLine::new(&in_line);
            assert_eq!(get(&in_line), 0);
            one.enter();
            one.enter();
            two.enter();
            assert_eq!(get(&in_line), 2);
            assert!(one.queued() && !never.queued());
            drop(never);
            drop(one);
            assert_eq!(get(&in_line), 1);
            two.leave();
            two.leave();
            assert_eq!(get(&in_line), 0);
            assert!(!two.queued());
            two.enter();
            assert_eq!(get(&in_line), 1);
        }
        assert_eq!(get(&in_line), 0);
    }
}

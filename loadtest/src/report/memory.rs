//! Memory a run cost: the queue store's bytes per fan and each process's peak resident
//! memory. The runner measures them (it knows the store and the processes); the report
//! only carries and renders them.

use serde::{Deserialize, Serialize};

/// The memory figures of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    /// Redis `used_memory` (bytes, `INFO memory`) before the event was set up.
    pub redis_before_bytes: u64,
    /// Redis `used_memory` after the run, with every fan's queue state still stored.
    pub redis_after_bytes: u64,
    /// Redis `used_memory_peak` after the run (the server's own high-water mark, which
    /// counts everything the server held since it started).
    pub redis_peak_bytes: u64,
    /// Fans the queue holds state for (joined).
    pub fans_in_store: u64,
    /// Peak resident memory (Linux `VmHWM`, bytes) of each process, by name.
    pub processes: Vec<ProcessMemory>,
}

/// One process's peak resident memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessMemory {
    /// What runs in it (`waiting-room-0`, `simulator`, …).
    pub name: String,
    /// Peak resident set size, bytes.
    pub peak_rss_bytes: u64,
}

impl MemoryReport {
    /// Redis bytes per fan in the store: what the run added to `used_memory`, divided
    /// by the fans it holds; `None` without fans or when memory went down.
    pub fn redis_bytes_per_fan(&self) -> Option<f64> {
        let added = self
            .redis_after_bytes
            .checked_sub(self.redis_before_bytes)?;
        (self.fans_in_store > 0).then(|| added as f64 / self.fans_in_store as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_fan_is_what_the_run_added_over_the_fans() {
        let report = MemoryReport {
            redis_before_bytes: 1_000_000,
            redis_after_bytes: 81_000_000,
            fans_in_store: 1_000_000,
            ..MemoryReport::default()
        };
        assert_eq!(report.redis_bytes_per_fan(), Some(80.0));
        let shrank = MemoryReport {
            redis_after_bytes: 10,
            ..report.clone()
        };
        assert_eq!(shrank.redis_bytes_per_fan(), None);
        let empty = MemoryReport {
            fans_in_store: 0,
            ..report
        };
        assert_eq!(empty.redis_bytes_per_fan(), None);
    }
}

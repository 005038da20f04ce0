//! Each process's peak resident memory over a run. The runner measures it (it knows
//! the processes); the report only carries and renders it.

use serde::{Deserialize, Serialize};

/// The memory figures of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryReport {
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

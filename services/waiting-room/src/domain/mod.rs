//! The waiting room's domain: identifiers checked at the edge, the queue snapshot a
//! replica caches, the pre-queue shuffle and the arithmetic of positions and waits.
//! No tonic and no Redis types here.

pub mod ids;
pub mod queue;
pub mod shuffle;

pub use ids::{EventId, FanId};
pub use queue::{CREDIT_PER_FAN, QueueSnapshot, SaleState, Standing};

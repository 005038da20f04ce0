//! The waiting room's domain: identifiers checked at the edge, the queue snapshot a
//! replica caches, the seat inventory reported to it, when to poll, the pre-queue
//! shuffle and its audit, and the arithmetic of positions and waits.
//! No tonic and no Redis types here.

pub mod audit;
pub mod ids;
pub mod inventory;
pub mod poll;
pub mod queue;
pub mod shuffle;

pub use ids::{EventId, FanId};
pub use inventory::Inventory;
pub use queue::{CREDIT_PER_FAN, QueueSnapshot, SaleState, Standing};

//! The waiting room's domain: identifiers checked at the edge, the queue snapshot a
//! replica caches, the seat inventory reported to it, when to poll, the pre-queue
//! shuffle and its audit, the arithmetic of positions and waits, and the waiting list
//! of a sold-out event.
//! No tonic and no Redis types here.

pub mod audit;
pub mod ids;
pub mod inventory;
pub mod poll;
pub mod queue;
pub mod shuffle;
pub mod waiting_list;

pub use ids::{EventId, FanId};
pub use inventory::Inventory;
pub use queue::{CREDIT_PER_FAN, QueueSnapshot, SaleState, Standing};
pub use waiting_list::{ListEntry, ListStats, OfferEnd};

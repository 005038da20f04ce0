//! The all-in-one runner: the five stadium services in one process on loopback ports,
//! over the given PostgreSQL/Redis or a private pair started from the machine's
//! binaries, and the on-sale scenario run against them.

pub mod onsale;
pub mod stack;

pub use onsale::{DatabaseCheck, FloorOutcome, OnSaleConfig};
pub use stack::{Endpoints, PaymentTiming, Stack, StackOptions};

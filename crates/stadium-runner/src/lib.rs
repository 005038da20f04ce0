//! The runner: the five stadium services in one process on loopback ports, or as
//! replicas in processes of their own started from the Kubernetes manifests, over the
//! given PostgreSQL/Redis or a private pair started from the machine's binaries; and
//! the on-sale scenario run against them; and the fan's page they serve.

pub mod deployment;
pub mod faults;
pub mod memory;
pub mod onsale;
pub mod page;
pub mod replicas;
mod service_threads;
pub mod shards;
pub mod stack;
mod stores;

pub use deployment::Deployment;
pub use onsale::{DatabaseCheck, FloorOutcome, OnSaleConfig};
pub use stack::{Endpoints, PaymentTiming, Stack, StackOptions};
pub use stores::ShardStores;

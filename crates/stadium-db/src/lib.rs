//! PostgreSQL access shared by the stadium services: a pool from a URL (and a URL naming
//! another database), the migrations
//! in `migrations/` (one PostgreSQL schema per owning service), and a typed
//! classification of the SQLSTATEs the services must tell apart, so that they map
//! database outcomes to gRPC statuses without matching message strings; and the layout
//! of `holds.section_load`'s latency histogram, which holds writes and the box office
//! reads; and the claims waiting on each other's seat locks, which both report.

mod code_copy;
mod lock_waits;
mod pool;
mod retry;
mod section_load;
mod section_move;
mod shards;
mod sqlstate;
mod text_enum;
mod url;

pub use code_copy::{copy_presale_codes, presale_code_count};
pub use lock_waits::{LockWaits, lock_waits};
pub use pool::{MIGRATOR, PoolOptions, connect, migrate};
pub use retry::{RetryPolicy, Transient, retry_transient};
pub use section_load::{
    CLAIM_LATENCY_BOUNDS_MS, LATENCY_BUCKETS, latency_bucket, latency_quantile_ms,
};
pub use section_move::{MoveError, Moved, RETRY_AFTER_MS, move_section};
pub use shards::{MAIN, ROUTE_TTL, ShardUrl, Shards, parse_shard};
pub use sqlstate::{DbFailure, classify};
pub use url::with_database;

//! The floors the services are measured against: `pgbench` running the services' own
//! statements (or the bare writes they stand on) on the same database server in the same
//! run, on a generated venue whose seat ids are arithmetic so that `pgbench` can
//! compute the blocks it claims. Used by `claim_bench`, `confirm_bench` and the
//! on-sale's comparison with the same number of claim-and-book transactions.

pub mod booking;
pub mod pgbench;
pub mod seed;
pub mod sellout;

/// What a floor run can fail with: a database error, `pgbench` missing or failing, a
/// seeded venue that came out off its arithmetic layout.
pub type FloorResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

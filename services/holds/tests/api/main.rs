//! The holds service end to end: real PostgreSQL (a fresh database per test), the real
//! gRPC server on a loopback port, the generated client, truly parallel requests; after
//! each concurrent run the stored rows are checked against the invariants by SQL.

mod best;
mod cases;
mod channels;
mod channels_on_shards;
mod claims;
mod coalesced;
mod gate;
mod history;
mod hold_checks;
mod keys;
mod lifecycle;
mod limits_across_shards;
mod mode;
mod payment_window;
mod plans;
mod presale;
mod price_levels;
mod readmission;
mod refusals;
mod repeated;
mod request_ids;
mod returns;
mod revoked;
mod section_load;
mod section_moves;
mod shards;
mod similar;
mod support;
mod sweeper;

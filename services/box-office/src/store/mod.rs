//! SQL of the box office. Functions take `&mut PgConnection`; the caller owns the
//! transaction. Reports and the canary read `holds` and `payments` tables read-only:
//! checking invariants that span owners is what the canary is for.

pub mod audit;
pub mod cancellations;
pub mod cross_shard;
pub mod events;
pub mod invariants;
pub mod queue_marks;
pub mod reports;
pub mod sales_claims;
pub mod seat_counts;
pub mod seat_history;
pub mod section_load;
pub mod shard_map;
pub mod venues;

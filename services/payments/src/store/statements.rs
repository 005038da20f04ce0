//! The texts of the confirm path's statements and of the reconciler's scan, public so
//! that a benchmark runs exactly what the service runs (`confirm_bench` hands them to
//! `pgbench`) and a test can plan them. Each is a file under `sql/`, which the store
//! (reads, the scan) and [`crate::lifecycle`] (the intent, the capture) run with
//! `sqlx::query_file_as!` (checked against the schema at compile time); the constants
//! here are those same files.
//!
//! The payment statements each return at most one payment row: the store's row type's
//! columns in its order, `currency` as text, and sqlx's type overrides as column names
//! (`"status: PaymentStatus"`, `"refund_reason: RefundReason"`, `"currency!"`).

/// The payment of a hold: `$1` hold key.
pub const BY_HOLD_KEY: &str = include_str!("sql/by_hold_key.sql");

/// A new pending payment under a lease, unless the hold already has one (then no row):
/// `$1` payment id, `$2` hold key, `$3` event, `$4` fan, `$5` amount (minor units),
/// `$6` currency, `$7` lease owner, `$8` lease length (ms, bigint), `$9` SHA-256 of
/// the payment method (bytea, or NULL).
pub const INSERT_INTENT: &str = include_str!("sql/insert_intent.sql");

/// A pending (or given up) payment captured, with its tickets, in one statement (no
/// row, and no tickets, if it had moved on): `$1` payment id, `$2` the provider's charge
/// id, then the new tickets as four arrays of equal length, one element a seat: `$3`
/// ticket ids (uuid[]), `$4` section ids (bigint[]), `$5` seat ids (bigint[]), `$6`
/// signed codes (text[]). The tickets take the payment's event and fan.
pub const CAPTURE: &str = include_str!("sql/capture.sql");

/// The reconciler's scan (see [`super::due`]): `$1` how many, `$2` how long abandoned
/// payments are watched (ms, bigint). Its status condition is
/// `payments_reconcile_idx`'s predicate, so the scan reads that index in
/// `reconcile_at` order.
pub const DUE: &str = include_str!("sql/due.sql");

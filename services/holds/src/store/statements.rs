//! The texts of the claim and payment-step statements, public so that a benchmark runs
//! exactly what the service runs (`claim_bench` and `confirm_bench` hand them to
//! `pgbench`). Each calls one function of the `holds` schema (see its migration) and
//! returns one row. The texts live in `sql/`, where the
//! store's checked queries (`sqlx::query_file!`) read the same files; their column
//! aliases carry sqlx's nullability marks (`"outcome!"`: never NULL).

/// ClaimSeats: `$1` hold key, `$2` event, `$3` section, `$4` seat ids, `$5` fan (or
/// box-office owner), `$6` admission `jti`, `$7` kind (`fan`, `block`, `comp`), `$8`
/// note.
pub const CLAIM: &str = include_str!("sql/claim.sql");

/// StartPayment: `$1` hold key, `$2` fan, `$3` payment window (ms).
pub const START_PAYMENT: &str = include_str!("sql/start_payment.sql");

/// ConfirmHold: `$1` hold key, `$2` fan.
pub const CONFIRM_HOLD: &str = include_str!("sql/confirm_hold.sql");

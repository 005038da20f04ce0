//! The texts of the claim and payment-step statements, public so that a benchmark runs
//! exactly what the service runs (`claim_bench` and `confirm_bench` hand them to
//! `pgbench`). Each calls one function of the `holds` schema (see its migration) and
//! returns one row.

/// ClaimSeats: `$1` hold key, `$2` event, `$3` section, `$4` seat ids, `$5` fan (or
/// box-office owner), `$6` admission `jti`, `$7` kind (`fan`, `block`, `comp`), `$8`
/// note.
pub const CLAIM: &str = "SELECT outcome, detail, limit_max, seat_ids, expires_in_ms, ttl_ms, expired \
     FROM holds.claim($1, $2, $3, $4, $5, $6, $7, $8)";

/// StartPayment: `$1` hold key, `$2` fan, `$3` payment window (ms).
pub const START_PAYMENT: &str = "SELECT outcome, event_id, section_id, seat_ids, expires_in_ms, ttl_ms, \
     total_minor, currency FROM holds.start_payment($1, $2, $3)";

/// ConfirmHold: `$1` hold key, `$2` fan.
pub const CONFIRM_HOLD: &str =
    "SELECT outcome, event_id, section_id, seat_ids, ttl_ms FROM holds.confirm_hold($1, $2)";

/// Fans' claims coalesced into one transaction: `$1` hold keys, `$2` events, `$3`
/// sections, `$4` fans, `$5` admission `jti`s (one entry per claim), `$6` the 1-based
/// claim of each seat, `$7` the seat ids. One row per claim, in order.
pub const CLAIM_MANY: &str = "SELECT ordinal, outcome, detail, limit_max, seat_ids, expires_in_ms, ttl_ms, expired \
     FROM holds.claim_many($1, $2, $3, $4, $5, $6, $7)";
